"""Markdown output (``report`` / ``compare --format markdown``) shows text from the data as it is.

Axis names, tags, run ids and model ids come from users' files; GitHub would read ``*new*`` as emphasis, ``<b>``
as HTML, a backtick as code, ``[x](y)`` as a link, ``&amp;`` as ``&``, and ``# x`` or ``1. x`` at a line's start as
a heading or a list. Each case is rendered by markdown-it (rich's own Markdown parser, in CommonMark mode
with GitHub's tables and strike-through) and the text a reader sees is compared with the data.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from eval_harness.artifacts import RunPaths, write_model
from eval_harness.cli.render.compare import _summary_lines, comparison_markdown
from eval_harness.cli.render.compare import _title as _comparison_title
from eval_harness.cli.render.profile import _gate_lines, _notes_shown, _precision_lines, _title, report_markdown
from eval_harness.cli.render.tables import markdown_code, markdown_line, markdown_text
from eval_harness.compare import Comparison, compare_runs
from eval_harness.gates import gates_from_flags
from eval_harness.report import ProfileReport, build_report
from eval_harness.types import ModelInfo
from tests.test_aggregate import make_manifest, write_records
from tests.test_report_tags import run_of, scored

GITHUB = MarkdownIt("commonmark").enable(["table", "strikethrough"])

AWKWARD = [
    "*new*", "_draft_", "a*b*c", "<b>bold</b>", "`code`", "~~gone~~", "back\\*slash", "__init__", "x|y",
    "[x](http://e.com)", "![img](y)", "&amp;", "&lt;i&gt;", "# hash", "- dash", "+ plus", "1. one", "> quote",
    "    indent", "---",
]  # fmt: skip
"""Names GitHub would otherwise render as emphasis, HTML, code, strike-through, another table column, a link, an
image or an entity's character, or (at the start of a line) as a heading, a list, a quote, a code block or a rule."""

AWKWARD_MODEL = "mock/*m*_`x`<i>[l](u)"


def seen(markdown: str) -> str:
    """The HTML GitHub would render."""
    return str(GITHUB.render(markdown))


