"""The registered text scorers read an XML-output template's last non-empty ``<answer>`` tag, one rule for all
(``scorers.answers.read_answer``); the public functions compare the strings they are given.

Expected values: token F1 and SQuAD exact match from the functions of the official SQuAD v1.1 evaluate script
(``normalize_answer``, ``f1_score``, ``exact_match_score``, pasted verbatim), ROUGE from
``rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"]).score(reference, prediction)`` of rouge-score 0.1.2
(nltk 3.10.4), both run in a throwaway venv under /tmp; the rest by hand, as each comment says.
"""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import SecretStr

from eval_harness.providers.embeddings import OpenAIEmbeddingsClient
from eval_harness.scorers import ScoringPipeline, build_scorer, exact_match, rouge, token_f1
from eval_harness.scorers.answers import Answer, read_answer
from eval_harness.scorers.embeddings import EmbeddingSimilarity
from eval_harness.types import Sample, ScorerSpec

EIFFEL_XML = "<answer>Eiffel Tower</answer>"
EIFFEL_REASONED = "<reasoning>It stands in Paris.</reasoning>\n<answer>The Eiffel Tower, in Paris</answer>"
SUMMARY = "The cat sat on the mat for the whole afternoon."
SUMMARY_REFERENCE = "A cat sat on the mat all afternoon."
SUMMARY_XML = f"<reasoning>The article is about a cat and where it sat.</reasoning>\n<answer>{SUMMARY}</answer>"

# rouge-score 0.1.2: score(SUMMARY_REFERENCE, SUMMARY), (precision, recall, fmeasure). By hand for ROUGE-L: the
# LCS "cat sat on the mat afternoon" is 6 of the summary's 10 tokens and the reference's 8: P 0.6, R 0.75.
ROUGE_OF_THE_TAG = {
    "rouge1": (0.6, 0.75, 0.6666666666666665),
    "rouge2": (0.4444444444444444, 0.5714285714285714, 0.5),
    "rougeL": (0.6, 0.75, 0.6666666666666665),
}
# rouge-score 0.1.2: score(SUMMARY_REFERENCE, SUMMARY_XML), the whole output with its reasoning and tag names
ROUGE_OF_THE_WHOLE_OUTPUT = {
    "rouge1": (0.2916666666666667, 0.875, 0.43750000000000006),
    "rouge2": (0.21739130434782608, 0.7142857142857143, 0.3333333333333333),
    "rougeL": (0.2916666666666667, 0.875, 0.43750000000000006),
}


def sample(*targets: str) -> Sample:
    return Sample(id="q", input="?", target=list(targets))


async def score_with(name: str, output: str, target: str, **args: object) -> tuple[float, str | None, str | None]:
    score = await build_scorer(ScorerSpec(name=name, args=dict(args))).score(output, sample(target))
    return score.value, score.answer, score.explanation


async def test_token_f1_of_a_perfect_tagged_answer_is_one() -> None:
    # SQuAD script: f1_score("Eiffel Tower", "the Eiffel Tower") = 1.0; on the whole output it is 0
    # ("answereiffel", "toweranswer" share no token with "eiffel", "tower")
    value, answer, explanation = await score_with("token_f1", EIFFEL_XML, "the Eiffel Tower")
    assert (value, answer) == (1.0, "eiffel tower")
    assert explanation == "token F1 1.000 against 'the Eiffel Tower' (best of 1); read from the <answer> tag"


async def test_token_f1_scores_the_tag_and_not_the_reasoning() -> None:
    # SQuAD script: f1_score("The Eiffel Tower, in Paris", "Eiffel Tower") = 0.6666666666666666 (P 2/4, R 2/2);
    # the whole output would give 0.3636363636363636
    value, answer, _ = await score_with("token_f1", EIFFEL_REASONED, "Eiffel Tower")
    assert value == pytest.approx(0.6666666666666666, abs=1e-12)
    assert answer == "eiffel tower in paris"


async def test_squad_em_matches_a_tagged_answer() -> None:
    # SQuAD script: exact_match_score("The Eiffel Tower.", "Eiffel Tower") is True; on the whole output False
    value, answer, explanation = await score_with("squad_em", "<answer>The Eiffel Tower.</answer>", "Eiffel Tower")
    assert (value, answer) == (1.0, "eiffel tower")
    assert explanation == "normalised answer matches 'Eiffel Tower'; read from the <answer> tag"


