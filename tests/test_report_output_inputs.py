"""`report --output` never replaces a file the run it reads was made from: its dataset, task spec, template or
few-shot file, under any name (a symlink, a hard link, a relative path)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot

Cli = Callable[..., CliResult]

REPLACE = "writing there would replace it, and the run could no longer be resumed or rescored; choose another path"


@pytest.fixture
def few_shot_run(cli: Cli, task_root: TaskRoot) -> Path:
    """A finished run of a task with a few-shot file, all of whose inputs are files of ``task_root``."""
    shots = [{"id": f"s{i}", "input": f"What is {i} + 100?", "target": str(i + 101)} for i in range(3)]
    task_root.data("shots.jsonl", shots)
    task_root.task(
        "shots",
        'name = "shots"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[few_shot]\nk = 2\npath = "data/shots.jsonl"\n[[scorers]]\nname = "exact_match"\n',
    )
    out = task_root.root / "results"
    made = cli("run", "--task", task_root.root / "tasks" / "shots.toml", "--model", "mock/m", "--limit", "4",
               "--output-dir", out, "--run-id", "r", "-q")  # fmt: skip
    assert made.code == 0, made.err
    return out / "r"


def _digests(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize(
    ("relative", "what"),
    [
        ("data/adder.jsonl", "dataset"),
        ("tasks/shots.toml", "task spec"),
        ("templates/plain.jinja2", "template"),
        ("data/shots.jsonl", "few-shot file"),
    ],
)
def test_report_output_refuses_a_file_the_run_was_made_from(
    cli: Cli, task_root: TaskRoot, few_shot_run: Path, relative: str, what: str
) -> None:
    # before: exit 0, the file replaced by the report, and the run no longer resumable (its sha256 changed)
    before = _digests(task_root.root)
    target = task_root.root / relative
    result = cli("report", "--run", few_shot_run, "--output", target, "--format", "json")
    assert result.code == 2
    assert (
        result.err
        == f"error: --output {target}: is the {what} of the run {few_shot_run} that report reads; {REPLACE}\n"
    )
    assert _digests(task_root.root) == before


def test_report_output_refuses_the_dataset_through_a_symlink_and_a_hard_link(
    cli: Cli, task_root: TaskRoot, few_shot_run: Path, tmp_path: Path
) -> None:
    dataset = task_root.root / "data" / "adder.jsonl"
    link, other_name = tmp_path / "link.jsonl", tmp_path / "other-name.jsonl"
    link.symlink_to(dataset)
    os.link(dataset, other_name)
    before = dataset.read_bytes()
    for target in (link, other_name):
        result = cli("report", "--run", few_shot_run, "--output", target, "--format", "json")
        assert result.code == 2, target
        assert f": is the dataset of the run {few_shot_run} that report reads; " in result.err
    assert f"--output {link} (→ {dataset.resolve()}):" in cli("report", "--run", few_shot_run, "--output", link).err
    assert dataset.read_bytes() == before


def test_report_output_refuses_the_dataset_given_relative_to_the_working_directory(
    cli: Cli, task_root: TaskRoot, few_shot_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(task_root.root / "data")
    result = cli("report", "--run", few_shot_run, "--output", "adder.jsonl")
    assert result.code == 2
    assert result.err.startswith(f"error: --output adder.jsonl: is the dataset of the run {few_shot_run} ")


def test_report_output_refuses_the_task_spec_the_scorers_of_a_rescore_came_from(
    cli: Cli, task_root: TaskRoot, few_shot_run: Path
) -> None:
    scorers = task_root.task("strict", (task_root.root / "tasks" / "shots.toml").read_text().replace("shots", "strict"))
    made = cli("rescore", "--run", few_shot_run, "--task", scorers, "--run-id", "again", "-q")
    assert made.code == 0, made.err
    rescored = few_shot_run.parent / "again"
    assert json.loads((rescored / "manifest.json").read_text())["task"]["scorers_source"] == str(scorers)
    result = cli("report", "--run", rescored, "--output", scorers)
    assert result.code == 2
    assert result.err.startswith(f"error: --output {scorers}: is the task spec its scorers came from of the run ")


def test_report_output_beside_the_runs_inputs_is_written(cli: Cli, task_root: TaskRoot, few_shot_run: Path) -> None:
    target = task_root.root / "data" / "report.json"
    result = cli("report", "--run", few_shot_run, "--output", target, "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(target.read_text())["run"]["run_id"] == "r"


@pytest.fixture
def directory_run(cli: Cli, task_root: TaskRoot) -> Path:
    """A finished run of a dataset directory (test/a_test.jsonl, test/b_test.jsonl), each file drawing its
    few-shot examples from its own dev file (dev/a_dev.jsonl, dev/b_dev.jsonl)."""
    for name in ("a", "b"):
        rows = [{"id": f"{name}{i}", "input": f"What is {i} + 1?", "target": str(i + 1)} for i in range(3)]
        task_root.data(f"test/{name}_test.jsonl", rows)
        shots = [{"id": f"{name}s{i}", "input": f"What is {i} + 50?", "target": str(i + 51)} for i in range(2)]
        task_root.data(f"dev/{name}_dev.jsonl", shots)
    task_root.task(
        "perfile",
        'name = "perfile"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/test"\n[few_shot]\nk = 1\n'
        "path_from_dataset = '^(.*)/test/([a-z]+)_test\\.jsonl$ => \\1/dev/\\2_dev.jsonl'\n"
        '[[scorers]]\nname = "exact_match"\n',
    )
    out = task_root.root / "results"
    made = cli("run", "--task", task_root.root / "tasks" / "perfile.toml", "--model", "mock/m", "--output-dir", out,
               "--run-id", "d", "-q")  # fmt: skip
    assert made.code == 0, made.err
    return out / "d"


@pytest.mark.parametrize(
    ("relative", "what"),
    [
        ("data/test/b_test.jsonl", "is the dataset file b_test.jsonl of the run {run} that report reads; " + REPLACE),
        ("data/dev/b_dev.jsonl", "is the few-shot file of the run {run} that report reads; " + REPLACE),
        (
            "data/test/report.jsonl",
            "would be a new file of the dataset directory {folder} of the run {run} that report reads (its .jsonl "
            "and .jsonl.gz files are the dataset); the run could no longer be resumed or rescored; choose another path",
        ),
    ],
    ids=["a-file-of-it", "a-files-few-shot-file", "a-new-file-in-it"],
)
def test_report_output_refuses_the_files_of_a_dataset_directory_and_their_few_shot_files(
    cli: Cli, task_root: TaskRoot, directory_run: Path, relative: str, what: str
) -> None:
    # readme-walk3 1: only the directory itself was refused; each of these was written (exit 0), and the run's
    # resume then failed on 38 problems of the report read as dataset lines
    before = _digests(task_root.root)
    target = task_root.root / relative
    result = cli("report", "--run", directory_run, "--output", target, "--format", "json")
    expected = what.format(run=directory_run, folder=task_root.root / "data" / "test")
    assert (result.code, result.err) == (2, f"error: --output {target}: {expected}\n")
    assert _digests(task_root.root) == before
    elsewhere = cli("report", "--run", directory_run, "--output", task_root.root / "data" / "test" / "notes.md")
    assert elsewhere.code == 0, elsewhere.err  # a file the directory does not read from is no part of the dataset


def _judged_run(cli: Cli, task_root: TaskRoot, rubric: str, *, in_composite: bool) -> Path:
    """A finished run of a task whose rubric judge (alone, or inside a composite) reads ``rubric``."""
    args = f'{{ rubric = "{rubric}", optional = true, criteria = {{ right = "it is" }} }}'
    judged = f'{{ name = "rubric_judge", args = {args} }}'
    scorer = (
        f'name = "composite"\nargs = {{ scorers = [{{ name = "exact_match" }}, {judged}] }}\n'
        if in_composite
        else f'name = "rubric_judge"\nargs = {args}\n'
    )
    task_root.task(
        "judged",
        'name = "judged"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n[[scorers]]\n' + scorer,
    )
    out = task_root.root / "results"
    made = cli("run", "--task", task_root.root / "tasks" / "judged.toml", "--model", "mock/m", "--limit", "2",
               "--output-dir", out, "--run-id", "j", "-q")  # fmt: skip
    assert made.code == 0, made.err
    return out / "j"


def test_report_output_refuses_a_judge_rubric_of_the_run_inside_a_composite_too(cli: Cli, task_root: TaskRoot) -> None:
    # walk1-s27: a rubric was written over (exit 0), and the run's resume then refused "a judge rubric" changed
    target = task_root.template("rubric.jinja2", "Grade {{ output }} against {{ target }}.\n")
    run = _judged_run(cli, task_root, "rubric.jinja2", in_composite=True)
    before = _digests(task_root.root)
    result = cli("report", "--run", run, "--output", target)
    assert (result.code, result.err) == (
        2,
        f"error: --output {target}: is the judge rubric of the run {run} that report reads; {REPLACE}\n",
    )
    assert _digests(task_root.root) == before


def test_report_output_refuses_a_rubric_found_on_the_search_path(
    cli: Cli, task_root: TaskRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # review-s28: only the spec's own templates/ was looked in; the scorer also finds a rubric in the current
    # directory's, and that one was written over
    here = TaskRoot(tmp_path / "here")  # a task root of its own (it has tasks/), on the search path as the cwd
    (here.root / "tasks").mkdir(parents=True)
    rubric = here.template("elsewhere.jinja2", "Grade {{ output }} against {{ target }}.\n")
    monkeypatch.chdir(here.root)
    run = _judged_run(cli, task_root, "elsewhere.jinja2", in_composite=False)
    result = cli("report", "--run", run, "--output", rubric)
    assert (result.code, result.err) == (
        2,
        f"error: --output {rubric}: is the judge rubric of the run {run} that report reads; {REPLACE}\n",
    )
