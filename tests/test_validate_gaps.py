"""Holes in dataset validation, closed: an MMLU answer that is not a choice letter, a CSV (or any
non-JSON text) given to a task that reads JSONL (and JSONL given to the CSV task), and an empty target.

Each is checked through the library (``validate.validate``, which the command calls), through the real
``eval-harness validate-dataset`` command (exit 1) and through ``eval-harness run``, which refuses to start
(exit 2, nothing written): the problem names file, line and field, and there is no traceback. The commands
run from ``tmp_path`` with a relative path so a problem line stays short enough not to be wrapped by the
console.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SHARED, CliResult, write_jsonl

from eval_harness.datasets import validate_dataset
from eval_harness.tasks import find_task
from eval_harness.validate import validate

Cli = Callable[..., CliResult]
MMLU = SHARED / "datasets" / "mmlu"

_GOOD_ROW = '"Which, of these?",one,two,three,four,C\n'


def _refused_run(cli: Cli, task: str, dataset: str) -> str:
    """Run ``task`` on ``dataset`` (relative to the current directory, which is the test's tmp_path): the
    run must be refused before it starts (exit 2, no results directory, no traceback); its stderr."""
    result = cli("run", "--task", task, "--dataset", dataset, "--model", "mock/x", "-q")
    assert result.code == 2
    assert "Traceback" not in result.out + result.err
    assert not Path("results").exists()
    return result.err


def _mmlu_file(tmp_path: Path, answer: str) -> Path:
    path = tmp_path / "anatomy_test.csv"
    path.write_text(_GOOD_ROW + f'"Second ""q""",a,b,c,d,{answer}\n', encoding="utf-8")
    return path


# --- 1. MMLU: the answer column must be one of the choice letters ---------------------------------------


@pytest.mark.parametrize("answer", ["E", "a)", "2", '""', "AB"])
def test_mmlu_answer_that_is_not_a_choice_letter_is_a_problem_on_its_line(tmp_path: Path, answer: str) -> None:
    path = _mmlu_file(tmp_path, answer)
    report = validate(path, "mmlu")
    assert not report.ok and report.valid == 1
    (problem,) = report.problem_lines()
    assert problem.startswith(f"{path}:2: answer: ")


def test_mmlu_answer_problem_says_which_letters_are_expected(tmp_path: Path) -> None:
    path = _mmlu_file(tmp_path, "E")
    assert validate(path, "mmlu").problem_lines() == [
        f"{path}:2: answer: expected one of the choice letters A, B, C, D, got 'E'"
    ]


@pytest.mark.parametrize("answer", ["b", " C", "D "])
def test_mmlu_answer_letter_in_lower_case_or_with_spaces_is_accepted(tmp_path: Path, answer: str) -> None:
    # the choice scorer reads a target letter case-insensitively after stripping; validation is no stricter
    path = _mmlu_file(tmp_path, answer)
    report = validate(path, "mmlu")
    assert report.ok, report.problem_lines()
    assert report.valid == 2


def test_validate_dataset_command_refuses_an_mmlu_answer_outside_the_letters(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mmlu_file(tmp_path, "E")
    monkeypatch.chdir(tmp_path)
    result = cli("validate-dataset", "--task", "mmlu", "--path", "anatomy_test.csv")
    assert result.code == 1
    assert "anatomy_test.csv:2: answer: expected one of the choice letters A, B, C, D, got 'E'\n" in result.out
    assert "Traceback" not in result.out + result.err


def test_run_refuses_an_mmlu_file_with_an_answer_outside_the_letters_before_creating_anything(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "test").mkdir()
    _mmlu_file(tmp_path / "test", "E")
    monkeypatch.chdir(tmp_path)
    err = _refused_run(cli, "mmlu", "test/anatomy_test.csv")
    assert "test/anatomy_test.csv:2: answer: expected one of the choice letters A, B, C, D, got 'E'" in err


@pytest.mark.skipif(not MMLU.is_dir(), reason=f"{MMLU} (the shared real MMLU files) is absent")
def test_every_original_mmlu_file_passes_the_answer_letter_check() -> None:
    spec = find_task("mmlu").spec.dataset
    files = sorted(MMLU.glob("*/*.csv"))
    assert len(files) == 27
    for path in files:
        report = validate_dataset(path, spec)
        assert report.ok, report.problem_lines()


# --- 2. a CSV (or other text) given to a task that reads JSONL ------------------------------------------


def _headed_csv(tmp_path: Path, rows: int = 120) -> Path:
    path = tmp_path / "gsm.csv"
    body = "".join(f'"What is {i} + 1?","{i} + 1 = {i + 1}\n#### {i + 1}"\n' for i in range(rows))
    path.write_text("question,answer\n" + body, encoding="utf-8")
    return path


def test_headed_csv_given_to_a_jsonl_task_is_one_problem_saying_what_the_file_looks_like(tmp_path: Path) -> None:
    path = _headed_csv(tmp_path)
    report = validate(path, "gsm8k")
    assert report.problem_lines()[0] == (
        f"{path}:1: line: not JSON: this looks like a CSV file with a header row (question, answer); "
        "task 'gsm8k' reads JSONL (one JSON object per line)"
    )


def test_the_lines_after_a_first_line_that_is_not_json_are_counted_not_listed(tmp_path: Path) -> None:
    path = _headed_csv(tmp_path, rows=120)  # 1 header + 240 physical lines (each answer spans two)
    report = validate(path, "gsm8k")
    assert report.problem_count == 241 and report.valid == 0
    assert report.problem_lines()[1:] == [
        "... and 240 more lines that are not JSON either (lines 2-241), not listed one by one"
    ]


def test_a_later_line_that_begins_like_json_is_still_listed_after_a_csv_first_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ["input,target", "a,b", '{"input": "x", "target": }'])
    lines = validate(path).problem_lines()
    assert lines[1:] == [
        f"{path}:3: line: invalid JSON: Expecting value at column 26",
        "... and 1 more line that is not JSON either (line 2), not listed one by one",
    ]


def test_a_first_line_of_plain_text_is_named_as_such(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ["hello there", {"input": "a", "target": "b"}])
    assert validate(path).problem_lines() == [
        f"{path}:1: line: not JSON: this looks like plain text; the file is read as JSONL (one JSON object per line)"
    ]


def test_a_first_line_of_broken_json_keeps_the_json_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ['{"input": "a", "target": }', '{"input": "x", "target": }'])
    assert validate(path).problem_lines() == [
        f"{path}:1: line: invalid JSON: Expecting value at column 26",
        f"{path}:2: line: invalid JSON: Expecting value at column 26",
    ]


