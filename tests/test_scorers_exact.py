"""Exact match in its three modes, and how numeric mode reads the predicted number (expected values by hand)."""

from __future__ import annotations

import pytest

from eval_harness.errors import ConfigError
from eval_harness.scorers import build_scorer, exact_match
from eval_harness.scorers.exact import extract_number, numbers_in
from eval_harness.types import Sample, ScorerSpec


def sample(target: str | list[str]) -> Sample:
    return Sample(id="s", input="q", target=target)


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("  Paris\n", "Paris", 1.0),
        ("paris", "Paris", 0.0),
        ("Paris.", "Paris", 0.0),
        ("", "", 1.0),
        ("東京", "東京", 1.0),
    ],
)
def test_strict_mode_only_ignores_outer_whitespace(prediction: str, reference: str, expected: float) -> None:
    assert exact_match(prediction, reference, "strict") == expected


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("  PARIS!! ", "paris", 1.0),
        ("New   York,\tcity", "new york city", 1.0),
        ("Straße", "STRASSE", 1.0),  # casefold folds ß to ss
        ("ｐａｒｉｓ", "paris", 1.0),  # NFKC folds full-width letters
        ("Paris France", "Paris", 0.0),
        ("", "", 1.0),
    ],
)
def test_lenient_mode_folds_case_punctuation_and_whitespace(prediction: str, reference: str, expected: float) -> None:
    assert exact_match(prediction, reference, "lenient") == expected


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("42", "42"),
        ("42.0", "42"),
        ("forty-two", "42"),
        ("$1,234", "1234"),
        ("1,234.50", "1234.5"),
        ("-3", "-3"),
        ("−3", "-3"),  # unicode minus
        ("minus three", "-3"),
        ("50%", "50"),
        ("50%", "0.5"),
        ("one hundred and five", "105"),
        ("The answer is 7.", "7"),
        ("Working: 3 + 4 = 7\n#### 7", "7"),
        ("It travels 260km in total", "260"),
        ("\\boxed{12}", "12"),
        ("1/2", "0.5"),
        ("So she pays $1,600,000.", "1,600,000"),
    ],
)
def test_numeric_mode_compares_numbers_by_value(prediction: str, reference: str) -> None:
    assert exact_match(prediction, reference, "numeric") == 1.0


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("41", "42"),
        ("no idea", "42"),
        ("", "42"),
        ("42", "not a number"),
        ("3", "-3"),
        ("1,234", "1.234"),
    ],
)
def test_numeric_mode_rejects_other_or_missing_numbers(prediction: str, reference: str) -> None:
    assert exact_match(prediction, reference, "numeric") == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("First 5 apples, then 10 - 3 = 7", 7.0),  # the last number, and '- 3' is not -3
        ("The answer is 12. Check: 12 * 2 = 24", 12.0),  # the number after 'answer is' wins over the last one
        ("Answer: 8 because 2 + 6", 8.0),
        ("#### 18\nThe answer is 20", 18.0),  # '####' wins over 'answer is'
        ("answer is unclear; 5 then 9", 5.0),  # no number right after the marker: the first one after it
        ("The one with 4 legs", 4.0),  # 'the one' is a pronoun, not 1
        ("no one knows", None),
        # audit-s20 3: a story with no number was read as 1, and credited on GSM8K's 15 items whose answer is 1
        ("One day, a little girl named Lily went to the park. She saw a big dog.", None),
        ("One time, she bought 3 apples.", 3.0),
        ("Then one must add 5.", 5.0),  # "one must" mid-sentence: a number only if nothing else is
        ("She kept one's share of 4", 4.0),
        ("They help one another with 4", 4.0),
        ("One.", 1.0),  # the number alone
        # review-s20 1: a "one" that states the answer is still 1 (only a sentence opened by "One day" is not)
        ("The answer is one day.", 1.0),
        ("#### one day", 1.0),
        ("Answer:\nOne day.", 1.0),
        ("The answer is \\boxed{one time}", 1.0),
        ("It takes one day.", 1.0),
        ("She has one can of soup left.", 1.0),
        ("They stayed one night.", 1.0),
        ("Lily walked. One morning she found 2 shells.", 2.0),
        # review-s21 4: beside other numbers an opening "One" is the number again
        ("She had 5 apples and gave away 4. One will remain.", 1.0),
        ("One day, Tom went out. One must rest.", None),  # openers alone: no number
        # e2e-s31: an opening quote or bracket before it read a story's "One day" as 1
        ('"One day, a little girl named Lily came', None),
        ("“One day,” she said.", None),
        ("(One day, a dog ran.)", None),
        ('He said. "One time, there were 3 cats."', 3.0),
        ('"One."', 1.0),
        ("COVID-19 caused 30 closures", 30.0),  # a hyphen inside a word is not a minus sign
        ("x2 and y3", None),  # digits glued after letters are not numbers
    ],
)
def test_extract_number_reads_the_final_answer(text: str, expected: float | None) -> None:
    number = extract_number(text)
    assert (number.value if number is not None else None) == expected


