"""Where an openai-compatible server reads its key is how the key travels, not what answers are: a run started with
the key in the wrong place (or read from the wrong variable) is finished by a resume that names the right one, for
that session only, without --force (README walk 3, findings 3 and 12)."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records
from fake_llm_server import FakeLLMServer

from eval_harness.planning import plan_resume
from eval_harness.runner import Runner

Cli = Callable[..., CliResult]
KEY = "sk-placed-0123456789abcdef"


@pytest.fixture
def project(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root as the working directory, with the key in SERVER_KEY and none of the machine's."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WRONG_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SERVER_KEY", KEY)
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(task_root.root / "cache"))
    monkeypatch.chdir(task_root.root)
    return task_root


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key=KEY) as running:
        yield running


def failed_run(cli: Cli, server: FakeLLMServer, *model_args: str) -> Path:
    """A run of the adder task's first 3 samples against ``server`` that its 401 stopped before any record."""
    given = [a for arg in (f"base_url={server.base_url}", *model_args) for a in ("--model-arg", arg)]
    result = cli("run", "--task", "tasks/adder.toml", "--model", "openai-compatible/m", *given, "--limit", "3",
                 "--max-retries", "0", "--output-dir", "results", "--run-id", "k", "-q")  # fmt: skip
    assert result.code == 2 and "authentication failed: HTTP 401" in result.err, result.err
    run_dir = Path("results") / "k"
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "failed"
    return run_dir


def recorded_args(run_dir: Path) -> dict[str, object]:
    args: dict[str, object] = json.loads((run_dir / "manifest.json").read_text())["model"]["args"]
    return args


@pytest.mark.parametrize(
    ("started_with", "given", "key_from"),
    [
        ("api_key_query=code", "api_key_header=x-functions-key", "header:x-functions-key"),
        ("api_key_header=x-functions-key", "api_key_query=code", "query:code"),
    ],
)
@pytest.mark.parametrize("force", [False, True], ids=["unforced", "forced"])
def test_a_resume_moves_the_key_from_the_query_to_a_header_and_back_for_its_session(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, started_with: str, given: str, key_from: str, force: bool
) -> None:
    # before: the recorded option was kept beside the one given, and both were refused as "not both", forced or not
    server.key_from = key_from
    run_dir = failed_run(cli, server, "api_key_env=SERVER_KEY", started_with)
    resumed = cli("resume", run_dir, "--model-arg", given, *(["--force"] if force else []), "-q")
    assert resumed.code == 0, resumed.err
    old_name, _, old_value = started_with.partition("=")
    assert (
        f"resume: --model-arg {given} holds for this session only, in place of the run's {old_name}={old_value}: "
        "give it again to a later resume"
    ) in resumed.err
    assert len(read_records(run_dir)) == 3
    sent = server.generation_requests()[-3:]
    if key_from == "header:x-functions-key":
        assert all(r.headers.get("x-functions-key") == KEY and not r.query for r in sent)
    else:
        assert all(r.query == {"code": KEY} and "x-functions-key" not in r.headers for r in sent)
    assert all("authorization" not in r.headers for r in sent)
    # the manifest keeps the run's: a later resume gives the session's option again (the printed command does)
    assert recorded_args(run_dir)[old_name] == old_value
    assert recorded_args(run_dir)[given.partition("=")[0]] is None
    assert not json.loads((run_dir / "manifest.json").read_text()).get("forced_changes")


def test_a_forced_resume_records_its_real_change_but_not_the_keys_new_place(
    cli: Cli, project: TaskRoot, server: FakeLLMServer
) -> None:
    server.key_from = "header:x-functions-key"
    run_dir = failed_run(cli, server, "api_key_env=SERVER_KEY", "api_key_query=code")
    with FakeLLMServer(api_key=KEY) as second:
        second.key_from = "header:x-functions-key"
        forced = cli("resume", run_dir, "--model-arg", f"base_url={second.base_url}", "--model-arg",
                     "api_key_header=x-functions-key", "--force", "-q")  # fmt: skip
        assert forced.code == 0, forced.err
        assert len(second.generation_requests()) == 3
    args = recorded_args(run_dir)
    assert (args["base_url"], args["api_key_query"], args["api_key_header"]) == (second.base_url, "code", None)


