"""The columnar reader refuses exactly the lines its orjson path refuses, whichever path reads them.

A hand-edited or foreign samples.jsonl must get the same one-line error (file, line, field) from ``report``,
``inspect`` and ``compare`` as from ``resume``, never a silently different answer: the numpy fast path decides
how fast a line is read, never whether it is accepted. Each case starts from a real run of the mock model,
with one line edited by hand.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import CliResult, adder_task_root

from eval_harness.aggregate import RunColumns, load_columns
from eval_harness.aggregate._epochs import scorer_distribution
from eval_harness.artifacts import RunPaths
from eval_harness.config import RunConfig
from eval_harness.errors import ArtifactError
from eval_harness.planning import plan_run
from eval_harness.runner import Runner
from tests.test_aggregate import assert_same_columns

KEYS = ["exact_match"]
JUDGED = b'"judge_usage":{"prompt_tokens":400,"completion_tokens":50,"cached_tokens":null,"reasoning_tokens":null}'
"""What a model-based scorer leaves in place of ``"judge_usage":null``."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete run of the mock model over 40 samples, a third of them provider errors."""
    root = adder_task_root(tmp_path_factory.mktemp("strict") / "project")
    config = RunConfig(
        task=str(root.root / "tasks" / "adder.toml"),
        model="mock/m",
        model_args={"error_rate": "0.3", "cost_per_1k_tokens": "0.3", "latency_ms": "1"},
        max_retries=0,
        output_dir=root.root / "results",
        run_id="r",
    )
    result = asyncio.run(Runner(plan_run(config)).run())
    assert result.status == "complete"
    return result.run_dir


def lines_of(run_dir: Path) -> list[bytes]:
    return RunPaths(run_dir).samples.read_bytes().splitlines(keepends=True)


def line_index(run_dir: Path, kind: str) -> int:
    """Index of a record past the first few that holds a provider error ("error"), none ("clean"), or none
    and a score of 1.0 ("passed")."""
    wanted = {
        "error": lambda r: r["error"] is not None,
        "clean": lambda r: r["error"] is None,
        "passed": lambda r: r["score"] == 1.0,
    }[kind]
    records = [orjson.loads(line) for line in lines_of(run_dir)]
    return next(i for i, r in enumerate(records) if i > 2 and wanted(r))


def edited_copy(run_dir: Path, target: Path, index: int, old: bytes, new: bytes) -> Path:
    """A copy of the run directory at ``target`` whose line ``index`` has its first ``old`` (a regex)
    replaced by ``new``; returns the copy's samples.jsonl."""
    shutil.copytree(run_dir, target)
    lines = lines_of(target)
    lines[index], count = re.subn(old, new, lines[index], count=1)
    assert count == 1, (old, lines[index])
    samples = RunPaths(target).samples
    samples.write_bytes(b"".join(lines))
    return samples


def refusal(path: Path, **options: bool) -> str:
    with pytest.raises(ArtifactError) as caught:
        load_columns(path, KEYS, **options)
    return str(caught.value)


COMPARED = ("axis", "epoch", "score", "error", "error_type", "passed", "latency_ms", "cost_usd", "key_hash")
"""The columns a light read fills (compare uses all but passed and error_type)."""


def assert_same_compared_columns(a: RunColumns, b: RunColumns) -> None:
    for name in COMPARED:
        x, y = getattr(a, name), getattr(b, name)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


# --------------------------------------------------------------------------------------------------
# integer fields written as JSON numbers with a fraction or an exponent
# --------------------------------------------------------------------------------------------------

