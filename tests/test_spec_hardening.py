"""Task specs and datasets that used to end in a traceback or a silent wrong result (audit D1, D2, D4, D6, and an
axis named ``overall``), each now a one-line error naming the file and the field, or a problem on its line.

- D1: a regex field of a task spec is compiled when the spec loads, and a pattern without the group the reader
  takes (or a ``path_from_dataset`` replacement naming a group the pattern lacks) is refused then; an optional
  group that takes no part in a match is no match.
- D2: a dataset line nested deeper than orjson's 1024 levels, or holding a number too large for a double, is an
  ``invalid JSON`` problem on its line (Python's parser raised RecursionError/ValueError on it).
- D4: inf and nan in a task spec are refused, and ``[generation]`` takes only the CLI's ranges.
- D6: an invalid UTF-8 byte in a CSV is a problem on its own line, and every other row is kept.
- ``overall`` is the report's row for the whole run: no axis may take that name.

The commands run from the task root with relative paths, so the expected lines are short and exact.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, arithmetic_records, write_jsonl

from eval_harness.datasets import iter_samples
from eval_harness.types import DatasetSpec

Cli = Callable[..., CliResult]

_TEMPLATE = 'name = "t"\ntemplate = "plain.jinja2"\n'
_SCORER = '[[scorers]]\nname = "exact_match"\n'


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """A task root holding a template and ``data/adder.jsonl`` (40 samples on axes alpha and beta); the
    current directory."""
    task_root = TaskRoot(tmp_path / "project")
    task_root.template("plain.jinja2", "{{ input }}\n")
    task_root.data("adder.jsonl", arithmetic_records(40))
    monkeypatch.chdir(task_root.root)
    return task_root


def _spec(root: TaskRoot, name: str, dataset: str = "", extra: str = "", scorer: str = "") -> str:
    """Write tasks/NAME.toml reading data/adder.jsonl with ``dataset`` lines added to its [dataset] table;
    its path relative to the task root."""
    body = f'{_TEMPLATE}{extra}[dataset]\npath = "data/adder.jsonl"\n{dataset}\n{_SCORER}{scorer}'
    root.task(name, body)
    return f"tasks/{name}.toml"


def _no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.out + result.err


def _validate(cli: Cli, path: str, task: str | None = None) -> CliResult:
    result = cli("validate-dataset", "--path", path, *(["--task", task] if task else []))
    _no_traceback(result)
    return result


def _run(cli: Cli, task: str, *args: str) -> CliResult:
    result = cli("run", "--task", task, "--model", "mock/m", "-q", "--output-dir", "results", *args)
    _no_traceback(result)
    return result


def _refused_run(cli: Cli, task: str, *args: str) -> str:
    """``run`` must refuse before it starts: exit 2, nothing written; its stderr."""
    result = _run(cli, task, *args)
    assert result.code == 2, result.err
    assert not Path("results").exists()
    return result.err


def _manifest(run_dir: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    return data


# --- D1: regex fields are checked when the spec loads -----------------------------------------------------

_UNTERMINATED = "invalid regular expression: missing ), unterminated subpattern at position 0"

# TOML literal strings ('...') keep backslashes as they are.
_BAD_PATTERNS = [
    ("target_pattern = '('", f"dataset.target_pattern: {_UNTERMINATED}"),
    (
        "choices_pattern = '[a-'",
        "dataset.choices_pattern: invalid regular expression: unterminated character set at position 0",
    ),
    ("axis_pattern = 'adder'", "dataset.axis_pattern: has no group; group 1 of its match on the file name is the axis"),
    ("axis_pattern = '(?:ad'", f"dataset.axis_pattern: {_UNTERMINATED}"),
    (r"choices_pattern = '^[A-D]\. .*$'", "dataset.choices_pattern: has no group; group 1 of each match is an option"),
    ("axis = 'overall'", "dataset.axis: 'overall' is reserved for the whole run"),
    ("axis = ' '", "dataset.axis: is empty"),
    # re.compile raises OverflowError and RecursionError for these, not re.error
    (
        "target_pattern = 'a{99999999999}'",
        "dataset.target_pattern: invalid regular expression: the repetition number is too large",
    ),
    (
        f"target_pattern = '{'(' * 2000}{')' * 2000}'",
        "dataset.target_pattern: invalid regular expression: groups nested too deeply",
    ),
]


@pytest.mark.parametrize(("line", "message"), _BAD_PATTERNS, ids=[line[:40] for line, _ in _BAD_PATTERNS])
def test_a_bad_dataset_pattern_is_refused_when_the_spec_loads_naming_file_and_field(
    cli: Cli, root: TaskRoot, line: str, message: str
) -> None:
    task = _spec(root, "bad", dataset=line)
    result = _validate(cli, "data/adder.jsonl", task)
    assert result.code == 2
    assert result.err == f"error: {task}:5: {message}\n"  # the line of the bad field


def test_a_field_of_the_wrong_type_is_named_by_its_place_not_by_the_union_member_tried(
    cli: Cli, root: TaskRoot
) -> None:
    task = _spec(root, "typed", dataset="fields = { input = 3 }")
    result = _validate(cli, "data/adder.jsonl", task)
    assert result.code == 2
    # pydantic's location was dataset.fields.input.str: 'str' is the type it tried, not a key of the file
    assert result.err == f"error: {task}:5: dataset.fields.input: Input should be a valid string\n"


def test_a_fields_key_named_like_a_type_is_kept_in_the_place_of_its_error(cli: Cli, root: TaskRoot) -> None:
    task = _spec(root, "typed", dataset="fields = { str = 3 }")
    result = _validate(cli, "data/adder.jsonl", task)
    assert result.code == 2
    # the first 'str' is the file's key, the second the union member pydantic tried, and only that one goes
    assert result.err == f"error: {task}:5: dataset.fields.str: Input should be a valid string\n"


@pytest.mark.parametrize("axis", ["int", "float", "level[2]"])
def test_a_bad_skill_of_an_axis_named_like_a_type_names_the_axis(cli: Cli, root: TaskRoot, axis: str) -> None:
    err = _refused_run(cli, _spec(root, "ok"), "--model-arg", f"skill.{axis}=high")
    assert err.startswith(f"error: --model-arg skill_by_axis.{axis}: Input should be a valid number"), err


@pytest.mark.parametrize(
    ("criteria", "problem"),
    [
        ("5", "criteria: Input should be a valid dictionary or a valid list (got 5)"),
        (
            "{ accuracy = 3 }",
            "criteria.accuracy: Input should be a valid string (got 3), or criteria: Input should be a valid list",
        ),
    ],
)
def test_the_alternatives_of_a_scorer_argument_are_named_by_place_not_by_the_union_member(
    cli: Cli, root: TaskRoot, criteria: str, problem: str
) -> None:
    root.template("rubric.jinja2", "Grade {{ output }} against {{ target }}.\n")
    judge = f'[[scorers]]\nname = "rubric_judge"\nargs = {{ rubric = "rubric.jinja2", criteria = {criteria} }}\n'
    err = _refused_run(cli, _spec(root, "judged", scorer=judge), "--judge-model", "mock/j")
    assert f"scorer 'rubric_judge': {problem}\n" in err


_BAD_REWRITES = [
    ("(adder => x", _UNTERMINATED),
    (r"adder => \9", "invalid replacement: invalid group reference 9 at position 1"),
    (r"(a)dder => \g<name>", "invalid replacement: unknown group name 'name'"),
    ("adder", "expected 'PATTERN => REPLACEMENT'"),
    (" => shots", "the pattern before '=>' is empty"),
]


@pytest.mark.parametrize(("rule", "message"), _BAD_REWRITES)
def test_a_bad_path_from_dataset_is_refused_when_the_spec_loads(
    cli: Cli, root: TaskRoot, rule: str, message: str
) -> None:
    task = _spec(root, "shots", scorer=f"[few_shot]\nk = 1\npath_from_dataset = '{rule}'\n")
    result = _validate(cli, "data/adder.jsonl", task)
    assert result.code == 2
    assert result.err == f"error: {task}:10: few_shot.path_from_dataset: {message}\n"


def test_run_refuses_a_bad_pattern_before_creating_anything(cli: Cli, root: TaskRoot) -> None:
    task = _spec(root, "bad", dataset="target_pattern = '('")
    err = _refused_run(cli, task)
    assert err == f"error: {task}:5: dataset.target_pattern: {_UNTERMINATED}\n"


def test_a_target_group_that_takes_no_part_is_a_problem_on_each_line(cli: Cli, root: TaskRoot) -> None:
    pattern = r"(zzz)?\d+"
    task = _spec(root, "optional", dataset=f"target_pattern = '{pattern}'")
    root.data(
        "mixed.jsonl", [{"id": "a", "input": "1+1?", "target": "zzz2"}, {"id": "b", "input": "2+2?", "target": "4"}]
    )
    result = _validate(cli, "data/mixed.jsonl", task)
    assert result.code == 1
    assert "2 lines, 1 valid" in result.out
    assert f"data/mixed.jsonl:2: target: does not match target_pattern '{pattern}': its group 1 took no part\n" in (
        result.out
    )


def test_an_axis_group_that_takes_no_part_leaves_each_line_its_own_axis(cli: Cli, root: TaskRoot) -> None:
    # before: validate-dataset said "axes: None 40" and the run failed on a pydantic error for every sample
    task = _spec(root, "optional_axis", dataset="axis_pattern = '(zzz)?adder'")
    assert "axes: alpha 20, beta 20" in _validate(cli, "data/adder.jsonl", task).out
    result = _run(cli, task, "--run-id", "r")
    assert result.code == 0, result.err
    assert _manifest(Path("results/r"))["status"] == "complete"


def test_a_choices_match_whose_group_takes_no_part_is_not_an_option(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "obqa.jsonl", [{"id": "q", "input": "Pick", "target": "B", "choices": "A. x\n\nB. y"}]
    )
    # the blank line matches with group 1 unset; before, .strip() on None raised AttributeError
    spec = DatasetSpec(choices_pattern=r"^(?:[A-Z]\. (.*))?$")
    (sample,) = iter_samples(path, spec)
    assert sample.choices == ["x", "y"]


# --- D2: JSON the standard parser cannot take is an invalid-JSON problem on its line ----------------------

_DEEP_PREFIX = '{"id":"a","input":"x","target":"1","metadata":'


def _deep_line() -> str:
    return _DEEP_PREFIX + "[" * 1100 + "]" * 1100 + "}"


def test_a_line_nested_deeper_than_1024_levels_is_a_problem_on_its_line(cli: Cli, root: TaskRoot) -> None:
    root.data("deep.jsonl", [_deep_line(), {"id": "b", "input": "y", "target": "2"}])
    result = _validate(cli, "data/deep.jsonl")
    assert result.code == 1
    assert "2 lines, 1 valid" in result.out
    # orjson stops at the 1025th '[' (the object is level 1): its column is the prefix's length + 1025
    column = len(_DEEP_PREFIX) + 1025
    assert f"data/deep.jsonl:1: line: invalid JSON: nested deeper than 1024 levels at column {column}\n" in result.out


def test_a_5000_digit_integer_is_a_problem_on_its_line(cli: Cli, root: TaskRoot) -> None:
    root.data("big.jsonl", ['{"id":"a","input":"x","target":' + "9" * 5000 + "}"])
    result = _validate(cli, "data/big.jsonl")
    assert result.code == 1
    # column 32: the number starts after the 31 characters of '{"id":"a","input":"x","target":'
    expected = "data/big.jsonl:1: line: invalid JSON: number too large (infinite as a 64-bit float) at column 32\n"
    assert expected in result.out


def test_skip_invalid_leaves_out_a_too_deep_line_and_runs_the_rest(cli: Cli, root: TaskRoot) -> None:
    root.data("deep.jsonl", [_deep_line(), *arithmetic_records(3)])
    task = _spec(root, "deep")
    result = _run(cli, task, "--dataset", "data/deep.jsonl", "--skip-invalid", "--run-id", "r")
    assert result.code == 0, result.err
    dataset = _manifest(Path("results/r"))["dataset"]
    assert isinstance(dataset, dict)
    assert (dataset["sample_count"], dataset["invalid_lines"]) == (3, 1)


def test_a_too_deep_line_in_a_few_shot_file_refuses_the_run_naming_its_line(cli: Cli, root: TaskRoot) -> None:
    root.data("shots.jsonl", [*arithmetic_records(2), _deep_line()])
    task = _spec(root, "shots", scorer='[few_shot]\nk = 1\npath = "data/shots.jsonl"\n')
    err = _refused_run(cli, task)
    column = len(_DEEP_PREFIX) + 1025
    assert f"data/shots.jsonl:3: line: invalid JSON: nested deeper than 1024 levels at column {column}\n" in err


# --- D4: inf and nan in a task spec, and generation options outside the CLI's ranges ----------------------

_NON_FINITE = [
    ("", "weight = inf\n", 8, "scorers.0.weight: Input should be a finite number"),
    ("", "weight = nan\n", 8, "scorers.0.weight: Input should be a finite number"),
    ("", "weight = 1e300\n", 8, "scorers.0.weight: Input should be less than or equal to 1000000"),
    ("pass_threshold = nan\n", "", 3, "pass_threshold: Input should be a finite number"),
    ("", "[generation]\ntemperature = nan\n", 9, "generation.temperature: Input should be a finite number"),
    ("", "[generation]\ntemperature = inf\n", 9, "generation.temperature: Input should be a finite number"),
    ("", "[generation]\ntemperature = 2.5\n", 9, "generation.temperature: Input should be less than or equal to 2"),
    ("", "[generation]\ntemperature = -0.1\n", 9, "generation.temperature: Input should be greater than or equal to 0"),
    ("", "[generation]\ntop_p = 1.5\n", 9, "generation.top_p: Input should be less than or equal to 1"),
    ("", "[generation]\ntop_p = nan\n", 9, "generation.top_p: Input should be a finite number"),
    ("", "[generation]\nmax_tokens = -5\n", 9, "generation.max_tokens: Input should be greater than or equal to 1"),
    ("", "[generation]\nmax_tokens = 0\n", 9, "generation.max_tokens: Input should be greater than or equal to 1"),
    (
        "",
        "[few_shot]\nk = 1\nholdout_fraction = nan\n",
        10,
        "few_shot.holdout_fraction: Input should be a finite number",
    ),
]


@pytest.mark.parametrize(("top", "tail", "line", "message"), _NON_FINITE)
def test_a_non_finite_or_out_of_range_number_in_a_task_spec_is_refused(
    cli: Cli, root: TaskRoot, top: str, tail: str, line: int, message: str
) -> None:
    task = _spec(root, "numbers", extra=top, scorer=tail)
    err = _refused_run(cli, task)
    assert err == f"error: {task}:{line}: {message}\n"


def test_the_cli_ranges_are_still_accepted_in_a_task_spec(cli: Cli, root: TaskRoot) -> None:
    tail = "weight = 1e6\n[generation]\ntemperature = 2.0\ntop_p = 0.0\nmax_tokens = 1\n"
    task = _spec(root, "edges", scorer=tail)
    result = _run(cli, task, "--limit", "2", "--run-id", "r")
    assert result.code == 0, result.err
    task_info = _manifest(Path("results/r"))["task"]
    assert isinstance(task_info, dict)
    assert task_info["generation"] == {"temperature": 2.0, "top_p": 0.0, "max_tokens": 1, "stop": None, "seed": None}


# --- D6: an invalid UTF-8 byte in a CSV is a problem on its own line --------------------------------------


def _mmlu_csv(tmp_path: Path, body: bytes) -> None:
    (tmp_path / "test").mkdir(exist_ok=True)
    (tmp_path / "test" / "x_test.csv").write_bytes(body)
    (tmp_path / "dev").mkdir(exist_ok=True)
    dev = "".join(f"d{i},a,b,c,d,{letter}\n" for i, letter in enumerate("ABCDA"))
    (tmp_path / "dev" / "x_dev.csv").write_text(dev, encoding="utf-8")


def _rows(prefix: str, count: int) -> bytes:
    return "".join(f"{prefix}{i},a,b,c,d,A\n" for i in range(count)).encode()


@pytest.fixture
def bad_byte_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """test/x_test.csv (header-less MMLU rows): 1,000 rows, one holding the byte 0xE9 on line 1001, 100 more."""
    _mmlu_csv(tmp_path, _rows("q", 1000) + b"q\xe9,a,b,c,d,B\n" + _rows("r", 100))
    monkeypatch.chdir(tmp_path)
    return "test/x_test.csv"


def test_an_invalid_utf8_byte_in_a_csv_is_a_problem_on_its_own_line(cli: Cli, bad_byte_csv: str) -> None:
    # before: "553 lines, 553 valid ... x_test.csv:554: line: invalid UTF-8 ...; reading stopped"
    result = _validate(cli, bad_byte_csv, "mmlu")
    assert result.code == 1
    assert f"{bad_byte_csv}: 1,101 lines, 1,100 valid, 0 blank, 0 duplicate ids, 1 problem\n" in result.out
    assert f"{bad_byte_csv}:1001: line: invalid UTF-8 (byte 0xE9)\n" in result.out


def test_skip_invalid_keeps_every_valid_csv_row_around_an_invalid_byte(cli: Cli, bad_byte_csv: str) -> None:
    result = _run(cli, "mmlu", "--dataset", bad_byte_csv, "--skip-invalid", "--run-id", "r")
    assert result.code == 0, result.err
    dataset = _manifest(Path("results/r"))["dataset"]
    assert isinstance(dataset, dict)
    assert (dataset["sample_count"], dataset["invalid_lines"]) == (1100, 1)


def test_an_invalid_byte_inside_a_multi_line_csv_record_names_its_physical_line(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # records: line 1; lines 2-4 (a quoted question over three lines, the byte on line 4); line 5
    _mmlu_csv(tmp_path, b'q1,a,b,c,d,A\n"first\r\nsecond\nthird \xff",a,b,c,d,B\nq3,a,b,c,d,C\n')
    monkeypatch.chdir(tmp_path)
    result = _validate(cli, "test/x_test.csv", "mmlu")
    assert result.code == 1
    assert "test/x_test.csv:4: line: invalid UTF-8 (byte 0xFF)\n" in result.out
    assert "3 lines, 2 valid" in result.out


def test_an_invalid_byte_in_a_csv_header_stops_the_reading_on_line_1(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data.csv").write_bytes(b"question,answ\xe9r\nWhat?,yes\n")
    monkeypatch.chdir(tmp_path)
    TaskRoot(tmp_path).template("plain.jinja2", "{{ input }}\n")
    TaskRoot(tmp_path).task(
        "headed",
        f'{_TEMPLATE}[dataset]\nformat = "csv"\nfields = {{ input = "question", target = "answer" }}\n{_SCORER}',
    )
    result = _validate(cli, "data.csv", "tasks/headed.toml")
    assert result.code == 1
    assert "data.csv:1: line: invalid UTF-8 (byte 0xE9) in the header; reading stopped\n" in result.out


# --- the reserved axis name 'overall' -----------------------------------------------------------------------


def test_a_line_whose_axis_is_overall_is_a_problem_naming_the_reserved_name(cli: Cli, root: TaskRoot) -> None:
    root.data("axes.jsonl", [{"id": "a", "input": "x", "target": "1", "axis": "overall"}, *arithmetic_records(2)])
    result = _validate(cli, "data/axes.jsonl")
    assert result.code == 1
    assert "3 lines, 2 valid" in result.out
    assert "data/axes.jsonl:1: axis: 'overall' is reserved for the whole run\n" in result.out


def test_run_refuses_a_dataset_with_an_axis_named_overall(cli: Cli, root: TaskRoot) -> None:
    root.data("axes.jsonl", [*arithmetic_records(2), {"id": "z", "input": "x", "target": "1", "axis": "overall"}])
    err = _refused_run(cli, _spec(root, "axes"), "--dataset", "data/axes.jsonl")
    assert "data/axes.jsonl:3: axis: 'overall' is reserved for the whole run\n" in err


def test_a_mapped_axis_column_named_overall_is_reported_under_the_column_name(cli: Cli, root: TaskRoot) -> None:
    root.data("mapped.jsonl", [{"id": "a", "input": "x", "target": "1", "subject": "overall"}])
    task = _spec(root, "mapped", dataset='fields = { axis = "subject" }')
    result = _validate(cli, "data/mapped.jsonl", task)
    assert result.code == 1
    assert "data/mapped.jsonl:1: subject: 'overall' is reserved for the whole run\n" in result.out


@pytest.mark.parametrize(
    ("line", "source"),
    [
        ("axis = '{stem}'", "from the task's axis '{stem}'"),
        (r"axis_pattern = '^(\w+)\.jsonl$'", r"from axis_pattern '^(\w+)\.jsonl$' on the file name"),
    ],
)
def test_an_axis_taken_from_a_file_named_overall_is_a_problem_saying_where_it_came_from(
    cli: Cli, root: TaskRoot, line: str, source: str
) -> None:
    root.data("overall.jsonl", arithmetic_records(1))
    task = _spec(root, "by_file", dataset=line)
    result = _validate(cli, "data/overall.jsonl", task)
    assert result.code == 1
    assert f"data/overall.jsonl:1: axis: 'overall' is reserved for the whole run ({source})\n" in result.out


@pytest.mark.parametrize("option", ["cost_per_1k_tokens=inf", "latency_ms=nan", "cost_per_1k_tokens=1e308"])
def test_a_provider_option_that_is_not_a_finite_number_in_range_is_refused(
    cli: Cli, root: TaskRoot, option: str
) -> None:
    # recorded as null in the manifest, inf made every cost unknown and the run impossible to resume
    err = _refused_run(cli, _spec(root, "ok"), "--model-arg", option)
    assert f"--model-arg {option.partition('=')[0]}: Input should be" in err


def test_a_judge_with_a_temperature_out_of_range_is_refused_before_the_run(cli: Cli, root: TaskRoot) -> None:
    root.template("rubric.jinja2", "Grade {{ output }} against {{ target }}.\n")
    judge = (
        '[[scorers]]\nname = "rubric_judge"\n'
        'args = { rubric = "rubric.jinja2", criteria = { accuracy = "it is right" }, temperature = 5.0 }\n'
    )
    err = _refused_run(cli, _spec(root, "judged", scorer=judge), "--judge-model", "mock/j")
    assert "scorer 'rubric_judge': temperature: Input should be less than or equal to 2" in err


@pytest.mark.parametrize(
    ("few_shot", "given"),
    [('k = 2\npath = "data/adder.jsonl"\nholdout_fraction = 0.2\n', "path, holdout_fraction"), ("k = 2\n", "none")],
)
def test_few_shot_takes_exactly_one_source(cli: Cli, root: TaskRoot, few_shot: str, given: str) -> None:
    err = _refused_run(cli, _spec(root, "shots", extra=f"[few_shot]\n{few_shot}"))
    assert f"few_shot: give one of path, path_from_dataset or holdout_fraction, got {given}" in err


def test_template_vars_may_not_take_a_name_each_sample_sets(cli: Cli, root: TaskRoot) -> None:
    err = _refused_run(cli, _spec(root, "vars", extra='template_vars = { input = "x", cot = true }\n'))
    assert "template_vars: input: the template gets these from each sample; use another name" in err
    # templates-s30 7: Jinja's own "self" showed the value on the plain path and the template on Jinja's
    err = _refused_run(cli, _spec(root, "selfish", extra='template_vars = { self = "x" }\n'))
    assert "template_vars: self: Jinja's name for the template itself; use another name" in err
