"""The terminal tables of ``compare``, ``report`` and ``run`` at 80, 120 and 200 columns, on real runs with
MMLU's 57 long subject names: no axis name and no interval is ever cut (audit defect 8: 'professional_…'
stood for four subjects and '53.3–6…' for an interval); what does not fit is left out and named."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_subprocess, write_jsonl
from rich.cells import cell_len
from rich.console import Console

from eval_harness.cli.app import main
from eval_harness.cli.render import interval, pct, signed_points
from eval_harness.cli.render.compare import print_comparison
from eval_harness.cli.render.profile import print_report, profile_table
from eval_harness.compare import compare_runs
from eval_harness.report import ProfileReport, build_report
from eval_harness.types import RunSummary

WIDTHS = (80, 120, 200)

# The 57 subjects of MMLU (Hendrycks et al., 2021), as the axes of its lm-evaluation-harness port are named.
# fmt: off
MMLU_SUBJECTS = [
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge", "college_biology",
    "college_chemistry", "college_computer_science", "college_mathematics", "college_medicine", "college_physics",
    "computer_security", "conceptual_physics", "econometrics", "electrical_engineering", "elementary_mathematics",
    "formal_logic", "global_facts", "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics", "high_school_physics",
    "high_school_psychology", "high_school_statistics", "high_school_us_history", "high_school_world_history",
    "human_aging", "human_sexuality", "international_law", "jurisprudence", "logical_fallacies", "machine_learning",
    "management", "marketing", "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law", "professional_medicine",
    "professional_psychology", "public_relations", "security_studies", "sociology", "us_foreign_policy", "virology",
    "world_religions",
]
# fmt: on

# Longer than an 80-column table can hold beside its mean and interval: these must wrap, and stay whole.
VERY_LONG_AXES = [
    "multilingual_reading_comprehension_with_distractor_passages_in_swahili",
    "multilingual_reading_comprehension_with_distractor_passages_in_yoruba",
    "long_context_retrieval_of_numeric_facts_from_financial_filings_10k",
]


def _cli(*args: str | Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in args])
    assert exit_.value.code in (0, None)


def _run(out: Path, dataset: Path, run_id: str, *model: str) -> Path:
    _cli(
        "run", "--task", "multiple_choice", "--dataset", dataset, *model, "--output-dir", out, "--run-id", run_id, "-q"
    )
    return out / run_id


def _mc_dataset(path: Path, axes: list[str], per_axis: int) -> Path:
    records = [
        {"id": f"q{i:05d}", "axis": axes[i % len(axes)], "input": f"Question {i}?", "choices": ["w", "x", "y", "z"]}
        for i in range(len(axes) * per_axis)
    ]
    return write_jsonl(path, [{**record, "target": "ABCD"[i % 4]} for i, record in enumerate(records)])


@pytest.fixture(scope="module")
def mmlu_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs over the 57 subjects to compare, and one with two epochs and errors (every profile column)."""
    root = tmp_path_factory.mktemp("widths")
    dataset = _mc_dataset(root / "mmlu57.jsonl", MMLU_SUBJECTS, 8)
    out = root / "runs"
    errors_and_epochs = ["--model-arg", "skill=0.6", "--model-arg", "error_rate=0.1", "--epochs", "2"]
    return {
        "a": _run(out, dataset, "a", "--model", "mock/a", "--model-arg", "skill=0.6"),
        "b": _run(out, dataset, "b", "--model", "mock/b", "--model-arg", "skill=0.6", "--model-arg", "skill.anatomy=1"),
        "e": _run(out, dataset, "e", "--model", "mock/e", *errors_and_epochs),
    }


def _draw(draw: Callable[[Console], None], width: int) -> str:
    """What ``draw`` prints on a plain console ``width`` columns wide."""
    buffer = io.StringIO()
    draw(Console(file=buffer, width=width, no_color=True, highlight=False, markup=False, soft_wrap=False))
    return buffer.getvalue()


def _tables(text: str) -> list[str]:
    """Each table of ``text`` from its top rule, with what is printed after it up to the next table."""
    chunks = re.split(r"^(?=┏)", text, flags=re.MULTILINE)[1:]
    assert chunks, text
    return chunks


def _row(table: str, axis: str) -> list[str]:
    """The cells of the first line of the table row whose axis cell is exactly ``axis``."""
    lines = [line for line in table.splitlines() if re.match(rf"│ {re.escape(axis)} +│", line)]
    assert lines, f"no row shows the whole axis name {axis!r}:\n{table}"
    return [cell.strip() for cell in lines[0].split("│")[1:-1]]


