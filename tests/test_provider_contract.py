"""The extension contract, end to end through the CLI with providers and a scorer registered as a plugin would:
a provider's own exception or wrong return value fails one sample (audit-ext F4), a hung scorer is cut off by
--timeout (F7), and a key declared as ``SecretStr`` is redacted without overriding ``secrets()`` (F9)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import CliResult, TaskRoot, read_records
from pydantic import Field, SecretStr

from eval_harness.config import Settings
from eval_harness.errors import ProviderError
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions, create_provider, register_provider
from eval_harness.scorers.base import Scorer, register_scorer
from eval_harness.types import Completion, GenerateRequest, Sample, Score, Usage

Cli = Callable[..., CliResult]
CANARY = "sk-plugin-canary-5f1e2d3c4b5a69788796"


class VendorSDKError(Exception):
    """What a vendor SDK raises: its own class, not a ProviderError."""


class FlakyOptions(ProviderOptions):
    fail_on: str = Field(default="q0001", description="The sample whose call raises VendorSDKError.")


@register_provider("contract-flaky")
class FlakyProvider(Provider):
    """Answers every sample right, but raises a vendor SDK's own error (a two-line message) on ``fail_on``."""

    Options = FlakyOptions
    calls: ClassVar[dict[str, int]] = {}
    """Calls per sample, across instances (reset by the ``project`` fixture)."""

    async def generate(self, request: GenerateRequest) -> Completion:
        options = self.options
        assert isinstance(options, FlakyOptions)
        sample = request.sample
        FlakyProvider.calls[sample.id] = FlakyProvider.calls.get(sample.id, 0) + 1
        if sample.id == options.fail_on:
            raise VendorSDKError("503 from upstream\n  (request abc-123 throttled)")
        return Completion(text=sample.targets[0], usage=Usage(prompt_tokens=3, completion_tokens=1))


class WrongTypeOptions(ProviderOptions):
    returns: str = Field(default="str", description="str: a bare string; none: None.")


@register_provider("contract-wrongtype")
class WrongTypeProvider(Provider):
    """Returns the answer's text (or None) instead of a Completion on sample q0001."""

    Options = WrongTypeOptions

    async def generate(self, request: GenerateRequest) -> Completion:
        options = self.options
        assert isinstance(options, WrongTypeOptions)
        target = request.sample.targets[0]
        if request.sample.id == "q0001":
            wrong: Any = target if options.returns == "str" else None
            return wrong  # type: ignore[no-any-return]
        return Completion(text=target)


class KeyedOptions(ProviderOptions):
    api_key: SecretStr = Field(default=SecretStr(""), description="The vendor's key.")
    fallback_keys: list[SecretStr] = Field(default_factory=list, description="Keys tried after api_key.")


@register_provider("contract-keyed")
class KeyedProvider(Provider):
    """A plugin that declares its key as SecretStr and overrides nothing else, whose upstream echoes the key:
    in a ProviderError (q0001), a vendor SDK's own error (q0002), and the answer itself (q0003)."""

    Options = KeyedOptions

    async def generate(self, request: GenerateRequest) -> Completion:
        options = self.options
        assert isinstance(options, KeyedOptions)
        key = options.api_key.get_secret_value()
        sample = request.sample
        if sample.id == "q0001":
            raise ProviderError(f"upstream said 400: bad request for key {key}")
        if sample.id == "q0002":
            raise VendorSDKError(f"invalid x-api-key header {key!r}")
        if sample.id == "q0003":
            return Completion(text=f"{sample.targets[0]} (echo: authorization Bearer {key})")
        return Completion(text=sample.targets[0])


class HangingScorer(Scorer):
    """Awaits far longer than the tests' --timeout on sample q0000 (a grader endpoint that never answers),
    then would give full marks; answers at once on every other sample."""

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        if sample.id == "q0000":
            await asyncio.sleep(3)
        return Score(value=1.0)


@register_scorer("contract_hangs_on_q0000")
def hangs_on_q0000() -> Scorer:
    """A scorer that hangs on sample q0000."""
    return HangingScorer()


