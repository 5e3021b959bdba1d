"""The built-in tasks end to end with the mock model, and the real-dataset tasks on the original files.

A mock with skill=1 answers every sample with its mapped target, so a score of 1.0 checks the whole chain:
field mapping, template, letter/number extraction and scorers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED, CliResult, read_records

from eval_harness.datasets import iter_samples, validate_dataset
from eval_harness.scorers import ScoringPipeline
from eval_harness.scorers.exact import extract_number
from eval_harness.scorers.instructions import run_check
from eval_harness.tasks import find_task
from eval_harness.templates import load_template
from eval_harness.types import TARGET_PATTERN_FLAGS, DatasetSpec, Sample

Cli = Callable[..., CliResult]
BUNDLED = ["multiple_choice", "short_answer_qa", "summarization", "instruction_following", "math_cot"]
DATASETS = SHARED / "datasets"
MMLU_SUBJECTS = [
    "abstract_algebra", "anatomy", "college_computer_science", "elementary_mathematics", "global_facts",
    "high_school_computer_science", "high_school_geography", "machine_learning", "world_religions",
]  # fmt: skip
"""The nine subjects of each split in ../shared/datasets/mmlu (its SHA256SUMS lists 27 files)."""


def needs(*files: str) -> pytest.MarkDecorator:
    """Skip unless every one of ``files`` (relative to the shared datasets) is there: a partial copy skips too."""
    missing = [name for name in files if not (DATASETS / name).is_file()]
    return pytest.mark.skipif(bool(missing), reason=f"{DATASETS}: {', '.join(missing)} absent (shared real datasets)")


def mmlu_split(split: str) -> list[str]:
    return [f"mmlu/{split}/{subject}_{split}.csv" for subject in MMLU_SUBJECTS]


@pytest.mark.parametrize("name", [*BUNDLED, "gsm8k", "mmlu"])
def test_task_spec_template_and_scorers_load_without_a_judge(name: str) -> None:
    task = find_task(name)
    load_template(task.templates_dir, task.spec.template, task.spec.system_prompt, task.spec.template_vars)
    assert ScoringPipeline(task.spec.scorers, None, str(task.path)).steps


@pytest.mark.parametrize("name", ["multiple_choice", "short_answer_qa", "summarization", "instruction_following"])
def test_bundled_dataset_is_valid_with_at_least_20_items_on_several_axes(name: str) -> None:
    task = find_task(name)
    report = validate_dataset(task.dataset_path(), task.spec.dataset)
    assert report.ok, report.problem_lines()
    assert report.valid >= 20 and len(report.axis_counts) >= 2


def test_every_instruction_following_target_passes_its_own_checks() -> None:
    task = find_task("instruction_following")
    for sample in iter_samples(task.dataset_path(), task.spec.dataset):
        for check in sample.metadata["checks"]:
            passed, why = run_check(sample.targets[0], check)
            assert passed, f"{sample.id}: {check}: {why}"


def _run(cli: Cli, tmp_path: Path, task: str, *extra: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    result = cli("run", "--task", task, "--model", "mock/x", *extra, "--output-dir", tmp_path, "--run-id", "r", "-q")
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    return summary, read_records(tmp_path / "r")


@pytest.mark.parametrize("name", ["multiple_choice", "short_answer_qa", "instruction_following", "math_cot"])
def test_a_perfect_mock_scores_one_on_every_sample(cli: Cli, tmp_path: Path, name: str) -> None:
    summary, records = _run(cli, tmp_path, name, "--model-arg", "skill=1")
    assert summary["overall"]["mean"] == 1.0
    assert all(r["error"] is None for r in records)


@pytest.mark.parametrize("name", ["multiple_choice", "math_cot"])
def test_a_hopeless_mock_scores_zero(cli: Cli, tmp_path: Path, name: str) -> None:
    summary, _ = _run(cli, tmp_path, name, "--model-arg", "skill=0")
    assert summary["overall"]["mean"] == 0.0


def test_summarization_without_a_judge_scores_rouge_and_faithfulness_and_says_the_judge_was_skipped(
    cli: Cli, tmp_path: Path
) -> None:
    _, records = _run(cli, tmp_path, "summarization", "--model-arg", "skill=1")
    assert all(r["scores"]["rougeL"] == 1.0 and "judge" not in r["scores"] for r in records)
    assert all(r["score"] == (3 * 1.0 + r["scores"]["faithfulness"]) / 4 for r in records)
    assert {r["explanations"]["judge"] for r in records} == {
        "skipped: no judge model configured (pass --judge-model to use this scorer)"
    }


ARTICLE = (  # a news article of XSum's kind (they run to hundreds of words), written for this test
    "Reading council has approved a plan to rebuild the town's flood defences after the river burst its banks "
    "twice last winter, flooding 300 homes. Work on the 12 million pound scheme starts in March and is expected "
    "to take two years. Residents of the worst-hit streets had waited months for a decision, and many are still "
    "living in rented rooms while their houses dry out. The council leader said the new walls and pumps would "
    "protect the town centre for the next fifty years. Engineers will raise the embankment by a metre along the "
    "stretch beside the station, where the water first came over. The Environment Agency will pay half of the "
    "cost, and local businesses have been asked to contribute. Some shop owners said the plan came too late for "
    "them, after two closures in a single season. A public meeting about the timetable will be held next week."
)
SUMMARY = "Reading's flood defences will be rebuilt after two floods last winter hit 300 homes."


@pytest.mark.parametrize(
    ("output", "passes"),
    [
        (SUMMARY, True),  # the reference itself
        ("Reading council will rebuild the flood defences after floods hit 300 homes.", True),  # a fair paraphrase
        ("Reading", False),  # one word of the article: fully "faithful", says nothing
        (ARTICLE, False),  # the whole article copied: faithful, not a summary
    ],
)
async def test_summarization_passes_a_summary_not_a_faithful_fragment(output: str, passes: bool) -> None:
    # faithfulness checks only that what is said is in the article, so it must not carry a summary alone
    task = find_task("summarization")
    pipeline = ScoringPipeline(task.spec.scorers, None, str(task.path))
    sample = Sample(id="s", input=ARTICLE, target=SUMMARY)
    result = await pipeline.score(output, sample)
    assert result.final is not None
    assert (result.final >= task.spec.pass_threshold) is passes, result.scores


def test_math_cot_records_why_its_reasoning_judge_did_not_run(cli: Cli, tmp_path: Path) -> None:
    _, records = _run(cli, tmp_path, "math_cot", "--model-arg", "skill=0.5", "--limit", "10")
    reasons = {r["explanations"]["reasoning_judge"] for r in records}
    assert reasons == {
        "skipped: exact_match == 0 is decisive",
        "skipped: no judge model configured (pass --judge-model to use this scorer)",
    }


@needs("gsm8k/test.jsonl")
def test_gsm8k_runs_on_the_original_file(cli: Cli, tmp_path: Path) -> None:
    summary, records = _run(
        cli,
        tmp_path,
        "gsm8k",
        "--dataset",
        DATASETS / "gsm8k" / "test.jsonl",
        "--model-arg",
        "skill=1",
        "--limit",
        "20",
    )
    assert summary["records"] == 20 and summary["overall"]["mean"] == 1.0
    assert records[0]["target"] == "18"  # Janet's ducks: '#### 18'
    prompt = records[0]["prompt"][-1]["content"]
    assert prompt.count("The answer is") == 5 and "Janet" in prompt  # 4 worked examples, then the question


@needs("gsm8k/test.jsonl")
def test_gsm8k_validates_cleanly(cli: Cli) -> None:
    result = cli("validate-dataset", "--task", "gsm8k", "--path", DATASETS / "gsm8k" / "test.jsonl")
    assert result.code == 0, result.out + result.err
    assert "1,319 valid" in result.out and "0 problems" in result.out


@needs("gsm8k/test.jsonl")
def test_every_gsm8k_target_is_a_number() -> None:
    task = find_task("gsm8k")
    targets = [s.targets[0] for s in iter_samples(DATASETS / "gsm8k" / "test.jsonl", task.spec.dataset)]
    assert len(targets) == 1319 and all(extract_number(t) is not None for t in targets)


GSM8K_ANSWERS = {  # an answer as written → the target gsm8k's target_pattern reads (None: a problem on its line)
    "5 * 3 = <<5*3=15>>15 eggs.\n#### 15": "15",
    "#### 1,000  \n": "1,000",  # trailing blanks and the line's end are not the answer
    "####\n  42\n\n": "42",  # the marker's line may end before it
    "#### 42 dollars": "42 dollars",  # the number is extract_number's to find
    "#### #### 5": "#### 5",  # the first marker is the one
    "#### 42\nmore text": "42",  # the answer's line only
    "#### 4 2\t\r\n": "4 2",
    "####   ": None,  # nothing after the marker: "is empty"
    "no marker": None,  # "does not match target_pattern"
}


def test_gsm8k_target_pattern_reads_the_answer_after_the_marker(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    lines = [{"id": str(i), "question": "q", "answer": answer} for i, answer in enumerate(GSM8K_ANSWERS)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    spec = find_task("gsm8k").spec.dataset
    report = validate_dataset(path, spec)
    read = {sample.id: sample.targets[0] for sample in iter_samples(path, spec)}
    expected = {str(i): target for i, target in enumerate(GSM8K_ANSWERS.values()) if target is not None}
    assert read == expected
    refused = [i + 1 for i, target in enumerate(GSM8K_ANSWERS.values()) if target is None]
    assert [(p.line, p.field) for p in report.problems] == [(line, "answer") for line in refused]


def test_gsm8k_target_pattern_is_linear_in_a_run_of_blanks() -> None:
    # the lazy pattern it replaced tried every split of a run of blanks inside the answer (2.7 s for 20,000; this
    # would take minutes). Python cannot interrupt a match, so it runs in a process of its own
    spec = find_task("gsm8k").spec.dataset
    answer = "'#### x' + ' ' * 200_000 + 'y'"
    code = f"import re; assert re.search({spec.target_pattern!r}, {answer}, {TARGET_PATTERN_FLAGS}).group(1)[-1] == 'y'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=20)


@needs("mmlu/test/anatomy_test.csv", "mmlu/dev/anatomy_dev.csv")
def test_mmlu_runs_on_the_original_file_with_five_shots_from_the_dev_file(cli: Cli, tmp_path: Path) -> None:
    test_file = DATASETS / "mmlu" / "test" / "anatomy_test.csv"
    summary, records = _run(cli, tmp_path, "mmlu", "--dataset", test_file, "--model-arg", "skill=1", "--limit", "20")
    assert summary["records"] == 20 and summary["overall"]["mean"] == 1.0
    assert [a["axis"] for a in summary["axes"]] == ["anatomy"]
    prompt = records[0]["prompt"][-1]["content"]
    assert prompt.startswith("The following are multiple choice questions (with answers) about anatomy.")
    assert prompt.count("Answer: ") == 5 and "What is the embryological origin of the hyoid bone?" in prompt


@needs(*mmlu_split("test"), *mmlu_split("dev"))
def test_mmlu_runs_a_directory_of_subjects_as_one_profile_each_with_its_own_dev_shots(cli: Cli, tmp_path: Path) -> None:
    # before: one subject file per run ("cannot read the dataset: it is a directory")
    test_dir, spec = DATASETS / "mmlu" / "test", find_task("mmlu").spec.dataset
    summary, records = _run(cli, tmp_path, "mmlu", "--dataset", test_dir, "--model-arg", "skill=1")
    counts = {subject: validate_dataset(test_dir / f"{subject}_test.csv", spec).valid for subject in MMLU_SUBJECTS}
    assert summary["records"] == len(records) == sum(counts.values())
    assert {a["axis"]: a["n"] for a in summary["axes"]} == counts and summary["overall"]["mean"] == 1.0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["dataset"]["files"] == [f"{subject}_test.csv" for subject in MMLU_SUBJECTS]
    assert manifest["dataset"]["path"] == str(test_dir.resolve()) and manifest["dataset"]["seekable"] is False
    first = {}
    for record in records:
        assert record["dataset_file"] == f"{record['axis']}_test.csv"
        first.setdefault(record["axis"], record)
    for subject, record in first.items():  # each subject's prompt shows its own dev file's five questions
        shots = [s.input for s in iter_samples(DATASETS / "mmlu" / "dev" / f"{subject}_dev.csv", spec)]
        prompt = record["prompt"][-1]["content"]
        assert len(shots) == 5 and all(str(shot) in prompt for shot in shots), subject
        assert record["dataset_line"] == 1 and prompt.count("Answer: ") == 5


@pytest.mark.parametrize("split", [pytest.param(s, marks=needs(*mmlu_split(s))) for s in ("test", "dev", "val")])
def test_every_mmlu_file_maps_to_four_choices_and_a_letter(split: str) -> None:
    spec = find_task("mmlu").spec.dataset
    paths = sorted((DATASETS / "mmlu" / split).glob("*.csv"))
    assert [str(p.relative_to(DATASETS)) for p in paths] == mmlu_split(split)
    for path in paths:
        report = validate_dataset(path, spec)
        assert report.ok, report.problem_lines()
        subject = path.name.rsplit("_", 1)[0]
        assert set(report.axis_counts) == {subject}
        assert all(len(s.choices or []) == 4 and s.target in {"A", "B", "C", "D"} for s in iter_samples(path, spec))


@needs("xsum/test.jsonl")
def test_xsum_maps_onto_the_summarization_task_except_its_one_empty_document() -> None:
    report = validate_dataset(DATASETS / "xsum" / "test.jsonl", find_task("summarization").spec.dataset)
    assert report.valid == 999
    assert [str(p).rsplit("/", 1)[-1] for p in report.problems] == ["test.jsonl:220: document: is empty"]


@needs("openbookqa/test.jsonl")
def test_openbookqa_maps_its_gold_letter_with_a_target_pattern() -> None:
    spec = DatasetSpec(fields={"input": "question", "target": "answer"}, target_pattern=r"^([A-D])\.")
    path = DATASETS / "openbookqa" / "test.jsonl"
    samples = list(iter_samples(path, spec))
    assert validate_dataset(path, spec).ok and len(samples) == 500  # the last line has no newline
    assert {s.targets[0] for s in samples} == set("ABCD")
    assert samples[0].metadata["options"].startswith("A. make more phone calls\nB. quit eating lunch out")
