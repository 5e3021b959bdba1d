"""A value of samples.jsonl outside its field's range is refused by every reader that reads the field.

A score or a scorer's value outside [0, 1], or a negative epoch, latency, cost, judge cost, backoff, attempt
count, token count or retry count, is no record this build writes: ``report`` would show a mean of 99% with an
interval reaching 126%, and a cost of $-0.08. Each case starts from a real run of the CLI with the mock model,
with one line edited by hand; every reader refuses it with one line naming the file, the line and the field,
whichever path reads the line (numpy or orjson) and whether or not a columns cache lies beside it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from conftest import CliResult, adder_task_root, run_cli

from eval_harness.aggregate import COLUMNS_CACHE, load_columns, save_columns_cache
from eval_harness.artifacts import RunPaths, iter_record_dicts, scan_keys
from eval_harness.errors import ArtifactError
from tests.test_aggregate_strict import edited_copy, lines_of, refusal

Cli = Callable[..., CliResult]
KEYS = ["exact_match"]  # as refusal() reads
SUFFIX = "; not a sample record of schema version 1"
UNIT = "expected a number in [0, 1] or null, got"
NON_NEGATIVE = "expected a non-negative number or null, got"
COUNT = "expected a non-negative integer or null, got"


def judged(prompt: int = 400, completion: int = 50) -> bytes:
    """What a model-based scorer leaves in place of ``"judge_usage":null``."""
    return (
        f'"judge_usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},'
        '"cached_tokens":null,"reasoning_tokens":null}'
    ).encode()


@dataclass(frozen=True)
class Edit:
    """One field edited out of its range: the field as the message names it, the text replaced (a regex matching
    clean and error records alike), the value out of range and how the message shows it, the same edit in range
    (which the fast path reads), and whether ``compare`` (a light read) reads the field."""

    field: str
    old: bytes
    bad: bytes
    message: str
    good: bytes
    compared: bool = False


EDITS = {
    "score above 1": Edit("score", rb'"score":[^,]+,', b'"score":7.5,', f"{UNIT} 7.5", b'"score":0.5,', True),
    "score below 0": Edit("score", rb'"score":[^,]+,', b'"score":-0.25,', f"{UNIT} -0.25", b'"score":0.25,', True),
    "scores value above 1": Edit(
        "scores.exact_match",
        rb'"scores":\{[^}]*\}',
        b'"scores":{"exact_match":1.5}',
        f"{UNIT} 1.5",
        b'"scores":{"exact_match":0.5}',
    ),
    "scores value below 0": Edit(
        "scores.exact_match",
        rb'"scores":\{[^}]*\}',
        b'"scores":{"exact_match":-1}',
        f"{UNIT} -1",
        b'"scores":{"exact_match":1}',
    ),
    "epoch": Edit(
        "epoch", rb'"epoch":0,', b'"epoch":-3,', "expected a non-negative integer, got -3", b'"epoch":3,', True
    ),
    "latency_ms": Edit(
        "latency_ms", rb'"latency_ms":[^,]+,', b'"latency_ms":-1.5,', f"{NON_NEGATIVE} -1.5", b'"latency_ms":1.5,', True
    ),
    "cost_usd": Edit(
        "cost_usd", rb'"cost_usd":[^,]+,', b'"cost_usd":-0.083,', f"{NON_NEGATIVE} -0.083", b'"cost_usd":0.083,', True
    ),
    "judge_cost_usd": Edit(
        "judge_cost_usd",
        rb'"judge_cost_usd":null',
        b'"judge_cost_usd":-0.01',
        f"{NON_NEGATIVE} -0.01",
        b'"judge_cost_usd":0.01',
    ),
    "backoff_s": Edit(
        "backoff_s", rb'"backoff_s":[^}]+\}', b'"backoff_s":-2.0}', f"{NON_NEGATIVE} -2.0", b'"backoff_s":2.0}'
    ),
    "attempts": Edit("attempts", rb'"attempts":\d+', b'"attempts":-1', f"{COUNT} -1", b'"attempts":2'),
    "prompt_tokens": Edit(
        "usage.prompt_tokens", rb'"prompt_tokens":\d+', b'"prompt_tokens":-11', f"{COUNT} -11", b'"prompt_tokens":12'
    ),
    "completion_tokens": Edit(
        "usage.completion_tokens",
        rb'"completion_tokens":\d+',
        b'"completion_tokens":-2',
        f"{COUNT} -2",
        b'"completion_tokens":3',
    ),
    "judge prompt_tokens": Edit(
        "judge_usage.prompt_tokens", rb'"judge_usage":null', judged(prompt=-400), f"{COUNT} -400", judged()
    ),
    "judge completion_tokens": Edit(
        "judge_usage.completion_tokens", rb'"judge_usage":null', judged(completion=-50), f"{COUNT} -50", judged()
    ),
    "retries": Edit(
        "retries.timeout", rb'"retries":\{\}', b'"retries":{"timeout":-1}', f"{COUNT} -1", b'"retries":{"timeout":1}'
    ),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete run of the mock model over 40 samples, a third of them provider errors; no columns cache."""
    root = adder_task_root(tmp_path_factory.mktemp("ranges") / "project")
    out = root.root / "results"
    run_cli(
        "run", "--task", root.root / "tasks" / "adder.toml", "--model", "mock/m", "--model-arg", "error_rate=0.3",
        "--model-arg", "cost_per_1k_tokens=0.3", "--model-arg", "latency_ms=1", "--max-retries", "0",
        "--output-dir", out, "--run-id", "r", "--quiet",
    )  # fmt: skip
    assert not (out / "r" / COLUMNS_CACHE).exists()
    return out / "r"


