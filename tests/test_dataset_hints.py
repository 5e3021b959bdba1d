"""validate-dataset without --task reads JSONL: a CSV dataset (a file named .csv, a directory of them) is refused in
one line telling to give a task that reads CSV, rather than with every line "not JSON"."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, write_jsonl

Cli = Callable[..., CliResult]

CSV_ROWS = "What is 1 + 1?,1,2,3,4,B\nWhat is 2 + 2?,2,3,4,5,C\n"
"""Two rows of the mmlu task's header-less CSV."""


def records(axis: str, count: int, start: int = 0) -> list[dict[str, str]]:
    return [{"input": f"What is {i} + 1?", "target": str(i + 1), "axis": axis} for i in range(start, start + count)]


def adder(task_root: TaskRoot) -> Path:
    return task_root.root / "tasks" / "adder.toml"


def refusal(result: CliResult) -> tuple[int, str]:
    return result.code, result.err.strip()


def test_a_csv_directory_checked_without_a_task_is_told_to_give_a_task_that_reads_csv(
    cli: Cli, task_root: TaskRoot
) -> None:
    # before: "(it holds CSV files: a task that reads CSV reads them)", which never said --task
    folder = task_root.root / "data" / "test"
    folder.mkdir(parents=True)
    (folder / "anatomy_test.csv").write_text(CSV_ROWS)
    assert refusal(cli("validate-dataset", "--path", folder)) == (
        2,
        f"error: {folder}: cannot read the dataset: the directory holds no .jsonl or .jsonl.gz file (it holds CSV "
        "files: give --task with a task that reads CSV, e.g. --task mmlu)",
    )
    (folder.parent / "dev").mkdir()
    (folder.parent / "dev" / "anatomy_dev.csv").write_text(CSV_ROWS.replace("What", "So what"))  # its few-shot file
    checked = cli("validate-dataset", "--path", folder, "--task", "mmlu")  # as told: the dataset is read
    assert checked.code == 0 and f"{folder}: 2 lines, 2 valid" in checked.out, checked.out + checked.err


@pytest.mark.parametrize("name", ["anatomy_test.csv", "anatomy_test.csv.gz"])
def test_a_csv_file_checked_without_a_task_is_refused_in_one_line_telling_to_give_one(
    cli: Cli, task_root: TaskRoot, name: str
) -> None:
    # before: exit 1, each line "not JSON ... the file is read as JSONL", and no word of --task
    path = task_root.root / "data" / name  # data/ holds the adder task's file
    path.write_bytes(gzip.compress(CSV_ROWS.encode()) if name.endswith(".gz") else CSV_ROWS.encode())
    result = cli("validate-dataset", "--path", path)
    assert (result.out, *refusal(result)) == (
        "",
        2,
        f"error: {path}: cannot read the dataset: its name says CSV, and without --task a file is read as JSONL: "
        "give --task with a task that reads CSV, e.g. --task mmlu",
    )


def test_a_directory_holding_jsonl_files_beside_csv_ones_is_still_checked_without_a_task(
    cli: Cli, task_root: TaskRoot
) -> None:
    folder = task_root.root / "data" / "mixed"
    write_jsonl(folder / "a.jsonl", records("a", 2))
    (folder / "c.csv").write_text(CSV_ROWS)
    result = cli("validate-dataset", "--path", folder)
    assert result.code == 0 and "files: a.jsonl\n" in result.out, result.out + result.err


def test_run_of_a_csv_directory_with_a_jsonl_task_keeps_its_hint(cli: Cli, task_root: TaskRoot) -> None:
    folder = task_root.root / "data" / "test"
    folder.mkdir(parents=True)
    (folder / "anatomy_test.csv").write_text(CSV_ROWS)
    assert refusal(cli("run", "--task", adder(task_root), "--dataset", folder, "--dry-run")) == (
        2,
        f"error: {folder}: cannot read the dataset: the directory holds no .jsonl or .jsonl.gz file (it holds CSV "
        "files: a task that reads CSV reads them)",
    )


