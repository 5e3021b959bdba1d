"""The columnar reader of samples.jsonl and the per-axis aggregates built on it.

The reader has a numpy fast path for records of the shape pydantic writes and falls back to orjson for
any other line; these tests pin that both paths read the same values from awkward records, and that the
aggregates equal values worked out by hand.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import CliResult, TaskRoot

from eval_harness.aggregate import (
    RunColumns,
    epoch_stats,
    load_columns,
    read_records_at,
    scorer_distribution,
    summarize_columns,
)
from eval_harness.artifacts import SampleWriter
from eval_harness.errors import ArtifactError
from eval_harness.types import (
    ChatMessage,
    DatasetInfo,
    ErrorInfo,
    GenerateConfig,
    ModelInfo,
    RunManifest,
    SampleRecord,
    ScorerSpec,
    TaskInfo,
    Usage,
)

KEYS = ["exact_match", "judge"]


def write_records(path: Path, records: list[SampleRecord]) -> None:
    """Append records the way the runner does (same serializer, one line each)."""
    writer = SampleWriter(path)
    for item in records:
        writer.append(item)
    writer.close()


def make_manifest(expected_records: int = 0) -> RunManifest:
    return RunManifest(
        run_id="r",
        status="complete",
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
        harness_version="0",
        task=TaskInfo(
            name="t",
            template="t.jinja2",
            template_sha256="0",
            scorers=[ScorerSpec(name="exact_match"), ScorerSpec(name="judge")],
            pass_threshold=1.0,
            generation=GenerateConfig(),
        ),
        model=ModelInfo(id="mock/x"),
        dataset=DatasetInfo(path="d.jsonl", sha256="0", sample_count=expected_records),
        seed=0,
        epochs=1,
        limit=None,
        concurrency=1,
        timeout_s=1.0,
        fingerprint="0",
        expected_records=expected_records,
    )


def record(sample_id: str, **fields: Any) -> SampleRecord:
    base: dict[str, Any] = {
        "sample_id": sample_id,
        "epoch": 0,
        "axis": "arithmetic",
        "input": 'What is 2+2? Answer, please: "four" or 4.',
        "target": "4",
        "prompt": [ChatMessage(role="user", content='What is 2+2?,"latency_ms":1,"judge_cost_usd":2')],
        "output": "4",
        "scores": {"exact_match": 1.0, "judge": 1.0},
        "score": 1.0,
        "passed": True,
        "latency_ms": 12.5,
        "usage": Usage(prompt_tokens=20, completion_tokens=3),
        "cost_usd": 0.0000205,
        "finished_at": "2026-01-01T00:00:00.000Z",
        "explanations": {"exact_match": 'matched, "4",', "judge": 'said ,"cached":true'},
    }
    base.update(fields)
    return SampleRecord(**base)


GENERATION_FAILED: dict[str, Any] = {
    "output": None,
    "scores": {},
    "score": None,
    "passed": None,
    "latency_ms": None,
    "cost_usd": None,
}
"""The fields of a record whose model call failed: no output, no latency, no price."""

AWKWARD = [
    record("plain"),
    record("continuous", scores={"exact_match": 0.0, "judge": 0.3333333333333333}, score=0.16666666666666666),
    record("exponents", latency_ms=1e22, cost_usd=2.05e-5, scores={"exact_match": 1e-10, "judge": 1.0}, score=0.5),
    record(
        "generate-error",
        **GENERATION_FAILED,
        error=ErrorInfo(type="ProviderHTTPError", message='HTTP 500: "boom", retry later'),
    ),
    record(
        "score-error",
        scores={"exact_match": 1.0},
        score=None,
        passed=None,
        error=ErrorInfo(type="ScoringError", message="judge: timeout", stage="score"),
    ),
    record("retried", retries={"timeout": 2}, backoff_s=1.5),
    record("retried-twice", retries={"timeout": 1, "rate_limit": 3}, backoff_s=0.25),
    record(
        "judged",
        judge_usage=Usage(prompt_tokens=400, completion_tokens=50),
        judge_cost_usd=0.0012,
        cached=True,
    ),
    record('id, with "quotes" and \\ backslash'),
    record("unicodé-ïd"),
    record("comma-axis", axis="long, context"),
    record("empty-axis", axis=""),
    record("unknown-price", cost_usd=None, passed=False, score=0.0, scores={"exact_match": 0.0, "judge": 0.0}),
    record("epoch-three", epoch=3),
    record("big-tokens", usage=Usage(prompt_tokens=123_456_789, completion_tokens=12)),
    record("odd-scorer", scores={"exact_match": 1.0, "judge": 1.0, "latency_ms": 0.5}),
    record("passed-null", passed=None),
    record("tagged", tags=["hard", "arith"], finish_reason="length"),
    record("one-tag", tags=["arith"], finish_reason="max_tokens"),
    record("empty-tag", tags=[""], finish_reason="stop"),
    record("tag-twice", tags=["hard", "hard"]),
    record("comma-tag", tags=["a, b", "hard"], finish_reason="content_filter"),
    record("bracket-tag", tags=["[x]"]),
    record("comma-finish", finish_reason="stop, then more"),
]


def awkward_file(tmp_path: Path) -> Path:
    path = tmp_path / "samples.jsonl"
    write_records(path, AWKWARD)
    with path.open("a") as handle:
        # A record written by another tool: spaces after separators, keys in another order.
        other = json.loads(record("spaced", axis="string_ops").model_dump_json())
        handle.write(json.dumps(dict(reversed(list(other.items())))) + "\n")
    return path


def names(columns: RunColumns, codes: np.ndarray, table: list[str]) -> list[str | None]:
    return [table[int(c)] if c >= 0 else None for c in codes]


def tags_of(columns: RunColumns) -> list[list[str]]:
    """Each row's tags, in its record's order."""
    offsets, ids = columns.tag_offsets, columns.tag_ids
    return [[columns.tag_names[i] for i in ids[offsets[r] : offsets[r + 1]]] for r in range(columns.n)]


def assert_same_columns(a: RunColumns, b: RunColumns) -> None:
    assert names(a, a.axis, a.axes) == names(b, b.axis, b.axes)
    assert names(a, a.error_type, a.error_types) == names(b, b.error_type, b.error_types)
    assert names(a, a.finish_reason, a.finish_reasons) == names(b, b.finish_reason, b.finish_reasons)
    assert tags_of(a) == tags_of(b)
    for name in [
        "epoch",
        "score",
        "error",
        "passed",
        "latency_ms",
        "cost_usd",
        "prompt_tokens",
        "completion_tokens",
        "judge_used",
        "judge_prompt_tokens",
        "judge_completion_tokens",
        "judge_cost_usd",
        "cached",
        "backoff_s",
        "sample_hash",
        "key_hash",
        "offset",
        "line",
    ]:
        x, y = getattr(a, name), getattr(b, name)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert a.scorers.keys() == b.scorers.keys()
    for key in a.scorers:
        assert np.array_equal(a.scorers[key], b.scorers[key], equal_nan=True), key
    assert a.retries == b.retries


def test_fast_path_reads_awkward_records_exactly_as_orjson_does(tmp_path: Path) -> None:
    path = awkward_file(tmp_path)
    fast = load_columns(path, KEYS)
    assert_same_columns(fast, load_columns(path, KEYS, fast=False))
    # The comparison means something only if the fast path read the shapes it is meant for: all but the
    # partial scores, the retries, the escaped id, the comma in an axis, the extra scorer, the commas in a tag
    # and in a finish reason, and the spaced line.
    assert fast.fast_lines == len(AWKWARD) + 1 - 9


def test_orjson_path_reads_the_values_written(tmp_path: Path) -> None:
    columns = load_columns(awkward_file(tmp_path), KEYS, fast=False)
    row = {r.sample_id: i for i, r in enumerate(AWKWARD)}
    assert columns.n == len(AWKWARD) + 1
    assert columns.latency_ms[row["exponents"]] == 1e22
    assert columns.cost_usd[row["exponents"]] == 2.05e-5
    assert columns.scorers["judge"][row["continuous"]] == 0.3333333333333333
    assert columns.error[row["generate-error"]] and columns.error[row["score-error"]]
    assert columns.error_types == ["ProviderHTTPError", "ScoringError"]
    assert math.isnan(columns.scorers["judge"][row["score-error"]])
    assert columns.judge_prompt_tokens[row["judged"]] == 400 and columns.judge_cost_usd[row["judged"]] == 0.0012
    assert columns.prompt_tokens[row["big-tokens"]] == 123_456_789
    assert columns.axes[columns.axis[row["comma-axis"]]] == "long, context"
    assert columns.retries == {"timeout": 3, "rate_limit": 3}
    assert columns.backoff_s.sum() == 1.75
    assert columns.scorers["latency_ms"][row["odd-scorer"]] == 0.5
    tags = tags_of(columns)
    assert tags[row["tagged"]] == ["hard", "arith"] and tags[row["comma-tag"]] == ["a, b", "hard"]
    assert tags[row["empty-tag"]] == [""] and tags[row["plain"]] == []
    reasons = names(columns, columns.finish_reason, columns.finish_reasons)
    assert reasons[row["tagged"]] == "length" and reasons[row["comma-finish"]] == "stop, then more"
    assert reasons[row["plain"]] is None


def test_the_latest_record_of_a_key_wins(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    failed = record("a", score=None, scores={}, error=ErrorInfo(type="ProviderError", message="x"), retries={"x": 1})
    write_records(path, [failed, record("b"), record("a", score=0.5, latency_ms=99.0)])
    columns = load_columns(path, KEYS)
    assert columns.n == 2
    assert columns.score.tolist() == [1.0, 0.5]
    assert columns.latency_ms.tolist() == [12.5, 99.0]
    assert columns.retries == {}  # the superseded record's retries no longer count
    assert columns.line.tolist() == [2, 3]


def test_same_id_in_another_epoch_is_another_key(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a", epoch=0), record("a", epoch=1)])
    columns = load_columns(path, KEYS)
    assert columns.n == 2
    assert (columns.sample_hash[0] == columns.sample_hash[1]).all()
    assert not (columns.key_hash[0] == columns.key_hash[1]).all()


def test_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b")])
    with path.open("ab") as handle:
        handle.write(record("c").model_dump_json().encode()[:50])
    columns = load_columns(path, KEYS)
    assert columns.n == 2
    assert columns.torn_bytes == 50


def test_damaged_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b")])
    with path.open("ab") as handle:
        handle.write(b'{"sample_id":"c","epoch":0,"axis":"x" this is not json}\n')
    with pytest.raises(ArtifactError, match=r"samples\.jsonl:3: not a sample record"):
        load_columns(path, KEYS)


def test_missing_file_reads_as_no_records(tmp_path: Path) -> None:
    columns = load_columns(tmp_path / "samples.jsonl", KEYS)
    assert columns.n == 0 and columns.axes == []


def test_parallel_workers_read_the_same_columns(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    records = [record(f"s{i}", axis=["a", "b", "c"][i % 3], score=float(i % 2)) for i in range(300)]
    records.append(record("s5", score=0.25))  # a duplicate across the two halves: the later one wins
    write_records(path, records)
    one = load_columns(path, KEYS)
    two = load_columns(path, KEYS, workers=2)
    assert_same_columns(one, two)
    assert one.n == 300


def test_lines_longer_than_a_block_are_read(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b", output="x" * 2000), record("c")])
    columns = load_columns(path, KEYS, block_bytes=256)
    assert columns.n == 3
    assert_same_columns(columns, load_columns(path, KEYS, fast=False))


def test_small_blocks_read_the_same_columns(tmp_path: Path) -> None:
    # The runner's summary reads in small blocks to keep its memory flat; nothing else may change.
    path = tmp_path / "samples.jsonl"
    records = [record(f"s{i}", axis=["a", "b"][i % 2], score=float(i % 3 == 0)) for i in range(400)]
    records.append(record("s7", score=0.5))  # a superseding record in a later block
    write_records(path, records)
    small = load_columns(path, KEYS, block_bytes=4096)
    assert_same_columns(small, load_columns(path, KEYS))
    assert small.n == 400


def test_read_records_at_returns_whole_records(tmp_path: Path) -> None:
    path = awkward_file(tmp_path)
    columns = load_columns(path, KEYS)
    records = read_records_at(path, columns.offset[[3, 0]].tolist())
    assert [r["sample_id"] for r in records] == ["generate-error", "plain"]


# --------------------------------------------------------------------------------------------------
# aggregates
# --------------------------------------------------------------------------------------------------


def test_summary_counts_errors_as_wrong_and_reports_both_policies(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    error = ErrorInfo(type="ProviderError", message="down")
    write_records(
        path,
        [
            record("a", score=1.0),
            record("b", score=0.0, passed=False),
            record("c", score=None, scores={}, passed=None, cost_usd=None, error=error, usage=Usage(), latency_ms=None),
            record("d", score=1.0),
        ],
    )
    summary = summarize_columns(load_columns(path, KEYS), make_manifest(expected_records=5))
    axis = summary.axes[0]
    assert (axis.n, axis.errors) == (4, 1)
    assert axis.mean == 0.5  # (1 + 0 + 0 + 1) / 4
    assert axis.mean_excluding_errors == pytest.approx(2 / 3)
    assert axis.pass_rate == 0.5
    assert axis.cost_known  # the failed call (no answer came: no latency) billed nothing: no price to know
    assert axis.cost_total_usd == pytest.approx(3 * 0.0000205)
    assert summary.missing == 1
    assert summary.errors_by_type == {"ProviderError": 1}


def test_unknown_price_makes_cost_unknown_not_zero(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b", cost_usd=None)])
    summary = summarize_columns(load_columns(path, KEYS), make_manifest())
    assert summary.overall.cost_known is False
    assert summary.overall.cost_total_usd is None
    assert summary.overall.cost_mean_usd is None
    assert summary.overall.accuracy_per_dollar is None


def test_macro_and_micro_means_differ_with_unequal_axes(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    big = [record(f"a{i}", axis="big", score=1.0) for i in range(3)]
    small = [record("b0", axis="small", score=0.0, passed=False)]
    write_records(path, big + small)
    summary = summarize_columns(load_columns(path, KEYS), make_manifest())
    assert summary.micro_mean == 0.75  # 3 of 4 samples
    assert summary.macro_mean == 0.5  # mean of 1.0 and 0.0


def test_epoch_stats_pass_at_k_and_agreement(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    # x passes 2 of 3 epochs, y 0 of 3, z 3 of 3; w has only one epoch recorded (interrupted run).
    outcomes = {"x": [True, True, False], "y": [False] * 3, "z": [True] * 3, "w": [True]}
    records = [
        record(sid, epoch=e, passed=ok, score=1.0 if ok else 0.0)
        for sid, results in outcomes.items()
        for e, ok in enumerate(results)
    ]
    write_records(path, records)
    stats = epoch_stats(load_columns(path, KEYS), epochs=3)
    # pass@1 = mean of c/n: (2/3 + 0 + 1 + 1) / 4; pass@3 over the 3 complete samples: (1 + 0 + 1) / 3
    assert stats.pass_at_1 == pytest.approx((2 / 3 + 0 + 1 + 1) / 4)
    assert stats.pass_at_k == pytest.approx(2 / 3)
    assert (stats.samples, stats.complete_samples, stats.k) == (4, 3, 3)
    # unanimous: y and z of the three samples with >= 2 epochs; pairwise: x has 1 of 3 pairs agreeing
    assert stats.agreement == pytest.approx(2 / 3)
    assert stats.pairwise_agreement == pytest.approx((1 / 3 + 1 + 1) / 3)


def test_scorer_distribution_summary() -> None:
    values = np.array([0.0, 0.1, 0.5, 0.5, 1.0, np.nan])
    dist = scorer_distribution("judge", values)
    # numpy.percentile (linear interpolation) of [0, .1, .5, .5, 1]: p10 = 0.04, p90 = 0.8
    assert dist.n == 5 and dist.mean == pytest.approx(0.42) and dist.median == 0.5
    assert dist.p10 == pytest.approx(0.04) and dist.p90 == pytest.approx(0.8)
    # sample SD by hand: deviations from 0.42 squared, .1764 + .1024 + .0064 + .0064 + .3364 = .628, over n - 1 = 4
    assert dist.std == pytest.approx(math.sqrt(0.628 / 4))  # 0.396232255123179...
    assert dist.histogram == [1, 1, 0, 0, 0, 2, 0, 0, 0, 1]


def test_light_reading_keeps_what_compare_needs_and_blanks_the_rest(tmp_path: Path) -> None:
    path = awkward_file(tmp_path)
    full, light = load_columns(path, KEYS), load_columns(path, KEYS, light=True)
    for name in ("axis", "epoch", "score", "error", "error_type", "passed", "latency_ms", "cost_usd", "key_hash"):
        x, y = getattr(full, name), getattr(light, name)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert light.scorers == {} and light.retries == {}
    assert not light.prompt_tokens.any() and not light.judge_used.any() and np.isnan(light.judge_cost_usd).all()
    assert light.tag_names == [] and light.tag_offsets.tolist() == [0] * (light.n + 1)
    assert light.finish_reasons == [] and (light.finish_reason == -1).all()


def test_the_row_column_table_names_exactly_the_row_fields() -> None:
    # _ROW_COLUMNS (dtype and empty value of each row column) and the _Rows dataclass must stay in step.
    from dataclasses import fields

    from eval_harness.aggregate import _ROW_COLUMNS, _Rows

    assert list(_ROW_COLUMNS) == [f.name for f in fields(_Rows)]


# --------------------------------------------------------------------------------------------------
# lines of the runner's shape that lack a field every record has: the fast path must not take them
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("light", [False, True], ids=["full", "light"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "orjson"])
@pytest.mark.parametrize("field", ["input", "target", "prompt", "finished_at"])
def test_a_record_without_a_required_field_is_named_by_line_and_field(
    cli: Callable[..., CliResult], task_root: TaskRoot, field: str, fast: bool, light: bool
) -> None:
    out = task_root.root / "results"
    task = task_root.root / "tasks" / "adder.toml"
    errors = ("--model-arg", "error_rate=0.3", "--max-retries", "0")
    result = cli("run", "--task", task, "--model", "mock/m", *errors, "--output-dir", out, "--run-id", "r", "-q")
    assert result.code == 0, result.err
    samples = out / "r" / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    for index in (3, next(i for i, r in enumerate(records) if r["error"] is not None and i > 3)):
        damaged = dict(records[index])
        del damaged[field]
        copy = samples.with_name(f"copy-{index}.jsonl")
        copy.write_bytes(b"".join(lines[:index]) + json.dumps(damaged, separators=(",", ":")).encode() + b"\n")
        problem = f"{field}: required field missing; not a sample record of schema version 1"
        message = rf"^{re.escape(str(copy))}:{index + 1}: {problem}$"
        with pytest.raises(ArtifactError, match=message):
            load_columns(copy, ["exact_match"], fast=fast, light=light)
