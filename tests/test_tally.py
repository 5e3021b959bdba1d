"""A fresh run's summary comes from the tally the runner keeps, not from reading samples.jsonl back.

These tests hold the tally's summary equal, field for field and bit for bit, to the summary of the same
records read from the file: over random records mixing every case the reader distinguishes, and over a
real run.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eval_harness.aggregate import COLUMNS_CACHE, load_columns, summarize, summarize_columns, summarize_tally
from eval_harness.artifacts import RunPaths, SampleWriter, read_manifest
from eval_harness.config import RunConfig
from eval_harness.planning import plan_run
from eval_harness.runner import Runner
from eval_harness.tally import SessionTally, linear_percentile
from eval_harness.types import ErrorInfo, RunSummary, SampleRecord, Usage
from tests.conftest import TaskRoot
from tests.test_aggregate import GENERATION_FAILED, KEYS, make_manifest, record

AXES = ("arithmetic", "string_ops", "long_context", "multi_step")


def random_record(rng: random.Random, index: int, continuous: bool) -> SampleRecord:
    fields: dict[str, Any] = {"axis": rng.choice(AXES), "epoch": rng.randrange(3)}
    score = rng.random() if continuous else float(rng.random() < 0.6)
    fields.update(score=score, passed=score >= 0.5, scores={"exact_match": score, "judge": score})
    roll = rng.random()
    if roll < 0.1:  # the model failed: no output, no latency, no price
        fields.update(GENERATION_FAILED)
        fields["error"] = ErrorInfo(type=rng.choice(["ProviderHTTPError", "ProviderTimeoutError"]), message="x")
    elif roll < 0.15:  # a scorer failed after the model answered
        fields.update(score=None, passed=None, error=ErrorInfo(type="ScoringError", message="x", stage="score"))
    elif roll < 0.18:  # no final score and no error: counted as wrong, with no error type
        fields.update(score=None, passed=None)
    latency = rng.choice([None, 0.0, rng.uniform(1, 5000), 1e22])
    if fields.get("latency_ms", 1) is not None:
        fields["latency_ms"] = latency
    if fields.get("cost_usd", 1) is not None:
        fields["cost_usd"] = rng.choice([None, 0.0, rng.uniform(0, 1e-3), 0.1, 1e-12])
    fields["usage"] = Usage(prompt_tokens=rng.randrange(5000), completion_tokens=rng.choice([0, 7, 300]))
    judge = rng.random()
    if judge < 0.2:
        fields.update(judge_usage=Usage(prompt_tokens=400, completion_tokens=50), judge_cost_usd=rng.uniform(0, 0.01))
    elif judge < 0.22:
        fields.update(judge_usage=Usage(prompt_tokens=400, completion_tokens=50), judge_cost_usd=None)
    if rng.random() < 0.2:
        fields.update(retries={rng.choice(["rate_limit", "timeout", "server_error"]): rng.randrange(1, 4)})
        fields["backoff_s"] = rng.uniform(0, 3)
    fields["cached"] = rng.random() < 0.1
    return record(f"s{index}", **fields)


@pytest.mark.parametrize(("seed", "continuous"), [(0, False), (1, False), (2, True), (3, True)])
def test_tally_summary_equals_the_summary_read_from_the_file(tmp_path: Path, seed: int, continuous: bool) -> None:
    rng = random.Random(seed)
    path = tmp_path / "samples.jsonl"
    writer, tally = SampleWriter(path), SessionTally()
    for index in range(400):
        item = random_record(rng, index, continuous)
        writer.append(item)
        tally.add(item.model_dump())
    writer.close()
    manifest = make_manifest(expected_records=450)
    from_file = summarize_columns(load_columns(path, KEYS), manifest)
    assert summarize_tally(tally, manifest) == from_file
    assert summarize_tally(tally, manifest).model_dump_json() == from_file.model_dump_json()
    assert tally.binary is not continuous
    if not continuous:  # the numpy-free summary of 0/1 scores gives the same, bit for bit
        assert tally.summarize_binary(manifest).model_dump_json() == from_file.model_dump_json()
    # the cases above all occurred, so the comparison covered them
    assert from_file.errors_by_type and from_file.retries_by_cause and from_file.cached_records
    assert from_file.judge_cost_usd is None  # an unpriced judged record makes the total unknown
    assert not all(axis.cost_known for axis in from_file.axes)


def test_an_empty_tally_summarizes_like_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.touch()
    manifest = make_manifest(expected_records=3)
    from_file = summarize_columns(load_columns(path, KEYS), manifest)
    assert summarize_tally(SessionTally(), manifest) == from_file
    assert SessionTally().summarize_binary(manifest) == from_file


def test_linear_percentile_is_numpys_bit_for_bit() -> None:
    rng = random.Random(11)
    for size in [*range(1, 40), 101, 1000, 4097]:
        values = sorted(rng.choice([rng.uniform(0, 5000), rng.expovariate(0.01), 12.5, 1e22]) for _ in range(size))
        for fraction in (0.5, 0.95):
            assert linear_percentile(values, fraction) == float(np.percentile(values, 100 * fraction)), (size, fraction)
    assert linear_percentile([], 0.5) is None


def test_a_binary_summary_refuses_scores_that_are_not_0_or_1() -> None:
    tally = SessionTally()
    tally.add(record("a", score=0.5, passed=True).model_dump())
    with pytest.raises(ValueError, match="0/1"):
        tally.summarize_binary(make_manifest())


def test_a_fresh_complete_run_summarizes_without_reading_its_records(task_root: TaskRoot) -> None:
    config = RunConfig(
        task=str(task_root.root / "tasks" / "adder.toml"),
        model="mock/m",
        model_args={"skill": "0.6", "error_rate": "0.2", "cost_per_1k_tokens": "0.3", "latency_ms": "1"},
        output_dir=task_root.root / "results",
        run_id="fresh",
        epochs=1,  # with several epochs a sample is one unit of the intervals: the summary reads the records back
    )
    result = asyncio.run(Runner(plan_run(config)).run())
    assert result.status == "complete" and result.summary.errors_by_type
    run_dir = result.run_dir
    from_file = summarize(RunPaths(run_dir).samples, read_manifest(run_dir))
    assert result.summary == from_file
    assert RunSummary.model_validate_json((run_dir / "summary.json").read_bytes()) == from_file
    assert not (run_dir / COLUMNS_CACHE).exists()  # nothing was read back, so nothing was cached
