"""Samples' tags: the report's rows per tag (``report --by-tag``, ``by_tag`` in JSON) and ``inspect --tag``.

A tag row is computed as an axis row is, over the records that carry the tag: a record with several tags counts
in each tag's row, an untagged one in none. The worked examples' intervals come from statsmodels and scipy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from conftest import CliResult, TaskRoot, adder_run_config, run_to_end

from eval_harness.aggregate import COLUMNS_CACHE, load_columns, load_columns_cached, save_columns_cache
from eval_harness.artifacts import RunPaths, write_model
from eval_harness.report import ReportAxis, build_report
from eval_harness.types import ErrorInfo
from tests.test_aggregate import KEYS, make_manifest, record, tags_of, write_records

Cli = Callable[..., CliResult]

FAILED_CALL: dict[str, Any] = {"output": None, "scores": {}, "score": None, "passed": None, "cost_usd": None}


def run_of(directory: Path, records: list[Any], epochs: int = 1) -> Path:
    """A run directory holding ``records`` and a manifest that expects them."""
    manifest = make_manifest(expected_records=len(records)).model_copy(update={"epochs": epochs})
    directory.mkdir(parents=True)
    write_model(RunPaths(directory).manifest, manifest)
    write_records(RunPaths(directory).samples, records)
    return directory


def scored(sample_id: str, tags: list[str], value: float | None, epoch: int = 0) -> Any:
    """A record of a 0/1 score (None: a failed call, which counts as wrong)."""
    if value is None:
        return record(
            sample_id, tags=tags, epoch=epoch, error=ErrorInfo(type="ProviderError", message="down"), **FAILED_CALL
        )
    passed = value == 1.0
    return record(sample_id, tags=tags, epoch=epoch, score=value, passed=passed, scores={"exact_match": value})


SIX = [
    scored("s1", ["hard", "arith"], 1.0),
    scored("s2", ["hard"], 0.0),
    scored("s3", ["arith"], 1.0),
    scored("s4", ["hard", "arith"], 1.0),
    scored("s5", [], 0.0),
    scored("s6", ["arith"], None),
]
"""arith: s1 s3 s4 right, s6 an error (3 of 4); hard: s1 s4 right, s2 wrong (2 of 3); s5 has no tag."""

# statsmodels.stats.proportion.proportion_confint(k, n, alpha=0.05, method="wilson" | "beta"), statsmodels 0.14
WILSON_3_OF_4 = (0.30064184258240184, 0.9544127391902995)
WILSON_2_OF_3 = (0.2076596008020477, 0.9385080552796037)
CLOPPER_PEARSON_3_OF_4 = (0.19412044968324338, 0.9936905367902902)
CLOPPER_PEARSON_2_OF_3 = (0.09429932405024609, 0.9915962413403874)


@pytest.fixture
def six(tmp_path: Path) -> Path:
    return run_of(tmp_path / "six", SIX)


def rows_by_tag(report_rows: list[ReportAxis]) -> dict[str, ReportAxis]:
    return {row.axis: row for row in report_rows}


def test_each_tag_row_has_the_mean_and_wilson_interval_of_its_records(six: Path) -> None:
    rows = rows_by_tag(build_report(six).by_tag)
    arith, hard = rows["arith"], rows["hard"]
    assert (arith.n, arith.errors, arith.mean, arith.ci_method) == (4, 1, 0.75, "wilson")
    assert arith.ci == pytest.approx(WILSON_3_OF_4, abs=1e-12)
    assert arith.mean_excluding_errors == 1.0 and arith.pass_rate == 0.75
    assert (hard.n, hard.errors, hard.mean) == (3, 0, pytest.approx(2 / 3))
    assert hard.ci == pytest.approx(WILSON_2_OF_3, abs=1e-12)


def test_tag_rows_take_the_interval_method_given(six: Path) -> None:
    rows = rows_by_tag(build_report(six, ci="clopper-pearson").by_tag)
    assert rows["arith"].ci_method == rows["hard"].ci_method == "clopper-pearson"
    assert rows["arith"].ci == pytest.approx(CLOPPER_PEARSON_3_OF_4, abs=1e-12)
    assert rows["hard"].ci == pytest.approx(CLOPPER_PEARSON_2_OF_3, abs=1e-12)


def test_a_record_counts_in_each_of_its_tags_and_an_untagged_one_in_none(six: Path) -> None:
    report = build_report(six)
    assert [row.axis for row in report.by_tag] == ["arith", "hard"]  # by name
    assert sum(row.n for row in report.by_tag) == 7  # s1 and s4 twice, s5 never
    assert report.untagged_records == 1


def test_a_tag_named_twice_by_one_record_counts_it_once(tmp_path: Path) -> None:
    run = run_of(tmp_path / "run", [scored("a", ["x", "x"], 1.0), scored("b", ["x"], 0.0)])
    (row,) = build_report(run).by_tag
    assert (row.axis, row.n, row.mean) == ("x", 2, 0.5)


def test_a_run_without_tags_has_an_empty_by_tag(tmp_path: Path) -> None:
    report = build_report(run_of(tmp_path / "run", [scored("a", [], 1.0), scored("b", [], 0.0)]))
    assert report.by_tag == [] and report.untagged_records == 2


# --------------------------------------------------------------------------------------------------
# epochs: a tag row counts as an axis row does, each sample one unit of the interval
# --------------------------------------------------------------------------------------------------

EPOCH_OUTCOMES = {
    "s0": (["t"], 1.0, 1.0),
    "s1": (["t"], 1.0, 0.0),
    "s2": (["t"], 0.0, 0.0),
    "s3": (["t"], 1.0, 1.0),
    "s4": (["t"], 0.0, 1.0),
    "s5": (["t"], 1.0, 0.0),
    "s6": ([], 0.0, 0.0),
    "s7": (["u"], 1.0, 0.0),
}
# t's samples' means over their two epochs: 1, .5, 0, 1, .5, .5; their mean and Student-t interval from
# scipy.stats.t.interval(0.95, df=5, loc=mean, scale=scipy.stats.sem(means)), scipy 1.14
EPOCH_T_MEAN = 0.5833333333333334
EPOCH_T_INTERVAL = (0.18834010808735735, 0.9783265585793094)


def test_with_epochs_a_tag_rows_interval_is_over_its_samples_means(tmp_path: Path) -> None:
    records = [
        scored(sample, tags, value, epoch)
        for sample, (tags, *values) in EPOCH_OUTCOMES.items()
        for epoch, value in enumerate(values)
    ]
    row = rows_by_tag(build_report(run_of(tmp_path / "run", records, epochs=2)).by_tag)["t"]
    assert (row.n, row.samples, row.ci_method) == (12, 6, "t-by-sample")
    assert row.mean == pytest.approx(EPOCH_T_MEAN, abs=1e-12)
    assert row.ci == pytest.approx(EPOCH_T_INTERVAL, abs=1e-12)


def tagged_task_root(root: Path, tags_of_sample: Callable[[int], list[str]]) -> TaskRoot:
    """The adder task (40 samples, axes alpha and beta) with each sample's tags."""
    task_root = TaskRoot(root)
    task_root.template("plain.jinja2", "{{ input }}\nAnswer only.\n")
    items = [
        {"id": f"q{i:04d}", "axis": ("alpha", "beta")[i % 2], "input": f"What is {i} + 1?", "target": str(i + 1)}
        for i in range(40)
    ]
    task_root.data("adder.jsonl", [{**item, "tags": tags_of_sample(i)} for i, item in enumerate(items)])
    task_root.task(
        "adder",
        'name = "adder"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n',
    )
    return task_root