INTEGER_EDITS = {
    "epoch 0.0": ("epoch", rb'"epoch":0,', rb'"epoch":0.0,'),
    "epoch 0e0": ("epoch", rb'"epoch":0,', rb'"epoch":0e0,'),
    "epoch 1.0": ("epoch", rb'"epoch":0,', rb'"epoch":1.0,'),
    "prompt_tokens 11.0": ("usage.prompt_tokens", rb'"prompt_tokens":(\d+)', rb'"prompt_tokens":\1.0'),
    "completion_tokens 2e0": ("usage.completion_tokens", rb'"completion_tokens":(\d+)', rb'"completion_tokens":\1e0'),
    "judge prompt_tokens 400.0": (
        "judge_usage.prompt_tokens",
        rb'"judge_usage":null',
        JUDGED.replace(b"400", b"400.0"),
    ),
    "judge completion_tokens 5e1": (
        "judge_usage.completion_tokens",
        rb'"judge_usage":null',
        JUDGED.replace(b"50", b"5e1"),
    ),
}


@pytest.mark.parametrize("kind", ["clean", "error"])
@pytest.mark.parametrize("edit", list(INTEGER_EDITS))
def test_an_integer_field_written_as_a_float_is_refused_by_the_fast_path_as_by_orjson(
    run_dir: Path, tmp_path: Path, edit: str, kind: str
) -> None:
    field, old, new = INTEGER_EDITS[edit]
    index = line_index(run_dir, kind)
    samples = edited_copy(run_dir, tmp_path / "run", index, old, new)
    message = refusal(samples)
    assert message == refusal(samples, fast=False)
    assert re.match(rf"{re.escape(str(samples))}:{index + 1}: {re.escape(field)}: expected an integer", message)


# --------------------------------------------------------------------------------------------------
# number texts that Python's float() reads but JSON does not allow
# --------------------------------------------------------------------------------------------------

NOT_JSON_EDITS = {
    "epoch 00": (rb'"epoch":0,', rb'"epoch":00,'),
    "prompt_tokens 011": (rb'"prompt_tokens":(\d+)', rb'"prompt_tokens":0\1'),
    "score .5": (rb'"score":1\.0,', rb'"score":.5,'),
    "score 1.": (rb'"score":1\.0,', rb'"score":1.,'),
    "score +1": (rb'"score":1\.0,', rb'"score":+1,'),
    "score 01.0": (rb'"score":1\.0,', rb'"score":01.0,'),
    "latency 1.e1": (rb'"latency_ms":[^,]+,', rb'"latency_ms":1.e1,'),
    "latency -.5": (rb'"latency_ms":[^,]+,', rb'"latency_ms":-.5,'),
    "cost 1e400": (rb'"cost_usd":[^,]+,', rb'"cost_usd":1e400,'),
}
# a light read does not read token counts (see the test of the fields compare never reads)
READ_BY_BOTH = [
    pytest.param(edit, light, id=f"{edit}-{'light' if light else 'full'}")
    for edit in NOT_JSON_EDITS
    for light in (False, True)
    if not (light and "tokens" in edit)
]


@pytest.mark.parametrize(("edit", "light"), READ_BY_BOTH)
def test_a_number_that_is_not_json_makes_the_line_damaged_on_both_paths(
    run_dir: Path, tmp_path: Path, edit: str, light: bool
) -> None:
    old, new = NOT_JSON_EDITS[edit]
    index = line_index(run_dir, "passed")
    samples = edited_copy(run_dir, tmp_path / "run", index, old, new)
    message = refusal(samples, light=light)
    assert message == refusal(samples, light=light, fast=False)
    assert message.startswith(f"{samples}:{index + 1}: not a sample record (not JSON: ")
    assert message.endswith("); the file is damaged")


# --------------------------------------------------------------------------------------------------
# what a light read (compare) checks and what it leaves alone
# --------------------------------------------------------------------------------------------------


def test_a_light_read_refuses_a_line_cut_short_after_the_fields_it_reads(run_dir: Path, tmp_path: Path) -> None:
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, rb',"answers":.*\}\n', b"\n")
    message = refusal(samples, light=True)
    assert message == refusal(samples, light=True, fast=False) == refusal(samples)
    assert message.startswith(f"{samples}:{index + 1}: not a sample record (not JSON: ")
    assert message.endswith("); the file is damaged")


