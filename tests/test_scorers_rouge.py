"""ROUGE-1/2/L against Google's rouge-score 0.1.2.

Expected values were computed with ``rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"],
use_stemmer=...).score(reference, prediction)`` from rouge-score 0.1.2 (nltk 3.9) in a throwaway venv
and pasted here as constants.
"""

from __future__ import annotations

import random

import pytest

from eval_harness.errors import ConfigError
from eval_harness.scorers import build_scorer, rouge
from eval_harness.scorers.rouge import lcs_length, tokenize, unicode_tokenize
from eval_harness.types import Sample, ScorerSpec

PRF = tuple[float, float, float]

# name: (prediction, reference, use_stemmer, {variant: (precision, recall, fmeasure)}) — from rouge-score 0.1.2
REFERENCE: dict[str, tuple[str, str, bool, dict[str, PRF]]] = {
    "docstring": (
        "The quick brown dog jumps on the log.",
        "The quick brown fox jumps over the lazy dog",
        False,
        {
            "rouge1": (0.75, 0.6666666666666666, 0.7058823529411765),
            "rouge2": (0.2857142857142857, 0.25, 0.26666666666666666),
            "rougeL": (0.625, 0.5555555555555556, 0.5882352941176471),
        },
    ),
    "unicode": (
        "Café au lait in Zürich — naïve résumé 東京 2024",
        "cafe au lait zurich naive resume 2024",
        False,
        {
            "rouge1": (0.2727272727272727, 0.42857142857142855, 0.33333333333333326),
            "rouge2": (0.1, 0.16666666666666666, 0.125),
            "rougeL": (0.2727272727272727, 0.42857142857142855, 0.33333333333333326),
        },
    ),
    "separators": (
        "It cost $1,234.50 (approx.) in 2023!",
        "In 2023 it cost 1,234.50 dollars",
        False,
        {
            "rouge1": (0.875, 0.875, 0.875),
            "rouge2": (0.7142857142857143, 0.7142857142857143, 0.7142857142857143),
            "rougeL": (0.625, 0.625, 0.625),
        },
    ),
    "repeated_tokens": (
        "the the the cat",
        "the cat the mat the",
        False,
        {
            "rouge1": (1.0, 0.8, 0.888888888888889),
            "rouge2": (0.3333333333333333, 0.25, 0.28571428571428575),
            "rougeL": (0.75, 0.6, 0.6666666666666665),
        },
    ),
    "no_stemming": (
        "The runners were running quickly to the finishing line",
        "A runner runs quick to finish the lines",
        False,
        {
            "rouge1": (0.2222222222222222, 0.25, 0.23529411764705882),
            "rouge2": (0.0, 0.0, 0.0),
            "rougeL": (0.2222222222222222, 0.25, 0.23529411764705882),
        },
    ),
    "porter_stemming": (
        "The runners were running quickly to the finishing line",
        "A runner runs quick to finish the lines",
        True,
        {
            "rouge1": (0.6666666666666666, 0.75, 0.7058823529411765),
            "rouge2": (0.0, 0.0, 0.0),
            "rougeL": (0.5555555555555556, 0.625, 0.5882352941176471),
        },
    ),
}


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_scores_equal_the_rouge_score_package(case: str) -> None:
    prediction, reference, stem, expected = REFERENCE[case]
    got = rouge(prediction, reference, use_stemmer=stem)
    assert set(got) == {"rouge1", "rouge2", "rougeL"}
    for variant, (p, r, f) in expected.items():
        assert got[variant] == pytest.approx({"precision": p, "recall": r, "fmeasure": f}, abs=1e-12), variant


def test_very_long_texts_equal_the_rouge_score_package() -> None:
    prediction = " ".join(f"w{(i * i * 7 + 3) % 293}" for i in range(3000))
    reference = " ".join(f"w{(i * 31 + i // 7) % 293}" for i in range(2500))
    got = rouge(prediction, reference)
    expected = {  # rouge-score 0.1.2 (its quadratic LCS table took 5 s here)
        "rouge1": (0.421, 0.5052, 0.45927272727272733),
        "rouge2": (0.0030010003334444814, 0.003601440576230492, 0.00327391778828665),
        "rougeL": (0.09733333333333333, 0.1168, 0.10618181818181818),
    }
    for variant, (p, r, f) in expected.items():
        assert got[variant] == pytest.approx({"precision": p, "recall": r, "fmeasure": f}, abs=1e-12), variant


@pytest.mark.parametrize(("prediction", "reference"), [("", "the cat"), ("the cat", ""), ("", ""), ("東京", "東京")])
def test_no_tokens_on_either_side_gives_zeros(prediction: str, reference: str) -> None:
    zero = {"precision": 0.0, "recall": 0.0, "fmeasure": 0.0}
    assert rouge(prediction, reference) == {"rouge1": zero, "rouge2": zero, "rougeL": zero}


def test_tokenizer_lowercases_and_splits_on_everything_but_ascii_letters_and_digits() -> None:
    assert tokenize("Don't STOP—naïve 3.5km") == ["don", "t", "stop", "na", "ve", "3", "5km"]