def sample_tags(i: int) -> list[str]:
    """odd: exactly axis beta's samples; every third sample also 'third'; multiples of 5 none."""
    if i % 5 == 0:
        return []
    return (["odd"] if i % 2 else []) + (["third"] if i % 3 == 0 else [])


def test_a_tag_on_the_samples_of_one_axis_has_that_axis_row_with_epochs(tmp_path: Path) -> None:
    # "odd" is on exactly beta's samples: its row must be beta's, three epochs and all
    root = tagged_task_root(tmp_path / "project", lambda i: ["odd"] if i % 2 else [])
    result = run_to_end(adder_run_config(root, epochs=3, model_args={"skill": "0.6", "error_rate": "0.1"}))
    report = build_report(result.run_dir)
    (odd,) = report.by_tag
    (beta,) = [axis for axis in report.axes if axis.axis == "beta"]
    assert odd.samples == 20 and odd.n == 60
    assert odd.model_dump(exclude={"axis"}) == beta.model_dump(exclude={"axis"})


# --------------------------------------------------------------------------------------------------
# reading tags: the columns cache of the version before tags is read again, not misread
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["old layout", "old version number"])
def test_a_columns_cache_of_the_version_before_tags_is_read_again(six: Path, layout: str) -> None:
    samples = RunPaths(six).samples
    columns = load_columns(samples, KEYS)
    if layout == "old version number":  # keys of today, but built by a reader that did not read tags
        columns.tag_names, columns.tag_offsets = [], np.zeros(columns.n + 1, dtype=np.int64)
        columns.tag_ids = np.zeros(0, dtype=np.int32)
    save_columns_cache(samples, columns, KEYS)
    cache = samples.with_name(COLUMNS_CACHE)
    with np.load(cache) as data:
        arrays = dict(data)
    meta = orjson.loads(arrays["meta"].tobytes())
    meta["version"] = 3
    if layout == "old layout":  # exactly what version 3 wrote: no finish reasons, no tags
        del meta["finish_reasons"], meta["tag_names"]
        del arrays["finish_reason"], arrays["tag_offsets"], arrays["tag_ids"]
    arrays["meta"] = np.frombuffer(orjson.dumps(meta), dtype=np.uint8)
    with cache.open("wb") as handle:
        np.savez(handle, **arrays)
    read = load_columns_cached(samples, KEYS)
    assert tags_of(read) == [["hard", "arith"], ["hard"], ["arith"], ["hard", "arith"], [], ["arith"]]
    assert [row.axis for row in build_report(six).by_tag] == ["arith", "hard"]