MISTYPED_READ_FIELDS = {
    **{edit: INTEGER_EDITS[edit] for edit in ("epoch 0.0", "epoch 0e0", "epoch 1.0")},
    "score": ("score", rb'"score":[^,]+,', rb'"score":"1",'),
    "passed": ("passed", rb'"passed":[^,]+,', rb'"passed":1,'),
    "latency_ms": ("latency_ms", rb'"latency_ms":[^,]+,', rb'"latency_ms":true,'),
    "cost_usd": ("cost_usd", rb'"cost_usd":[^,]+,', rb'"cost_usd":"0",'),
    "axis": ("axis", rb'"axis":"[^"]*"', rb'"axis":7'),
}


@pytest.mark.parametrize("edit", list(MISTYPED_READ_FIELDS))
def test_a_light_read_refuses_a_mistyped_field_it_reads_as_the_full_read_does(
    run_dir: Path, tmp_path: Path, edit: str
) -> None:
    field, old, new = MISTYPED_READ_FIELDS[edit]
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, old, new)
    message = refusal(samples)
    assert refusal(samples, light=True) == refusal(samples, light=True, fast=False) == message
    assert message.startswith(f"{samples}:{index + 1}: {field}: expected ")


UNREAD_BY_COMPARE = {
    "usage": (rb'"prompt_tokens":(\d+)', rb'"prompt_tokens":\1.0'),
    "judge_usage": (rb'"judge_usage":null', rb'"judge_usage":{"prompt_tokens":"many"}'),
    "judge_cost_usd": (rb'"judge_cost_usd":null', rb'"judge_cost_usd":"0"'),
    "cached": (rb'"cached":false', rb'"cached":"no"'),
    "backoff_s": (rb'"backoff_s":0\.0\}', rb'"backoff_s":"none"}'),
    "scores": (rb'"scores":\{"exact_match":1\.0\}', rb'"scores":{"exact_match":"1"}'),
    "retries": (rb'"retries":\{\}', rb'"retries":{"timeout":"twice"}'),
    "tags": (rb'"tags":\[\]', rb'"tags":"easy"'),
    "finish_reason": (rb'"finish_reason":"stop"', rb'"finish_reason":5'),
}


@pytest.mark.parametrize("field", list(UNREAD_BY_COMPARE))
def test_a_light_read_leaves_a_field_compare_never_reads_unchecked_on_both_paths(
    run_dir: Path, tmp_path: Path, field: str
) -> None:
    old, new = UNREAD_BY_COMPARE[field]
    index = line_index(run_dir, "passed")
    samples = edited_copy(run_dir, tmp_path / "run", index, old, new)
    assert re.match(rf"{re.escape(str(samples))}:{index + 1}: {field}\b", refusal(samples))  # report refuses it
    fast, slow = load_columns(samples, KEYS, light=True), load_columns(samples, KEYS, light=True, fast=False)
    assert_same_compared_columns(fast, slow)
    assert_same_compared_columns(fast, load_columns(RunPaths(run_dir).samples, KEYS, light=True))


# --------------------------------------------------------------------------------------------------
# tags and finish reasons: what the fast path cannot tell is left to orjson, which reads or refuses it
# --------------------------------------------------------------------------------------------------

MALFORMED_TAGS_AND_FINISH = {
    "a tag that is a number": (rb'"tags":\[\]', rb'"tags":["easy",7]', "tags[1]: expected a string, got an integer"),
    "tags not an array": (rb'"tags":\[\]', rb'"tags":{"easy":1}', "tags: expected an array of strings or null"),
    "a trailing comma": (rb'"tags":\[\]', rb'"tags":["easy",]', "not a sample record (not JSON: "),
    "tags without a comma": (rb'"tags":\[\]', rb'"tags":["a" "b"]', "not a sample record (not JSON: "),
    "a bare quote in a tag": (rb'"tags":\[\]', rb'"tags":["a"b"]', "not a sample record (not JSON: "),
    "an unclosed list": (rb'"tags":\[\]', rb'"tags":["a"', "not a sample record (not JSON: "),
    "a bare word": (rb'"finish_reason":"stop"', rb'"finish_reason":stop', "not a sample record (not JSON: "),
    "a bare quote in a finish reason": (
        rb'"finish_reason":"stop"',
        rb'"finish_reason":"st"op"',
        "not a sample record (not JSON: ",
    ),
    "an array": (rb'"finish_reason":"stop"', rb'"finish_reason":["stop"]', "finish_reason: expected a string or null"),
}