# GSM8K answers that state the final line as a calculation, or in millions (two GSM8K golds are 1,450,000 and
# 2,880,000). Expected values are what a careful human grader reads as the answer, worked out by hand.
@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("The answer is 9 × 2 = 18.", "18"),
        ("The answer is 16 - 3 - 4 = 9 eggs, sold for 9 * $2 = $18.", "18"),
        ("The answer is 2+1 = 3.", "3"),
        ("#### 4 x 5 = 20", "20"),
        ("The answer is 17/8.5 = 2.", "2"),  # '17/8.5' is a division by 8.5, not the fraction 17/8
        ("The answer is (100/120)*48 = 40.", "40"),
        ("The answer is $1.45 million.", "1,450,000"),
        ("They raised $2.88 million", "2,880,000"),
        ("The answer is 3 thousand", "3000"),
    ],
)
def test_numeric_mode_reads_a_stated_calculation_or_a_scaled_number(prediction: str, reference: str) -> None:
    assert exact_match(prediction, reference, "numeric") == 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 5 dollars, and 5 * 2 = 10 for two.", 5.0),  # the stated answer does not start a calculation
        ("The answer is 18 = 9 × 2", 18.0),  # what follows the '=' is itself a calculation, not a result
        ("The answer is 7 + 5.\nCheck: 3 * 4 = 12", 7.0),  # the '=' is on another line
        ("The answer is 12 - 2. Then 2 + 3 = 5.", 12.0),  # the '=' is in another sentence
    ],
)
def test_extract_number_follows_an_equals_sign_only_within_the_stated_answer(text: str, expected: float) -> None:
    number = extract_number(text)
    assert number is not None and number.value == expected


def test_unknown_mode_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown exact_match mode 'fuzzy'"):
        exact_match("a", "a", "fuzzy")


def test_scorer_with_unknown_mode_is_a_config_error_naming_the_task() -> None:
    with pytest.raises(ConfigError, match=r"tasks/t\.toml: scorer 'exact_match': unknown mode 'fuzzy'"):
        build_scorer(ScorerSpec(name="exact_match", args={"mode": "fuzzy"}), where="tasks/t.toml")


async def test_scorer_takes_the_best_of_several_references() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "lenient"}))
    score = await scorer.score("the nile", sample(["Amazon", "The Nile"]))
    assert score.value == 1.0


async def test_numeric_scorer_reports_the_number_it_read() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric"}))
    score = await scorer.score("I get $1,234.50 in total", sample("1234.5"))
    assert (score.value, score.answer) == (1.0, "1234.5")
    assert score.explanation == "read 1234.5; equals '1234.5'"


async def test_numeric_scorer_explains_a_missing_number() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric"}))
    score = await scorer.score("I cannot say", sample("7"))
    assert score.value == 0.0 and score.explanation == "no number found in the output; expected '7'"


async def test_numeric_tolerance_accepts_rounding_within_it() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric", "tolerance": 0.001}))
    assert (await scorer.score("3.14", sample("3.14159"))).value == 0.0
    assert (await scorer.score("3.142", sample("3.14159"))).value == 1.0


def test_very_long_text_reads_its_last_number() -> None:
    text = "word " * 100_000 + "so the total is 99"
    assert exact_match(text, "99", "numeric") == 1.0


async def test_numeric_scorer_reports_a_scaled_number_in_full() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric"}))
    score = await scorer.score("The answer is $2.01 million.", sample("2,010,000"))
    assert (score.value, score.answer) == (1.0, "2010000")  # exact: 2.01 * 1e6 in floats is 2009999.9999999998


def test_a_number_after_a_spaced_slash_is_read_on_its_own() -> None:
    # "/ 4" was swallowed as a fraction with no numerator and lost; GSM8K's solutions write "100 miles / 4"
    assert [n.value for n in numbers_in("divide 100 miles / 4 gallons = 25 mpg")] == [100.0, 4.0, 25.0]


def test_one_after_a_pronoun_far_back_is_still_a_number() -> None:
    # only the words just before "one" make it a pronoun ("the one"); a "the" sentences earlier does not
    assert [n.value for n in numbers_in("the cat sat down. Then one more came.")] == [1.0]
    assert numbers_in("the one he wanted") == []


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("-5", "5", 0.0),  # a sign flip is a different answer
        ("\u22125", "-5", 1.0),  # U+2212 MINUS SIGN is a minus
        ("\u22125", "5", 0.0),
        ("5%", "5", 0.0),
        ("5 %", "5%", 1.0),  # the space before a percent sign is dropped
        ("(-5)", "-5", 1.0),  # brackets are punctuation: they go
        ("1-2", "1 2", 1.0),  # a hyphen after a digit is a range, not a sign
        ("state-of-the-art", "state of the art", 1.0),
    ],
)
def test_lenient_mode_keeps_a_sign_or_percent_attached_to_a_number(
    prediction: str, reference: str, expected: float
) -> None:
    # by hand, from the rule in exact_match's docstring
    assert exact_match(prediction, reference, "lenient") == expected