def test_records_appended_after_the_columns_cache_bring_their_tags(six: Path) -> None:
    samples = RunPaths(six).samples
    save_columns_cache(samples, load_columns(samples, KEYS), KEYS)
    write_records(samples, [scored("s7", ["new", "hard"], 1.0)])
    read = load_columns_cached(samples, KEYS)
    assert tags_of(read)[-2:] == [["arith"], ["new", "hard"]]
    assert read.tag_names.count("hard") == 1  # one name, one code, whichever part it was read in


# --------------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tagged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mock model over the adder task, its samples tagged by ``sample_tags`` (19 of 40 untagged)."""
    root = tagged_task_root(tmp_path_factory.mktemp("tags") / "project", sample_tags)
    return run_to_end(adder_run_config(root, model_args={"skill": "0.6", "error_rate": "0.1"})).run_dir


@pytest.fixture(scope="module")
def untagged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tagged_task_root(tmp_path_factory.mktemp("untagged") / "project", lambda i: [])
    return run_to_end(adder_run_config(root)).run_dir


TAG_HINT = "note: records carry 2 distinct tags: --by-tag shows a row for each"


def test_report_without_by_tag_says_once_that_the_records_carry_tags(cli: Cli, tagged_run: Path) -> None:
    result = cli("report", "--run", tagged_run)
    assert result.code == 0, result.err
    assert result.out.count(TAG_HINT) == 1
    assert "by tag" not in result.out


def test_report_by_tag_draws_a_row_per_tag_and_counts_the_untagged(cli: Cli, tagged_run: Path) -> None:
    result = cli("report", "--run", tagged_run, "--by-tag")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("by tag")))
    rows = [line.split("│")[1].strip() for line in lines[start:] if line.startswith("│")][:2]
    assert rows == ["odd", "third"]
    assert "note: 19 of 40 records have no tag and are in no row" in lines
    assert TAG_HINT not in result.out


def test_report_markdown_has_the_tag_table_only_with_by_tag(cli: Cli, tagged_run: Path) -> None:
    plain = cli("report", "--run", tagged_run, "--format", "markdown")
    tagged = cli("report", "--run", tagged_run, "--format", "markdown", "--by-tag")
    assert plain.code == tagged.code == 0
    assert "### By tag" not in plain.out and f"- {TAG_HINT.removeprefix('note: ')}" in plain.out
    section = tagged.out.split("### By tag (a record with several tags counts in each)\n\n")[1]
    table = section.split("\n\n")[0].splitlines()
    assert table[0].startswith("| tag | n |")
    assert [row.split(" | ")[0] for row in table[2:]] == ["| odd", "| third"]
    assert "- 19 of 40 records have no tag and are in no row" in section
    assert TAG_HINT.removeprefix("note: ") not in tagged.out


