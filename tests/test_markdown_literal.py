"""Markdown output (``report`` / ``compare --format markdown``) shows text from the data as it is.

Axis names, tags and run ids come from users' files; GitHub would read ``*new*`` as emphasis, ``<b>`` as HTML
and a backtick as code. Each case is rendered by markdown-it (rich's own Markdown parser, in CommonMark mode
with GitHub's tables and strike-through) and the text a reader sees is compared with the data.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from eval_harness.cli.render.compare import comparison_markdown
from eval_harness.cli.render.profile import report_markdown
from eval_harness.cli.render.tables import markdown_text
from eval_harness.compare import compare_runs
from eval_harness.report import build_report
from tests.test_report_tags import run_of, scored

GITHUB = MarkdownIt("commonmark").enable(["table", "strikethrough"])

AWKWARD = ["*new*", "_draft_", "a*b*c", "<b>bold</b>", "`code`", "~~gone~~", "back\\*slash", "__init__", "x|y"]
"""Names GitHub would otherwise render as emphasis, HTML, code, strike-through or another table column."""


def seen(markdown: str) -> str:
    """The HTML GitHub would render."""
    return str(GITHUB.render(markdown))


def cells(html: str) -> list[str]:
    """The text of every table cell, tags stripped, entities decoded."""
    return [unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html)]


@pytest.mark.parametrize("text", AWKWARD)
def test_markdown_text_renders_as_the_text_itself(text: str) -> None:
    html = seen(markdown_text(text) + "\n")
    assert unescape(re.sub(r"<[^>]+>", "", html)).strip() == text
    assert not re.search(r"<(em|strong|code|del|b)>", html), html


@pytest.mark.parametrize("text", ["snake_case_axis", "results/run_2026_11_30", "finish_reason length"])
def test_an_underscore_inside_a_word_is_left_as_it_is(text: str) -> None:
    assert markdown_text(text) == text  # GitHub emphasises nothing there, and a path stays copyable


def test_a_line_break_in_the_data_stays_inside_its_line() -> None:
    assert markdown_text("two\nlines") == "two lines"


def test_the_report_shows_awkward_axis_names_and_tags_literally_and_bolds_only_the_overall_row(
    tmp_path: Path,
) -> None:
    records = [
        scored(f"s{n}", [name], 1.0 if n % 2 else 0.0).model_copy(update={"axis": name})
        for n, name in enumerate(AWKWARD)
    ]
    markdown = report_markdown(build_report(run_of(tmp_path / "run", records)), by_tag=True)
    html = seen(markdown)
    shown = cells(html)
    for name in AWKWARD:
        assert shown.count(name) == 2, (name, markdown)  # its axis row and its tag row
    assert not re.search(r"<(em|code|del|b)>", html.split("<h3>Scorers")[0]), markdown
    strong = re.findall(r"<strong>(.*?)</strong>", html)
    assert strong and strong[0] == "overall"  # the total row, as before


def test_the_scorers_sparkline_is_still_monospaced(tmp_path: Path) -> None:
    markdown = report_markdown(build_report(run_of(tmp_path / "run", [scored("s1", [], 1.0), scored("s2", [], 0.0)])))
    assert re.search(r"<td[^>]*><code>[▁▂▃▄▅▆▇█ ]+</code></td>", seen(markdown)), markdown


def test_the_comparison_shows_awkward_axis_names_literally(tmp_path: Path) -> None:
    def run(directory: str, right: int) -> Path:
        records = [
            scored(f"s{n}", [], 1.0 if n < right else 0.0).model_copy(update={"axis": AWKWARD[n % 3]})
            for n in range(12)
        ]
        return run_of(tmp_path / directory, records)

    markdown = comparison_markdown(compare_runs(run("a", 4), run("b", 9)))
    html = seen(markdown)
    shown = cells(html)
    for name in AWKWARD[:3]:
        assert shown.count(name) == 2, (name, markdown)  # its score row and its latency/cost row
    assert not re.search(r"<(em|code|del|b)>", html), markdown