def test_both_places_given_anew_to_a_resume_are_refused(cli: Cli, project: TaskRoot, server: FakeLLMServer) -> None:
    server.key_from = "header:x-functions-key"
    run_dir = failed_run(cli, server, "api_key_env=SERVER_KEY", "api_key_query=code")
    refused = cli("resume", run_dir, "--model-arg", "api_key_header=x-functions-key", "--model-arg",
                  "api_key_query=code", "-q")  # fmt: skip
    assert refused.code == 2
    assert "error: --model-arg: give api_key_header or api_key_query, not both" in refused.err, refused.err


def test_the_resume_command_of_a_session_that_moved_the_key_gives_its_new_place_alone(
    project: TaskRoot, server: FakeLLMServer, cli: Cli
) -> None:
    # pasted, a command that gave the run's query option again (or "api_key_query=unset") would be refused
    server.key_from = "header:x-functions-key"
    run_dir = failed_run(cli, server, "api_key_env=SERVER_KEY", "api_key_query=code")
    plan = plan_resume(run_dir, model_args={"api_key_header": "x-functions-key"})
    assert plan.session_model_args == {"api_key_header": "x-functions-key"}
    result = asyncio.run(Runner(plan).run())
    assert result.resume_command == f"eval-harness resume {run_dir} --model-arg api_key_header=x-functions-key"
    assert cli(*shlex.split(result.resume_command)[1:], "-q").code == 0


def test_a_resume_reads_the_key_from_another_variable_for_its_session_without_force(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: "changed since the run started: model args ...: api_key_env WRONG_KEY → SERVER_KEY. Use --force"
    monkeypatch.setenv("WRONG_KEY", "sk-wrong-0000")
    run_dir = failed_run(cli, server, "api_key_env=WRONG_KEY")
    resumed = cli("resume", run_dir, "--model-arg", "api_key_env=SERVER_KEY", "-q")
    assert resumed.code == 0, resumed.err
    assert (
        "resume: --model-arg api_key_env=SERVER_KEY holds for this session only (the run records WRONG_KEY): give "
        "it again to a later resume"
    ) in resumed.err
    assert len(read_records(run_dir)) == 3
    assert recorded_args(run_dir)["api_key_env"] == "WRONG_KEY"
    for path in project.root.rglob("*"):  # the key itself is never recorded, in either place
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("started_with", ["api_key_query=code", "api_key_header=x-functions-key"])
def test_a_resume_sends_the_key_as_a_bearer_again_when_its_place_is_given_empty(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, started_with: str
) -> None:
    # helper-106's leftover: nothing could unset a recorded place ("api_key_query=" was refused as no name), so a
    # run started with one against a server that reads a Bearer key could never be finished
    run_dir = failed_run(cli, server, "api_key_env=SERVER_KEY", started_with)
    name, _, value = started_with.partition("=")
    plan = plan_resume(run_dir, model_args={name: ""})
    assert plan.session_model_args == {name: ""}
    assert (
        f"resume: --model-arg {name}= holds for this session only (the run records {value}): give it again to a "
        "later resume"
    ) in plan.notes
    result = asyncio.run(Runner(plan).run())
    assert result.status == "complete" and len(read_records(run_dir)) == 3
    assert all(
        r.headers.get("authorization") == f"Bearer {KEY}" and not r.query for r in server.generation_requests()[-3:]
    )
    assert result.resume_command == f"eval-harness resume {run_dir} --model-arg {name}="
    assert recorded_args(run_dir)[name] == value  # the manifest keeps the run's, as for every such option