@pytest.mark.parametrize("edit", list(MALFORMED_TAGS_AND_FINISH))
def test_a_malformed_tag_list_or_finish_reason_is_refused_alike_by_both_paths(
    run_dir: Path, tmp_path: Path, edit: str
) -> None:
    old, new, problem = MALFORMED_TAGS_AND_FINISH[edit]
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, old, new)
    message = refusal(samples)
    assert message == refusal(samples, fast=False)
    assert message.startswith(f"{samples}:{index + 1}: {problem}")


WELL_FORMED_TAGS_AND_FINISH = {
    "tags null": (rb'"tags":\[\]', rb'"tags":null', [], "stop", 39),  # the runner writes [], never null
    "an escaped tag": (rb'"tags":\[\]', rb'"tags":["caf\\u00e9","a\\"b"]', ["café", 'a"b'], "stop", 39),
    "a tag with a comma": (rb'"tags":\[\]', rb'"tags":["x","a,b"]', ["x", "a,b"], "stop", 39),
    "many tags": (rb'"tags":\[\]', b'"tags":[' + b",".join(b'"t%d"' % i for i in range(70)) + b"]", None, "stop", 39),
    "no finish reason": (rb'"finish_reason":"stop"', rb'"finish_reason":null', [], None, 40),
    "an escaped finish reason": (rb'"finish_reason":"stop"', rb'"finish_reason":"\\u006cength"', [], "length", 39),
}


@pytest.mark.parametrize("edit", list(WELL_FORMED_TAGS_AND_FINISH))
def test_tags_and_finish_reasons_read_the_same_on_both_paths(run_dir: Path, tmp_path: Path, edit: str) -> None:
    old, new, tags, finish, fast_lines = WELL_FORMED_TAGS_AND_FINISH[edit]
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, old, new)
    fast = load_columns(samples, KEYS)
    assert_same_columns(fast, load_columns(samples, KEYS, fast=False))
    expected_tags = [f"t{i}" for i in range(70)] if tags is None else tags
    row = slice(fast.tag_offsets[index], fast.tag_offsets[index + 1])
    assert [fast.tag_names[i] for i in fast.tag_ids[row]] == expected_tags
    code = int(fast.finish_reason[index])
    assert (fast.finish_reasons[code] if code >= 0 else None) == finish
    assert fast.fast_lines == fast_lines  # what the fast path cannot tell went to orjson


# --------------------------------------------------------------------------------------------------
# what the runner writes is still read whole by the fast path, with the same values
# --------------------------------------------------------------------------------------------------


def test_a_runner_artifact_is_read_wholly_by_the_fast_path_and_as_orjson_reads_it(run_dir: Path) -> None:
    samples = RunPaths(run_dir).samples
    fast = load_columns(samples, KEYS)
    assert fast.fast_lines == fast.lines_read == 40
    assert fast.error.any() and (fast.cost_usd > 0).any()  # both kinds of line were read
    assert_same_columns(fast, load_columns(samples, KEYS, fast=False))
    light = load_columns(samples, KEYS, light=True)
    assert light.fast_lines == 40
    assert_same_compared_columns(light, fast)


@pytest.mark.parametrize("digits", [9, 12, 15, 16, 18])
def test_long_token_counts_read_the_same_on_both_paths(run_dir: Path, tmp_path: Path, digits: int) -> None:
    index = line_index(run_dir, "clean")
    count = int("9" * digits)
    samples = edited_copy(
        run_dir, tmp_path / "run", index, rb'"prompt_tokens":\d+', f'"prompt_tokens":{count}'.encode()
    )
    fast = load_columns(samples, KEYS)
    assert_same_columns(fast, load_columns(samples, KEYS, fast=False))
    assert fast.prompt_tokens[index] == count
    # up to 15 digits (exact in a float64) the fast path reads the line itself
    assert fast.fast_lines == 40 - (digits > 15)