def text_of(html: str) -> str:
    """What a reader sees of ``html``: tags stripped, entities decoded."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def cells(html: str) -> list[str]:
    """The text of every table cell."""
    return [text_of(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html)]


def items(html: str) -> list[str]:
    """The text of every list item, heading and paragraph (a bullet, a title, a bold line)."""
    return [text_of(body) for _, body in re.findall(r"<(li|h\d|p)>(.*?)</\1>", html, flags=re.DOTALL)]


def tags(html: str) -> list[str]:
    """The elements of ``html`` in order: the markup, whatever the text."""
    return re.findall(r"</?([a-z][a-z0-9]*)", html)


@pytest.mark.parametrize("text", AWKWARD)
def test_markdown_line_renders_as_the_text_itself_at_the_start_of_a_bullet(text: str) -> None:
    html = seen(f"- {markdown_line(text)}\n")
    assert tags(html) == ["ul", "li", "li", "ul"], html
    assert [text_of(item) for item in re.findall(r"<li>(.*?)</li>", html)] == [text], html


@pytest.mark.parametrize("text", AWKWARD)
def test_markdown_text_renders_as_the_text_itself_inside_a_line(text: str) -> None:
    html = seen(f"a {markdown_text(text)} b\n")
    assert tags(html) == ["p", "p"], html
    assert text_of(html).strip() == f"a {text} b", html


@pytest.mark.parametrize("text", [*AWKWARD, "title #", "###", "a ## "])
def test_markdown_line_renders_a_heading_whole_without_a_closing_sequence(text: str) -> None:
    html = seen(f"## {markdown_line(text, heading=True)}\n")
    assert tags(html) == ["h2", "h2"], html
    assert text_of(html).strip() == text.strip(), html  # a heading's own spaces at either end are not text


def test_a_task_list_box_at_the_start_of_a_line_is_escaped() -> None:
    # GitHub draws "- [ ] x" as a checkbox (markdown-it's CommonMark has no task lists to render it with)
    assert [markdown_line("[ ] todo"), markdown_line("[x] done")] == ["\\[ ] todo", "\\[x] done"]


@pytest.mark.parametrize("text", ["a``b", "`x", "x`", "```", "plain", " both ends "])
def test_markdown_code_shows_any_backticks_in_one_code_span(text: str) -> None:
    assert re.findall(r"<code>(.*?)</code>", seen(markdown_code(text))) == [text]


@pytest.mark.parametrize(
    "text",
    ["snake_case_axis", "results/run_2026_11_30", "finish_reason length", "[95% CI 72.8–88.0]", "72.8–88.0", "1.5"],
)
def test_an_underscore_inside_a_word_and_a_bracket_closing_nothing_are_left_as_they_are(text: str) -> None:
    assert markdown_text(text) == markdown_line(text) == text  # GitHub renders them as they are; a path stays copyable


def test_a_line_break_in_the_data_stays_inside_its_line() -> None:
    assert markdown_text("two\nlines") == "two lines"


def _awkward_run(directory: Path, names: list[str], model: str, more: int = 0, right: bool = False) -> Path:
    """A run of ``model`` with a record per name (as its axis and its tag) scored 0.5, so that each axis has no
    interval (a note and a precision line start with its name); ``more``: that many more records of each name,
    all right or all wrong."""
    records = [
        scored(f"s{n}", [name], 0.5 if n < len(names) else float(right)).model_copy(update={"axis": name})
        for n, name in enumerate(names * (1 + more))
    ]
    manifest = make_manifest(expected_records=len(records)).model_copy(update={"model": ModelInfo(id=model)})
    directory.mkdir(parents=True)
    write_model(RunPaths(directory).manifest, manifest)
    write_records(RunPaths(directory).samples, records)
    return directory


PLAIN = [f"axis{n}" for n in range(len(AWKWARD))]


def test_the_report_shows_awkward_names_literally_in_every_place_and_bolds_only_the_overall_row(
    tmp_path: Path,
) -> None:
    def report(directory: str, names: list[str], model: str) -> tuple[ProfileReport, str]:
        gates = gates_from_flags(fail_below_axis=[f"{name}=0.5" for name in names])
        built = build_report(_awkward_run(tmp_path / directory, names, model), gates=gates)
        return built, report_markdown(built, by_tag=True)

    built, markdown = report("awkward", AWKWARD, AWKWARD_MODEL)
    html = seen(markdown)
    assert tags(html) == tags(seen(report("plain", PLAIN, "mock/x")[1])), markdown  # no markup from the data
    shown, said = cells(html), items(html)
    for name in AWKWARD:
        assert shown.count(name) == 2, (name, markdown)  # its axis row and its tag row
    # each line reads as on the terminal: the title, the precision lines, the gates and the notes
    lines = [_title(built), *_precision_lines(built), *_gate_lines(built), *_notes_shown(built, by_tag=True)]
    for line in lines:
        assert line in said, (line, markdown)
    assert sum(line.startswith(tuple(AWKWARD)) for line in lines) == 2 * len(AWKWARD)  # a precision line, a note
    assert AWKWARD_MODEL in said[0]
    strong = re.findall(r"<strong>(.*?)</strong>", html)
    assert strong and strong[0] == "overall"  # the total row, as before


def test_the_scorers_sparkline_is_still_monospaced(tmp_path: Path) -> None:
    markdown = report_markdown(build_report(run_of(tmp_path / "run", [scored("s1", [], 1.0), scored("s2", [], 0.0)])))
    assert re.search(r"<td[^>]*><code>[▁▂▃▄▅▆▇█ ]+</code></td>", seen(markdown)), markdown


def test_the_comparison_shows_awkward_names_literally_in_every_place(tmp_path: Path) -> None:
    def comparison(directory: str, names: list[str], models: tuple[str, str]) -> Comparison:
        a = _awkward_run(tmp_path / directory / "a", names, models[0], more=15)
        b = _awkward_run(tmp_path / directory / "b", names, models[1], more=15, right=True)
        return compare_runs(a, b)

    c = comparison("awkward", AWKWARD, (AWKWARD_MODEL, f"{AWKWARD_MODEL}``b"))
    markdown = comparison_markdown(c)
    html = seen(markdown)
    assert tags(html) == tags(seen(comparison_markdown(comparison("plain", PLAIN, ("mock/a", "mock/b"))))), markdown
    shown, said = cells(html), items(html)
    for name in AWKWARD:
        assert shown.count(name) == 2, (name, markdown)  # its score row and its latency/cost row
    assert set(c.headline.axes_b_better) == set(AWKWARD)
    for line in [_comparison_title(c), *_summary_lines(c)]:  # "B is better on" names every axis
        assert line in said, (line, markdown)
    assert f"model {AWKWARD_MODEL} → {AWKWARD_MODEL}``b" in [
        unescape(code) for code in re.findall(r"<code>(.*?)</code>", html)
    ]