def _rows_in_order(table: str) -> list[list[str]]:
    """The cells of the first line of each body row, top to bottom (a row's further lines have no axis)."""
    lines = [line for line in table.splitlines() if line.startswith("│") and line.split("│")[1].strip()]
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines]


def _left_out(table: str, width: int) -> list[str]:
    """The columns a table says it left out to fit ``width`` columns."""
    found = re.search(rf"left out to fit {width} columns: (.*?) \(", " ".join(table.split()))
    return found.group(1).split(", ") if found else []


def _widest_line(text: str) -> int:
    return max(len(line) for line in text.splitlines() if line.startswith(("┃", "│")))


def test_compare_shows_every_axis_name_whole_in_both_tables_at_80_120_and_200(mmlu_runs: dict[str, Path]) -> None:
    comparison = compare_runs(mmlu_runs["a"], mmlu_runs["b"])
    for width in WIDTHS:
        text = _draw(lambda console: print_comparison(comparison, console), width)
        scores, trade = _tables(text)
        assert "…" not in text, width
        assert _widest_line(text) <= width
        for axis in [*MMLU_SUBJECTS, "overall"]:
            _row(scores, axis)
            _row(trade, axis)


def test_compare_shows_both_bounds_of_every_interval_it_shows_at_80_120_and_200(
    mmlu_runs: dict[str, Path],
) -> None:
    comparison = compare_runs(mmlu_runs["a"], mmlu_runs["b"])
    for width in WIDTHS:
        scores = _tables(_draw(lambda console: print_comparison(comparison, console), width))[0]
        left_out = _left_out(scores, width)
        assert "verdict" not in left_out and "B − A (points)" not in left_out, width
        axes = [*comparison.axes, comparison.overall]
        rows = _rows_in_order(scores)
        assert len(rows) == len(axes), width
        for axis, row in zip(axes, rows, strict=True):
            shown = {
                "A 95% CI": interval(axis.ci_a),
                "B 95% CI": interval(axis.ci_b),
                "95% CI of diff": interval(axis.diff_ci, signed=True),
            }
            for column, bounds in shown.items():
                assert column in left_out or bounds in row, (width, column, row)


def test_report_shows_every_axis_name_and_interval_whole_at_80_120_and_200(mmlu_runs: dict[str, Path]) -> None:
    report = build_report(mmlu_runs["e"])
    for width in WIDTHS:
        text = _draw(lambda console: print_report(report, console), width)
        profile, epochs, _scorers = _tables(text)
        assert "…" not in text, width
        assert _widest_line(text) <= width
        for axis in [*report.axes, report.overall]:
            row = _row(profile, axis.axis)
            assert pct(axis.mean) in row and interval(axis.ci) in row, (width, row)
            _row(epochs, axis.axis)


def test_run_summary_profile_shows_every_axis_name_and_interval_whole_at_80_120_and_200(
    mmlu_runs: dict[str, Path],
) -> None:
    summary = RunSummary.model_validate_json((mmlu_runs["a"] / "summary.json").read_text(encoding="utf-8"))
    for width in WIDTHS:
        text = _draw(lambda console: console.print(profile_table(summary)), width)
        assert "…" not in text, width
        for axis in [*summary.axes, summary.overall]:
            row = _row(text, axis.axis)
            assert pct(axis.mean) in row and interval(axis.ci) in row, (width, row)


def test_a_name_too_long_for_80_columns_wraps_at_its_underscores_and_stays_whole(tmp_path: Path) -> None:
    dataset = _mc_dataset(tmp_path / "long.jsonl", VERY_LONG_AXES, 4)
    report = build_report(_run(tmp_path / "runs", dataset, "long", "--model", "mock/a", "--model-arg", "skill=0.6"))
    text = _draw(lambda console: print_report(report, console), 80)
    assert "…" not in text
    body = _tables(text)[0].split("┡")[1].split("└")[0]
    fragments = [line.split("│")[1].strip() for line in body.splitlines() if line.startswith("│")]
    fragments = [fragment for fragment in fragments if fragment]
    names = [a.axis for a in report.axes] + ["overall"]
    assert "".join(fragments) == "".join(names)
    pieces: list[list[str]] = []
    for name in names:  # split the fragments back into each name's lines
        taken = ""
        pieces.append([])
        while len(taken) < len(name):
            pieces[-1].append(fragments.pop(0))
            taken += pieces[-1][-1]
        assert taken == name
    assert all(len(lines) > 1 for lines in pieces[:-1])  # each very long name did wrap...
    assert all(line.endswith("_") for lines in pieces for line in lines[:-1])  # ...after an underscore


