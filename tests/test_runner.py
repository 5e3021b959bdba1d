"""The runner end to end through its Python API: records, epochs, errors, timeouts, resume, stop."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import probe
import pytest
from conftest import TaskRoot, adder_run_config, arithmetic_records, read_records, run_to_end, write_jsonl

from eval_harness.artifacts import read_manifest, read_summary
from eval_harness.errors import ArtifactError, DatasetError, ResumeMismatchError
from eval_harness.planning import SessionOverrides, dry_run, plan_resume, plan_run
from eval_harness.runner import Runner, RunResult
from eval_harness.types import SampleRecord


@pytest.fixture(autouse=True)
def reset_probe() -> None:
    probe.ProbeProvider.reset()
    probe.FLAKY["broken"] = True


config = adder_run_config
run = run_to_end


def resume(run_dir: Path, **kwargs: Any) -> RunResult:
    return asyncio.run(Runner(plan_resume(run_dir, **kwargs)).run())


def keys(run_dir: Path) -> list[tuple[str, int]]:
    return [(r["sample_id"], r["epoch"]) for r in read_records(run_dir)]


def summary_without_timing(run_dir: Path) -> dict[str, Any]:
    summary = read_summary(run_dir).model_dump(mode="json")
    summary.pop("wall_time_s")
    summary.pop("run_id")
    return summary


def test_complete_run_writes_manifest_samples_and_summary(task_root: TaskRoot) -> None:
    result = run(config(task_root, model_args={"skill": "0.5", "cost_per_1k_tokens": "1"}))
    run_dir = task_root.root / "results" / "r1"
    manifest = read_manifest(run_dir)
    assert result.status == manifest.status == "complete"
    assert manifest.dataset.sample_count == 40 and manifest.expected_records == 40
    assert manifest.task.template_sha256 and manifest.dataset.sha256 and manifest.fingerprint
    assert manifest.model.args["skill"] == 0.5
    records = read_records(run_dir)
    assert len(records) == 40 and len(set(keys(run_dir))) == 40
    first = records[0]
    assert set(first) >= {
        "sample_id",
        "epoch",
        "axis",
        "tags",
        "input",
        "target",
        "prompt",
        "output",
        "scores",
        "score",
        "passed",
        "latency_ms",
        "usage",
        "cost_usd",
        "error",
        "attempts",
        "finished_at",
    }
    summary = read_summary(run_dir)
    assert summary.records == 40 and summary.missing == 0
    assert [a.axis for a in summary.axes] == ["alpha", "beta"]
    assert summary.micro_mean == pytest.approx(sum(r["score"] for r in records) / 40)


def test_epochs_run_every_sample_k_times(task_root: TaskRoot) -> None:
    run(config(task_root, epochs=3, limit=5))
    run_dir = task_root.root / "results" / "r1"
    assert sorted(keys(run_dir)) == sorted((f"q{i:04d}", e) for i in range(5) for e in range(3))
    assert read_manifest(run_dir).expected_records == 15


def test_limit_takes_the_first_samples(task_root: TaskRoot) -> None:
    run(config(task_root, limit=7))
    assert sorted(k for k, _ in keys(task_root.root / "results" / "r1")) == [f"q{i:04d}" for i in range(7)]


def test_samples_in_flight_never_exceed_concurrency(task_root: TaskRoot) -> None:
    run(config(task_root, model="probe/p", model_args={"latency_ms": "20"}, concurrency=4))
    assert probe.ProbeProvider.max_in_flight == 4
    assert probe.ProbeProvider.calls == 40


def test_failing_samples_are_recorded_and_the_run_goes_on(task_root: TaskRoot) -> None:
    result = run(config(task_root, model_args={"error_rate": "0.25"}))
    records = read_records(task_root.root / "results" / "r1")
    failed = [r for r in records if r["error"]]
    assert result.status == "complete" and len(records) == 40
    assert 3 <= len(failed) <= 20
    assert all(r["error"]["type"] == "ProviderError" and r["score"] is None and r["output"] is None for r in failed)
    assert result.summary.overall.errors == len(failed)


def test_a_timed_out_sample_keeps_the_attempts_retries_and_backoff_it_spent(task_root: TaskRoot) -> None:
    # every call is refused with a 429 (retry after 50 ms) until the 0.6 s per-sample timeout cuts it off
    probe_args = {"fail_first": "1000", "retry_after": "0.05"}
    result = run(config(task_root, model="probe/p", model_args=probe_args, timeout_s=0.6, max_retries=100, limit=1))
    (record,) = read_records(task_root.root / "results" / "r1")
    assert record["error"]["type"] == "ProviderTimeoutError"
    # ~11 attempts fit in 0.6 s; only "more than one" is certain on a loaded machine
    assert record["attempts"] == probe.ProbeProvider.calls >= 2
    # the probe refuses at once, so the timeout strikes while a retry waits: that retry was never sent
    assert record["retries"] == {"rate_limit": record["attempts"] - 1}
    # each retry was sent after a wait of at least its 50 ms (the measured wait cannot be shorter than the one
    # asked for; the upper side is pinned by test_gateway's Retry-After tests)
    assert record["backoff_s"] >= 0.05 * (record["attempts"] - 1)
    assert result.summary.retries_by_cause == record["retries"] and result.summary.backoff_s == record["backoff_s"]


def test_per_sample_timeout_becomes_an_error_record(task_root: TaskRoot) -> None:
    run(config(task_root, model_args={"latency_ms": "2000"}, timeout_s=0.05, limit=3))
    records = read_records(task_root.root / "results" / "r1")
    assert [r["error"]["type"] for r in records] == ["ProviderTimeoutError"] * 3
    assert "per-sample timeout of 0.05s" in records[0]["error"]["message"]


def test_transient_errors_are_retried_and_counted(task_root: TaskRoot) -> None:
    run(config(task_root, model="probe/p", model_args={"fail_first": "2", "retry_after": "0.001"}, limit=3))
    records = read_records(task_root.root / "results" / "r1")
    assert [(r["attempts"], r["retries"], r["score"]) for r in records] == [(3, {"rate_limit": 2}, 1.0)] * 3
    assert read_summary(task_root.root / "results" / "r1").retries_by_cause == {"rate_limit": 6}


def test_retries_are_bounded_by_max_retries(task_root: TaskRoot) -> None:
    run(
        config(
            task_root, model="probe/p", model_args={"fail_first": "9", "retry_after": "0.001"}, max_retries=2, limit=1
        )
    )
    (record,) = read_records(task_root.root / "results" / "r1")
    assert record["attempts"] == 3 and record["error"]["message"] == "probe: 429 slow down"


def test_authentication_failure_stops_the_run_early(task_root: TaskRoot) -> None:
    result = run(config(task_root, model="probe/p", model_args={"auth_fail_after": "3"}, concurrency=1))
    assert result.status == "failed"
    assert result.fatal == "probe: 401 invalid api key"
    assert len(read_records(task_root.root / "results" / "r1")) == 3


def test_scoring_failure_keeps_the_output_and_retry_errors_rescores_without_calling_the_model(
    task_root: TaskRoot,
) -> None:
    task_root.task(
        "flaky",
        'name = "flaky"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "flaky"\n',
    )
    run(config(task_root, task=str(task_root.root / "tasks" / "flaky.toml"), model="probe/p", limit=4))
    run_dir = task_root.root / "results" / "r1"
    records = read_records(run_dir)
    assert all(r["output"] == r["target"] and r["error"]["stage"] == "score" for r in records)
    assert probe.ProbeProvider.calls == 4
    probe.FLAKY["broken"] = False
    result = resume(run_dir, retry_errors=True)
    assert probe.ProbeProvider.calls == 4  # no new generation
    assert result.new_records == 4
    final = {r["sample_id"]: r for r in read_records(run_dir)}
    assert all(r["error"] is None and r["score"] == 1.0 for r in final.values())
    assert result.summary.records == 4 and result.summary.overall.errors == 0


def test_retry_errors_regenerates_failed_generations(task_root: TaskRoot) -> None:
    run(config(task_root, model_args={"latency_ms": "300"}, timeout_s=0.05, limit=2))
    run_dir = task_root.root / "results" / "r1"
    result = resume(run_dir, retry_errors=True, overrides=SessionOverrides(timeout_s=30.0))
    assert result.new_records == 2 and result.summary.overall.errors == 0
    assert len(read_records(run_dir)) == 4  # superseded records stay in the file; readers keep the last


def interrupt_after(task_root: TaskRoot, records_kept: int, torn: bytes = b"") -> Path:
    """A completed run cut back to its first records (plus a torn tail), as a crash would leave it."""
    run(config(task_root, model_args={"skill": "0.6", "cost_per_1k_tokens": "0.5"}, run_id="cut"))
    run_dir = task_root.root / "results" / "cut"
    lines = (run_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_bytes(b"".join(lines[:records_kept]) + torn)
    (run_dir / "summary.json").unlink()
    return run_dir


def test_resume_after_a_crash_runs_only_the_missing_keys_and_equals_an_uninterrupted_run(task_root: TaskRoot) -> None:
    run(config(task_root, model_args={"skill": "0.6", "cost_per_1k_tokens": "0.5"}, run_id="whole"))
    run_dir = interrupt_after(task_root, 13, torn=b'{"sample_id":"q0013","epoch":0,"ax')
    result = resume(run_dir)
    assert (result.new_records, result.skipped, result.status) == (27, 13, "complete")
    assert sorted(keys(run_dir)) == sorted(keys(task_root.root / "results" / "whole"))
    assert summary_without_timing(run_dir) == summary_without_timing(task_root.root / "results" / "whole")
    assert read_manifest(run_dir).sessions == 2


def test_resume_of_a_complete_run_does_nothing(task_root: TaskRoot) -> None:
    run(config(task_root))
    result = resume(task_root.root / "results" / "r1")
    assert (result.new_records, result.skipped, result.status) == (0, 40, "complete")


def test_resume_refuses_a_changed_dataset_and_force_overrides(task_root: TaskRoot) -> None:
    run_dir = interrupt_after(task_root, 5)
    task_root.data("adder.jsonl", arithmetic_records(41))
    with pytest.raises(ResumeMismatchError, match=r"changed since the run started: dataset .*adder.jsonl"):
        plan_resume(run_dir)
    forced = plan_resume(run_dir, force=True)
    assert forced.forced[0].startswith("dataset")
    asyncio.run(Runner(forced).run())
    assert read_manifest(run_dir).forced_changes[0].startswith("session 2: dataset")


@pytest.mark.parametrize("now", [30, 45], ids=["fewer-lines", "more-lines"])
def test_a_resume_forced_across_a_changed_dataset_expects_the_records_of_the_dataset_as_it_is_now(
    task_root: TaskRoot, now: int
) -> None:
    # before: the run kept expecting the 40 records of the dataset it started on, so with 30 lines every resume
    # ended "interrupted, 10 of 40 records missing" (records no session could write), and with 45 went past 100%
    run_dir = interrupt_after(task_root, 5)
    task_root.data("adder.jsonl", arithmetic_records(now))
    result = asyncio.run(Runner(plan_resume(run_dir, force=True)).run())
    assert (result.status, result.new_records) == ("complete", now - 5)
    manifest, summary = read_manifest(run_dir), read_summary(run_dir)
    assert (manifest.status, manifest.expected_records) == ("complete", now)
    assert (summary.expected_records, summary.missing) == (now, 0)
    again = plan_resume(run_dir, force=True)  # still forced (the run started on other lines), nothing to add
    assert again.expected_update is None and asyncio.run(Runner(again).run()).new_records == 0


def test_a_forced_resume_counts_the_records_of_lines_the_dataset_lost_so_that_none_stands_in_for_a_missing_one(
    task_root: TaskRoot,
) -> None:
    # review-s25 2: expecting only the changed dataset's 7 keys, the records of q0000-q0002 (lines it lost) stood
    # in for samples of it never written: cut back to 7 records, the run read "complete" and its gates passed
    run_dir = interrupt_after(task_root, 5)  # q0000-q0004
    task_root.data("adder.jsonl", arithmetic_records(10)[3:])  # q0003-q0009
    result = asyncio.run(Runner(plan_resume(run_dir, force=True)).run())
    assert (result.status, result.new_records) == ("complete", 5)
    assert read_manifest(run_dir).expected_records == 10  # q0003-q0009, and q0000-q0002 recorded before
    samples = run_dir / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:7]))  # a crash's loss
    again = asyncio.run(Runner(plan_resume(run_dir, force=True)).run())
    assert (again.status, again.new_records) == ("complete", 3)
    assert sorted(keys(run_dir)) == [(f"q{i:04d}", 0) for i in range(10)]


def test_a_resume_whose_dataset_gained_a_bad_line_says_it_changed_and_not_to_pass_skip_invalid(
    task_root: TaskRoot,
) -> None:
    # readme-walk3 9: "the dataset has 1 problem; fix it, or pass --skip-invalid", an option resume refuses, and
    # not a word of the change that made it read the dataset again
    run_dir = interrupt_after(task_root, 5)
    dataset = task_root.root / "data" / "adder.jsonl"
    old = read_manifest(run_dir).dataset.sha256
    with dataset.open("a") as out:
        out.write('{"bad\n')
    with pytest.raises(DatasetError) as refused:
        plan_resume(run_dir)
    new = hashlib.sha256(dataset.read_bytes()).hexdigest()
    assert str(refused.value).splitlines()[0] == (
        f"{dataset}: the dataset, changed since the run started (sha256 {old[:12]} → {new[:12]}), has 1 problem; "
        "fix it, or start a new run (with --skip-invalid to run the valid lines only)"
    )


def test_resume_refuses_a_changed_template(task_root: TaskRoot) -> None:
    run_dir = interrupt_after(task_root, 5)
    task_root.template("plain.jinja2", "{{ input }}\nAnswer with a number.\n")
    with pytest.raises(ResumeMismatchError, match=r"template plain\.jinja2"):
        plan_resume(run_dir)


def test_resume_refuses_changed_scorers(task_root: TaskRoot) -> None:
    run_dir = interrupt_after(task_root, 5)
    spec = task_root.root / "tasks" / "adder.toml"
    spec.write_text(spec.read_text().replace('mode = "numeric"', 'mode = "strict"'))
    with pytest.raises(ResumeMismatchError, match="scorer config of task adder"):
        plan_resume(run_dir)


def _with_few_shot(task_root: TaskRoot, spec: str) -> None:
    task_root.data("shots.jsonl", [{"id": "s1", "input": "What is 100 + 1?", "target": "101"},
                                   {"id": "s2", "input": "What is 200 + 1?", "target": "201"}])  # fmt: skip
    task_root.template("shots.jinja2", "{% for e in examples %}{{ e.input }} {{ e.target }}\n{% endfor %}{{ input }}\n")
    toml = task_root.root / "tasks" / "adder.toml"
    toml.write_text(toml.read_text().replace('"plain.jinja2"', '"shots.jinja2"') + spec)


def test_resume_refuses_changed_few_shot_examples(task_root: TaskRoot) -> None:
    # the examples are in every prompt as much as the template is: a run must not mix two sets of prompts
    _with_few_shot(task_root, '[few_shot]\nk = 2\npath = "data/shots.jsonl"\n')
    run_dir = interrupt_after(task_root, 5)
    task_root.data("shots.jsonl", [{"id": "s1", "input": "What is 100 + 1?", "target": "102"},
                                   {"id": "s2", "input": "What is 200 + 1?", "target": "201"}])  # fmt: skip
    with pytest.raises(ResumeMismatchError, match="few-shot examples or template variables of task adder"):
        plan_resume(run_dir)


def test_resume_refuses_changed_template_variables(task_root: TaskRoot) -> None:
    task_root.template("plain.jinja2", "{{ input }}\n{{ closing }}\n")
    toml = task_root.root / "tasks" / "adder.toml"
    toml.write_text(toml.read_text().replace("[dataset]", '[template_vars]\nclosing = "Answer only."\n[dataset]'))
    run_dir = interrupt_after(task_root, 5)
    toml.write_text(toml.read_text().replace("Answer only.", "Think step by step."))
    with pytest.raises(ResumeMismatchError, match="few-shot examples or template variables"):
        plan_resume(run_dir)


def test_resume_of_a_run_without_the_recorded_prompt_inputs_checks_the_rest(task_root: TaskRoot) -> None:
    # a run started by an earlier build has no prompt_inputs_sha256: it still resumes
    run_dir = interrupt_after(task_root, 5)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["task"]["prompt_inputs_sha256"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert resume(run_dir).status == "complete"
    # recorded by the resumed session, so the next resume checks the few-shot examples too
    assert read_manifest(run_dir).task.prompt_inputs_sha256 is not None


def test_few_shot_path_from_dataset_matches_a_relative_dataset_path(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MMLU's layout: test/<subject>_test.csv beside dev/<subject>_dev.csv, the dataset typed from their parent
    subjects = task_root.root / "mmlu"
    (subjects / "test").mkdir(parents=True)
    (subjects / "dev").mkdir()
    write_jsonl(subjects / "test" / "x_test.jsonl", arithmetic_records(4))
    write_jsonl(subjects / "dev" / "x_dev.jsonl", [{"id": "d1", "input": "What is 9 + 1?", "target": "10"}])
    shots = r"path_from_dataset = '^(.*)/test/([^/]+)_test\.jsonl$ => \1/dev/\2_dev.jsonl'"
    _with_few_shot(task_root, f"[few_shot]\nk = 1\n{shots}\n")
    monkeypatch.chdir(subjects)
    plan = plan_run(config(task_root, dataset=Path("test/x_test.jsonl")))
    assert [example.id for example in plan.few_shot.examples] == ["d1"]


def test_two_runs_planned_with_one_run_id_leave_one_record_per_key(task_root: TaskRoot) -> None:
    # both passed the "already exists" check before either took the run's lock
    first, second = plan_run(config(task_root)), plan_run(config(task_root))
    asyncio.run(Runner(first).run())
    with pytest.raises(ArtifactError, match="already exists \\(another process created it meanwhile\\)"):
        asyncio.run(Runner(second).run())
    assert len(read_records(task_root.root / "results" / "r1")) == 40
    assert read_manifest(task_root.root / "results" / "r1").sessions == 1


def test_a_resume_planned_before_another_session_ran_is_refused(task_root: TaskRoot) -> None:
    run_dir = interrupt_after(task_root, 5)
    first, second = plan_resume(run_dir), plan_resume(run_dir)
    asyncio.run(Runner(first).run())
    with pytest.raises(ArtifactError, match="another session wrote the run since this one read it"):
        asyncio.run(Runner(second).run())
    assert read_manifest(run_dir).sessions == 2  # the first run's session and the resume, none lost


def test_a_forced_session_writes_no_resume_point(task_root: TaskRoot) -> None:
    # its byte offsets are those of the changed dataset: trusted once the original is back, they would
    # make the samples between them run twice
    run_dir = interrupt_after(task_root, 5)
    (run_dir / ".resume.json").unlink(missing_ok=True)
    task_root.data("adder.jsonl", arithmetic_records(41))
    asyncio.run(Runner(plan_resume(run_dir, force=True)).run())
    assert not (run_dir / ".resume.json").exists()


def test_the_resume_point_after_retry_errors_counts_distinct_keys(task_root: TaskRoot) -> None:
    run(config(task_root, model_args={"error_rate": "0.3"}))
    run_dir = task_root.root / "results" / "r1"
    assert any(r["error"] for r in read_records(run_dir))
    resume(run_dir, retry_errors=True)
    point = json.loads((run_dir / ".resume.json").read_text())
    assert point["done_keys"] == 40
    assert resume(run_dir).skipped == 40


def test_a_run_of_a_gzip_dataset_resumes_by_reading_its_records(task_root: TaskRoot) -> None:
    # its byte positions are not its lines': no resume point is trusted, every record is read instead
    import gzip

    packed = task_root.root / "data" / "adder.jsonl.gz"
    packed.write_bytes(gzip.compress((task_root.root / "data" / "adder.jsonl").read_bytes()))
    run(config(task_root, dataset=packed, run_id="gz"))
    run_dir = task_root.root / "results" / "gz"
    assert read_manifest(run_dir).dataset.seekable is False
    lines = (run_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_bytes(b"".join(lines[:15]))
    result = resume(run_dir)
    assert (result.new_records, result.skipped, result.status) == (25, 15, "complete")
    assert sorted(keys(run_dir)) == [(f"q{i:04d}", 0) for i in range(40)]


def test_a_new_run_refuses_an_existing_run_directory(task_root: TaskRoot) -> None:
    run(config(task_root))
    # a complete run has nothing to resume (before: "resume it with ...", for a rescore given its source's id too)
    with pytest.raises(ArtifactError, match=r"already exists \(a complete run\); pick another --run-id$"):
        plan_run(config(task_root))
    run_dir = config(task_root).output_dir / config(task_root).run_id
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    with pytest.raises(ArtifactError, match="already exists; resume it with 'eval-harness resume"):
        plan_run(config(task_root))


def test_broken_dataset_stops_before_anything_is_created(task_root: TaskRoot) -> None:
    task_root.data("adder.jsonl", [{"input": "a", "target": "b"}, "{oops"])
    with pytest.raises(DatasetError) as raised:
        plan_run(config(task_root))
    assert raised.value.problems == [
        f"{task_root.root / 'data' / 'adder.jsonl'}:2: line: invalid JSON: "
        "Expecting property name enclosed in double quotes at column 2"
    ]
    assert not (task_root.root / "results").exists()


def test_dry_run_renders_every_prompt_and_writes_nothing(task_root: TaskRoot) -> None:
    preview = dry_run(plan_run(config(task_root, epochs=2, generation={"max_tokens": 10})))
    assert preview.count == 80
    assert [m[-1].content for m in preview.first_prompts] == [
        "What is 0 + 1?\nAnswer only.",
        "What is 0 + 1?\nAnswer only.",
        "What is 1 + 1?\nAnswer only.",
    ]
    assert preview.max_output_tokens == 800
    assert preview.estimated_cost_usd == 0.0
    assert not (task_root.root / "results").exists()


def test_request_stop_marks_the_run_interrupted_and_resume_finishes_it(task_root: TaskRoot) -> None:
    plan = plan_run(config(task_root, model_args={"latency_ms": "30"}, concurrency=2, grace_s=2.0))

    async def stop_soon() -> RunResult:
        runner = Runner(plan)
        task = asyncio.create_task(runner.run())
        await asyncio.sleep(0.2)
        runner.request_stop()
        return await task

    result = asyncio.run(stop_soon())
    run_dir = task_root.root / "results" / "r1"
    assert result.status == read_manifest(run_dir).status == "interrupted"
    done = len(read_records(run_dir))
    assert 0 < done < 40 and result.summary.missing == 40 - done
    finished = resume(run_dir)
    assert finished.status == "complete" and len(set(keys(run_dir))) == len(keys(run_dir)) == 40


def test_manifest_never_holds_secrets(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-canary-1234567890abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    run(config(task_root))
    for path in (task_root.root / "results" / "r1").iterdir():
        assert canary.encode() not in path.read_bytes()


def test_copied_run_directory_resumes_from_its_new_place(task_root: TaskRoot) -> None:
    run_dir = interrupt_after(task_root, 10)
    moved = task_root.root / "elsewhere" / "cut"
    shutil.copytree(run_dir, moved)
    result = resume(moved)
    assert result.status == "complete" and len(read_records(moved)) == 40
    assert json.loads((moved / "manifest.json").read_text())["run_id"] == "cut"


def test_skip_invalid_runs_the_valid_lines_and_records_how_many_were_left_out(task_root: TaskRoot) -> None:
    task_root.data("adder.jsonl", [*arithmetic_records(5), {"input": "", "target": "x"}, "not json"])
    with pytest.raises(DatasetError, match="pass --skip-invalid to run the valid lines only"):
        plan_run(config(task_root))
    result = run(config(task_root, skip_invalid=True))
    manifest = read_manifest(task_root.root / "results" / "r1")
    assert (manifest.dataset.invalid_lines, manifest.dataset.sample_count, manifest.expected_records) == (2, 5, 5)
    assert result.status == "complete" and len(read_records(task_root.root / "results" / "r1")) == 5


def test_skip_invalid_still_refuses_duplicate_ids(task_root: TaskRoot) -> None:
    task_root.data("adder.jsonl", [*arithmetic_records(3), arithmetic_records(1)[0]])
    with pytest.raises(DatasetError, match="duplicate ids make --skip-invalid ambiguous"):
        plan_run(config(task_root, skip_invalid=True))


def test_records_are_written_exactly_as_sample_record_serializes_them(task_root: TaskRoot) -> None:
    # The runner writes records from plain fields (record_line); each line must be the very bytes the
    # pydantic model would write: same fields, same order, same number formatting.
    task_root.task(
        "flaky",
        'name = "flaky"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "flaky"\n',
    )
    run(config(task_root, model_args={"error_rate": "0.3", "cost_per_1k_tokens": "0.37", "latency_ms": "0.3"}))
    run(config(task_root, task=str(task_root.root / "tasks" / "flaky.toml"), model="probe/p", run_id="r2", limit=3))
    lines = [
        line
        for run_id in ("r1", "r2")
        for line in (task_root.root / "results" / run_id / "samples.jsonl").read_bytes().splitlines(keepends=True)
    ]
    kinds = {json.loads(line)["error"]["stage"] if json.loads(line)["error"] else "ok" for line in lines}
    assert kinds == {"ok", "generate", "score"}
    for line in lines:
        model = SampleRecord.model_validate_json(line)
        assert SampleRecord.__pydantic_serializer__.to_json(model) + b"\n" == line


def test_progress_counts_cost_as_the_summary_does_failed_calls_are_not_unknown_costs(task_root: TaskRoot) -> None:
    seen: list[tuple[bool, int]] = []

    class Listener:
        def update(self, progress: Any) -> None:
            seen.append((progress.cost_known, progress.session_errors))

    runner = Runner(plan_run(config(task_root, model_args={"error_rate": "0.5", "cost_per_1k_tokens": "1"})))
    runner.listener = Listener()
    result = asyncio.run(runner.run())
    assert result.session_errors == seen[-1][1] > 0 and result.first_error is not None
    assert result.summary.overall.cost_known and all(known for known, _ in seen)


def test_a_record_that_cannot_be_summed_up_refuses_a_resume_that_added_nothing_and_changes_nothing(
    task_root: TaskRoot,
) -> None:
    run(config(task_root, limit=6))
    run_dir = task_root.root / "results" / "r1"
    samples = run_dir / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    edited = json.loads(lines[0])
    edited["usage"]["prompt_tokens"] = float(edited["usage"]["prompt_tokens"])  # not an integer: not a record
    samples.write_text(json.dumps(edited) + "\n" + "".join(lines[1:]))
    with pytest.raises(ArtifactError, match=r"samples\.jsonl:1: usage\.prompt_tokens"):
        resume(run_dir)  # the resume point spares the key scan that line; the summary reads it
    # it added nothing: the refused resume leaves the run as it found it (fuzz-s25 1b; test_run_files_refused pins
    # the "failed" of a session that appended records first)
    assert (read_manifest(run_dir).status, read_manifest(run_dir).sessions) == ("complete", 1)


def test_a_wait_cut_short_by_the_timeout_counts_only_the_time_it_lasted(task_root: TaskRoot) -> None:
    # refused with a 429 that says "retry after 30 s"; the 0.5 s per-sample timeout ends the wait
    run(config(task_root, model="probe/p", model_args={"fail_first": "5", "retry_after": "30"}, timeout_s=0.5, limit=1))
    (record,) = read_records(task_root.root / "results" / "r1")
    assert record["error"]["type"] == "ProviderTimeoutError" and record["retries"] == {}  # the retry was never sent
    # the wait lasted from the refusal to the 0.5 s timeout; before, the whole 30+ s asked for was counted (the upper
    # bound is far from both, so a watchdog or a loop made late by a loaded machine cannot reach it)
    assert 0.3 <= record["backoff_s"] < 5.0


# model arguments given to a resume -----------------------------------------------------------------------------
JUDGED_TASK = (
    'name = "judged"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
    '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
    '[[scorers]]\nname = "rubric_judge"\nalias = "judge"\nweight = 0.0\n'
    'args = { rubric = "rubric.jinja2", criteria = { right = "the answer is right" } }\n'
)


def judged_run_cut_back(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of a task with a judge (rubric in the task root's templates/), cut back to 2 of its 4 records."""
    task_root.task("judged", JUDGED_TASK)
    task_root.template("rubric.jinja2", "Grade: {{ output }}\n")
    monkeypatch.chdir(task_root.root)  # the rubric is found through the working directory (see test_compare)
    run(config(task_root, task=str(task_root.root / "tasks" / "judged.toml"), judge_model="mock/j", limit=4))
    run_dir = task_root.root / "results" / "r1"
    lines = (run_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_bytes(b"".join(lines[:2]))
    return run_dir


def test_a_changed_rubric_is_named_beside_a_changed_model_argument(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fingerprint alone tells a rubric changed: a changed model argument must neither hide it nor pass for it
    run_dir = judged_run_cut_back(task_root, monkeypatch)
    task_root.template("rubric.jinja2", "Grade this answer: {{ output }}\n")
    with pytest.raises(ResumeMismatchError) as refused:
        plan_resume(run_dir, model_args={"skill": "0.3"})
    assert (
        "changed since the run started: model args of mock/m: skill 0.8 → 0.3; a judge rubric (or another file a "
        "scorer reads)." in str(refused.value)
    )


def test_a_model_argument_changed_alone_is_refused_naming_only_it(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = judged_run_cut_back(task_root, monkeypatch)
    with pytest.raises(ResumeMismatchError, match=r"started: model args of mock/m: skill 0\.8 → 0\.3\. Use --force"):
        plan_resume(run_dir, model_args={"skill": "0.3"})


def test_a_model_argument_forced_with_a_changed_rubric_holds_for_that_session_only(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the rubric's old digest is not recorded, so the fingerprint could not be remade with the new argument
    run_dir = judged_run_cut_back(task_root, monkeypatch)
    task_root.template("rubric.jinja2", "Grade this answer: {{ output }}\n")
    before = read_manifest(run_dir)
    asyncio.run(Runner(plan_resume(run_dir, model_args={"skill": "0.3"}, force=True)).run())
    after = read_manifest(run_dir)
    assert (after.model, after.fingerprint) == (before.model, before.fingerprint)


def test_a_model_argument_forced_alone_is_recorded_with_the_fingerprint_it_gives(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = judged_run_cut_back(task_root, monkeypatch)
    asyncio.run(Runner(plan_resume(run_dir, model_args={"skill": "0.3"}, force=True)).run())
    # the fingerprint a run started with the new argument records: the next resume has nothing to refuse
    fresh = plan_run(config(task_root, task=str(task_root.root / "tasks" / "judged.toml"), judge_model="mock/j",
                            limit=4, run_id="fresh", model_args={"skill": "0.3"}))  # fmt: skip
    after = read_manifest(run_dir)
    assert (after.model, after.fingerprint) == (fresh.manifest.model, fresh.manifest.fingerprint)
    assert plan_resume(run_dir).forced == []


def test_a_dataset_directory_changed_between_plan_and_run_fails_the_run(tmp_path: Path) -> None:
    # review-s30 7: listing the directory's files for the watch raised out of Runner.run, leaving it "running"
    from eval_harness.config import RunConfig

    folder = tmp_path / "parts"
    for axis in "pq":
        write_jsonl(folder / f"{axis}.jsonl", [{"id": f"{axis}{i}", "input": f"[[answer: {i}]]", "target": str(i)}
                                              for i in range(5)])  # fmt: skip
    plan = plan_run(RunConfig(task="capability_profile", dataset=folder, output_dir=tmp_path / "out", run_id="r"))
    shutil.copy(folder / "p.jsonl", folder / "p.jsonl.gz")  # two files of one name: the listing refuses them
    result = asyncio.run(Runner(plan).run())
    assert result.status == "failed" and result.fatal is not None and str(folder) in result.fatal
    assert read_manifest(tmp_path / "out" / "r").status == "failed"


@pytest.mark.parametrize(
    ("added", "named"),
    [
        ('system_prompt = "Be brief."\n', "system prompt of task adder"),
        ("pass_threshold = 0.75\n", "pass threshold of task adder (0.5 → 0.75)"),
    ],
)
def test_a_changed_system_prompt_or_pass_threshold_is_named_as_such(
    task_root: TaskRoot, added: str, named: str
) -> None:
    # epochs-s31 6: "system prompt or pass threshold of task ...", without saying which
    run(config(task_root, limit=4))
    spec = (task_root.root / "tasks" / "adder.toml").read_text()
    task_root.task("adder", added + spec)
    with pytest.raises(ResumeMismatchError) as refused:
        plan_resume(task_root.root / "results" / "r1")
    assert f"changed since the run started: {named}. Use --force" in str(refused.value)