@pytest.fixture(scope="module")
def cached_run_dir(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run with its last 15 records written by a resumed session, which left the columns cache over
    all 40."""
    run = tmp_path_factory.mktemp("cached") / "r"
    shutil.copytree(run_dir, run)
    samples = RunPaths(run).samples
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:25]))
    (run / ".resume.json").unlink()
    run_cli("resume", run, "--quiet")
    assert (run / COLUMNS_CACHE).is_file() and len(lines_of(run)) == 40
    return run


def line_index(run: Path, kind: str) -> int:
    """Index of a record past the first few that holds a provider error ("error") or none ("clean")."""
    records = [orjson.loads(line) for line in lines_of(run)]
    return next(i for i, r in enumerate(records) if i > 2 and (r["error"] is not None) == (kind == "error"))


def artifact_bytes(run: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(run.iterdir()) if path.is_file() and path.name != ".lock"}


# --------------------------------------------------------------------------------------------------
# the two reading paths
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["clean", "error"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_value_out_of_range_is_refused_naming_its_field_by_the_fast_path_as_by_orjson(
    run_dir: Path, tmp_path: Path, edit: str, kind: str
) -> None:
    case = EDITS[edit]
    index = line_index(run_dir, kind)
    samples = edited_copy(run_dir, tmp_path / "bad", index, case.old, case.bad)
    message = refusal(samples)
    assert message == refusal(samples, fast=False)
    assert message == f"{samples}:{index + 1}: {case.field}: {case.message}{SUFFIX}"
    # the same line in range is read by the fast path itself (a line with retries never is): the refusal above
    # is its range check, not a line of another shape
    within = load_columns(edited_copy(run_dir, tmp_path / "good", index, case.old, case.good), KEYS)
    assert within.lines_read == 40 and within.fast_lines == 40 - (case.field.startswith("retries"))


@pytest.mark.parametrize("edit", [name for name, case in EDITS.items() if case.compared])
def test_a_light_read_refuses_a_value_out_of_range_in_a_field_it_reads(
    run_dir: Path, tmp_path: Path, edit: str
) -> None:
    case = EDITS[edit]
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "bad", index, case.old, case.bad)
    assert refusal(samples, light=True) == refusal(samples, light=True, fast=False) == refusal(samples)


@pytest.mark.parametrize("kind", ["clean", "error"])
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(b"9223372036854775808", "attempts: 9223372036854775808 is out of range" + SUFFIX, id="2**63"),
        pytest.param(b"01", "not a sample record (not JSON: number with leading zero is not allowed", id="not-json"),
    ],
)
def test_an_attempts_value_only_orjson_can_tell_is_left_to_it_by_the_fast_path(
    run_dir: Path, tmp_path: Path, kind: str, text: bytes, problem: str
) -> None:
    # the fast path reads attempts of one digit only (more attempts leave retries): any other is orjson's to tell
    index = line_index(run_dir, kind)
    samples = edited_copy(run_dir, tmp_path / "run", index, rb'"attempts":\d+', b'"attempts":' + text)
    message = refusal(samples)
    assert message == refusal(samples, fast=False) and message.startswith(f"{samples}:{index + 1}: {problem}")


def test_a_superseded_record_out_of_range_is_refused_as_the_latest_is(run_dir: Path, tmp_path: Path) -> None:
    # --retry-errors leaves the earlier record of a key in the file: it is a line of the artifact all the same
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "bad", index, rb'"score":[^,]+,', b'"score":7.5,')
    with samples.open("ab") as handle:
        handle.write(lines_of(run_dir)[index])
    expected = f"{samples}:{index + 1}: score: {UNIT} 7.5{SUFFIX}"
    assert refusal(samples) == refusal(samples, fast=False) == expected


# --------------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("edit", list(EDITS))
def test_report_inspect_and_compare_refuse_a_value_out_of_range_and_leave_the_runs_untouched(
    run_dir: Path, tmp_path: Path, cli: Cli, edit: str
) -> None:
    case = EDITS[edit]
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "bad", index, case.old, case.bad)
    run = samples.parent
    before = artifact_bytes(run), artifact_bytes(run_dir)
    expected = f"error: {samples}:{index + 1}: {case.field}: {case.message}{SUFFIX}\n"
    for args in (("report", "--run", run), ("inspect", "--run", run)):
        result = cli(*args)
        assert (result.code, result.err) == (2, expected), args[0]
    if case.compared:
        compared = cli("compare", "--run-a", run_dir, "--run-b", run)
        assert (compared.code, compared.err) == (2, expected)
    else:  # compare reads identity, axis, epoch, score, error, latency and cost only: its answer is the same
        assert comparison(cli, run_dir, run) == comparison(cli, run_dir, run_dir)
    assert (artifact_bytes(run), artifact_bytes(run_dir)) == before


def comparison(cli: Cli, run_a: Path, run_b: Path) -> dict[str, Any]:
    """``compare --format json`` of the runs, without the directory of B."""
    result = cli("compare", "--run-a", run_a, "--run-b", run_b, "--format", "json")
    assert result.code == 0, result.err
    out: dict[str, Any] = json.loads(result.out)
    del out["run_b"]["run_dir"]
    return out


def test_resume_refuses_a_negative_epoch_in_its_key_scan(run_dir: Path, tmp_path: Path, cli: Cli) -> None:
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "bad", index, rb'"epoch":0,', b'"epoch":-3,')
    expected = f"{samples}:{index + 1}: epoch: expected a non-negative integer, got -3{SUFFIX}"
    with pytest.raises(ArtifactError, match=re.escape(expected)):
        scan_keys(samples)
    with pytest.raises(ArtifactError, match=re.escape(expected)):
        list(iter_record_dicts(samples))
    result = cli("run", "--resume", samples.parent, "--quiet")
    assert (result.code, result.err) == (2, f"error: {expected}\n")


# --------------------------------------------------------------------------------------------------
# the columns cache
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("edit", ["score above 1", "scores value above 1", "cost_usd", "prompt_tokens", "retries"])
def test_a_line_out_of_range_appended_after_the_columns_cache_is_refused(
    cached_run_dir: Path, tmp_path: Path, cli: Cli, edit: str
) -> None:
    case = EDITS[edit]
    run = tmp_path / "run"
    shutil.copytree(cached_run_dir, run)
    line = lines_of(run)[line_index(run, "clean")].replace(b'"sample_id":"q', b'"sample_id":"new-q', 1)
    with RunPaths(run).samples.open("ab") as handle:
        handle.write(re.sub(case.old, case.bad, line, count=1))
    before = artifact_bytes(run)
    expected = f"error: {RunPaths(run).samples}:41: {case.field}: {case.message}{SUFFIX}\n"
    for args in (("report", "--run", run), ("inspect", "--run", run)):
        result = cli(*args)
        assert (result.code, result.err) == (2, expected), args[0]
    assert artifact_bytes(run) == before


def test_a_line_edited_out_of_range_under_the_columns_cache_is_refused(
    cached_run_dir: Path, tmp_path: Path, cli: Cli
) -> None:
    index = line_index(cached_run_dir, "clean")
    samples = edited_copy(cached_run_dir, tmp_path / "run", index, rb'"score":[^,]+,', b'"score":7.5,')
    result = cli("report", "--run", samples.parent)
    assert (result.code, result.err) == (2, f"error: {samples}:{index + 1}: score: {UNIT} 7.5{SUFFIX}\n")


def test_a_columns_cache_holding_a_value_out_of_range_is_not_used(run_dir: Path, tmp_path: Path, cli: Cli) -> None:
    # as a build that did not check ranges left it: the columns of the edited line as it reads them, stored
    # for the file as it now is (its size, mtime and last bytes), so that only the values can give it away
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, rb'"cost_usd":[^,]+,', b'"cost_usd":-0.083,')
    columns = load_columns(RunPaths(run_dir).samples, KEYS)
    columns.cost_usd[index] = -0.083
    save_columns_cache(samples, columns, KEYS)
    result = cli("report", "--run", samples.parent)
    assert (result.code, result.err) == (2, f"error: {samples}:{index + 1}: cost_usd: {NON_NEGATIVE} -0.083{SUFFIX}\n")


def test_a_columns_cache_of_the_version_before_ranges_were_checked_is_read_again(
    run_dir: Path, tmp_path: Path, cli: Cli
) -> None:
    # such a cache holds the latest record of each key only: a superseded record out of range (the first of a
    # key retried with --retry-errors) is nowhere in it, so only reading the file again finds it
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, rb'"score":[^,]+,', b'"score":7.5,')
    with samples.open("ab") as handle:
        handle.write(lines_of(run_dir)[index])
    retried = tmp_path / "retried.jsonl"
    retried.write_bytes(b"".join([*lines_of(run_dir), lines_of(run_dir)[index]]))
    save_columns_cache(samples, load_columns(retried, KEYS), KEYS)
    cache = samples.with_name(COLUMNS_CACHE)
    with np.load(cache) as data:
        arrays = dict(data)
    meta = orjson.loads(arrays["meta"].tobytes())
    arrays["meta"] = np.frombuffer(orjson.dumps({**meta, "version": 2}), dtype=np.uint8)
    with cache.open("wb") as handle:
        np.savez(handle, **arrays)
    result = cli("report", "--run", samples.parent)
    assert (result.code, result.err) == (2, f"error: {samples}:{index + 1}: score: {UNIT} 7.5{SUFFIX}\n")