@pytest.mark.parametrize(
    ("field", "old", "light"),
    [
        pytest.param("usage.prompt_tokens", rb'"prompt_tokens":\d+', False, id="prompt_tokens-full"),
        pytest.param("epoch", rb'"epoch":\d+', False, id="epoch-full"),
        pytest.param("epoch", rb'"epoch":\d+', True, id="epoch-light"),  # a light read reads no token counts
    ],
)
def test_an_integer_past_the_columns_range_is_refused_naming_its_field(
    run_dir: Path, tmp_path: Path, field: str, old: bytes, light: bool
) -> None:
    index = line_index(run_dir, "clean")
    # orjson reads it as an integer (it is below 2**64), which an int64 column cannot hold
    key = field.rsplit(".", 1)[-1]
    samples = edited_copy(run_dir, tmp_path / "run", index, old, f'"{key}":{2**63}'.encode())
    message = refusal(samples, light=light)
    assert message == refusal(samples, light=light, fast=False)
    assert message.startswith(f"{samples}:{index + 1}: {field}: {2**63} is out of range")


# --------------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------------


def test_report_inspect_compare_and_resume_give_the_same_one_line_error(
    run_dir: Path, tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "edited", index, rb'"epoch":0,', rb'"epoch":0.0,')
    edited = samples.parent
    expected = f"error: {samples}:{index + 1}: epoch: expected an integer, got a number; "
    expected += "not a sample record of schema version 1\n"
    for args in (
        ("report", "--run", edited),
        ("inspect", "--run", edited),
        ("compare", "--run-a", run_dir, "--run-b", edited),
        ("run", "--resume", edited, "--quiet"),
    ):
        result = cli(*args)
        assert (result.code, result.err) == (2, expected), args[0]


@pytest.mark.parametrize("light", [False, True], ids=["full", "light"])
@pytest.mark.parametrize("field", ["sample_id", "axis"])
def test_a_raw_quote_inside_the_id_or_axis_makes_the_line_damaged_on_both_paths(
    run_dir: Path, tmp_path: Path, field: str, light: bool
) -> None:
    # '"a"b"' is not JSON (orjson refuses the line); the fast path must not read it as the id or axis 'a"b'
    index = line_index(run_dir, "passed")
    old = rb'"sample_id":"' if field == "sample_id" else rb'"axis":"'
    samples = edited_copy(run_dir, tmp_path / "run", index, old, old + b'x"')
    message = refusal(samples, light=light)
    assert message == refusal(samples, light=light, fast=False)
    assert message.startswith(f"{samples}:{index + 1}: not a sample record (not JSON: ")
    assert message.endswith("); the file is damaged")


def test_the_histogram_bins_a_score_at_a_tenth_in_the_bin_it_opens() -> None:
    # [0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]; before: np.histogram's float edges (0.30000000000000004) put 0.3, 0.6
    # and 0.7 one bin low
    values = np.array([0.0, 0.05, 0.1, 0.3, 0.6, 0.7, 0.999, 1.0, np.nan])
    assert scorer_distribution("x", values).histogram == [2, 1, 0, 1, 0, 0, 1, 1, 0, 2]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"\n", "an empty line"),
        (b"this is not json\n", "not JSON: invalid literal"),
        (b'{"score":NaN}\n', "not JSON: unexpected character"),
    ],
)
def test_a_line_that_is_not_json_says_what_it_is(run_dir: Path, tmp_path: Path, line: bytes, why: str) -> None:
    # reportcompare-s30 F4: an empty line, prose and NaN were all "not a sample record; the file is damaged"
    index = line_index(run_dir, "clean")
    samples = edited_copy(run_dir, tmp_path / "run", index, rb"^.*\n", line)
    message = refusal(samples)
    assert message == refusal(samples, fast=False)
    assert message.startswith(f"{samples}:{index + 1}: not a sample record ({why}")
