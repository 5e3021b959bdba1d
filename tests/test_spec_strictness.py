"""A task spec is read as written (audit-s21-input 9, 13 and 16): values of the wrong type, unknown keys, nesting
too deep to fingerprint and bytes that are not plain UTF-8 are each one line naming the file, the line and the
field, and a few-shot file that cannot be read is called the few-shot file and named by the spec's line.

Before: ``pass_threshold = true`` was read as 1.0, ``gate = "yes"`` made the scorer a gate, ``k = "3"`` was 3; a
misspelt ``dataset.fields`` key mapped nothing, silently; ``few_shot.kk`` was told as ``few_shot.k: Field
required``; 300 levels of nesting were a traceback (orjson) and 5,000 a RecursionError that also emptied
``eval-harness tasks``; a byte-order mark was ``Invalid statement (at line 1, column 1)`` and a byte that is not
UTF-8 a position in the file; a missing few-shot file was ``cannot read the dataset``.

The commands run from the task root with relative paths, so the expected lines are short and exact.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot

from eval_harness.errors import ConfigError
from eval_harness.tasks import MAX_NESTING, LoadedTask, load_task_file
from eval_harness.toml_lines import nesting_line

Cli = Callable[..., CliResult]

_HEAD = 'name = "t"\ntemplate = "plain.jinja2"\n'
_DATASET = '[dataset]\npath = "data/adder.jsonl"\n'
_SCORER = '[[scorers]]\nname = "exact_match"\n'


@pytest.fixture
def root(spec_root: TaskRoot) -> TaskRoot:
    return spec_root


def _write(root: TaskRoot, body: str, name: str = "t") -> str:
    root.task(name, body)
    return f"tasks/{name}.toml"


def _load(root: TaskRoot, body: str) -> LoadedTask:
    return load_task_file(Path(_write(root, body)), root.root)


def _refusal(root: TaskRoot, body: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(root, body)
    return str(caught.value)


def _refused_run(cli: Cli, task: str) -> str:
    """``run`` must refuse before it starts: exit 2, one line, nothing written; its stderr."""
    result = cli("run", "--task", task, "--model", "mock/m", "-q", "--output-dir", "results")
    assert result.code == 2, result.err
    assert "Traceback" not in result.err and result.err.count("\n") == 1, result.err
    assert not Path("results").exists()
    return result.err


# --- finding 13: values must already have their type -------------------------------------------------------

_WRONG_TYPES = [
    ("pass_threshold = true\n", "", 3, "pass_threshold: Input should be a valid number"),
    ("", 'weight = "1"\n', 7, "scorers.0.weight: Input should be a valid number"),
    ("", 'gate = "yes"\n', 7, "scorers.0.gate: Input should be a valid boolean"),
    ("", '[few_shot]\nk = "3"\npath = "data/adder.jsonl"\n', 8, "few_shot.k: Input should be a valid integer"),
    (
        "",
        "[few_shot]\nk = 1\nseed = 1.0\nholdout_fraction = 0.5\n",
        9,
        "few_shot.seed: Input should be a valid integer",
    ),
    ("", '[generation]\nmax_tokens = "5"\n', 8, "generation.max_tokens: Input should be a valid integer"),
    ("", "[generation]\ntemperature = false\n", 8, "generation.temperature: Input should be a valid number"),
    ("description = 5\n", "", 3, "description: Input should be a valid string"),
]


@pytest.mark.parametrize(("top", "tail", "line", "message"), _WRONG_TYPES, ids=[m for *_, m in _WRONG_TYPES])
def test_a_spec_value_of_the_wrong_type_is_refused_not_converted(
    root: TaskRoot, top: str, tail: str, line: int, message: str
) -> None:
    assert _refusal(root, f"{_HEAD}{top}{_DATASET}{_SCORER}{tail}") == f"tasks/t.toml:{line}: {message}"


def test_a_scorer_gate_given_as_text_refuses_the_run_rather_than_making_a_gate(cli: Cli, root: TaskRoot) -> None:
    err = _refused_run(cli, _write(root, f'{_HEAD}{_DATASET}{_SCORER}gate = "yes"\n'))
    assert err == "error: tasks/t.toml:7: scorers.0.gate: Input should be a valid boolean\n"


def test_a_composite_part_gate_given_as_text_is_refused(cli: Cli, root: TaskRoot) -> None:
    part = '[[scorers]]\nname = "composite"\nargs = { scorers = [{ name = "exact_match", gate = "yes" }] }\n'
    err = _refused_run(cli, _write(root, f"{_HEAD}{_DATASET}{part}"))
    assert "scorers[0].gate: Input should be a valid boolean" in err


def test_a_misspelt_key_of_a_composite_part_gets_a_suggestion_as_a_tasks_own_scorer_does(
    cli: Cli, root: TaskRoot
) -> None:
    # gates-s31 6: "scorers[0].gates: Extra inputs are not permitted", where the task's own table says which
    part = '[[scorers]]\nname = "composite"\nargs = { scorers = [{ name = "exact_match", gates = true }] }\n'
    err = _refused_run(cli, _write(root, f"{_HEAD}{_DATASET}{part}"))
    assert (
        "scorers[0].gates: unknown key 'gates'; did you mean 'gate'? (known: alias, args, gate, name, weight)"
    ) in err, err


def test_an_integer_is_still_accepted_where_a_number_is_wanted(root: TaskRoot) -> None:
    tail = "weight = 2\n[generation]\ntemperature = 1\n"
    task = _load(root, f"{_HEAD}pass_threshold = 1\n{_DATASET}{_SCORER}{tail}")
    assert (task.spec.pass_threshold, task.spec.scorers[0].weight, task.spec.generation.temperature) == (1.0, 2.0, 1.0)
    assert isinstance(task.spec.pass_threshold, float)


def test_a_misspelt_dataset_field_mapping_is_refused_with_the_field_it_may_mean(root: TaskRoot) -> None:
    body = f'{_HEAD}[dataset]\npath = "data/adder.jsonl"\nfields = {{ inptu = "question" }}\n{_SCORER}'
    assert _refusal(root, body) == (
        "tasks/t.toml:5: dataset.fields: 'inptu' is no sample field (did you mean 'input'?); a mapping is "
        "SAMPLE_FIELD = 'column of the file', where the sample fields are id, input, target, axis, tags, choices, "
        "metadata"
    )


def test_every_sample_field_may_be_mapped(root: TaskRoot) -> None:
    fields = ", ".join(f'{name} = "col_{name}"' for name in ("id", "input", "target", "axis", "tags", "metadata"))
    task = _load(root, f'{_HEAD}[dataset]\nfields = {{ {fields}, choices = ["a", "b"] }}\n{_SCORER}')
    assert set(task.spec.dataset.fields) == {"id", "input", "target", "axis", "tags", "metadata", "choices"}


@pytest.mark.parametrize("name", ['""', '"  "'])
def test_an_empty_task_name_is_refused(root: TaskRoot, name: str) -> None:
    body = f'name = {name}\ntemplate = "plain.jinja2"\n{_DATASET}{_SCORER}'
    assert _refusal(root, body) == "tasks/t.toml:1: name: is empty"


def test_a_spec_without_a_name_is_named_as_its_file_is(root: TaskRoot) -> None:
    # specs written before names were asked for keep loading: a name defaults to the file's stem
    assert _load(root, f'template = "plain.jinja2"\n{_DATASET}{_SCORER}').spec.name == "t"


# --- finding 16: an unknown key is named, not the field it leaves missing ----------------------------------


def test_a_misspelt_key_is_named_rather_than_the_field_it_leaves_missing(root: TaskRoot) -> None:
    body = f'{_HEAD}{_DATASET}{_SCORER}[few_shot]\nkk = 2\npath = "data/adder.jsonl"\n'
    assert _refusal(root, body) == (
        "tasks/t.toml:8: few_shot.kk: unknown key 'kk'; did you mean 'k'? "
        "(known: holdout_fraction, k, path, path_from_dataset, seed)"
    )


def test_a_misspelt_scorer_key_is_named_with_the_keys_a_scorer_takes(root: TaskRoot) -> None:
    body = f'{_HEAD}{_DATASET}[[scorers]]\nnmae = "exact_match"\n'
    assert _refusal(root, body) == (
        "tasks/t.toml:6: scorers.0.nmae: unknown key 'nmae'; did you mean 'name'? "
        "(known: alias, args, gate, name, weight)"
    )


def test_an_unknown_top_level_key_is_named_among_the_keys_of_a_spec(root: TaskRoot) -> None:
    message = _refusal(root, f"{_HEAD}colour = 5\n{_DATASET}{_SCORER}")
    assert message == (
        "tasks/t.toml:3: colour: unknown key 'colour' (known: dataset, description, few_shot, generation, name, "
        "pass_threshold, scorers, system_prompt, template, template_vars)"
    )


# --- finding 9: nesting too deep ----------------------------------------------------------------------------


def _nested(levels: int) -> str:
    """``template_vars`` holding arrays ``levels`` deep (template_vars itself is one more)."""
    return f"template_vars = {{ a = {'[' * levels}{']' * levels} }}\n"


def test_nesting_up_to_the_limit_loads(root: TaskRoot) -> None:
    task = _load(root, f"{_HEAD}{_nested(MAX_NESTING - 1)}{_DATASET}{_SCORER}")
    assert "a" in task.spec.template_vars


@pytest.mark.parametrize("levels", [MAX_NESTING, 300])
def test_nesting_beyond_the_limit_is_refused_naming_the_line_and_key(root: TaskRoot, levels: int) -> None:
    assert _refusal(root, f"{_HEAD}{_nested(levels)}{_DATASET}{_SCORER}") == (
        f"tasks/t.toml:3: template_vars.a.0.0.0.0...: arrays and tables nested more than {MAX_NESTING} levels deep"
    )


def test_nesting_too_deep_for_tomllib_is_refused_naming_the_line(root: TaskRoot) -> None:
    # tomllib raised RecursionError; the brackets in the string and the comment are no nesting
    body = f'{_HEAD}x = "[[[[" # {"[" * 100}\n{_nested(5000)}{_DATASET}{_SCORER}'
    assert _refusal(root, body) == f"tasks/t.toml:4: arrays and tables nested more than {MAX_NESTING} levels deep"


def test_a_run_of_a_spec_nested_too_deep_is_refused_without_a_traceback(cli: Cli, root: TaskRoot) -> None:
    err = _refused_run(cli, _write(root, f"{_HEAD}{_nested(300)}{_DATASET}{_SCORER}"))
    assert err.startswith("error: tasks/t.toml:3: template_vars.a.0.0.0.0...: arrays and tables nested")


def test_tasks_leaves_out_a_spec_too_deep_for_tomllib_and_lists_the_others(cli: Cli, root: TaskRoot) -> None:
    _write(root, f"{_HEAD}{_DATASET}{_SCORER}", name="fine")
    _write(root, f"{_HEAD}{_nested(5000)}{_DATASET}{_SCORER}", name="deep")
    result = cli("tasks")
    assert "Traceback" not in result.err
    deep = root.root / "tasks" / "deep.toml"
    assert f"left out: {deep}:3: arrays and tables nested more than {MAX_NESTING} levels deep\n" in result.err
    assert "fine" in result.out


def test_the_nesting_scan_reads_past_strings_and_comments() -> None:
    text = 'a = \'[[[\'\nb = """\n[[[\n"""\n# {{{\nc = [[\n  [1]]]\n'
    assert nesting_line(text, 2) == 7
    assert nesting_line(text, 3) is None


# --- finding 16: encoding ----------------------------------------------------------------------------------


def test_a_spec_starting_with_a_byte_order_mark_is_refused_saying_so(root: TaskRoot) -> None:
    path = root.root / "tasks" / "t.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xef\xbb\xbf" + f"{_HEAD}{_DATASET}{_SCORER}".encode())
    with pytest.raises(ConfigError) as caught:
        load_task_file(Path("tasks/t.toml"), root.root)
    assert str(caught.value) == (
        "tasks/t.toml:1: starts with a UTF-8 byte-order mark, which TOML does not allow; save it without BOM"
    )


def test_a_spec_that_is_not_utf8_is_refused_naming_the_line(root: TaskRoot) -> None:
    path = root.root / "tasks" / "t.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"{_HEAD}".encode() + b'description = "caf\xe9"\n' + f"{_DATASET}{_SCORER}".encode())
    with pytest.raises(ConfigError) as caught:
        load_task_file(Path("tasks/t.toml"), root.root)
    assert str(caught.value) == "tasks/t.toml:3: not UTF-8 text (byte 0xe9); save the file as UTF-8"


def test_windows_line_ends_are_still_read(root: TaskRoot) -> None:
    task = _load(root, f"{_HEAD}{_DATASET}{_SCORER}".replace("\n", "\r\n"))
    assert task.spec.name == "t" and task.lines[("scorers", 0)] == 5


# --- finding 16: the few-shot file is called so, at the spec's line ----------------------------------------


def _with_few_shot(root: TaskRoot, source: str) -> str:
    return _write(root, f"{_HEAD}{_DATASET}{_SCORER}[few_shot]\nk = 1\n{source}\n")


def test_a_missing_few_shot_file_is_named_as_such_at_the_spec_line(cli: Cli, root: TaskRoot) -> None:
    err = _refused_run(cli, _with_few_shot(root, 'path = "data/nope.jsonl"'))
    spec, missing = root.root / "tasks" / "t.toml", root.root / "data" / "nope.jsonl"
    assert err == f"error: {spec}:9: few_shot.path: {missing}: cannot read the few-shot file: no such file\n"


def test_a_few_shot_file_that_is_a_pipe_is_refused_without_blocking(cli: Cli, root: TaskRoot) -> None:
    os.mkfifo(root.root / "data" / "pipe.jsonl")
    err = _refused_run(cli, _with_few_shot(root, 'path = "data/pipe.jsonl"'))
    assert err.endswith(
        "pipe.jsonl: cannot read the few-shot file: it is not a regular file (a pipe or a device); save it to a "
        "file first\n"
    )
    assert f"{root.root / 'tasks' / 't.toml'}:9: few_shot.path: " in err


def test_a_derived_few_shot_file_that_is_missing_names_path_from_dataset(cli: Cli, root: TaskRoot) -> None:
    err = _refused_run(cli, _with_few_shot(root, "path_from_dataset = 'adder => shots'"))
    derived = root.root / "data" / "shots.jsonl"
    assert err.endswith(f"few_shot.path_from_dataset: {derived}: cannot read the few-shot file: no such file\n")


def test_a_few_shot_file_that_is_not_utf8_text_is_called_the_few_shot_file(cli: Cli, root: TaskRoot) -> None:
    (root.root / "data" / "shots.jsonl").write_bytes('{"id": "a"}\n'.encode("utf-16"))
    err = _refused_run(cli, _with_few_shot(root, 'path = "data/shots.jsonl"'))
    shots = root.root / "data" / "shots.jsonl"
    assert err == (
        f"error: {root.root / 'tasks' / 't.toml'}:9: few_shot.path: {shots}: cannot read the few-shot file: it is "
        "UTF-16 encoded; save it as UTF-8\n"
    )


def test_a_path_from_dataset_that_does_not_match_names_its_line(cli: Cli, root: TaskRoot) -> None:
    err = _refused_run(cli, _with_few_shot(root, "path_from_dataset = 'nomatch => shots'"))
    dataset = root.root / "data" / "adder.jsonl"
    assert err == (
        f"error: {root.root / 'tasks' / 't.toml'}:9: few_shot.path_from_dataset: 'nomatch' does not match {dataset}\n"
    )


@pytest.mark.parametrize("name", ["../.env", "/etc/hostname"])
def test_a_template_outside_templates_is_refused_at_the_spec_line(cli: Cli, root: TaskRoot, name: str) -> None:
    # walk3-s27: it was refused by the template loader, naming neither the spec nor the line
    err = _refused_run(cli, _write(root, f'name = "t"\ntemplate = "{name}"\n' + _DATASET + _SCORER))
    assert err == (
        "error: tasks/t.toml:2: template: a template is a file in the task's templates/ (no absolute path, no "
        "'..'); it would otherwise read any file into the prompts\n"
    )
