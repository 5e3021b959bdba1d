"""How a task reads its dataset (its ``[dataset]`` table but the path) is recorded in the manifest, so a resume and
a rescore notice a changed field mapping or pattern as they notice a changed template, and compare names it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import CliResult, TaskRoot

from eval_harness.artifacts import RunPaths

ADDER = 'name = "adder"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
Cli = Callable[..., CliResult]
SCORER = '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'


def _spec(task_root: TaskRoot, reading: str) -> Path:
    return task_root.task("adder", ADDER + reading + SCORER)


def _manifest(run: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(RunPaths(run).manifest.read_text(encoding="utf-8"))
    return loaded


def _run(cli: Cli, spec: Path, run_id: str, *extra: str) -> Path:
    output = spec.parent.parent / "results"
    result = cli("run", "--task", spec, "--model", "mock/m", "--output-dir", output, "--run-id", run_id, "-q", *extra)
    assert result.code == 0, result.err
    return output / run_id


def test_a_run_records_how_its_task_reads_the_dataset(cli: Cli, task_root: TaskRoot) -> None:
    plain = _run(cli, _spec(task_root, ""), "plain", "--limit", "2")
    assert _manifest(plain)["task"]["dataset_reading"] == {}  # type: ignore[index]
    mapped = _spec(task_root, 'target_pattern = "^(\\\\d+)$"\nfields = { id = "input", axis = "axis" }\n')
    run = _run(cli, mapped, "mapped", "--limit", "2")
    assert _manifest(run)["task"]["dataset_reading"] == {  # type: ignore[index]
        "fields": {"id": "input"},  # axis = "axis" reads as no mapping
        "target_pattern": "^(\\d+)$",
    }


def test_a_resume_refuses_a_changed_reading_and_a_forced_one_keeps_the_recorded(cli: Cli, task_root: TaskRoot) -> None:
    spec = _spec(task_root, "")
    run = _run(cli, spec, "r", "--limit", "4")
    samples = RunPaths(run).samples
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:2]))
    _spec(task_root, 'target_pattern = "^(\\\\d+)$"\n')

    refused = cli("resume", run)
    assert refused.code == 2
    assert (
        f"error: cannot resume {run}: changed since the run started: [dataset] table of task adder: "
        "target_pattern unset → '^(\\d+)$'. Use --force" in refused.err
    )
    assert len(samples.read_bytes().splitlines()) == 2  # nothing ran

    forced = cli("resume", run, "--force", "-q")
    assert forced.code == 0, forced.err
    manifest = _manifest(run)
    assert manifest["task"]["dataset_reading"] == {}  # type: ignore[index]
    assert manifest["forced_changes"] == ["session 2: [dataset] table of task adder: target_pattern unset → '^(\\d+)$'"]
    assert manifest["status"] == "complete"


def test_an_unchanged_reading_resumes_and_an_older_run_records_it_from_then_on(cli: Cli, task_root: TaskRoot) -> None:
    spec = _spec(task_root, "target_pattern = '^(\\d+)$'\n")
    run = _run(cli, spec, "r", "--limit", "4")
    samples = RunPaths(run).samples
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:2]))
    manifest = _manifest(run)
    del manifest["task"]["dataset_reading"]  # type: ignore[attr-defined]  # as a run made before it was recorded
    manifest["status"] = "interrupted"
    RunPaths(run).manifest.write_text(json.dumps(manifest), encoding="utf-8")

    resumed = cli("resume", run, "-q")
    assert resumed.code == 0, resumed.err
    assert _manifest(run)["task"]["dataset_reading"] == {"target_pattern": "^(\\d+)$"}  # type: ignore[index]
    assert len(samples.read_bytes().splitlines()) == 4


def test_a_rescore_refuses_a_changed_reading(cli: Cli, task_root: TaskRoot) -> None:
    source = _run(cli, _spec(task_root, 'fields = { target = "target" }\n'), "source", "--limit", "3")
    _spec(task_root, 'fields = { target = "input" }\n')
    refused = cli("rescore", "--run", source, "--scorer", "exact_match", "--run-id", "again")
    assert refused.code == 2
    assert refused.err.strip() == (
        f"error: cannot rescore {source}: the task reads its dataset differently than in that run ([dataset] table of "
        'task adder: fields {} → {"target":"input"}), so its samples would not be the ones the '
        "model answered"
    )
    assert not (source.parent / "again").exists()


def test_compare_names_a_changed_reading(cli: Cli, task_root: TaskRoot) -> None:
    first = _run(cli, _spec(task_root, ""), "a", "--limit", "4")
    second = _run(cli, _spec(task_root, 'format = "jsonl"\ntarget_pattern = "^(\\\\d+)$"\n'), "b", "--limit", "4")
    compared = cli("compare", "--run-a", first, "--run-b", second, "--format", "json")
    assert compared.code == 0, compared.err
    changes = [c for c in json.loads(compared.out)["differs"] if "dataset_reading" in c["setting"]]
    assert changes == [
        {
            "setting": "task.dataset_reading.target_pattern",
            "a": None,
            "b": "^(\\d+)$",
            "text": "dataset_reading.target_pattern unset → ^(\\d+)$",
        }
    ]  # format = "jsonl" is the default: no change


def _cut(run: Path, keep: int) -> None:
    """Leave the first ``keep`` records, as a session killed after them would."""
    samples = RunPaths(run).samples
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:keep]))


def test_a_setting_recorded_at_its_default_is_no_change(cli: Cli, task_root: TaskRoot) -> None:
    # review-s27: the refusal compared the tables as written, its message with the defaults filled in: a manifest
    # spelling out format = "jsonl" was refused with an empty change
    run = _run(cli, _spec(task_root, ""), "r", "--limit", "4")
    _cut(run, 2)
    manifest = _manifest(run)
    manifest["task"]["dataset_reading"] = {"format": "jsonl", "fields": {}, "target_pattern": None}  # type: ignore[index]
    RunPaths(run).manifest.write_text(json.dumps(manifest), encoding="utf-8")
    resumed = cli("resume", run, "-q")
    assert resumed.code == 0, resumed.err
    assert len(RunPaths(run).samples.read_bytes().splitlines()) == 4


def test_a_forced_resume_checks_the_lines_as_the_task_reads_them_now(cli: Cli, task_root: TaskRoot) -> None:
    # review-s27: the same bytes were not checked again, so the lines the new pattern refuses were handed out,
    # failed unrecorded, and the run ended "interrupted" after every forced resume
    run = _run(cli, _spec(task_root, ""), "r", "--limit", "10")
    _cut(run, 3)
    _spec(task_root, "target_pattern = '^([1-5])$'\n")
    before = RunPaths(run).manifest.read_bytes()
    refused = cli("resume", run, "--force")
    assert refused.code != 0
    assert (
        "the dataset, read differently since the run started ([dataset] table of task adder: target_pattern unset → "
        "'^([1-5])$'), has 35 problems; fix them, or start a new run" in refused.err
    )
    assert "data/adder.jsonl:6: target: does not match target_pattern '^([1-5])$' (the value is '6')" in refused.err
    assert RunPaths(run).manifest.read_bytes() == before


def test_a_forced_resume_across_new_ids_expects_their_records_too(cli: Cli, task_root: TaskRoot) -> None:
    # review-s27: with the count of the run's start, the samples the new id mapping names ran beside the records
    # of the old ids: 13 records of 10 expected, "complete"
    run = _run(cli, _spec(task_root, ""), "r", "--limit", "4")
    _cut(run, 2)
    _spec(task_root, 'fields = { id = "input" }\n')
    forced = cli("resume", run, "--force", "-q")
    assert forced.code == 0, forced.err
    manifest = _manifest(run)
    records = [json.loads(line) for line in RunPaths(run).samples.read_bytes().splitlines()]
    ids = [record["sample_id"] for record in records]
    assert ids[:2] == ["q0000", "q0001"]
    assert sorted(ids[2:]) == [f"What is {i} + 1?" for i in range(4)]
    assert manifest["expected_records"] == 6 and manifest["status"] == "complete"


def test_a_rescore_names_the_changed_reading_before_the_lines_it_refuses(cli: Cli, task_root: TaskRoot) -> None:
    # review-s27: the plan read the dataset first, and said "pass --skip-invalid", which rescore does not take
    source = _run(cli, _spec(task_root, ""), "source", "--limit", "3")
    _spec(task_root, "target_pattern = '^([1-5])$'\n")
    refused = cli("rescore", "--run", source, "--scorer", "exact_match", "--run-id", "again")
    assert refused.code == 2
    assert "the task reads its dataset differently than in that run" in refused.err
    assert "problems" not in refused.err


def test_a_field_mapped_to_its_own_name_reads_as_unmapped(cli: Cli, task_root: TaskRoot) -> None:
    # walk2-s27: adding fields = { target = "target" }, which reads every line as before, refused a rescore
    source = _run(cli, _spec(task_root, 'fields = { input = "input", axis = "axis" }\n'), "source", "--limit", "3")
    assert _manifest(source)["task"]["dataset_reading"] == {}  # type: ignore[index]
    _spec(task_root, 'fields = { target = "target" }\n')
    again = cli("rescore", "--run", source, "--scorer", "exact_match", "--run-id", "again", "-q")
    assert again.code == 0, again.err


def test_a_recorded_mapping_of_a_field_to_its_own_name_reads_as_unmapped_too(cli: Cli, task_root: TaskRoot) -> None:
    # review-s28: only the spec's side was read so; a manifest holding {"target": "target"} was refused
    run = _run(cli, _spec(task_root, ""), "r", "--limit", "4")
    _cut(run, 2)
    manifest = _manifest(run)
    manifest["task"]["dataset_reading"] = {"fields": {"target": "target"}}  # type: ignore[index]
    RunPaths(run).manifest.write_text(json.dumps(manifest), encoding="utf-8")
    resumed = cli("resume", run, "-q")
    assert resumed.code == 0, resumed.err
