"""A task copied out of the built-ins into a project's ``tasks/`` to change one line keeps naming the built-in
template and few-shot file, which its own root lacks: the error says where they are (audit-s20 5)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, CliResult

Cli = Callable[..., CliResult]


def test_a_copied_task_is_told_where_the_built_in_few_shot_file_and_template_are(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "tasks").mkdir(parents=True)
    shutil.copy(REPO / "tasks" / "gsm8k.toml", project / "tasks" / "gsm_copy.toml")
    dataset = project / "gsm.jsonl"
    dataset.write_text('{"question": "What is 2 + 3?", "answer": "2 + 3 = 5\\n#### 5"}\n')
    monkeypatch.chdir(project)
    args = ("run", "--task", "gsm_copy", "--dataset", dataset, "--dry-run")
    missing_file = cli(*args)
    assert missing_file.code == 2
    assert (
        f"few_shot.path: {project}/data/gsm8k_fewshot.jsonl: no such file; there is "
        f"{REPO}/data/gsm8k_fewshot.jsonl: copy it to {project}/data"
    ) in missing_file.err
    (project / "data").mkdir()
    shutil.copy(REPO / "data" / "gsm8k_fewshot.jsonl", project / "data")
    missing_template = cli(*args)
    assert missing_template.code == 2
    assert (
        f"{project}/templates/gsm8k.jinja2: template not found (templates here: none); there is "
        f"{REPO}/templates/gsm8k.jinja2: copy it to {project}/templates"
    ) in missing_template.err
    shutil.copytree(REPO / "templates", project / "templates")
    assert cli(*args).code == 0
