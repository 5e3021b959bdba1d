"""Multiple-choice letter extraction: accepted forms, refused ambiguity, and the scorer around it."""

from __future__ import annotations

import pytest

from eval_harness.scorers import build_scorer, choice_letter
from eval_harness.types import Completion, Sample, ScorerSpec


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("B", "B"),
        ("b", "B"),
        ("(B)", "B"),
        ("[C]", "C"),
        ("The answer is B.", "B"),
        ("Answer: B) Paris", "B"),
        ("**D**", "D"),
        ("B. Paris", "B"),
        ("c) because the others are wrong", "C"),
        ("I think the answer is (C).", "C"),
        ("The correct option is D", "D"),
        ("answer: (b)", "B"),
        ("I would say B", "B"),
        ("A good answer would be C", "C"),  # 'A good': the article, not option A
        ("Final answer: A", "A"),
    ],
)
def test_accepted_answer_forms_give_the_letter(response: str, expected: str) -> None:
    assert choice_letter(response) == expected


@pytest.mark.parametrize(
    "response",
    [
        "A or B",
        "The answer is A or B",
        "The answer is A, B or C",
        "The answer is A. No wait, the answer is C.",
        "Between A and B, I pick B",
        "None of these",
        "The answer is a dog",  # a lower-case 'a' followed by a word is the article
        "",
        "   ",
        "E",  # not one of ABCD
    ],
)
def test_ambiguous_or_absent_answers_give_none(response: str) -> None:
    assert choice_letter(response) is None


# Expected letters below are what a careful human grader gives: an answer stated plainly is not undone by an
# explanation that names the options it rejects (outputs seen on the real OpenBookQA and MMLU files).
@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("B. quit eating lunch out. Option A is incomplete.", "B"),
        ("Option A is incorrect. Option B is also wrong. The answer is C.", "C"),
        ("C\n\nExplanation: options A and B do not fit.", "C"),
        ("The answer is B. Choice D is a distractor.", "B"),
        ("My answer: B, because (choice C would need a more proximal lesion)", "B"),
        ("Option A is wrong, so \\boxed{C}", "C"),
        ("<answer>D</answer> Option A is a distractor.", "D"),
        ("The answer is B, a classic trap.", "B"),  # 'a classic': the article, not a second option
        ("(b)\nNot option A: it is too small.", "B"),
        ("B\n\nA. is too small.\nC. is too large.", "B"),  # a bare answer line, then one line per rejected option
    ],
)
def test_an_explanation_naming_other_options_keeps_the_given_answer(response: str, expected: str) -> None:
    assert choice_letter(response) == expected


def test_a_final_answer_outranks_an_earlier_answer_is() -> None:
    assert choice_letter("The answer is A at first sight. Checking again... Final answer: C") == "C"


# Outputs that name several options without settling on one: a careful grader gives no credit.
@pytest.mark.parametrize(
    "response",
    [
        "Either A or C",
        "The answer is either A or C",
        "(A) or (B)",
        "B. Or maybe D.",
        "A\nB\nC\nD",
        "A) Paris\nB) London\nC) Oslo",  # the options echoed back, no choice made
        "Final answer: A. Final answer: C",
        "<answer>A</answer> <answer>B</answer>",
        "The answer is (B) or (D)",
        "Option A is incorrect. Option B is also wrong.",
        "A B",
    ],
)
def test_answers_that_name_several_options_stay_ambiguous(response: str) -> None:
    assert choice_letter(response) is None


def test_more_letters_can_be_allowed() -> None:
    assert choice_letter("The answer is E", letters="ABCDE") == "E"


def test_two_letter_options_are_not_read_from_a_longer_list() -> None:
    assert choice_letter("C", letters="AB") is None


async def test_scorer_compares_the_extracted_letter_with_the_target() -> None:
    scorer = build_scorer(ScorerSpec(name="choice"))
    mcq = Sample(id="q", input="Capital of France?", target="B", choices=["Rome", "Paris", "Oslo", "Bern"])
    right, wrong = await scorer.score("Answer: B) Paris", mcq), await scorer.score("(A)", mcq)
    assert (right.value, right.answer) == (1.0, "B")
    assert (wrong.value, wrong.answer, wrong.explanation) == (0.0, "A", "chose 'A' (by letter): wrong; expected 'B'")