def _lcs_table(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def test_bit_parallel_lcs_equals_the_dynamic_programming_table() -> None:
    rng = random.Random(3)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        assert lcs_length(a, b) == _lcs_table(a, b), (a, b)


async def test_scorer_reports_one_variant_and_measure_with_the_others_explained() -> None:
    scorer = build_scorer(ScorerSpec(name="rouge", args={"variant": "rouge1", "measure": "recall"}))
    prediction, reference, _, expected = REFERENCE["docstring"]
    score = await scorer.score(prediction, Sample(id="s", input="?", target=reference))
    assert score.value == pytest.approx(expected["rouge1"][1])
    assert score.explanation == "rouge1 recall 0.667 (P 0.750 R 0.667 F 0.706; best of 1)"


async def test_scorer_takes_the_best_reference_by_the_chosen_measure() -> None:
    scorer = build_scorer(ScorerSpec(name="rouge"))
    score = await scorer.score("the cat sat", Sample(id="s", input="?", target=["a dog ran", "the cat sat down"]))
    # best reference 'the cat sat down': LCS 3, P = 3/3, R = 3/4, F = 6/7 (by hand)
    assert score.value == pytest.approx(6 / 7)


def test_scorer_rejects_an_unknown_variant() -> None:
    with pytest.raises(ConfigError, match="unknown variant 'rouge3'"):
        build_scorer(ScorerSpec(name="rouge", args={"variant": "rouge3"}))


@pytest.mark.parametrize(
    ("measure", "expected"),
    [("recall", 0.625), ("precision", 0.8333333333333334), ("fmeasure", 0.7142857142857143)],
)
async def test_several_references_are_chosen_by_f_measure_whatever_the_measure(measure: str, expected: float) -> None:
    # rouge-score 0.1.2: RougeScorer(["rouge1"]).score_multi(targets, prediction) picks the reference by F and
    # gives (P, R, F) = (0.8333333333333334, 0.625, 0.7142857142857143); the best recall over references was 1.0
    scorer = build_scorer(ScorerSpec(name="rouge", args={"variant": "rouge1", "measure": measure}))
    targets = ["the cat", "cat sat on the mat today and tomorrow"]
    score = await scorer.score("the cat sat on the mat", Sample(id="s", input="?", target=targets))
    assert score.value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Кошка СИДЕЛА на ковре.", ["кошка", "сидела", "на", "ковре"]),
        ("猫坐在垫子上", ["猫", "坐", "在", "垫", "子", "上"]),
        ("GPT-4 的答案", ["gpt", "4", "的", "答", "案"]),
        ("Straße ＡＢＣ naïve", ["strasse", "abc", "naïve"]),  # case-folded, full-width letters by NFKC
        ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # vowel signs are marks inside a word, not separators
        ("สวัสดี ครับ", ["สวัสดี", "ครับ"]),
    ],
)
def test_unicode_tokenizer_keeps_letters_of_every_script(text: str, tokens: list[str]) -> None:
    assert unicode_tokenize(text) == tokens


@pytest.mark.parametrize(
    ("variant", "prediction", "reference", "expected"),
    [
        # by hand: tokens кошка сидела на ковре / кошка сидит на ковре: 3 of 4 unigrams, LCS 3, 1 of 3 bigrams
        ("rouge1", "Кошка сидела на ковре", "кошка сидит на ковре", 0.75),
        ("rougeL", "Кошка сидела на ковре", "кошка сидит на ковре", 0.75),
        ("rouge2", "Кошка сидела на ковре", "кошка сидит на ковре", 1 / 3),
        # by hand: 6 characters against 5, all 5 shared and in order: P 5/6, R 1, F 10/11
        ("rougeL", "猫坐在垫子上", "猫在垫子上", 10 / 11),
    ],
)
async def test_the_unicode_tokenizer_scores_non_latin_text(
    variant: str, prediction: str, reference: str, expected: float
) -> None:
    scorer = build_scorer(ScorerSpec(name="rouge", args={"variant": variant, "tokenizer": "unicode"}))
    score = await scorer.score(prediction, Sample(id="s", input="?", target=reference))
    assert score.value == pytest.approx(expected, abs=1e-12)


async def test_a_non_latin_reference_under_rouge_score_tokens_is_an_error_naming_the_fix() -> None:
    scorer = build_scorer(ScorerSpec(name="rouge"))
    with pytest.raises(ValueError, match='set tokenizer = "unicode"'):
        await scorer.score("кошка сидит на ковре", Sample(id="s", input="?", target="кошка сидит на ковре"))


async def test_accented_latin_text_stays_with_rouge_score_tokens() -> None:
    scorer = build_scorer(ScorerSpec(name="rouge", args={"variant": "rouge1"}))
    score = await scorer.score("un été très chaud", Sample(id="s", input="?", target="un été très chaud"))
    # rouge-score splits at é and è: un, t, tr, s, chaud on both sides, so the score is 1.0
    assert score.value == 1.0


def test_an_unknown_tokenizer_is_refused_when_the_task_loads() -> None:
    with pytest.raises(ConfigError, match="unknown tokenizer 'spacy'"):
        build_scorer(ScorerSpec(name="rouge", args={"tokenizer": "spacy"}))


async def test_one_latin_reference_among_others_keeps_rouge_score_tokens() -> None:
    scorer = build_scorer(ScorerSpec(name="rouge", args={"variant": "rouge1"}))
    score = await scorer.score("Moscow", Sample(id="s", input="?", target=["Moscow", "Москва"]))
    assert score.value == 1.0