@pytest.mark.parametrize("variant", ["rouge1", "rouge2", "rougeL"])
async def test_rouge_of_a_tagged_summary_is_the_rouge_of_the_tag(variant: str) -> None:
    score = await build_scorer(ScorerSpec(name="rouge", args={"variant": variant})).score(
        SUMMARY_XML, sample(SUMMARY_REFERENCE)
    )
    precision, recall, fmeasure = ROUGE_OF_THE_TAG[variant]
    assert score.value == pytest.approx(fmeasure, abs=1e-12)
    assert score.metadata == pytest.approx({"precision": precision, "recall": recall, "fmeasure": fmeasure}, abs=1e-12)


async def test_rouge_records_the_tag_it_read() -> None:
    score = await build_scorer(ScorerSpec(name="rouge")).score(SUMMARY_XML, sample(SUMMARY_REFERENCE))
    assert score.answer == SUMMARY
    assert score.explanation == "rougeL fmeasure 0.667 (P 0.600 R 0.750 F 0.667; best of 1); read from the <answer> tag"


async def test_exact_match_records_the_tag_it_read_in_every_mode() -> None:
    assert (await score_with("exact_match", EIFFEL_XML, "Eiffel Tower"))[:2] == (1.0, "Eiffel Tower")
    assert (await score_with("exact_match", "<answer>eiffel tower!</answer>", "Eiffel Tower", mode="lenient"))[:2] == (
        1.0,
        "eiffel tower!",
    )
    assert (await score_with("exact_match", "<answer>$1,234</answer>", "1234", mode="numeric"))[:2] == (1.0, "1234")


async def test_faithfulness_checks_the_tag_and_not_the_reasoning() -> None:
    # by hand: the tag's units are council, approved, budget (content words; "The" opens the sentence and has 3
    # letters), all in the source: 100%. The reasoning's "Mayor", "Jones" and the tag names are not in it.
    source = "The council met on Tuesday and approved the budget."
    output = "<reasoning>Mayor Jones is not mentioned.</reasoning><answer>The council approved the budget.</answer>"
    scorer = build_scorer(ScorerSpec(name="faithfulness"))
    score = await scorer.score(output, Sample(id="s", input=source, target="-"))
    assert (score.value, score.answer) == (1.0, "The council approved the budget.")
    assert score.explanation == (
        "100% supported; every number, name and content word is in the source; read from the <answer> tag"
    )