async def test_scorer_reads_an_answer_that_quotes_exactly_one_choice() -> None:
    scorer = build_scorer(ScorerSpec(name="choice"))
    mcq = Sample(id="q", input="Capital of France?", target="B", choices=["Rome", "Paris", "Oslo", "Bern"])
    score = await scorer.score("It is Paris, of course.", mcq)
    assert (score.value, score.explanation) == (1.0, "chose 'B' (by choice text): correct")


async def test_scorer_accepts_a_target_given_as_the_choice_text() -> None:
    scorer = build_scorer(ScorerSpec(name="choice"))
    mcq = Sample(id="q", input="Capital of France?", target="Paris", choices=["Rome", "Paris", "Oslo", "Bern"])
    assert (await scorer.score("B", mcq)).value == 1.0


async def test_scorer_gives_zero_with_a_reason_for_an_ambiguous_answer() -> None:
    scorer = build_scorer(ScorerSpec(name="choice"))
    mcq = Sample(id="q", input="?", target="A", choices=["w", "x", "y", "z"])
    score = await scorer.score("A or B", mcq)
    assert (score.value, score.answer) == (0.0, None)
    assert score.explanation == "no single option letter in the output; expected 'A'"


# OpenBookQA has options that begin with the article "A"; an answer that is exactly one option's text is that
# option (a careful grader reads "A Season" as the option "A Season", not as letter A).
@pytest.mark.parametrize("output", ["A Season", "a season.", "**A Season**"])
async def test_scorer_reads_an_answer_that_is_a_whole_choice_text_as_that_choice(output: str) -> None:
    scorer = build_scorer(ScorerSpec(name="choice"))
    mcq = Sample(id="q", input="?", target="B", choices=["A Day", "A Season", "A Month", "A Solar Year on earth"])
    score = await scorer.score(output, mcq)
    assert (score.value, score.answer, score.explanation) == (1.0, "B", "chose 'B' (by choice text): correct")


async def test_scorer_reads_a_bare_letter_as_a_letter_even_when_a_choice_text_is_that_letter() -> None:
    scorer = build_scorer(ScorerSpec(name="choice"))
    mcq = Sample(id="q", input="Which letter is a vowel?", target="B", choices=["B", "A", "C", "D"])
    score = await scorer.score("B", mcq)
    assert (score.answer, score.explanation) == ("B", "chose 'B' (by letter): correct")


@pytest.mark.parametrize(
    ("response", "letters", "expected"),
    [
        # before: the pronoun "I" after a marker was read as option I (ten-option questions: MMLU-Pro)
        ("Answer: I think it is B", "ABCDEFGHIJ", "B"),
        ("The answer is I think B", "ABCDEFGHIJ", "B"),
        ("Answer: I would say B", "ABCDEFGHIJ", "B"),
        ("Answer: I am fairly sure it's (J).", "ABCDEFGHIJ", "J"),
        # option I stays option I
        ("Answer: I", "ABCDEFGHIJ", "I"),
        ("The answer is I because J double-counts.", "ABCDEFGHIJ", "I"),
        ("The answer is (I).", "ABCDEFGHIJ", "I"),
        # an "A" after a marker is the option, whatever follows it (an answer goes on far more often than it
        # opens with an article)
        ("Answer: A must be right, since B fails.", "ABCD", "A"),
        ("The answer is A rather than B.", "ABCD", "A"),
        ("Answer: A mitochondria, not B nucleus", "ABCD", "A"),
        ("The answer is A because B is wrong", "ABCD", "A"),
    ],
)
def test_an_i_after_a_marker_followed_by_a_verb_is_the_pronoun_and_an_a_stays_the_option(
    response: str, letters: str, expected: str
) -> None:
    assert choice_letter(response, letters) == expected


@pytest.mark.parametrize(
    "response", ["The answer is 'B'.", "‘B’", "'B'", 'The answer is "B".', "Answer: ‘b’", "<answer>'B'</answer>"]
)
def test_a_quoted_letter_is_read_as_the_whole_response_or_after_a_marker(response: str) -> None:
    # before: None for single and curly quotes (a quote next to a letter was read as a contraction: "B's")
    assert choice_letter(response) == "B"


@pytest.mark.parametrize(
    "response", ["The answer is 'A' or 'B'.", "The answer is ‘A’ or ‘B’.", "Final answer: 'A' or 'C'", "'A'/'B'"]
)
def test_a_quoted_hedge_is_still_a_hedge(response: str) -> None:
    assert choice_letter(response) is None