@pytest.fixture
def project(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root as the working directory, without the machine's keys."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(task_root.root)
    FlakyProvider.calls = {}
    return task_root


def run(cli: Cli, model: str, *args: str, limit: int = 4, task: str = "tasks/adder.toml") -> CliResult:
    return cli("run", "--task", task, "--model", model, "--limit", str(limit), "-q",
               "--output-dir", "results", "--run-id", "r1", *args)  # fmt: skip


def by_id(root: Path) -> dict[str, dict[str, Any]]:
    return {record["sample_id"]: record for record in read_records(root / "results" / "r1")}


# F4: a provider's own exception or wrong return value fails that sample only ---------------------------------


def test_a_provider_exception_of_its_own_becomes_that_samples_generation_error(cli: Cli, project: TaskRoot) -> None:
    result = run(cli, "contract-flaky/m")
    assert result.code == 0, result.err
    records = by_id(project.root)
    assert len(records) == 4
    assert records["q0001"]["error"] == {
        "type": "VendorSDKError",
        "message": "contract-flaky/m: 503 from upstream (request abc-123 throttled)",
        "stage": "generate",
    }
    assert records["q0001"]["output"] is None
    assert [records[i]["score"] for i in ("q0000", "q0002", "q0003")] == [1.0, 1.0, 1.0]


def test_a_provider_exception_of_its_own_is_not_retried(cli: Cli, project: TaskRoot) -> None:
    # only the provider can tell a transient failure (ProviderError with a retry_cause)
    result = run(cli, "contract-flaky/m", "--max-retries", "3")
    assert result.code == 0, result.err
    assert FlakyProvider.calls["q0001"] == 1
    assert by_id(project.root)["q0001"]["attempts"] == 1


@pytest.mark.parametrize(("returns", "named"), [("str", "str"), ("none", "None")])
def test_a_provider_returning_no_completion_fails_that_sample_naming_the_contract(
    cli: Cli, project: TaskRoot, returns: str, named: str
) -> None:
    result = run(cli, "contract-wrongtype/m", "--model-arg", f"returns={returns}")
    assert result.code == 0, result.err
    records = by_id(project.root)
    assert records["q0001"]["error"] == {
        "type": "TypeError",
        "message": f"contract-wrongtype/m returned {named}, expected Completion",
        "stage": "generate",
    }
    assert records["q0000"]["error"] is None and records["q0000"]["score"] == 1.0


# F7: --timeout covers scoring ---------------------------------------------------------------------------------


def test_a_hung_scorer_gets_a_scoring_timeout_and_the_run_goes_on(cli: Cli, project: TaskRoot) -> None:
    project.task(
        "hangs",
        'name = "hangs"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "contract_hangs_on_q0000"\n',
    )
    result = run(cli, "mock/m", "--model-arg", "skill=1", "--timeout", "0.2", limit=2, task="tasks/hangs.toml")
    assert result.code == 0, result.err
    records = by_id(project.root)
    hung = records["q0000"]
    message = "timed out after 0.2 s while scoring (contract_hangs_on_q0000)"
    assert hung["error"] == {"type": "TimeoutError", "message": message, "stage": "score"}
    assert hung["output"] == "1" and hung["score"] is None
    assert records["q0001"]["error"] is None and records["q0001"]["score"] == 1.0


def test_a_scoring_timeout_keeps_the_scorers_that_finished_before_the_hung_one(cli: Cli, project: TaskRoot) -> None:
    project.task(
        "hangs_second",
        'name = "hangs_second"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
        '[[scorers]]\nname = "contract_hangs_on_q0000"\n',
    )
    result = run(cli, "mock/m", "--model-arg", "skill=1", "--timeout", "0.2", limit=1, task="tasks/hangs_second.toml")
    assert result.code == 0, result.err
    hung = by_id(project.root)["q0000"]
    assert hung["error"]["message"] == "timed out after 0.2 s while scoring (contract_hangs_on_q0000)"
    assert hung["scores"] == {"exact_match": 1.0} and hung["score"] is None


# F9: a key declared as SecretStr is redacted without overriding secrets() -----------------------------------


def test_a_plugin_key_declared_as_secretstr_reaches_no_file_of_the_run(cli: Cli, project: TaskRoot) -> None:
    result = run(cli, "contract-keyed/m", "--model-arg", f"api_key={CANARY}")
    assert result.code == 0, result.err
    records = by_id(project.root)
    assert "bad request for key [REDACTED]" in records["q0001"]["error"]["message"]
    assert records["q0002"]["error"]["message"] == "contract-keyed/m: invalid x-api-key header '[REDACTED]'"
    assert records["q0003"]["output"] == "4 (echo: authorization Bearer [REDACTED])"
    assert CANARY not in result.out and CANARY not in result.err
    for path in (project.root / "results").rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


def test_provider_secrets_hold_every_secretstr_among_the_options_once() -> None:
    context = ProviderContext(settings=Settings(openai_api_key=SecretStr("sk-from-the-environment")))
    args = {"api_key": "sk-option-key", "fallback_keys": ["sk-fallback-1", "sk-option-key"]}
    provider = create_provider("contract-keyed/m", args, context)
    assert sorted(provider.secrets()) == ["sk-fallback-1", "sk-from-the-environment", "sk-option-key"]