async def test_numeric_scorer_reports_a_decimal_with_all_its_digits() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric"}))
    score = await scorer.score("It came to 12,345.67 pounds.", sample("12345.67"))
    assert (score.value, score.answer) == (1.0, "12345.67")  # :g showed 12345.7


@pytest.mark.parametrize(
    ("mode", "output", "target", "value"),
    [
        # before: 0.0 — the reasoning's "the answer is 40" outranked the tag, and the tags defeated the match
        (
            "numeric",
            "<reasoning>At first the answer is 40, but 2 more: 42.</reasoning>\n<answer>42</answer>",
            "42",
            1.0,
        ),
        ("numeric", "<answer>42</answer>\n<reasoning>then 7 more were sold</reasoning>", "42", 1.0),
        ("lenient", "<answer> Paris </answer>", "paris", 1.0),
        ("strict", "<reasoning>x</reasoning><answer>Paris</answer>", "Paris", 1.0),
        ("strict", "<answer>Lyon</answer>", "Paris", 0.0),
        ("numeric", "<answer></answer> The answer is 12.", "12", 1.0),  # an empty tag is no answer: the text is read
    ],
)
async def test_an_answer_tag_is_what_exact_match_reads(mode: str, output: str, target: str, value: float) -> None:
    score = await build_scorer(ScorerSpec(name="exact_match", args={"mode": mode})).score(output, sample(target))
    assert score.value == value


@pytest.mark.parametrize(
    ("output", "reference"),
    [("0.25", "25 percent"), ("25 percent", "0.25"), ("25 Percent", "0.25"), ("0.25", "25percent")],
)
def test_numeric_mode_reads_digits_and_the_word_percent_as_a_percentage(output: str, reference: str) -> None:
    # as "25%" and "twenty-five percent" already were: 25 percent is 0.25
    assert exact_match(output, reference, "numeric") == 1.0


def test_numeric_mode_does_not_read_percentage_points_as_a_percent() -> None:
    # "percentage" is another word: 25 percentage points is the number 25
    assert exact_match("25 percentage points", "25", "numeric") == 1.0
    assert exact_match("25 percentage points", "0.25", "numeric") == 0.0


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [("1000000001", "1000000000"), ("123456789012", "123456789000"), ("9007199254740993", "9007199254740992"),
     ("12345678901234567891", "12345678901234567890")],  # past a float's 2**53: integers compare exactly
)  # fmt: skip
def test_numeric_mode_tells_large_numbers_apart_to_the_last_digit(prediction: str, reference: str) -> None:
    # before: a relative slack of 1e-9 made numbers of ten and more digits equal to nine of them
    assert exact_match(prediction, reference, mode="numeric") == 0.0


@pytest.mark.parametrize(("prediction", "reference"), [("1.1%", "0.011"), ("0.1 + 0.2 = 0.30000000000000004", "0.3")])
def test_numeric_mode_still_forgives_floats_own_rounding(prediction: str, reference: str) -> None:
    assert exact_match(prediction, reference, mode="numeric") == 1.0


async def test_numeric_tolerance_zero_still_tells_large_numbers_apart() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric", "tolerance": 0}))
    assert (await scorer.score("1000000001", sample("1000000000"))).value == 0.0


@pytest.mark.parametrize(
    ("text", "expected"), [("１，０００", 1000.0), ("－５", -5.0), ("答え：１２．５", 12.5), ("10²", 10.0)]
)
def test_full_width_digits_and_signs_read_as_ascii_but_superscripts_do_not(text: str, expected: float) -> None:
    # before: "１，０００" read 0 (the full-width comma split the number); NFKC would make "10²" 102
    number = extract_number(text)
    assert number is not None and number.value == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"$\boxed{1{,}600}$", 1600.0),  # LaTeX's comma without the space math mode adds
        (r"\boxed{1{,}450{,}000}", 1450000.0),
        (r"The answer is 70\,000.", 70000.0),  # LaTeX's thin space
        ("The answer is 70\u2009000.", 70000.0),  # thin space (SI)
        ("Total: 1\u202f250\u202f000 €", 1250000.0),  # narrow no-break space (French)
        ("The answer is 3 100-page books.", 3.0),  # a plain space separates numbers, not groups
        ("The answer is 12\u20091234.", 12.0),  # not a group of three: two numbers, the first stated
    ],
)
def test_latex_and_thin_space_thousands_separators_join_the_groups(text: str, expected: float) -> None:
    # datasets-s30 F2: "\boxed{1{,}600}" read 600 and "70\,000" read 70: every GSM8K answer of 1,000 or more
    # written as LaTeX typesets it scored 0
    number = extract_number(text)
    assert number is not None and number.value == expected