def test_validate_dataset_command_names_a_csv_given_to_a_jsonl_task_once(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _headed_csv(tmp_path, rows=3)
    monkeypatch.chdir(tmp_path)
    result = cli("validate-dataset", "--task", "gsm8k", "--path", "gsm.csv")
    assert result.code == 1
    assert "gsm.csv:1: line: not JSON: this looks like a CSV file with a header row (question, answer)" in result.out
    assert "invalid JSON" not in result.out
    assert "... and 6 more lines that are not JSON either (lines 2-7), not listed one by one\n" in result.out
    assert "Traceback" not in result.out + result.err


def test_run_refuses_a_csv_given_to_a_jsonl_task_with_one_line_saying_so(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _headed_csv(tmp_path, rows=3)
    monkeypatch.chdir(tmp_path)
    err = _refused_run(cli, "gsm8k", "gsm.csv")
    assert (
        "gsm.csv:1: line: not JSON: this looks like a CSV file with a header row (question, answer); "
        "task 'gsm8k' reads JSONL (one JSON object per line)"
    ) in err
    assert "invalid JSON" not in err


# --- 3. an empty target -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "field"),
    [("", "target"), ("   ", "target"), ([""], "target[0]"), (["", " "], "target[0]"), (["Paris", ""], "target[1]")],
)
def test_empty_target_is_a_problem_naming_the_field(tmp_path: Path, target: object, field: str) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"input": "q", "target": "t"}, {"input": "q2", "target": target}])
    report = validate(path)
    assert report.valid == 1
    assert report.problem_lines() == [f"{path}:2: {field}: is empty"]


def test_empty_mapped_target_names_the_source_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "xsum.jsonl", [{"id": "a", "document": "Some news.", "summary": ""}])
    assert validate(path, "summarization").problem_lines() == [f"{path}:1: summary: is empty"]


def test_target_pattern_that_leaves_nothing_is_an_empty_target(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gsm.jsonl", [{"question": "q", "answer": "no number given\n####   "}])
    assert validate(path, "gsm8k").problem_lines() == [f"{path}:1: answer: is empty"]


def test_numeric_zero_target_is_not_empty(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"input": "1 - 1?", "target": 0}, {"input": "2 - 2?", "target": "0"}])
    assert validate(path).ok


def test_validate_dataset_command_refuses_an_empty_target(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "d.jsonl").write_text(json.dumps({"input": "q", "target": ""}) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = cli("validate-dataset", "--path", "d.jsonl")
    assert result.code == 1
    assert "d.jsonl:1: target: is empty\n" in result.out
    assert "Traceback" not in result.out + result.err


def test_run_refuses_a_dataset_with_an_empty_target(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"input": "q", "target": "t"}, {"input": "q2", "target": ""}])
    monkeypatch.chdir(tmp_path)
    assert "d.jsonl:2: target: is empty" in _refused_run(cli, "capability_profile", "d.jsonl")


# --- the reverse: JSONL given to a task that reads CSV ------------------------------------------------------


def test_jsonl_given_to_the_csv_task_says_so_on_its_first_problem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mmlu.jsonl", [{"id": f"q{i}", "input": "x", "target": "A"} for i in range(3)])
    lines = validate(path, "mmlu").problem_lines()
    assert lines[0] == (
        f"{path}:1: row: expected 6 columns, got 3 (this looks like JSONL; this file is read as CSV: "
        "question, A, B, C, D, answer)"
    )
    assert lines[1:] == [f"{path}:2: row: expected 6 columns, got 3", f"{path}:3: row: expected 6 columns, got 3"]


def test_validate_dataset_prints_its_axes_on_one_line_however_many_and_an_axis_named_like_markup_as_written(
    cli: Cli, tmp_path: Path
) -> None:
    # readme-walk3 13: piped, rich wrapped the axes line at 160 columns, so a script reading "axes:" got half
    axes = [f"subject_number_{i:02d}" for i in range(20)] + ["[b]bold"]
    path = write_jsonl(tmp_path / "many.jsonl", [{"input": "q", "target": "a", "axis": axis} for axis in axes])
    result = cli("validate-dataset", "--path", path)
    assert result.code == 0, result.err
    shown = [line for line in result.out.splitlines() if line.startswith("axes: ")]
    assert shown == ["axes: " + ", ".join(f"{axis} 1" for axis in sorted(axes))]