def test_a_missing_csv_file_checked_without_a_task_is_told_missing(cli: Cli, task_root: TaskRoot) -> None:
    path = task_root.root / "data" / "gone.csv"  # its name says CSV, but there is nothing to give a task for
    result = cli("validate-dataset", "--path", path)
    assert refusal(result) == (2, f"error: {path}: cannot read the dataset: no such file")


def test_a_jsonl_file_of_another_schema_gets_the_task_that_maps_its_fields(cli: Cli, tmp_path: Path) -> None:
    # datasets-s30: GSM8K's or OpenBookQA's own file gave 50 lines of "input: missing (required)" and no hint
    obqa = tmp_path / "obqa.jsonl"
    obqa.write_text(json.dumps({"question": "Q?", "options": "A. x\nB. y", "answer": "A. x"}) + "\n")
    result = cli("validate-dataset", "--path", obqa)
    assert result.code == 1
    assert result.out.splitlines()[-1] == (
        "hint: the lines hold answer, options, question, and no input: give --task with a task that maps them, "
        "e.g. --task openbookqa"
    )
    unknown = tmp_path / "other.jsonl"
    unknown.write_text(json.dumps({"prompt_text": "Q?"}) + "\n")
    assert cli("validate-dataset", "--path", unknown).out.splitlines()[-1] == (
        "hint: the lines hold prompt_text, and no input: give --task with a task whose [dataset] fields map them"
    )
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"input": "Q?"}) + "\n")  # its own problem (no target) needs no task
    assert "hint:" not in cli("validate-dataset", "--path", plain).out


def test_a_misspelt_dataset_or_template_in_a_spec_is_named_by_the_spec_s_line(cli: Cli, task_root: TaskRoot) -> None:
    # adopt-s32 11: "data/tset.jsonl: cannot read the dataset: no such file" named no spec, no line, no near name
    spec = task_root.task(
        "typo",
        'name = "typo"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsnl"\n'
        '[[scorers]]\nname = "exact_match"\n',
    )
    dataset = task_root.root / "data" / "adder.jsnl"
    assert refusal(cli("run", "--task", spec, "--dry-run")) == (
        2,
        f"error: {spec.resolve()}:4: dataset.path: {dataset.resolve()}: no such file; did you mean 'adder.jsonl'? "
        "(or pass --dataset)",
    )
    spec.write_text(spec.read_text().replace("data/adder.jsnl", "dta/adder.jsonl"))  # review-s32 8: its directory
    assert refusal(cli("run", "--task", spec, "--dry-run")) == (
        2,
        f"error: {spec.resolve()}:4: dataset.path: {(task_root.root / 'dta' / 'adder.jsonl').resolve()}: no such "
        f"directory {(task_root.root / 'dta').resolve()}; did you mean 'data'? (or pass --dataset)",
    )
    spec.write_text(spec.read_text().replace("dta/adder.jsonl", "data/adder.jsonl/x.jsonl"))  # review2-s32 5
    said = f"{(task_root.root / 'data' / 'adder.jsonl').resolve()} is not a directory (or pass --dataset)"
    assert refusal(cli("run", "--task", spec, "--dry-run"))[1].endswith(said)
    spec.write_text(
        spec.read_text().replace("adder.jsonl/x.jsonl", "adder.jsonl").replace("plain.jinja2", "plian.jinja2")
    )
    result = cli("run", "--task", spec, "--dry-run")
    assert result.code == 2 and result.err.startswith(f"error: {spec.resolve()}:2: template: ")
    said = "template not found (templates here: plain.jinja2); did you mean 'plain.jinja2'?"
    assert result.err.rstrip().endswith(said)


@pytest.mark.parametrize(
    ("name", "names", "near"),
    [
        ("tset.jsonl", ["test.jsonl", "bad.jsonl"], "test.jsonl"),
        ("adder.jsnl", ["adder.jsonl", "x.jsonl"], "adder.jsonl"),
        ("plian.jinja2", ["plain.jinja2"], "plain.jinja2"),
        ("zzz.jsonl", ["bad.jsonl", "meta.jsonl"], None),  # review-s32 7: the suffix alone is no near name
    ],
)
def test_a_near_name_is_close_by_its_stem_not_by_its_suffix(name: str, names: list[str], near: str | None) -> None:
    from eval_harness.textfiles import near_name

    assert near_name(name, names) == near