def test_piped_output_fits_the_width_columns_gives(mmlu_runs: dict[str, Path]) -> None:
    result = run_subprocess("compare", "--run-a", mmlu_runs["a"], "--run-b", mmlu_runs["b"], columns=100)
    assert result.code == 0, result.err
    table = [line for line in result.out.splitlines() if line[:1] in "┏┃┡│├└"]
    assert table and max(len(line) for line in table) <= 100


def test_counts_take_the_singular_for_one() -> None:
    # before: "1 problems", "1 duplicate ids", "macro mean (over 1 axes)"
    from eval_harness.cli.render import counted

    assert [counted(1, "problem"), counted(0, "problem"), counted(2, "problem")] == [
        "1 problem",
        "0 problems",
        "2 problems",
    ]
    assert [counted(1, "axis", "axes"), counted(4, "axis", "axes"), counted(1_234, "line")] == [
        "1 axis",
        "4 axes",
        "1,234 lines",
    ]


def test_the_plain_progress_line_says_its_mean_is_of_the_scored_answers(capsys: pytest.CaptureFixture[str]) -> None:
    # before: "mean 65.3%" just above a headline of 58.3%: the progress mean leaves errors out, the headline
    # counts them as 0, and nothing said so
    from eval_harness.cli.render.run import ProgressDisplay
    from eval_harness.runner import Progress

    display = ProgressDisplay(total=4, label="m · t", plain_interval_s=0.0)
    display.update(Progress(done=4, total=4, errors=1, score_sum=2.0, scored=3, cost_usd=0.0, cost_known=True,
                            elapsed_s=1.0, session_done=4))  # fmt: skip
    assert "scored mean 66.7% · errors 1" in capsys.readouterr().err


def test_the_progress_cost_is_written_as_the_tables_write_it(capsys: pytest.CaptureFixture[str]) -> None:
    # the progress line said "$0.0000" beside a table's "$0" (and rounded a $0.00002 run to "$0.0000")
    from eval_harness.cli.render.run import ProgressDisplay
    from eval_harness.runner import Progress

    display = ProgressDisplay(total=4, label="m · t", plain_interval_s=0.0)
    for cost, shown in ((0.0, "cost $0"), (0.0147, "cost $0.0147"), (2.1e-05, "cost $2.1e-05")):
        display.update(Progress(done=4, total=4, errors=0, score_sum=2.0, scored=4, cost_usd=cost, cost_known=True,
                                elapsed_s=1.0, session_done=4))  # fmt: skip
        assert capsys.readouterr().err.rstrip().endswith(shown)


def test_compare_latency_deltas_name_their_unit() -> None:
    from eval_harness.cli.render.compare import _TRADE_COLUMNS

    assert {"Δ p50 ms", "Δ p95 ms"} <= {column.header for column in _TRADE_COLUMNS}


def test_a_tag_of_a_sentence_wraps_and_leaves_the_columns_a_48_character_tag_keeps(tmp_path: Path) -> None:
    from tests.test_report_tags import run_of, scored

    sentence = "_".join(["a_tag_written_as_a_whole_sentence_by_a_labelling_script"] * 5)  # 284 characters

    def tag_table(tag: str) -> str:
        records = [scored(f"s{n}", [tag] if n % 2 else ["short"], float(n % 3 == 0)) for n in range(12)]
        report = build_report(run_of(tmp_path / str(len(tag)), records))
        return _tables(_draw(lambda console: print_report(report, console, by_tag=True), 120))[1]

    short, long = tag_table(sentence[:48]), tag_table(sentence)
    assert _left_out(long, 120) == _left_out(short, 120)  # it used to push every optional column out
    assert _widest_line(long) <= 120 and "…" not in long
    fragments = [line.split("│")[1].strip() for line in long.split("┡")[1].splitlines() if line.startswith("│")]
    assert sentence in "".join(fragments)  # whole, over several lines
    assert max(len(fragment) for fragment in fragments) <= 48


def _one_axis_report(tmp_path: Path, name: str) -> ProfileReport:
    from tests.test_report_tags import run_of, scored

    records = [
        scored(f"s{n}", [], float(n % 2)).model_copy(update={"axis": name if n % 2 else "short"}) for n in range(12)
    ]
    return build_report(run_of(tmp_path / "run", records))


def test_a_60_character_name_stays_on_one_line_while_the_bar_can_give_way(tmp_path: Path) -> None:
    name = "an_axis_name_that_is_quite_long_with_underscores_sixty_chars"
    report = _one_axis_report(tmp_path, name)
    at_170 = _tables(_draw(lambda console: print_report(report, console), 170))[0]
    assert _widest_line(at_170) <= 170 and not _left_out(at_170, 170)
    _row(at_170, name)  # whole on one line
    bar = next(line for line in at_170.splitlines() if line.startswith("│ overall")).split("│")[-2]
    assert 10 <= len(bar) - 2 < 20, at_170  # the bar gave way instead
    # narrower still, the bar goes before the name wraps (as before the 48-cell floor for a tag of a sentence)
    at_150 = _tables(_draw(lambda console: print_report(report, console), 150))[0]
    _row(at_150, name)
    assert _left_out(at_150, 150) == ["bar"] and _widest_line(at_150) <= 150