@pytest.mark.parametrize(
    ("response", "expected"),
    [("I'd go with C, not 'A'.", "C"), ("C is right. 'A' confuses mass with weight.", "C"),
     ("The correct one is C; 'A' and 'B' are wrong.", "C")],
)  # fmt: skip
def test_letters_quoted_in_an_explanation_do_not_compete_with_the_answer(response: str, expected: str) -> None:
    assert choice_letter(response) == expected


def test_a_letter_inside_a_contraction_or_a_possessive_is_still_no_option() -> None:
    assert choice_letter("B's reasoning is wrong; the answer is C") == "C"
    assert choice_letter("O'Brien says D") == "D"


async def test_a_target_past_the_letters_is_an_error_that_says_so() -> None:
    # before: "IndexError: string index out of range"
    many = Sample(id="s", input="q", target="x27", choices=[f"x{i}" for i in range(30)])
    with pytest.raises(ValueError, match="target 'x27' is choice 28, past the 26 letters A"):
        await build_scorer(ScorerSpec(name="choice")).score("B", many)
    past = Sample(id="s", input="q", target="c3", choices=["c1", "c2", "c3"])
    with pytest.raises(ValueError, match="target 'c3' is choice 3, past the 2 letters AB"):
        await build_scorer(ScorerSpec(name="choice", args={"letters": "AB"})).score("A", past)


async def test_more_choices_than_letters_still_scores_a_target_within_them() -> None:
    many = Sample(id="s", input="q", target="B", choices=[f"x{i}" for i in range(30)])
    assert (await build_scorer(ScorerSpec(name="choice")).score("The answer is B", many)).value == 1.0
    # a choice past the letters is not read from the output's text (it has no letter): before, an IndexError
    three = Sample(id="s", input="q", target="A", choices=["apple", "banana", "blue plum"])
    score = await build_scorer(ScorerSpec(name="choice", args={"letters": "AB"})).score("blue plum", three)
    assert score.value == 0.0


SEASONS = Sample(id="s", input="q", target="C", choices=["Winter", "Summer", "A Season", "Spring"])
GROUPS = Sample(id="g", input="q", target="B", choices=["group", "abelian group", "ring", "field"])


@pytest.mark.parametrize(
    ("sample", "response", "chosen"),
    [
        (SEASONS, '"A Season"', "C"),  # datasets-s30 F7: read as letter A, the quote's first word
        (SEASONS, "The answer is “A Season”.", "C"),
        (SEASONS, 'I would pick "A Season".', "C"),
        (SEASONS, 'The answer is B, not "A Season".', "B"),  # a letter given elsewhere still decides
        (SEASONS, 'The answer is "A".', "A"),  # a quoted letter is a letter
        (GROUPS, 'The answer is "abelian group".', "B"),  # before: no letter, "group" inside it too
        (GROUPS, 'The answer is "group".', "A"),
        # review-s30 4: an option quoted to be rejected beside another named won
        (Sample(id="c", input="q", target="A", choices=["Paris", "London"]), 'It is not "Paris" but London.', None),
        (Sample(id="c", input="q", target="A", choices=["Paris", "London"]), '"Paris" is wrong. London is.', None),
        # review2-s30 5: quoted right after an answer marker, it decides whatever else is named
        (Sample(id="c", input="q", target="B", choices=["Paris", "London"]), 'The answer is "London", not Paris.', "B"),
        (Sample(id="c", input="q", target="B", choices=["Paris", "London"]), 'Answer: "London" (not Paris)', "B"),
    ],
)
async def test_an_option_s_whole_text_in_quotes_is_that_option(
    sample: Sample, response: str, chosen: str | None
) -> None:
    score = await build_scorer(ScorerSpec(name="choice")).score(response, sample)
    assert score.answer == chosen, score.explanation


@pytest.mark.parametrize(
    ("output", "finish", "read"),
    [
        ('"Hell," A', "length", None),  # adopt-s32 15: a story cut at max_tokens, its last word's first letter
        ('"Hell," A', "stop", "A"),  # whole: a letter standing alone at the end is an answer
        ("The answer is A", "length", "A"),  # an answer marker before it: the answer, cut after it
        ("I pick option A", "max_tokens", "A"),
        ("A", "length", "A"),  # alone in the answer
    ],
)
async def test_a_capital_letter_an_answer_cut_at_the_limit_ends_on_is_no_answer_without_a_marker(
    output: str, finish: str, read: str | None
) -> None:
    sample = Sample(id="1", input="q", target="A", choices=["w", "x", "y", "z"])
    completion = Completion(text=output, finish_reason=finish)
    score = await build_scorer(ScorerSpec(name="choice")).score(output, sample, completion)
    assert score.answer == read
