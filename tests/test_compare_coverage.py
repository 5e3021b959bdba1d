"""``compare`` between runs that do not cover the same records (--limit, a dataset with an extra axis, other
epochs): what was left out is named per axis, and the regression gate does not pass an axis it never saw
(audit-ext F3: spelling 0% in B vanished from the table and --fail-on-regression exited 0)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot

Cli = Callable[..., CliResult]

AXES = ("alpha", "beta", "gamma")


def _records(per_axis: int, axes: tuple[str, ...] = AXES, prefix: str = "q") -> list[dict[str, Any]]:
    """``per_axis`` samples on each axis, one axis after the other (as a team's file is often laid out), so that
    --limit cuts whole axes off the end."""
    return [
        {"id": f"{prefix}-{axis}-{i}", "axis": axis, "input": f"What is {i} + 1?", "target": str(i + 1)}
        for axis in axes
        for i in range(per_axis)
    ]


@pytest.fixture
def tri(task_root: TaskRoot) -> TaskRoot:
    """The task root with a `tri` task: 10 samples on each of alpha, beta and gamma, in that order."""
    task_root.data("tri.jsonl", _records(10))
    task_root.task(
        "tri",
        'name = "tri"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/tri.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n',
    )
    return task_root


def run(cli: Cli, root: TaskRoot, run_id: str, *args: str | Path) -> Path:
    out = root.root / "results"
    made = cli("run", "--task", root.root / "tasks" / "tri.toml", "--model", "mock/m", "--model-arg", "skill=0.8",
               "--output-dir", out, "--run-id", run_id, "--quiet", *args)  # fmt: skip
    assert made.code == 0, made.err
    return out / run_id


def compare_json(cli: Cli, a: Path, b: Path, *args: str) -> dict[str, Any]:
    result = cli("compare", "--run-a", a, "--run-b", b, "--format", "json", *args)
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    return document


# --------------------------------------------------------------------------------------------------
# an axis with no pair is named, not dropped
# --------------------------------------------------------------------------------------------------


def test_an_axis_b_has_no_pairs_for_is_listed_in_the_json_with_its_counts(cli: Cli, tri: TaskRoot) -> None:
    document = compare_json(cli, run(cli, tri, "a"), run(cli, tri, "b", "--limit", "20"))
    assert document["unpaired_axes"] == [{"axis": "gamma", "only_a": 10, "only_b": 0}]
    assert [axis["axis"] for axis in document["axes"]] == ["alpha", "beta"]  # the rows keep their meaning


def test_an_axis_b_has_no_pairs_for_gets_a_note_naming_it(cli: Cli, tri: TaskRoot) -> None:
    document = compare_json(cli, run(cli, tri, "a"), run(cli, tri, "b", "--limit", "20"))
    assert "gamma: 10 records only in A, none in B: not compared" in document["notes"]


def test_the_table_shows_an_axis_with_no_pairs_as_a_row_not_compared(cli: Cli, tri: TaskRoot) -> None:
    result = cli("compare", "--run-a", run(cli, tri, "a"), "--run-b", run(cli, tri, "b", "--limit", "20"))
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line.startswith("│ gamma ")]
    assert len(rows) == 1 and "not compared" in rows[0]


def test_the_markdown_shows_an_axis_with_no_pairs_as_a_row_not_compared(cli: Cli, tri: TaskRoot) -> None:
    a, b = run(cli, tri, "a"), run(cli, tri, "b", "--limit", "20")
    lines = cli("compare", "--run-a", a, "--run-b", b, "--format", "markdown").out.splitlines()
    assert "| gamma | 0 | – | – | – | – | – | – | – | – | – | – | not compared |" in lines


def test_an_axis_only_the_superset_dataset_of_b_has_is_named(cli: Cli, tri: TaskRoot) -> None:
    # B's dataset is A's with an axis added (the audit's travel_plus + "currency"): compared with --force
    plus = tri.data("tri_plus.jsonl", [*_records(10), *_records(5, ("delta",))])
    document = compare_json(cli, run(cli, tri, "a"), run(cli, tri, "b", "--dataset", plus), "--force")
    assert document["unpaired_axes"] == [{"axis": "delta", "only_a": 0, "only_b": 5}]
    assert "delta: 5 records only in B, none in A: not compared" in document["notes"]


def test_an_axis_on_which_the_runs_share_no_sample_is_named_with_both_counts(cli: Cli, tri: TaskRoot) -> None:
    # the same axes, but the gamma samples of B are other samples (another split of that axis)
    other = tri.data("tri_other.jsonl", [*_records(10, ("alpha", "beta")), *_records(4, ("gamma",), prefix="z")])
    document = compare_json(cli, run(cli, tri, "a"), run(cli, tri, "b", "--dataset", other), "--force")
    assert document["unpaired_axes"] == [{"axis": "gamma", "only_a": 10, "only_b": 4}]
    assert "gamma: 10 records in A and 4 in B, none of them paired: not compared" in document["notes"]


# --------------------------------------------------------------------------------------------------
# per axis, what each run had left out
# --------------------------------------------------------------------------------------------------


def test_each_axis_counts_the_records_of_each_run_left_out(cli: Cli, tri: TaskRoot) -> None:
    # A stops at 15: alpha whole, beta 5 of 10, no gamma; B is whole
    document = compare_json(cli, run(cli, tri, "a", "--limit", "15"), run(cli, tri, "b"))
    counts = [(axis["axis"], axis["n"], axis["only_a"], axis["only_b"]) for axis in document["axes"]]
    assert counts == [("alpha", 10, 0, 0), ("beta", 5, 0, 5)]
    assert (document["overall"]["only_a"], document["overall"]["only_b"]) == (0, 15)


def test_an_axis_whose_column_is_over_part_of_a_runs_records_gets_a_note(cli: Cli, tri: TaskRoot) -> None:
    document = compare_json(cli, run(cli, tri, "a", "--limit", "15"), run(cli, tri, "b"))
    assert (
        "beta: the B column is over 5 of B's 10 records (the rest have no pair in A and are left out, so B % there "
        "is not B's own figure)"
    ) in document["notes"]


def test_the_title_says_the_figures_are_over_the_paired_records_when_any_are_left_out(cli: Cli, tri: TaskRoot) -> None:
    result = cli("compare", "--run-a", run(cli, tri, "a", "--limit", "15"), "--run-b", run(cli, tri, "b"))
    assert result.out.splitlines()[0] == "A = mock/m (a)  vs  B = mock/m (b) on tri, over their 15 paired records only"


def test_the_headline_says_it_is_over_the_paired_records_and_names_the_axes_not_compared(
    cli: Cli, tri: TaskRoot
) -> None:
    result = cli("compare", "--run-a", run(cli, tri, "a", "--limit", "15"), "--run-b", run(cli, tri, "b"))
    (headline,) = [line for line in result.out.splitlines() if line.startswith("headline gap")]
    assert headline.startswith("headline gap (B − A) over the paired records only (gamma not compared): macro ")


# --------------------------------------------------------------------------------------------------
# epochs 3 against 5
# --------------------------------------------------------------------------------------------------


def test_epochs_3_against_5_say_that_b_is_over_the_paired_epochs_only(cli: Cli, tri: TaskRoot) -> None:
    a, b = run(cli, tri, "a", "--limit", "6", "--epochs", "3"), run(cli, tri, "b", "--limit", "6", "--epochs", "5")
    document = compare_json(cli, a, b)
    assert (
        "epochs: B's columns are over its epochs 0–2 only, the paired ones: B's records of epochs 3–4 are left "
        "out, so B's own report, over all 5 epochs, can differ"
    ) in document["notes"]
    assert (document["overall"]["only_a"], document["overall"]["only_b"]) == (0, 12)


def test_epochs_that_explain_every_record_left_out_take_the_place_of_the_per_axis_note(cli: Cli, tri: TaskRoot) -> None:
    a, b = run(cli, tri, "a", "--limit", "6", "--epochs", "3"), run(cli, tri, "b", "--limit", "6", "--epochs", "5")
    notes = compare_json(cli, a, b)["notes"]
    assert not [note for note in notes if "column is over" in note or "columns are over part" in note]
    assert len([note for note in notes if note.startswith("epochs: ")]) == 1


# --------------------------------------------------------------------------------------------------
# the regression gate
# --------------------------------------------------------------------------------------------------


def test_fail_on_regression_fails_naming_an_axis_b_has_no_pairs_for(cli: Cli, tri: TaskRoot) -> None:
    # the audit's case: B 0% on the axis its --limit cut off; before, exit 0 and no line named the axis
    a = run(cli, tri, "a")
    b = run(cli, tri, "b", "--limit", "20", "--model-arg", "skill.gamma=0")
    result = cli("compare", "--run-a", a, "--run-b", b, "--fail-on-regression")
    assert result.code == 1
    assert result.err.strip() == (
        "error: regression gate failed: axis gamma not compared, no pairs (10 records only in A, none in B)"
    )


def test_fail_on_regression_fails_naming_an_axis_a_has_no_pairs_for(cli: Cli, tri: TaskRoot) -> None:
    plus = tri.data("tri_plus.jsonl", [*_records(10), *_records(5, ("delta",))])
    a, b = run(cli, tri, "a"), run(cli, tri, "b", "--dataset", plus)
    result = cli("compare", "--run-a", a, "--run-b", b, "--fail-on-regression", "--force")
    assert result.code == 1
    assert result.err.strip().endswith(
        "error: regression gate failed: axis delta not compared, no pairs (5 records only in B, none in A)"
    )


def test_an_axis_renamed_in_b_whose_records_paired_under_a_s_axis_is_not_called_unpaired(
    cli: Cli, tri: TaskRoot
) -> None:
    # B names A's gamma "g2" (the same ids); A stops at 5 of gamma's 10 samples: 5 of B's g2 records pair, under
    # A's gamma, and 5 have no pair
    renamed = [{**r, "axis": "g2"} if r["axis"] == "gamma" else r for r in _records(10)]
    moved = tri.data("tri_renamed.jsonl", renamed)
    a, b = run(cli, tri, "a", "--limit", "25"), run(cli, tri, "b", "--dataset", moved)
    document = compare_json(cli, a, b, "--force")
    assert document["unpaired_axes"] == []
    assert "5 paired records have another axis in B; they are counted under A's axis" in document["notes"]
    assert (
        "g2: B's paired records on this axis are counted under A's axes; its other 5 have no pair in A and are left out"
        in document["notes"]
    )
    gated = cli("compare", "--run-a", a, "--run-b", b, "--force", "--fail-on-regression")
    assert "not compared" not in gated.out + gated.err


def test_the_notes_on_how_the_records_were_paired_come_first_in_a_fixed_order(cli: Cli, tri: TaskRoot) -> None:
    # the join and the notes are built apart (compare/_paired.py, compare/_notes.py); the order is part of the output
    renamed = [{**r, "axis": "g2"} if r["axis"] == "gamma" else r for r in _records(10)]
    moved = tri.data("tri_renamed.jsonl", renamed)
    a = run(cli, tri, "a", "--limit", "25", "--epochs", "2")
    b = run(cli, tri, "b", "--dataset", moved, "--epochs", "2")
    assert compare_json(cli, a, b, "--force")["notes"][:4] == [
        "10 paired records have another axis in B; they are counted under A's axis",
        "several epochs: each sample is one unit of the paired tests and intervals (the mean of its paired epochs), "
        "since the epochs of one sample are not independent: 25 samples in 50 paired records",
        "0 records only in A and 10 only in B are left out of the paired statistics",
        "g2: B's paired records on this axis are counted under A's axes; its other 10 have no pair in A and are left "
        "out",
    ]


# --------------------------------------------------------------------------------------------------
# a row where one run answered nothing
# --------------------------------------------------------------------------------------------------


def _mock_run(cli: Cli, root: TaskRoot, run_id: str, model_arg: str) -> Path:
    out = root.root / "results"
    made = cli("run", "--task", root.root / "tasks" / "tri.toml", "--model", "mock/m", "--model-arg", model_arg,
               "--output-dir", out, "--run-id", run_id, "--quiet")  # fmt: skip
    assert made.code == 0, made.err
    return out / run_id


def test_a_row_where_every_record_of_b_is_an_error_is_named_and_its_cost_is_no_price(cli: Cli, tri: TaskRoot) -> None:
    # adopt-s32 2: two subjects of B over the server's context, every record an error, compared 0.0 with A's 0.0:
    # "no detectable difference", cost/sample B "$0", and --fail-on-regression passed without a word
    a, b = _mock_run(cli, tri, "a", "skill=0"), _mock_run(cli, tri, "b", "error_rate=1")
    document = compare_json(cli, a, b)
    assert [row["verdict"] for row in document["axes"]] == ["no_difference"] * 3
    assert [row["cost_mean_b"] for row in document["axes"]] == [None] * 3 and document["axes"][0]["cost_mean_a"] == 0
    assert (
        "alpha: every one of B's records is an error (counted as wrong), so no detectable difference says little of "
        "B's quality there: check B's errors (inspect --errors)"
    ) in document["notes"]
    table = cli("compare", "--run-a", a, "--run-b", b)
    assert [line.split("│")[9].strip() for line in table.out.splitlines() if line.startswith("│ alpha ")][-1] == "–"
    gated = cli("compare", "--run-a", a, "--run-b", b, "--fail-on-regression")
    assert (
        gated.code == 0
        and (
            "regression gate passed, but B's records are mostly errors (alpha, 100% errors; beta, 100% errors; "
            "gamma, 100% errors; overall, 100% errors); see the notes"
        )
        in gated.err
    )


def test_compare_writes_its_output_to_a_file(cli: Cli, tri: TaskRoot) -> None:
    a, b = run(cli, tri, "a"), run(cli, tri, "b")
    target = tri.root / "comparison.md"
    result = cli("compare", "--run-a", a, "--run-b", b, "--format", "markdown", "--output", target)
    assert (result.code, result.out) == (0, "") and target.read_text().startswith("## ")
    inside = cli("compare", "--run-a", a, "--run-b", b, "--output", a / "c.md")
    assert inside.code == 2 and "--output" in inside.err