async def test_embedding_similarity_embeds_the_tag() -> None:
    inputs: list[list[str]] = []

    def server(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        inputs.append(texts)
        vectors = {"Paris": [1.0, 0.0]}  # any other text (the whole output) raises here and fails the test
        return httpx.Response(200, json={"data": [{"index": i, "embedding": vectors[t]} for i, t in enumerate(texts)]})

    client = OpenAIEmbeddingsClient(
        "emb", "http://embed.test/v1", SecretStr("k"), transport=httpx.MockTransport(server)
    )
    score = await EmbeddingSimilarity(client).score(
        "<reasoning>France.</reasoning><answer>Paris</answer>", sample("Paris")
    )
    assert inputs == [["Paris", "Paris"]]
    assert (score.value, score.answer) == (1.0, "Paris")


# One rule for every scorer (exact_match's): the last non-empty tag, any letter case, across lines.
TAG_RULES = [
    ("<answer>Boston</answer> No, wait. <answer>New York</answer>", "New York"),  # the last tag wins
    ("<answer>New York</answer>\n<answer>  </answer>", "New York"),  # a blank tag is no answer
    ("<ANSWER>\n  New York\n</Answer>", "New York"),  # any case, outer whitespace and line breaks dropped
    # a lone opening tag in the reasoning (an echoed instruction) opens no answer
    ("<reasoning>I put the city in the <answer> tag.</reasoning>\n<answer>New York</answer>", "New York"),
]
TEXT_SCORERS = [("exact_match", {}), ("exact_match", {"mode": "lenient"}), ("token_f1", {}), ("squad_em", {})]
TEXT_SCORERS += [("rouge", {"variant": variant}) for variant in ("rouge1", "rouge2", "rougeL")]


@pytest.mark.parametrize(("output", "read"), TAG_RULES)
def test_read_answer_takes_the_last_non_empty_tag(output: str, read: str) -> None:
    assert read_answer(output) == Answer(read, tagged=True)


@pytest.mark.parametrize(("output", "read"), TAG_RULES)
@pytest.mark.parametrize(("name", "args"), TEXT_SCORERS)
async def test_every_text_scorer_follows_the_tag_rule(
    name: str, args: dict[str, object], output: str, read: str
) -> None:
    # "New York" against itself: 1.0 under every scorer (two tokens, so ROUGE-2 has a bigram); the first tag
    # ("Boston") or the whole output would not be
    assert (await score_with(name, output, "New York", **args))[0] == 1.0


@pytest.mark.parametrize(
    "output",
    [
        "Paris, I think <answer>Lyon",  # unclosed (cut at the length limit): no tag
        "<answer></answer> Paris, I think.",  # the empty tag of the instructions echoed: no answer in it
        "Paris, I think.",
    ],
)
def test_an_output_without_a_usable_tag_is_read_whole(output: str) -> None:
    assert read_answer(output) == Answer(output, tagged=False)


async def test_an_untagged_output_is_scored_as_before() -> None:
    # SQuAD script: f1_score("The Eiffel Tower, in Paris", "Eiffel Tower") = 0.6666666666666666; rouge-score's
    # rougeL of SUMMARY against SUMMARY_REFERENCE: F 0.6666666666666665, no extracted answer, no note
    value, answer, explanation = await score_with("token_f1", "The Eiffel Tower, in Paris", "Eiffel Tower")
    assert value == pytest.approx(0.6666666666666666, abs=1e-12)
    assert answer == "eiffel tower in paris"
    assert explanation == "token F1 0.667 against 'Eiffel Tower' (best of 1)"
    value, answer, explanation = await score_with("rouge", SUMMARY, SUMMARY_REFERENCE)
    assert value == pytest.approx(0.6666666666666665, abs=1e-12)
    assert answer is None
    assert explanation == "rougeL fmeasure 0.667 (P 0.600 R 0.750 F 0.667; best of 1)"


async def test_the_record_keeps_what_each_scorer_read_from_the_tag() -> None:
    specs = [
        ScorerSpec(name="exact_match", args={"mode": "lenient"}),
        ScorerSpec(name="token_f1"),
        ScorerSpec(name="squad_em"),
        ScorerSpec(name="rouge"),
    ]
    result = await ScoringPipeline(specs).score(EIFFEL_XML, sample("the Eiffel Tower"))
    # lenient: "eiffel tower" vs "the eiffel tower" (articles kept) → 0; SQuAD: 1.0 and 1.0 (script);
    # rougeL by hand: LCS 2, P 2/2, R 2/3, F 0.8
    assert result.scores == pytest.approx({"exact_match": 0.0, "token_f1": 1.0, "squad_em": 1.0, "rouge": 0.8})
    assert result.answers == {
        "exact_match": "Eiffel Tower",
        "token_f1": "eiffel tower",
        "squad_em": "eiffel tower",
        "rouge": "Eiffel Tower",
    }


def test_the_public_functions_compare_the_strings_they_are_given() -> None:
    # SQuAD script: f1_score("<answer>Eiffel Tower</answer>", "the Eiffel Tower") = 0; rouge-score as above
    assert token_f1(EIFFEL_XML, "the Eiffel Tower") == 0.0
    assert exact_match("<answer>Paris</answer>", "Paris", "lenient") == 0.0  # by hand: "answer paris answer"
    whole = rouge(SUMMARY_XML, SUMMARY_REFERENCE)
    for variant, (precision, recall, fmeasure) in ROUGE_OF_THE_WHOLE_OUTPUT.items():
        measures = {"precision": precision, "recall": recall, "fmeasure": fmeasure}
        assert whole[variant] == pytest.approx(measures, abs=1e-12)
    assert token_f1(read_answer(EIFFEL_XML).text, "the Eiffel Tower") == 1.0  # the scorers' value, from Python