def test_report_json_always_carries_by_tag(cli: Cli, tagged_run: Path) -> None:
    plain = json.loads(cli("report", "--run", tagged_run, "--format", "json").out)
    flagged = json.loads(cli("report", "--run", tagged_run, "--format", "json", "--by-tag").out)
    assert plain == flagged
    assert [row["axis"] for row in plain["by_tag"]] == ["odd", "third"]
    assert set(plain["by_tag"][0]) == set(plain["axes"][0])  # the axis rows' schema
    assert plain["untagged_records"] == 19
    # odd: the 20 odd samples but the multiples of 5 (5 of them); third: multiples of 3 but of 5 (14 - 3)
    assert [row["n"] for row in plain["by_tag"]] == [16, 11]


def test_report_of_an_untagged_run_says_nothing_of_tags_unless_asked(cli: Cli, untagged_run: Path) -> None:
    plain = cli("report", "--run", untagged_run)
    asked = cli("report", "--run", untagged_run, "--by-tag")
    assert plain.code == asked.code == 0
    assert "tag" not in plain.out
    assert "note: no record has a tag (a sample's tags field): no row to show" in asked.out.splitlines()
    assert json.loads(cli("report", "--run", untagged_run, "--format", "json").out)["by_tag"] == []


def tags_in_dataset() -> dict[str, list[str]]:
    return {f"q{i:04d}": sample_tags(i) for i in range(40)}


@pytest.mark.parametrize(
    "mode",
    [[], ["--show-failures"], ["--by-sample"], ["--show-failures", "--by-sample"]],
    ids=["worst", "show-failures", "by-sample", "failures-by-sample"],
)
def test_inspect_tag_lists_only_records_carrying_the_tag(cli: Cli, tagged_run: Path, mode: list[str]) -> None:
    result = cli("inspect", "--run", tagged_run, "--tag", "third", "--n", "40", "--format", "json", *mode)
    assert result.code == 0, result.err
    inspection = json.loads(result.out)
    listed = [sample["sample_id"] for sample in inspection["worst"]]
    assert listed and all("third" in tags_in_dataset()[sample] for sample in listed)
    assert inspection["tag"] == "third"


def test_inspect_tag_groups_only_the_errors_of_records_carrying_the_tag(cli: Cli, tagged_run: Path) -> None:
    every = json.loads(cli("inspect", "--run", tagged_run, "--errors", "--format", "json").out)
    odd = json.loads(cli("inspect", "--run", tagged_run, "--errors", "--tag", "odd", "--format", "json").out)
    in_odd = [key for group in every["errors"] for key in group["keys"] if "odd" in tags_in_dataset()[key["sample_id"]]]
    assert odd["error_records"] == len(in_odd) < every["error_records"]
    assert [key for group in odd["errors"] for key in group["keys"]] == in_odd
    shown = cli("inspect", "--run", tagged_run, "--errors", "--tag", "odd")
    assert f"errors with tag odd: {len(in_odd)}" in shown.out


def test_inspect_an_unknown_tag_is_refused_naming_the_runs_tags(cli: Cli, tagged_run: Path) -> None:
    result = cli("inspect", "--run", tagged_run, "--tag", "even")
    assert (result.code, result.out) == (2, "")
    assert result.err == "error: --tag: the run has no tag 'even' (its tags: odd, third)\n"


def test_inspect_a_tag_in_a_run_without_tags_says_there_are_none(cli: Cli, untagged_run: Path) -> None:
    result = cli("inspect", "--run", untagged_run, "--tag", "odd", "--errors")
    assert (result.code, result.err) == (2, "error: --tag: the run has no tag 'odd' (no record has a tag)\n")


def test_a_tag_holding_a_line_break_or_a_pipe_stays_one_markdown_row(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tagged_task_root(tmp_path_factory.mktemp("breaks") / "project", lambda i: ["two\nlines|x"] if i < 3 else [])
    run = run_to_end(adder_run_config(root)).run_dir
    result = cli("report", "--run", run, "--format", "markdown", "--by-tag")
    assert result.code == 0, result.err
    table = result.out.split("### By tag (a record with several tags counts in each)\n\n")[1].split("\n\n")[0]
    assert table.splitlines()[2].startswith("| two lines\\|x | 3 |")
