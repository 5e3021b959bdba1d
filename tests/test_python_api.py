"""The README's Python API block runs as written and prints what it says it prints."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from conftest import REPO


def readme_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("### Python API", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_python_api_block_runs_and_prints_its_comments(tmp_path: Path) -> None:
    block = readme_block()
    # the block's comments after each print say what it prints
    expected = [line.removeprefix("# ") for line in block.splitlines() if re.match(r"# \S", line)]
    expected.append(re.search(r"print\(failure\)  # (.*?) \(", block).group(1))  # type: ignore[union-attr]
    printed = io.StringIO()
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block, "README.md (Python API)", "exec"), {})
    finally:
        os.chdir(cwd)
    assert printed.getvalue().splitlines() == expected
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["api-a", "api-b"]