def test_a_cjk_name_wraps_by_cells_without_a_character_left_alone(tmp_path: Path) -> None:
    name = "日本語の長い軸の名前です" * 3  # 36 characters, 72 cells
    report = _one_axis_report(tmp_path, name)
    table = _tables(_draw(lambda console: print_report(report, console), 40))[0]
    assert "…" not in table and max(cell_len(line) for line in table.splitlines() if line[:1] in "┏┃┡│├└") <= 40
    body = table.split("┡")[1].split("├")[0]
    fragments = [line.split("│")[1].strip() for line in body.splitlines() if line.startswith("│")]
    fragments = fragments[fragments.index("short") + 1 :]
    assert "".join(fragments) == name, fragments
    assert all(len(fragment) > 1 for fragment in fragments[:-1]), fragments


def test_a_difference_that_rounds_to_zero_has_no_sign_but_an_interval_bound_keeps_it() -> None:
    """compare printed '−0.0' for B − A = −0.00012 (audit-s20 10); a bound keeps its side of 0: [−6.2, −0.0]
    excludes 0, [−6.2, 0.0] would read as touching it."""
    assert [signed_points(v) for v in (-0.00012, 0.00012, 0.0, -0.0012, 0.26)] == ["0.0", "0.0", "0.0", "−0.1", "+26.0"]
    assert interval((-0.062, -0.0001), signed=True) == "[−6.2, −0.0]"


def test_what_is_copied_from_the_output_stays_on_one_line_however_narrow(tmp_path: Path) -> None:
    # terminal-s30 4: the run directory after "→", a dataset's sha256 and the cache's directory broke across lines
    out = tmp_path / "results-in-a-directory-with-a-long-name-to-copy"
    ran = run_subprocess("run", "--task", "capability_profile", "--model", "mock/m", "--limit", "3", "--output-dir",
                         out, "--run-id", "r", columns=40)  # fmt: skip
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[-1].endswith(f"→ {out / 'r'}")
    dataset = write_jsonl(tmp_path / "d.jsonl", [{"input": "q", "target": "a"}])
    checked = run_subprocess("validate-dataset", "--path", dataset, columns=40)
    assert re.search(r"^sha256: [0-9a-f]{64}$", checked.out, re.MULTILINE), checked.out
    cache = tmp_path / "a-cache-directory-with-a-long-name-to-copy"
    info = run_subprocess("cache", "info", "--cache-dir", cache, columns=40)
    assert info.out.splitlines()[0].startswith(f"{cache}: ")


def test_an_inspect_heading_too_wide_for_the_terminal_is_shown_whole_below_its_rule(tmp_path: Path) -> None:
    # terminal-s30 2: the rule's title was cut with "…": "ms · $0" lost at 80, a long sample id's end at 60
    long_id = "a-very-long-sample-identifier-that-does-not-fit-in-sixty-columns"
    dataset = write_jsonl(tmp_path / "d.jsonl", [{"id": long_id, "axis": "arithmetic", "input": "[[answer: 1]]",
                                                  "target": "2"}])  # fmt: skip
    ran = run_subprocess("run", "--task", "capability_profile", "--dataset", dataset, "--model", "mock/m",
                         "--output-dir", tmp_path, "--run-id", "r", "-q")  # fmt: skip
    assert ran.code == 0, ran.err
    shown = run_subprocess("inspect", "--run", tmp_path / "r", columns=60)
    assert f"1. {long_id} (epoch 0) · axis arithmetic · score 1.000 · passed · 0 ms · $0" in shown.out, shown.out
    assert "…" not in shown.out


def test_the_errors_table_folds_long_names_rather_than_cutting_them(tmp_path: Path) -> None:
    # terminal-s30 3: the one table not fitted to the width cut "SpentScor…" and "(error_rat…" at 60 columns
    ran = run_subprocess("run", "--task", "capability_profile", "--model", "mock/x", "--model-arg", "error_rate=1",
                         "--limit", "2", "--output-dir", tmp_path, "--run-id", "r", "-q")  # fmt: skip
    assert ran.code == 0, ran.err
    shown = run_subprocess("inspect", "--run", tmp_path / "r", "--errors", columns=60)
    assert shown.code == 0 and "…" not in shown.out, shown.out
    assert "(error_rate" in shown.out.replace("│", "").replace(" ", "").replace("\n", ""), shown.out
