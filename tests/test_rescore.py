"""`rescore`: new scorers over a finished run's outputs, with no generation call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import probe
import pytest
from conftest import CliResult, TaskRoot, arithmetic_records, read_records

from eval_harness.config import RunConfig
from eval_harness.errors import ConfigError, ResumeMismatchError
from eval_harness.planning import plan_resume, plan_run
from eval_harness.rescore import parse_scorer, plan_rescore
from eval_harness.runner import Runner

Cli = Callable[..., CliResult]


@pytest.fixture
def source_run(task_root: TaskRoot) -> Path:
    probe.ProbeProvider.reset()
    config = RunConfig(
        task=str(task_root.root / "tasks" / "adder.toml"),
        model="mock/m",
        model_args={"skill": "0.5", "format_ok": "0.5", "error_rate": "0.1"},
        output_dir=task_root.root / "results",
        run_id="source",
    )
    asyncio.run(Runner(plan_run(config)).run())
    return task_root.root / "results" / "source"


def test_rescore_applies_new_scorers_to_the_recorded_outputs(cli: Cli, source_run: Path) -> None:
    result = cli("rescore", "--run", source_run, "--scorer", "exact_match:mode=strict", "--run-id", "strict", "-q")
    assert result.code == 0, result.err
    new_dir = source_run.parent / "strict"
    manifest = json.loads((new_dir / "manifest.json").read_text())
    assert manifest["source_run"] == str(source_run.resolve())
    assert manifest["model"]["id"] == "mock/m" and manifest["model"]["args"]["skill"] == 0.5
    assert manifest["task"]["scorers"] == [
        {"name": "exact_match", "args": {"mode": "strict"}, "weight": 1.0, "gate": False, "alias": None}
    ]
    assert manifest["task"]["scorers_source"] is None
    old = {r["sample_id"]: r for r in read_records(source_run)}
    new = {r["sample_id"]: r for r in read_records(new_dir)}
    assert old.keys() == new.keys()
    for key, record in new.items():
        assert record["output"] == old[key]["output"]
        assert record["cost_usd"] == old[key]["cost_usd"]
        if record["error"] is None:
            assert record["scores"]["exact_match"] == float(record["output"].strip() == record["target"])
    chatty = [
        r for r in new.values() if r["error"] is None and r["output"] != r["target"] and r["target"] in r["output"]
    ]
    assert chatty and all(r["score"] == 0.0 for r in chatty)  # numeric mode credited these; strict does not
    assert all(old[k]["score"] == 1.0 for k in (r["sample_id"] for r in chatty))


def test_a_rescore_compares_with_its_source_without_force_and_says_so(cli: Cli, source_run: Path) -> None:
    # before: "different scorers ...; pass --force", and with --force a FORCED warning over the whole table
    assert cli("rescore", "--run", source_run, "--scorer", "exact_match:mode=strict", "--run-id", "s", "-q").code == 0
    rescored = source_run.parent / "s"
    for a, b, which in ((source_run, rescored, "B rescores A's outputs"), (rescored, source_run, "A rescores B's")):
        result = cli("compare", "--run-a", a, "--run-b", b, "--format", "json")
        assert result.code == 0, result.err
        document = json.loads(result.out)
        assert document["forced"] == []
        assert document["notes"][0].startswith(which) and "the answers are the same" in document["notes"][0]
    other = cli("run", "--task", source_run.parent.parent / "tasks" / "adder.toml", "--model", "mock/n",
                "--output-dir", source_run.parent, "--run-id", "other", "-q")  # fmt: skip
    assert other.code == 0, other.err
    unrelated = cli("compare", "--run-a", rescored, "--run-b", source_run.parent / "other")
    assert unrelated.code == 2 and "different scorers" in unrelated.err  # only a run and its rescore pass


def test_a_run_of_the_valid_lines_only_is_rescored_on_the_same_lines(cli: Cli, task_root: TaskRoot) -> None:
    dataset = task_root.data("mixed.jsonl", [*arithmetic_records(6), "not json", {"id": "x", "input": "q"}])
    out = task_root.root / "results"
    source = ("run", "--task", task_root.root / "tasks" / "adder.toml", "--dataset", dataset, "--skip-invalid")
    assert cli(*source, "--output-dir", out, "--run-id", "src", "-q").code == 0
    result = cli("rescore", "--run", out / "src", "--scorer", "exact_match:mode=strict", "--run-id", "again", "-q")
    assert result.code == 0, result.err
    assert {r["sample_id"] for r in read_records(out / "again")} == {f"q{i:04d}" for i in range(6)}
    assert json.loads((out / "again" / "manifest.json").read_text())["dataset"]["invalid_lines"] == 2


def test_generation_errors_of_the_source_are_replayed_as_errors(source_run: Path) -> None:
    plan = plan_rescore(source_run, scorers=["exact_match"], run_id="again")
    result = asyncio.run(Runner(plan).run())
    failed_before = {r["sample_id"] for r in read_records(source_run) if r["error"]}
    failed_after = {r["sample_id"] for r in read_records(plan.run_dir) if r["error"]}
    assert failed_before and failed_after == failed_before
    assert result.summary.overall.errors == len(failed_before)


def test_a_replayed_error_keeps_its_type_and_message_through_rescores_of_rescores(source_run: Path) -> None:
    # before: "ProviderError" / "replayed ProviderError: replayed ProviderError: mock/m: ..." one level a rescore
    errors_before = {r["sample_id"]: r["error"] for r in read_records(source_run) if r["error"]}
    run = source_run
    for run_id in ("once", "twice"):
        plan = plan_rescore(run, scorers=["exact_match"], run_id=run_id)
        asyncio.run(Runner(plan).run())
        run = plan.run_dir
        errors_after = {r["sample_id"]: r["error"] for r in read_records(run) if r["error"]}
        assert errors_after == errors_before


def test_rescore_calls_no_model(task_root: TaskRoot) -> None:
    probe.ProbeProvider.reset()
    config = RunConfig(
        task=str(task_root.root / "tasks" / "adder.toml"),
        model="probe/p",
        output_dir=task_root.root / "results",
        run_id="src",
        limit=5,
    )
    asyncio.run(Runner(plan_run(config)).run())
    assert probe.ProbeProvider.calls == 5
    plan = plan_rescore(task_root.root / "results" / "src", task=str(task_root.root / "tasks" / "adder.toml"))
    asyncio.run(Runner(plan).run())
    assert probe.ProbeProvider.calls == 5
    assert [r["score"] for r in read_records(plan.run_dir)] == [1.0] * 5


def test_rescore_run_resumes_like_any_run(source_run: Path) -> None:
    plan = plan_rescore(source_run, scorers=["exact_match:mode=lenient"], run_id="cut")
    asyncio.run(Runner(plan).run())
    samples = plan.run_dir / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:7]))
    resumed = asyncio.run(Runner(plan_resume(plan.run_dir)).run())
    assert resumed.new_records == 33 and resumed.status == "complete"


def test_a_rescore_refuses_to_resume_once_its_source_changed(source_run: Path) -> None:
    # epochs-s31 F1: a rescore killed, its source resumed with --retry-errors, then the rescore resumed: one run
    # scored half from the source's old error records and half from its new answers, "complete", nothing said
    plan = plan_rescore(source_run, scorers=["exact_match:mode=lenient"], run_id="cut")
    asyncio.run(Runner(plan).run())
    samples = plan.run_dir / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:7]))
    size = (source_run / "samples.jsonl").stat().st_size
    retried = asyncio.run(Runner(plan_resume(source_run, retry_errors=True, force=True, model_args={
        "error_rate": "0"})).run())  # fmt: skip
    assert retried.new_records > 0
    grown = (source_run / "samples.jsonl").stat().st_size
    with pytest.raises(ResumeMismatchError) as refused:
        plan_resume(plan.run_dir)
    assert (
        f"changed since the run started: the records of its source run {source_run.resolve()} (samples.jsonl "
        f"{size:,} → {grown:,} bytes). Use --force"
    ) in str(refused.value)
    forced = plan_resume(plan.run_dir, force=True)
    assert forced.forced == [
        f"the records of its source run {source_run.resolve()} (samples.jsonl {size:,} → {grown:,} bytes)"
    ]


def test_rescore_refuses_when_the_source_dataset_changed(task_root: TaskRoot, source_run: Path) -> None:
    path = task_root.root / "data" / "adder.jsonl"
    path.write_text(path.read_text() + json.dumps({"input": "new", "target": "x"}) + "\n")
    with pytest.raises(ResumeMismatchError, match=r"dataset .* changed since that run"):
        plan_rescore(source_run, scorers=["exact_match"])


def test_rescore_refuses_when_the_task_s_template_variables_changed(task_root: TaskRoot, source_run: Path) -> None:
    # review-s26: a changed few-shot spec or template variable changes every prompt as a changed template does;
    # rescore compared the template's bytes only
    spec = task_root.root / "tasks" / "adder.toml"
    spec.write_text(spec.read_text() + '\n[template_vars]\nstyle = "terse"\n')
    with pytest.raises(ResumeMismatchError) as refused:
        plan_rescore(source_run, scorers=["exact_match"])
    assert str(refused.value) == (
        f"cannot rescore {source_run}: the task's few-shot spec or examples or its template variables changed "
        "since that run, so the recorded prompts would not be the ones the model saw"
    )


def test_rescore_refuses_when_the_task_s_system_prompt_changed(task_root: TaskRoot, source_run: Path) -> None:
    # readme-walk-s26: the new manifest recorded a system prompt the model never saw
    spec = task_root.root / "tasks" / "adder.toml"
    spec.write_text('system_prompt = "Be terse."\n' + spec.read_text())
    with pytest.raises(ResumeMismatchError) as refused:
        plan_rescore(source_run, scorers=["exact_match"])
    assert str(refused.value) == (
        f"cannot rescore {source_run}: the task's system prompt changed since that run, so the recorded prompts "
        "would not be the ones the model saw"
    )


@pytest.mark.parametrize(("status", "said"), [("interrupted", "it is interrupted"), ("failed", "it failed")])
def test_rescore_refuses_a_source_that_is_not_complete(source_run: Path, status: str, said: str) -> None:
    # its missing records would each become an error of the new run, counted as wrong, without a word
    manifest = json.loads((source_run / "manifest.json").read_text())
    (source_run / "manifest.json").write_text(json.dumps({**manifest, "status": status}))
    with pytest.raises(ConfigError) as refused:
        plan_rescore(source_run, scorers=["exact_match"])
    assert str(refused.value) == (  # "it is failed" before (readme-walk3 13)
        f"cannot rescore {source_run}: {said}, not complete; finish it first (eval-harness resume {source_run})"
    )


def test_rescore_names_a_killed_source_interrupted_and_a_live_one_running(source_run: Path) -> None:
    """It read the manifest's status alone: a SIGKILLed run was "running", and a run still being written was told
    to resume, which would be refused (readme-walk2 3). It now reads the lock, as report and inspect do."""
    from eval_harness.artifacts import RunLock

    manifest = json.loads((source_run / "manifest.json").read_text())
    (source_run / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    with pytest.raises(ConfigError, match=r"it is interrupted, not complete; finish it first \(eval-harness resume"):
        plan_rescore(source_run, scorers=["exact_match"])
    with RunLock(source_run), pytest.raises(ConfigError, match="it is still running; wait for it to end"):
        plan_rescore(source_run, scorers=["exact_match"])


def test_rescore_needs_a_task_or_scorers(source_run: Path) -> None:
    with pytest.raises(ConfigError, match="either --task TASK or one or more --scorer"):
        plan_rescore(source_run)


def test_rescore_with_both_a_task_and_scorers_says_not_both(source_run: Path) -> None:
    # before: "needs either --task TASK or one or more --scorer NAME" when both were given
    with pytest.raises(ConfigError, match="takes --task TASK or --scorer NAME, not both"):
        plan_rescore(source_run, task="adder", scorers=["exact_match"])


@pytest.mark.parametrize(
    ("text", "name", "args"), [("f1", "f1", {}), ("em:mode=numeric,x=1", "em", {"mode": "numeric", "x": "1"})]
)
def test_scorer_flag_parses_name_and_arguments(text: str, name: str, args: dict[str, str]) -> None:
    spec = parse_scorer(text)
    assert (spec.name, spec.args) == (name, args)


def test_scorer_flag_takes_a_list_or_a_table_as_json_whose_commas_stay_in_the_value() -> None:
    spec = parse_scorer('rubric_judge:criteria={"faithfulness":"true, and sourced","coverage":""},scale=[1,10]')
    assert spec.args == {"criteria": '{"faithfulness":"true, and sourced","coverage":""}', "scale": "[1,10]"}
    # review-s32 5, review2-s32 2: a bracket in a plain value, or one never closed, is text: it swallowed the alias
    assert parse_scorer("j:system_prompt=Rate [1-5 strictly,alias=k").args == {"system_prompt": "Rate [1-5 strictly"}
    assert parse_scorer("j:system_prompt=[Grader: strict,alias=k").args == {"system_prompt": "[Grader: strict"}
    assert parse_scorer('j:criteria= ["a","b"],alias=k').args == {"criteria": '["a","b"]'}  # a blank after =
    with pytest.raises(ConfigError, match="arguments must look like key=value"):
        parse_scorer("em:x=a,b=[1,2")  # left open: its commas split it, and "2" is no argument


def test_a_scorer_argument_given_twice_is_refused_not_the_last_kept(cli: Cli, source_run: Path) -> None:
    # fuzz-s25 10: "exact_match:mode=strict,mode=lenient" rescored with lenient, exit 0
    result = cli("rescore", "--run", source_run, "--scorer", "exact_match:mode=strict,mode=lenient", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        "error: --scorer 'exact_match:mode=strict,mode=lenient': mode is given twice; give it once",
    )


def test_rescore_timeout_is_the_new_runs_scoring_budget(cli: Cli, source_run: Path) -> None:
    result = cli("rescore", "--run", source_run, "--scorer", "token_f1", "--run-id", "t", "--timeout", "7.5", "-q")
    assert result.code == 0, result.err
    assert json.loads((source_run.parent / "t" / "manifest.json").read_text())["timeout_s"] == 7.5


def test_a_hand_edited_source_record_fails_its_sample_only(cli: Cli, source_run: Path) -> None:
    """A field report does not read (and so accepts) fails its sample only; one report refuses, the whole rescore
    (test_rescore_source_checks.py)."""
    samples = source_run / "samples.jsonl"
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    answered = next(i for i, r in enumerate(records) if r["output"] is not None)
    failed = next(i for i, r in enumerate(records) if r["output"] is None)
    records[answered]["usage"] = {"prompt_tokens": 3, "cached_tokens": "many"}  # what no provider returns
    records[failed]["error"] = {"type": "ProviderError"}  # an error without a message
    samples.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = cli("rescore", "--run", source_run, "--scorer", "token_f1", "--run-id", "edited", "-q")
    assert result.code == 0, result.err
    new = {(r["sample_id"], r["epoch"]): r for r in read_records(source_run.parent / "edited")}
    edited = new[records[answered]["sample_id"], records[answered]["epoch"]]["error"]
    assert edited["type"] == "ProviderResponseError"
    reason = "cached_tokens: Input should be a valid integer, unable to parse string as an integer"
    assert edited["message"].endswith(f"this sample's record: {reason}")
    replayed = new[records[failed]["sample_id"], records[failed]["epoch"]]["error"]
    assert (replayed["type"], replayed["message"]) == ("ProviderError", "no output")
    assert sum(r["error"] is None for r in new.values()) == sum(r["error"] is None for r in records) - 1


def test_a_rescore_does_not_copy_a_credential_from_an_old_runs_base_url(cli: Cli, source_run: Path) -> None:
    # a run recorded before base URLs were checked for credentials: its base_url kept a gateway key
    manifest_path = source_run / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    old_url = "http://127.0.0.1:9/v1?api-version=1&key=gw-SECRET-7f3a#sig=gw-SECRET-7f3a"
    manifest["model"]["args"]["base_url"] = old_url
    manifest_path.write_text(json.dumps(manifest))
    result = cli("rescore", "--run", source_run, "--scorer", "exact_match:mode=strict", "--run-id", "clean", "-q")
    assert result.code == 0, result.err
    assert "the source run's base_url carries a credential (key=...); this run records it without" in result.err
    rescored = json.loads((source_run.parent / "clean" / "manifest.json").read_text())
    assert rescored["model"]["args"]["base_url"] == "http://127.0.0.1:9/v1?api-version=1"
    assert all(b"gw-SECRET" not in path.read_bytes() for path in (source_run.parent / "clean").rglob("*"))
    assert "gw-SECRET" not in result.out + result.err


def test_a_rescore_resumed_with_a_model_arg_is_refused(cli: Cli, source_run: Path) -> None:
    # before: "changed since the run started: model args ...: stream false → true", and with --force recorded
    plan = plan_rescore(source_run, scorers=["exact_match:mode=lenient"], run_id="cut")
    asyncio.run(Runner(plan).run())
    samples = plan.run_dir / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:7]))
    for force in ([], ["--force"]):
        result = cli("resume", plan.run_dir, "--model-arg", "skill=1", *force)
        assert result.code == 2 and "with --model-arg: it rescores" in result.err, result.err
        assert "calls no model" in result.err
    assert cli("resume", plan.run_dir, "-q").code == 0


def test_a_rescore_keeps_the_sources_cache_hits_as_hits(cli: Cli, source_run: Path) -> None:
    # before: a hit (cached, billed nothing) came back cached false at cost 0: the report then read $0 as a price
    samples = source_run / "samples.jsonl"
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    hits = [r for r in records if r["output"] is not None][:3]
    for record in hits:
        record.update(cached=True, cost_usd=0.0, attempts=0)
    samples.write_text("".join(json.dumps(r) + "\n" for r in records))
    (source_run / ".columns.npz").unlink(missing_ok=True)
    result = cli("rescore", "--run", source_run, "--scorer", "token_f1", "--run-id", "hits", "-q")
    assert result.code == 0, result.err
    rescored = {(r["sample_id"], r["epoch"]): r for r in read_records(source_run.parent / "hits")}
    assert {key for key, r in rescored.items() if r["cached"]} == {(r["sample_id"], r["epoch"]) for r in hits}
    summary = json.loads((source_run.parent / "hits" / "summary.json").read_text())
    assert summary["cached_records"] == 3


def test_two_modes_of_one_scorer_side_by_side_take_an_alias(cli: Cli, source_run: Path) -> None:
    # before: "scorer key 'exact_match' is used twice; give one an alias", and alias= was an unknown argument
    result = cli("rescore", "--run", source_run, "--scorer", "exact_match:mode=strict",
                 "--scorer", "exact_match:mode=numeric,alias=numeric", "--run-id", "two", "-q")  # fmt: skip
    assert result.code == 0, result.err
    answered = [r for r in read_records(source_run.parent / "two") if r["error"] is None]
    assert answered and all(set(r["scores"]) == {"exact_match", "numeric"} for r in answered)
    spec = parse_scorer("exact_match:mode=numeric,alias=numeric")
    assert (spec.alias, spec.args) == ("numeric", {"mode": "numeric"})


def test_a_rescore_records_which_generation_options_its_source_took_from_flags(cli: Cli, tmp_path: Path) -> None:
    # before: every rescore recorded all of its source's options (the task's [generation] too) as given by flags
    made = cli("run", "--task", "capability_profile", "--model", "mock/m", "--limit", "4", "--max-tokens", "40",
               "--output-dir", tmp_path, "--run-id", "src", "-q")  # fmt: skip
    assert made.code == 0, made.err
    result = cli("rescore", "--run", tmp_path / "src", "--scorer", "token_f1", "--run-id", "flags", "-q")
    assert result.code == 0, result.err
    source = json.loads((tmp_path / "src" / "manifest.json").read_text())["task"]
    rescored = json.loads((tmp_path / "flags" / "manifest.json").read_text())["task"]
    assert source["generation"] == rescored["generation"] and source["generation"]["temperature"] == 0.0
    assert rescored["generation_from_flags"] == source["generation_from_flags"] == ["max_tokens"]


def test_one_scorer_given_twice_without_an_alias_is_told_how_to_give_one(cli: Cli, source_run: Path) -> None:
    result = cli("rescore", "--run", source_run, "--scorer", "exact_match", "--scorer", "exact_match:mode=numeric")
    assert result.code == 2
    assert result.err.strip().endswith("is used twice; give one an alias (NAME:...,alias=KEY)"), result.err


def test_a_rescore_whose_source_is_gone_says_so_on_resume(source_run: Path) -> None:
    # epochs-s31 6: "…/samples.jsonl: not found; is … a run directory?", of a directory the user never named
    plan = plan_rescore(source_run, scorers=["exact_match:mode=lenient"], run_id="cut")
    asyncio.run(Runner(plan).run())
    source_run.rename(source_run.with_name("moved"))
    with pytest.raises(ConfigError) as refused:
        plan_resume(plan.run_dir)
    assert str(refused.value) == (
        f"cannot resume {plan.run_dir}: it rescores {source_run.resolve()}, whose records are gone (moved or "
        "deleted); put that run back where it was, or rescore it anew where it is now"
    )
