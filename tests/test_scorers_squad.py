"""SQuAD v1.1 token F1 and exact match.

Expected values were computed with the functions of the official evaluate-v1.1.py script (normalize_answer,
f1_score, exact_match_score, metric_max_over_ground_truths) run in a throwaway venv, and checked by hand
for the first rows (e.g. 'The Nile River' vs 'Nile': P = 1/2, R = 1, F1 = 2/3).
"""

from __future__ import annotations

import pytest

from eval_harness.errors import ConfigError
from eval_harness.scorers import build_scorer, token_f1
from eval_harness.scorers.squad import normalize_answer, normalize_unicode, squad_exact_match
from eval_harness.types import Sample, ScorerSpec

# (prediction, reference, f1, exact match) from the official SQuAD v1.1 script.
OFFICIAL = [
    ("The Nile River", "Nile", 0.6666666666666666, 0.0),
    ("Nile", "the Nile River", 0.6666666666666666, 0.0),
    ("in 1989, after the wall fell", "1989", 0.33333333333333337, 0.0),
    ("Gabriel García Márquez", "Gabriel Garcia Marquez", 0.3333333333333333, 0.0),  # accents are not folded
    ("", "", 0.0, 1.0),  # v1.1: no common token means F1 0, even for two empty answers
    ("", "Paris", 0.0, 0.0),
    ("the the the", "the", 0.0, 1.0),  # articles vanish on both sides
    ("cat cat dog", "cat dog dog", 0.6666666666666666, 0.0),  # bag-of-tokens overlap
    ("An apple a day", "apple day", 1.0, 1.0),
    ("U.S.A.", "USA", 1.0, 1.0),
    ("it's 3.5%", "its 35", 1.0, 1.0),
]


@pytest.mark.parametrize(("prediction", "reference", "f1", "em"), OFFICIAL)
def test_token_f1_matches_the_official_script(prediction: str, reference: str, f1: float, em: float) -> None:
    assert token_f1(prediction, reference) == pytest.approx(f1, abs=1e-12)


@pytest.mark.parametrize(("prediction", "reference", "f1", "em"), OFFICIAL)
def test_exact_match_matches_the_official_script(prediction: str, reference: str, f1: float, em: float) -> None:
    assert squad_exact_match(prediction, reference) == em


def test_normalisation_drops_case_punctuation_and_articles() -> None:
    assert normalize_answer("  The  Quick, brown FOX!  ") == "quick brown fox"


async def test_scorer_takes_the_maximum_over_references() -> None:
    # metric_max_over_ground_truths(f1_score, 'Nile River delta', [...]) = 0.8 with the official script
    scorer = build_scorer(ScorerSpec(name="token_f1"))
    score = await scorer.score(
        "Nile River delta", Sample(id="q", input="?", target=["Nile", "the Nile River", "Egypt"])
    )
    assert score.value == pytest.approx(0.8, abs=1e-12)
    assert score.explanation == "token F1 0.800 against 'the Nile River' (best of 3)"


async def test_em_scorer_matches_any_reference_after_normalisation() -> None:
    scorer = build_scorer(ScorerSpec(name="squad_em"))
    score = await scorer.score("The Titanic.", Sample(id="q", input="?", target=["RMS Titanic", "titanic"]))
    assert (score.value, score.answer) == (1.0, "titanic")


def test_tied_references_give_the_same_value_whichever_comes_first() -> None:
    assert token_f1("red car", "red bus") == token_f1("red car", "blue car") == 0.5


def test_long_answers_are_scored_as_bags_of_tokens() -> None:
    prediction = " ".join(["alpha"] * 5000 + ["beta"] * 5000)
    reference = " ".join(["alpha"] * 10000)
    # common = 5000, P = 5000/10000, R = 5000/10000 → F1 = 0.5 (by hand)
    assert token_f1(prediction, reference) == 0.5


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("«Война и мир»", "война и мир"),  # guillemets are punctuation in every script
        ("猫坐在垫子上。", "猫 坐 在 垫 子 上"),  # the ideographic full stop goes, each character a token
        ("The GPT-4 的答案!", "gpt4 的 答 案"),  # as in the v1.1 script, punctuation goes without a space
        ("Ｔｏｋｙｏ", "tokyo"),  # full-width letters by NFKC
    ],
)
def test_unicode_normalisation_drops_punctuation_of_every_script(text: str, normalized: str) -> None:
    assert normalize_unicode(text) == normalized


@pytest.mark.parametrize(
    ("name", "prediction", "reference", "expected"),
    [
        # by hand: 猫 坐 在 垫 子 上 against 猫 在 垫 子 上: 5 common of 6 and 5, P 5/6, R 1, F1 10/11
        ("token_f1", "猫坐在垫子上。", "猫在垫子上", 10 / 11),
        # by hand: «Война и мир» -> война и мир on both sides; the squad tokenizer gave F1 1/3 (only и shared)
        ("token_f1", "«Война и мир»", "Война и мир", 1.0),
        ("squad_em", "«Война и мир»", "Война и мир", 1.0),
    ],
)
async def test_the_unicode_tokenizer_scores_other_scripts(
    name: str, prediction: str, reference: str, expected: float
) -> None:
    scorer = build_scorer(ScorerSpec(name=name, args={"tokenizer": "unicode"}))
    score = await scorer.score(prediction, Sample(id="q", input="?", target=reference))
    assert score.value == pytest.approx(expected, abs=1e-12)


async def test_a_chinese_reference_under_squad_tokens_is_an_f1_error_naming_the_fix() -> None:
    scorer = build_scorer(ScorerSpec(name="token_f1"))
    with pytest.raises(ValueError, match='set tokenizer = "unicode"'):
        await scorer.score("猫在垫子上", Sample(id="q", input="?", target=["猫在垫子上", "猫坐在垫子上"]))


@pytest.mark.parametrize(
    ("name", "prediction", "target", "expected"),
    [
        # mostly English with a few characters: the official script scores it (tokens yuan, dynasty, (元朝) -> 元朝)
        ("token_f1", "the Yuan dynasty", "Yuan dynasty (元朝)", 0.8),
        # one reference a whitespace tokenizer can read is enough
        ("token_f1", "cat", ["cat", "猫在垫子上"], 1.0),
        # exact match compares whole strings, whatever the script
        ("squad_em", "東京", "東京", 1.0),
    ],
)
async def test_references_a_whitespace_tokenizer_can_use_are_scored_as_the_official_script_does(
    name: str, prediction: str, target: str | list[str], expected: float
) -> None:
    # by hand: yuan dynasty vs yuan dynasty 元朝 (punctuation dropped): P 2/2, R 2/3, F1 0.8
    score = await build_scorer(ScorerSpec(name=name)).score(prediction, Sample(id="q", input="?", target=target))
    assert score.value == pytest.approx(expected, abs=1e-12)


async def test_unicode_exact_match_drops_ascii_symbols_as_mlqa_does() -> None:
    # MLQA's normalize_answer removes string.punctuation ($ + < = > ^ ` | ~ among it) besides Unicode punctuation
    scorer = build_scorer(ScorerSpec(name="squad_em", args={"tokenizer": "unicode"}))
    assert (await scorer.score("$100", Sample(id="q", input="?", target="100"))).value == 1.0


def test_an_unknown_tokenizer_is_refused_when_the_task_loads() -> None:
    with pytest.raises(ConfigError, match="unknown tokenizer 'jieba'"):
        build_scorer(ScorerSpec(name="token_f1", args={"tokenizer": "jieba"}))
