"""Scorer arguments are checked against the factory's annotations: text from ``--scorer`` becomes a real bool or
number, and a value of the wrong type is a one-line ``ConfigError`` naming the spec, the scorer and the argument."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records

from eval_harness.errors import ConfigError
from eval_harness.scorers import build_scorer
from eval_harness.types import Sample, ScorerSpec

Cli = Callable[..., CliResult]

# The mock answers a text sample wrongly (skill=0) by rotating its target one character: this target comes back as
# "top the dog and the cats", which shares more with it once "cats" is stemmed to "cat".
STEM_TARGET = "stop the dog and the cat"
STEM_OUTPUT = "top the dog and the cats"
# By hand: target tokens [stop the dog and the cat], output tokens [top the dog and the cats].
# Unstemmed, the longest common subsequence is "the dog and the" (4 of 6 tokens each side): P = R = F = 4/6.
# Stemmed (rouge-score stems tokens longer than 3 characters: cats -> cat, stop -> stop), "cat" matches too: 5/6.
# rouge-score 0.1.2 in a throwaway venv agrees: RougeScorer(["rougeL"], use_stemmer=False/True).score(target, output)
# gives fmeasure 0.6666666666666666 / 0.8333333333333334.
ROUGE_L_UNSTEMMED = 4 / 6
ROUGE_L_STEMMED = 5 / 6


def one_line_error(result: CliResult, message: str) -> None:
    assert result.code == 2, result.err
    assert message in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def spec_task(task_root: TaskRoot, name: str, scorer: str, dataset: str = "data/adder.jsonl") -> Path:
    return task_root.task(
        name,
        f'name = "{name}"\ntemplate = "plain.jinja2"\n[dataset]\npath = "{dataset}"\n[[scorers]]\n{scorer}\n',
    )


def run(cli: Cli, task: Path, out: Path, *args: str) -> CliResult:
    return cli("run", "--task", task, "--model", "mock/m", "--output-dir", out, "-q", *args)


@pytest.fixture
def stem_run(cli: Cli, task_root: TaskRoot) -> Path:
    """A finished run whose one record holds STEM_OUTPUT for the target STEM_TARGET."""
    task_root.data("stem.jsonl", [{"id": "s1", "input": "a document", "target": STEM_TARGET}])
    task = spec_task(task_root, "stem", 'name = "rouge"', dataset="data/stem.jsonl")
    out = task_root.root / "results"
    result = run(cli, task, out, "--model-arg", "skill=0", "--run-id", "src")
    assert result.code == 0, result.err
    (record,) = read_records(out / "src")
    assert record["output"] == STEM_OUTPUT
    return out / "src"


# -- a value of the wrong type in a task spec -------------------------------------------------------------


def test_an_int_for_a_string_argument_is_refused_by_build_scorer() -> None:
    with pytest.raises(ConfigError) as caught:
        build_scorer(ScorerSpec(name="choice", args={"letters": 5}), where="tasks/t.toml")
    assert str(caught.value) == "tasks/t.toml: scorer 'choice': letters: Input should be a valid string (got 5)"


def test_an_int_for_a_string_argument_in_a_task_spec_is_a_config_error(cli: Cli, task_root: TaskRoot) -> None:
    task = spec_task(task_root, "letters", 'name = "choice"\nargs = { letters = 5 }')
    result = run(cli, task, task_root.root / "results")
    one_line_error(result, f"{task}:5: scorer 'choice': letters: Input should be a valid string (got 5)")
    assert not (task_root.root / "results").exists()


def test_a_bad_argument_of_a_composite_part_names_the_part() -> None:
    parts = [{"name": "choice", "args": {"letters": 5}}]
    with pytest.raises(ConfigError, match=r"^t\.toml: scorer 'choice': letters: Input should be a valid string"):
        build_scorer(ScorerSpec(name="composite", args={"scorers": parts}), where="t.toml")


def test_a_bool_for_a_number_argument_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^t\.toml: scorer 'exact_match': tolerance: Input should be a valid number"):
        build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric", "tolerance": True}), where="t.toml")


def test_a_non_finite_number_argument_is_refused() -> None:
    spec = ScorerSpec(name="exact_match", args={"mode": "numeric", "tolerance": float("inf")})
    with pytest.raises(
        ConfigError, match=r"^t\.toml: scorer 'exact_match': tolerance: Input should be a finite number"
    ):
        build_scorer(spec, where="t.toml")


# -- embedding_similarity timeout_s = "x", rubric_judge samples = "x" -----------------------------------------


def test_text_that_is_not_a_number_is_refused_when_the_scorer_is_built() -> None:
    spec = ScorerSpec(name="embedding_similarity", args={"timeout_s": "x", "cache": False})
    with pytest.raises(ConfigError) as caught:
        build_scorer(spec, where="--scorer", text_args=True)
    assert str(caught.value) == (
        "--scorer: scorer 'embedding_similarity': timeout_s: Input should be a valid number, "
        "unable to parse string as a number (got 'x')"
    )


def test_a_bad_timeout_in_a_task_spec_stops_the_run_before_any_sample(cli: Cli, task_root: TaskRoot) -> None:
    task = spec_task(task_root, "embed", 'name = "embedding_similarity"\nargs = { timeout_s = "x", cache = false }')
    result = run(cli, task, task_root.root / "results")
    one_line_error(result, f"{task}:5: scorer 'embedding_similarity': timeout_s: Input should be a valid number")
    assert not (task_root.root / "results").exists()


def test_a_judge_sample_count_that_is_not_a_number_is_named() -> None:
    args = {"rubric": "judge_summary.jinja2", "criteria": ["quality"], "samples": "x", "optional": True}
    with pytest.raises(ConfigError, match=r"^t\.toml: scorer 'rubric_judge': samples: Input should be a valid integer"):
        build_scorer(ScorerSpec(name="rubric_judge", args=args), where="t.toml")


def test_text_for_a_bool_in_a_task_spec_is_refused_not_converted(cli: Cli, task_root: TaskRoot) -> None:
    # audit-s21-input 13: a spec's "no" was read as false ("yes" as true), where the README says a spec's values
    # must already have their type; text is converted only as --scorer gives it
    scorer = (
        'name = "rubric_judge"\nargs = { rubric = "judge_summary.jinja2", criteria = ["quality"], optional = "no" }'
    )
    task = spec_task(task_root, "judged", scorer)
    result = run(cli, task, task_root.root / "results", "--limit", "2")
    one_line_error(result, f"{task}:5: scorer 'rubric_judge': optional: Input should be a valid boolean (got 'no')")


# -- bools from the command line --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["false", "0", "no"])
def test_false_text_turns_stemming_off(text: str) -> None:
    scorer = build_scorer(ScorerSpec(name="rouge", args={"use_stemmer": text}), text_args=True)
    score = asyncio.run(scorer.score(STEM_OUTPUT, Sample(id="s", input="d", target=STEM_TARGET)))
    assert score.value == pytest.approx(ROUGE_L_UNSTEMMED)


def test_rescore_with_use_stemmer_false_gives_the_unstemmed_score(cli: Cli, stem_run: Path) -> None:
    scores = {}
    for argument in ("rouge:use_stemmer=false", "rouge:use_stemmer=true"):
        run_id = re.sub(r"\W", "-", argument)
        result = cli("rescore", "--run", stem_run, "--scorer", argument, "--run-id", run_id, "-q")
        assert result.code == 0, result.err
        (record,) = read_records(stem_run.parent / run_id)
        scores[argument] = record["scores"]["rouge"]
    assert scores["rouge:use_stemmer=false"] == pytest.approx(ROUGE_L_UNSTEMMED)
    assert scores["rouge:use_stemmer=true"] == pytest.approx(ROUGE_L_STEMMED)


# -- numbers from the command line ------------------------------------------------------------------------


def test_a_numeric_tolerance_given_as_text_is_a_number() -> None:
    scorer = build_scorer(ScorerSpec(name="exact_match", args={"mode": "numeric", "tolerance": "0.5"}), text_args=True)
    sample = Sample(id="s", input="q", target="3")
    assert asyncio.run(scorer.score("3.4", sample)).value == 1.0
    assert asyncio.run(scorer.score("3.6", sample)).value == 0.0


def test_rescore_takes_a_numeric_tolerance_and_records_it_as_given(cli: Cli, task_root: TaskRoot) -> None:
    out = task_root.root / "results"
    assert (
        run(cli, task_root.root / "tasks" / "adder.toml", out, "--model-arg", "skill=0.5", "--run-id", "src").code == 0
    )
    argument = "exact_match:mode=numeric,tolerance=0.5"
    result = cli("rescore", "--run", out / "src", "--scorer", argument, "--run-id", "tol", "-q")
    assert result.code == 0, result.err
    manifest = json.loads((out / "tol" / "manifest.json").read_text())
    assert manifest["task"]["scorers"][0]["args"] == {"mode": "numeric", "tolerance": "0.5"}
    # the mock's wrong numbers are off by at least 1, so a tolerance of 0.5 scores as the source's numeric match did
    before = {r["sample_id"]: r["score"] for r in read_records(out / "src")}
    after = {r["sample_id"]: r["score"] for r in read_records(out / "tol")}
    assert after == before and 0.0 in after.values() and 1.0 in after.values()


def test_a_non_finite_number_from_the_command_line_is_refused(cli: Cli, stem_run: Path) -> None:
    result = cli("rescore", "--run", stem_run, "--scorer", "exact_match:mode=numeric,tolerance=inf", "-q")
    one_line_error(result, "--scorer: scorer 'exact_match': tolerance: Input should be a finite number (got 'inf')")


def test_an_unknown_scorer_argument_is_named_with_the_arguments_the_scorer_takes() -> None:
    # audit-s21-input 16: "got an unexpected keyword argument 'modee'" named none of those it takes
    with pytest.raises(ConfigError) as caught:
        build_scorer(ScorerSpec(name="exact_match", args={"modee": "strict"}), where="t.toml:5")
    assert str(caught.value) == (
        "t.toml:5: scorer 'exact_match': unknown argument 'modee'; did you mean 'mode'? (known: mode, tolerance)"
    )
