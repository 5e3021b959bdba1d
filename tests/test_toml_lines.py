"""A task spec's errors name the line of the field: ``toml_lines`` maps the key paths a TOML text defines to
their lines (tomllib gives values without positions), and spec, scorer-argument and unknown-scorer errors
carry ``FILE:LINE``.

Before: ``tasks/x.toml: scorers.0.weight: ...`` without a line, and an unknown scorer name in a spec was
``unknown scorer 'choice_letter'`` without even the file."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot

from eval_harness.errors import ConfigError
from eval_harness.tasks import load_task_file
from eval_harness.toml_lines import key_lines, line_of

Cli = Callable[..., CliResult]

SPEC = '''name = "demo"
template = "plain.jinja2"
system_prompt = """Multi-line text
weight = 99
[[scorers]]
"""

[dataset]
path = "data/adder.jsonl"
"quoted key" = 1
generation.max_tokens = 8

[[scorers]]
name = "exact_match"
  weight = 2

[[scorers]]
name = "composite"
args = { parts = [1, 2] }

[[scorers.parts]]
name = "rouge"

[[scorers.parts]]
name = "token_f1"
'''


def test_every_key_path_maps_to_the_line_that_defines_it() -> None:
    assert tomllib.loads(SPEC)  # the example is valid TOML
    lines = key_lines(SPEC)
    assert lines[("name",)] == 1
    assert lines[("system_prompt",)] == 3
    assert lines[("dataset",)] == 8
    assert lines[("dataset", "path")] == 9
    assert lines[("dataset", "quoted key")] == 10
    assert lines[("dataset", "generation")] == 11
    assert lines[("dataset", "generation", "max_tokens")] == 11
    assert lines[("scorers",)] == 13
    assert lines[("scorers", 0)] == 13
    assert lines[("scorers", 0, "weight")] == 15
    assert lines[("scorers", 1)] == 17
    assert lines[("scorers", 1, "args")] == 19
    assert lines[("scorers", 1, "parts", 0)] == 21
    assert lines[("scorers", 1, "parts", 1, "name")] == 25


def test_lines_inside_a_multi_line_string_define_nothing() -> None:
    lines = key_lines(SPEC)
    assert ("weight",) not in lines
    assert ("scorers", 2) not in lines  # the [[scorers]] inside the string is text, not a third entry


def test_a_key_inside_an_inline_table_is_found_through_the_key_that_holds_it() -> None:
    assert line_of(SPEC, ("scorers", 1, "args", "parts", 0)) == 19
    assert line_of(SPEC, ("nowhere", "at", "all")) is None


def test_a_spec_error_names_the_line_of_the_field(tmp_path: Path) -> None:
    path = tmp_path / "tasks" / "bad.toml"
    path.parent.mkdir()
    path.write_text('template = "t"\n[dataset]\npath = "d.jsonl"\n\n[[scorers]]\nname = "exact_match"\nweight = -1\n')
    with pytest.raises(
        ConfigError, match=r"bad\.toml:7: scorers\.0\.weight: Input should be greater than or equal to 0"
    ):
        load_task_file(path, tmp_path)


def test_a_loaded_task_knows_where_each_scorer_begins(tmp_path: Path) -> None:
    path = tmp_path / "tasks" / "ok.toml"
    path.parent.mkdir()
    path.write_text(
        'template = "t"\n[dataset]\npath = "d.jsonl"\n\n[[scorers]]\nname = "exact_match"\n\n'
        '[[scorers]]\nname = "rouge"\nargs = { use_stemmer = true }\n'
    )
    task = load_task_file(path, tmp_path)
    assert task.scorer_lines == (5, 8)


@pytest.fixture
def root(spec_root: TaskRoot) -> TaskRoot:
    return spec_root


_HEAD = 'template = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n\n[[scorers]]\nname = "exact_match"\n'


def _refused(cli: Cli, body: str) -> str:
    Path("tasks").mkdir(exist_ok=True)
    Path("tasks/t.toml").write_text(body)
    result = cli("run", "--task", "tasks/t.toml", "--model", "mock/m", "--dry-run")
    assert result.code == 2, result.out
    assert "Traceback" not in result.err and result.err.count("\n") == 1
    return result.err


def test_an_unknown_scorer_in_a_spec_names_the_file_and_line(cli: Cli, root: TaskRoot) -> None:
    err = _refused(cli, _HEAD + '\n[[scorers]]\nname = "choice_letter"\n')
    assert err.startswith(f"error: {root.root / 'tasks/t.toml'}:8: unknown scorer 'choice_letter'; did you mean")


def test_a_bad_scorer_argument_names_the_line_of_its_scorer(cli: Cli, root: TaskRoot) -> None:
    err = _refused(cli, _HEAD + '\n[[scorers]]\nname = "choice"\nargs = { letters = 5 }\n')
    assert (
        err
        == f"error: {root.root / 'tasks/t.toml'}:8: scorer 'choice': letters: Input should be a valid string (got 5)\n"
    )


def test_a_scorer_key_used_twice_names_the_line_of_the_second(cli: Cli, root: TaskRoot) -> None:
    err = _refused(cli, _HEAD + '\n[[scorers]]\nname = "exact_match"\n')
    assert err.startswith(f"error: {root.root / 'tasks/t.toml'}:8: scorer key 'exact_match' is used twice")


def test_scorers_written_as_an_inline_array_name_the_line_of_the_array(cli: Cli, root: TaskRoot) -> None:
    body = 'template = "plain.jinja2"\nscorers = [{ name = "nope" }]\n[dataset]\npath = "data/adder.jsonl"\n'
    err = _refused(cli, body)
    assert err.startswith(f"error: {root.root / 'tasks/t.toml'}:2: unknown scorer 'nope'")


def test_three_quotes_inside_a_one_line_string_or_a_comment_open_nothing() -> None:
    # before: counting quotes took '"""' in a literal string for the start of a multi-line string, and every
    # key after it lost its line
    text = (
        "[generation]\n"
        'stop = [\'"""\', "a\\""]  # a comment with \'\'\' in it\n'
        "max_tokens = 5\n"
        'system_prompt = """one\n'
        'two""" # closed\n'
        "temperature = 0.5\n"
    )
    assert tomllib.loads(text)
    lines = key_lines(text)
    assert lines[("generation", "max_tokens")] == 3
    assert lines[("generation", "system_prompt")] == 4
    assert lines[("generation", "temperature")] == 6
