"""``validate-dataset --task`` finds what ``run`` would refuse or warn about for a dataset, without a model: the
task's few-shot file checked line by line, its examples that are also samples of the dataset (left out by run,
or the run refused when all are), and every prompt rendered with the task's template and examples.

Every check goes through the real CLI from a task root in tmp_path: the adder task over data/adder.jsonl, 40
samples q0000..q0039 "What is i + 1?" -> "i + 1" on the axes alpha and beta (conftest.arithmetic_records).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot

from eval_harness.validate import preflight

Cli = Callable[..., CliResult]

_SHOTS = "{% for e in examples %}Example: {{ e.input }} => {{ e.target }}\n{% endfor %}Q: {{ input }}\n"
_CLEAN = [
    {"id": "s1", "input": "What is 100 + 1?", "target": "101"},
    {"id": "s2", "input": "What is 200 + 1?", "target": "201"},
]
_LEAK = {"id": "dev-7", "input": "What is 7 + 1?", "target": "8"}  # the content of sample q0007


@pytest.fixture
def root(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root, made the current directory."""
    monkeypatch.chdir(task_root.root)
    return task_root


def _task(root: TaskRoot, template: str = _SHOTS, few_shot: str = "") -> None:
    """The adder task rendering with ``template`` and drawing examples as ``few_shot`` says ([few_shot] body)."""
    root.template("t.jinja2", template)
    few_shot_table = f"[few_shot]\n{few_shot}" if few_shot else ""
    root.task(
        "adder",
        f'name = "adder"\ntemplate = "t.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n{few_shot_table}'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n',
    )


def _with_pool(root: TaskRoot, pool: Sequence[dict[str, Any] | str], k: int = 2, template: str = _SHOTS) -> Path:
    """data/shots.jsonl holding ``pool``, drawn k at a time by the adder task; its resolved path."""
    _task(root, template, f'k = {k}\npath = "data/shots.jsonl"\n')
    return root.data("shots.jsonl", pool).resolve()


def _validate(cli: Cli, path: str = "data/adder.jsonl") -> CliResult:
    result = cli("validate-dataset", "--path", path, "--task", "adder")
    assert "Traceback" not in result.out + result.err
    return result


def _dataset_lines(path: Path, lines: int = 40, axes: str = "alpha 20, beta 20") -> list[str]:
    """What validate-dataset prints first for a dataset without a problem (as before --task did more)."""
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    return [
        f"{path.relative_to(Path.cwd())}: {lines} lines, {lines} valid, 0 blank, 0 duplicate ids, 0 problems",
        f"axes: {axes}",
        f"sha256: {sha256}",
    ]


def _after_dataset(result: CliResult) -> list[str]:
    """The lines after the dataset's summary, axes and sha256 (a dataset without blank lines or problems)."""
    return result.out.splitlines()[3:]


# --- the few-shot file --------------------------------------------------------------------------------------


def test_a_clean_few_shot_file_gets_a_summary_line_after_the_dataset(cli: Cli, root: TaskRoot) -> None:
    _with_pool(root, _CLEAN)
    result = _validate(cli)
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines() == [
        *_dataset_lines(root.root / "data" / "adder.jsonl"),
        "few-shot: data/shots.jsonl: 2 examples, 2 valid, 0 problems, 0 also samples of the dataset",
        "template: templates/t.jinja2 with 2 few-shot examples: 40 samples, 40 rendered, 0 problems",
    ]


def test_problems_of_the_few_shot_file_are_listed_as_file_line_field_message_and_counted(
    cli: Cli, root: TaskRoot
) -> None:
    _with_pool(root, [*_CLEAN, {"id": "s3", "input": "", "target": "1"}, '{"id": "s4", "input": "x", "target": }'])
    result = _validate(cli)
    assert result.code == 1
    assert _after_dataset(result) == [
        "few-shot: data/shots.jsonl: 4 examples, 2 valid, 2 problems",
        "data/shots.jsonl:3: input: is empty",
        "data/shots.jsonl:4: line: invalid JSON: Expecting value at column 38",
        "template: not rendered: the few-shot file has problems (run takes no example from it)",
    ]


def test_a_few_shot_file_that_cannot_be_read_exits_2_naming_it(cli: Cli, root: TaskRoot) -> None:
    _with_pool(root, _CLEAN)
    (root.root / "data" / "shots.jsonl").unlink()
    result = _validate(cli)
    shots, spec = root.root / "data" / "shots.jsonl", root.root / "tasks" / "adder.toml"
    assert (result.code, result.out, result.err) == (
        2,
        "",
        f"error: {spec}:7: few_shot.path: {shots}: cannot read the few-shot file: no such file\n",
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"PK\x03\x04junk", "it is a zip archive, not JSONL"), (b"\x1f\x8b\x08\x00junk", "the gzip data is corrupt")],
)
def test_a_few_shot_file_that_opens_but_cannot_be_read_is_called_the_few_shot_file(
    cli: Cli, root: TaskRoot, content: bytes, why: str
) -> None:
    # before: "few-shot file of task 'adder': data/shots.jsonl: cannot read the dataset: ..."
    _with_pool(root, _CLEAN)
    (root.root / "data" / "shots.jsonl").write_bytes(content)
    result = _validate(cli)
    assert result.code == 2 and "cannot read the dataset" not in result.err, result.err
    assert f"shots.jsonl: cannot read the few-shot file of task 'adder': {why}" in result.err


def test_the_dataset_problems_come_before_an_unreadable_few_shot_file_as_in_run(cli: Cli, root: TaskRoot) -> None:
    # run tells the dataset's problems first: the few-shot file is named as not checked, the exit is 1
    _with_pool(root, _CLEAN)
    (root.root / "data" / "shots.jsonl").unlink()
    root.data("broken.jsonl", [{"id": "a", "input": "What?", "target": ""}])
    result = _validate(cli, "data/broken.jsonl")
    assert result.code == 1
    shots, spec = root.root / "data" / "shots.jsonl", root.root / "tasks" / "adder.toml"
    assert result.out.splitlines()[3:] == [
        "data/broken.jsonl:1: target: is empty",
        f"few-shot: not checked: {spec}:7: few_shot.path: {shots}: cannot read the few-shot file: no such file",
        "template: not rendered: the few-shot file cannot be read",
    ]


# --- few-shot examples that are also samples ----------------------------------------------------------------


def test_examples_that_are_also_samples_are_counted_and_warned_about_as_run_will_leave_them_out(
    cli: Cli, root: TaskRoot
) -> None:
    pool = _with_pool(root, [*_CLEAN, _LEAK], k=2)
    result = _validate(cli)
    assert result.code == 0
    assert _after_dataset(result) == [
        "few-shot: data/shots.jsonl: 3 examples, 3 valid, 0 problems, 1 also a sample of the dataset",
        f"warning: few-shot: left out 1 example of {pool} that is also a sample of the dataset (same input and "
        "target): dev-7 (= sample q0007)",
        "template: templates/t.jinja2 with 2 few-shot examples: 40 samples, 40 rendered, 0 problems",
    ]


def test_the_warning_is_the_note_run_prints_on_stderr(cli: Cli, root: TaskRoot) -> None:
    _with_pool(root, [*_CLEAN, _LEAK], k=3)
    warnings = [line for line in _validate(cli).out.splitlines() if line.startswith("warning: ")]
    run = cli("run", "--task", "adder", "--model", "mock/m", "--run-id", "r", "--output-dir", "results", "-q")
    assert run.code == 0, run.err
    assert warnings == [f"warning: {line}" for line in run.err.splitlines()]
    assert len(warnings) == 1


def test_an_example_sharing_only_its_id_with_a_sample_is_not_counted(cli: Cli, root: TaskRoot) -> None:
    # the rule of run (PoolOverlap): same input, target and choices; files numbered each on its own share ids
    _with_pool(root, [*_CLEAN, {"id": "q0007", "input": "What is 70 + 5?", "target": "75"}])
    result = _validate(cli)
    assert result.code == 0
    assert _after_dataset(result)[0].endswith(", 0 also samples of the dataset")


def test_a_few_shot_file_whose_every_example_is_a_sample_is_a_problem_with_runs_refusal(
    cli: Cli, root: TaskRoot
) -> None:
    pool = _with_pool(root, [_LEAK, {"id": "x", "input": "What is 8 + 1?", "target": "9"}], k=1)
    result = _validate(cli)
    task = (root.root / "tasks" / "adder.toml").resolve()
    assert result.code == 1
    assert _after_dataset(result) == [
        "few-shot: data/shots.jsonl: 2 examples, 2 valid, 0 problems, 2 also samples of the dataset",
        f"{task}: few-shot: every one of the 2 examples in {pool} is also a sample of the dataset under evaluation "
        "(same input and target); take the examples from another file, or use holdout_fraction",
        "template: not rendered: every few-shot example is a sample (run draws none)",
    ]


# --- every prompt rendered -------------------------------------------------------------------------------------


def test_a_sample_missing_a_field_the_template_uses_is_a_template_problem_on_its_line(cli: Cli, root: TaskRoot) -> None:
    template = "Q: {{ input }} (in {{ metadata.unit }})\n"
    _task(root, template)
    records: list[dict[str, Any]] = [
        {"id": f"u{i}", "input": f"What is {i} + 1?", "target": str(i + 1), "metadata": {"unit": "apples"}}
        for i in range(3)
    ]
    del records[1]["metadata"]
    path = root.data("units.jsonl", records)
    result = _validate(cli, "data/units.jsonl")
    assert result.code == 1
    assert _after_dataset(result) == [
        "template: templates/t.jinja2 with 0 few-shot examples: 3 samples, 2 rendered, 1 problem",
        f"data/units.jsonl:2: template: {(root.root / 'templates' / 't.jinja2').resolve()}:1: UndefinedError: "
        "'dict object' has no attribute 'unit' (if that is metadata: the sample's metadata is empty)",
    ]
    assert result.out.splitlines()[:3] == _dataset_lines(path, 3, "default 3")


def test_a_sample_whose_prompt_renders_empty_is_a_template_problem(cli: Cli, root: TaskRoot) -> None:
    _task(root, "{% if metadata.ask %}{{ input }}{% endif %}\n")
    root.data(
        "ask.jsonl",
        [
            {"id": "a", "input": "What is 1 + 1?", "target": "2", "metadata": {"ask": True}},
            {"id": "b", "input": "What is 2 + 1?", "target": "3", "metadata": {"ask": False}},
        ],
    )
    result = _validate(cli, "data/ask.jsonl")
    assert result.code == 1
    assert _after_dataset(result)[1:] == [
        f"data/ask.jsonl:2: template: {(root.root / 'templates' / 't.jinja2').resolve()}: renders an empty prompt "
        "for sample 'b'"
    ]


def test_template_problems_show_the_first_50_then_a_count(cli: Cli, root: TaskRoot) -> None:
    _task(root, "Q: {{ input }} {{ metadata.unit }}\n")  # no adder sample has metadata.unit
    result = _validate(cli)
    assert result.code == 1
    lines = _after_dataset(result)
    assert lines[0] == "template: templates/t.jinja2 with 0 few-shot examples: 40 samples, 0 rendered, 40 problems"
    # one problem on every sample: said once, then counted
    assert [line.split(": template: ")[0] for line in lines[1:]] == [
        "data/adder.jsonl:1",
        "... and the same on 39 more lines",
    ]

    _task(root, "Q: {{ input }} {{ metadata[target] }}\n")  # a problem naming each sample's own target
    records = [{"id": f"q{i}", "input": f"What is {i} + 1?", "target": str(i + 1)} for i in range(120)]
    root.data("many.jsonl", records)
    lines = _validate(cli, "data/many.jsonl").out.splitlines()[3:]
    assert len(lines) == 1 + 50 + 1
    assert lines[50].startswith("data/many.jsonl:50: template: ")
    assert lines[-1] == "... and 70 more problems"


def test_an_example_that_breaks_the_template_is_named_in_each_samples_problem_as_run_names_it(
    cli: Cli, root: TaskRoot
) -> None:
    why = "{% for e in examples %}{{ e.input }} because {{ e.metadata.reasoning }}\n{% endfor %}Q: {{ input }}\n"
    pool = _with_pool(root, [{**_CLEAN[0], "metadata": {"reasoning": "100 and one"}}, _CLEAN[1]], template=why)
    result = _validate(cli)
    template = (root.root / "templates" / "t.jinja2").resolve()
    assert result.code == 1
    lines = _after_dataset(result)
    assert lines[1] == "template: templates/t.jinja2 with 2 few-shot examples: 40 samples, 0 rendered, 40 problems"
    assert lines[2] == (
        f"data/adder.jsonl:1: template: {template}:1: UndefinedError: 'dict object' has no attribute 'reasoning' "
        f"(if that is metadata: the example's metadata is empty) (in few-shot example 's2', {pool}:2)"
    )


def test_samples_held_out_as_examples_are_not_rendered_as_samples(cli: Cli, root: TaskRoot) -> None:
    _task(root, few_shot="k = 2\nholdout_fraction = 0.25\n")
    result = _validate(cli)
    assert result.code == 0
    assert _after_dataset(result) == [
        "few-shot: 10 samples of the dataset held out as examples",
        "template: templates/t.jinja2 with 2 few-shot examples: 30 samples, 30 rendered, 0 problems",
    ]


def test_a_hold_out_that_leaves_no_sample_to_evaluate_is_a_problem(cli: Cli, root: TaskRoot) -> None:
    _task(root, few_shot="k = 1\nholdout_fraction = 0.999\n")
    result = _validate(cli)
    task = (root.root / "tasks" / "adder.toml").resolve()
    assert result.code == 1
    assert _after_dataset(result) == [
        "few-shot: 40 samples of the dataset held out as examples",
        f"{task}: few_shot.holdout_fraction leaves no sample to evaluate (it holds out 40 of the 40 in "
        "data/adder.jsonl)",
        "template: templates/t.jinja2 with 1 few-shot example: 0 samples, 0 rendered, 0 problems",
    ]


def test_a_hold_out_from_a_dataset_the_task_cannot_read_shows_the_lines_problems(cli: Cli, root: TaskRoot) -> None:
    # adopt-s32 1: a misspelt field mapping under holdout_fraction said only "holdout_fraction 0.25 of the
    # dataset's 0 samples holds out none ... raise it" (exit 2), never why no line was read
    _task(root, few_shot="k = 2\nholdout_fraction = 0.25\n")
    spec = root.root / "tasks" / "adder.toml"
    spec.write_text(spec.read_text().replace("[dataset]\n", '[dataset]\nfields = { input = "question" }\n'))
    result = _validate(cli)
    assert result.code == 1, result.err
    assert "data/adder.jsonl: 40 lines, 0 valid" in result.out
    assert "question: missing (mapped to input; the line has" in result.out
    assert "holds out none" not in result.out + result.err
    assert result.out.splitlines()[-1] == (
        "template: not rendered: no line of the dataset is valid, so none is held out as an example"
    )


def test_a_template_that_does_not_load_exits_2_before_the_dataset_is_read(cli: Cli, root: TaskRoot) -> None:
    _task(root, "Q: {{ input }\n")
    template = (root.root / "templates" / "t.jinja2").resolve()
    result = _validate(cli, "data/no_such_file.jsonl")  # not read: the template is refused first
    assert (result.code, result.out) == (2, "")
    assert result.err == f"error: {template}:1: unexpected '}}'\n"


def test_preflight_reports_the_overlap_count_for_a_library_caller(root: TaskRoot) -> None:
    _with_pool(root, [*_CLEAN, _LEAK, {"id": "d9", "input": "What is 9 + 1?", "target": "10"}], k=2)
    checked = preflight(Path("data/adder.jsonl"), "adder")
    assert checked.few_shot is not None and checked.render is not None
    assert (checked.ok, checked.few_shot.also_samples, checked.render.samples, checked.render.examples) == (
        True,
        2,
        40,
        2,
    )


def test_the_tasks_own_few_shot_file_is_checked_line_by_line_under_its_mapping(cli: Cli, root: TaskRoot) -> None:
    # run refuses a dataset that is the few-shot file; validating that file with --task checks its lines (exit 0)
    pool = _with_pool(root, _CLEAN)
    result = _validate(cli, "data/shots.jsonl")
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines() == [
        *_dataset_lines(pool, lines=2, axes="default 2"),
        "template: not rendered: data/shots.jsonl is the few-shot file of task 'adder' (its lines are checked; run "
        "refuses it as the dataset: its samples would be their own few-shot examples)",
    ]


# --- the samples' own instruction checks --------------------------------------------------------------------


def test_a_sample_check_the_instructions_scorer_would_refuse_is_a_problem_on_its_line(cli: Cli, root: TaskRoot) -> None:
    """Each such sample is a scoring error of the run: found before anything is spent, as a bad prompt is."""
    root.template("t.jinja2", "Q: {{ input }}\n")
    root.task(
        "adder",
        'name = "adder"\ntemplate = "t.jinja2"\n[dataset]\npath = "data/checks.jsonl"\n'
        '[[scorers]]\nname = "instructions"\n',
    )
    records = [
        {"id": "c1", "input": "Write a haiku.", "target": "x", "metadata": {"checks": [{"type": "lowercase"}]}},
        {"id": "c2", "input": "Write.", "target": "x", "metadata": {"checks": [{"type": "lowercase"},
                                                                               {"type": "word_count", "min": "ten"}]}},
        {"id": "c3", "input": "Write.", "target": "x", "metadata": {"checks": {"type": "lowercase"}}},
        {"id": "c4", "input": "Write.", "target": "x", "metadata": {"checks": [{"type": "shout"}]}},
    ]  # fmt: skip
    root.data("checks.jsonl", records)
    result = _validate(cli, "data/checks.jsonl")
    assert result.code == 1
    assert _after_dataset(result) == [
        "template: templates/t.jinja2 with 0 few-shot examples: 4 samples, 4 rendered, 0 problems",
        "instruction checks (metadata.checks): 4 samples, 3 problems",
        "data/checks.jsonl:2: metadata.checks[1]: check 'word_count': min: Input should be a valid integer, got 'ten'",
        "data/checks.jsonl:3: metadata.checks: must be a list of check tables",
        "data/checks.jsonl:4: metadata.checks[0]: unknown check type 'shout' (known: bullet_count, ends_with, "
        "exclude, include, json, lowercase, paragraph_count, sentence_count, word_count)",
    ]


def test_a_task_without_an_instructions_scorer_gets_no_instruction_checks_line(cli: Cli, root: TaskRoot) -> None:
    _task(root)
    result = _validate(cli)
    assert result.code == 0 and "instruction checks" not in result.out


def _instructions_task(root: TaskRoot, scorers: str) -> None:
    root.template("t.jinja2", "Q: {{ input }}\n")
    root.task("adder", f'name = "adder"\ntemplate = "t.jinja2"\n[dataset]\npath = "data/checks.jsonl"\n{scorers}')


def test_a_sample_without_checks_for_a_scorer_without_its_own_is_a_problem(cli: Cli, root: TaskRoot) -> None:
    """Each is a 'no checks' scoring error in the run: IFEval-shaped data (instruction_id_list / kwargs) reads so."""
    _instructions_task(root, '[[scorers]]\nname = "instructions"\n')
    root.data(
        "checks.jsonl",
        [
            {"id": "c1", "input": "Write.", "target": "x"},
            {"id": "c2", "input": "Write.", "target": "x", "metadata": {"checks": []}},
            {"id": "c3", "input": "Write.", "target": "x", "metadata": {"checks": [{"type": "lowercase"}]}},
        ],
    )
    result = _validate(cli, "data/checks.jsonl")
    assert result.code == 1
    no_checks = "metadata.checks: no checks: give the scorer 'checks' or the sample metadata.checks"
    assert _after_dataset(result)[1:] == [
        "instruction checks (metadata.checks): 3 samples, 2 problems",
        f"data/checks.jsonl:1: {no_checks}",
        f"data/checks.jsonl:2: {no_checks}",
    ]


def test_an_empty_value_is_no_checks_of_the_sample_s_own_as_scoring_reads_it(cli: Cli, root: TaskRoot) -> None:
    _instructions_task(root, '[[scorers]]\nname = "instructions"\nargs = { checks = [ { type = "lowercase" } ] }\n')
    records = [{"id": f"c{i}", "input": "W.", "target": "x", "metadata": {"checks": v}} for i, v in enumerate(
        [{}, "", 0, False, None])]  # fmt: skip
    root.data("checks.jsonl", records)
    result = _validate(cli, "data/checks.jsonl")
    assert result.code == 0, result.out
    assert "instruction checks (metadata.checks): 5 samples, 0 problems" in result.out


def test_an_instructions_scorer_inside_a_composite_has_its_samples_checks_checked(cli: Cli, root: TaskRoot) -> None:
    _instructions_task(
        root,
        '[[scorers]]\nname = "composite"\nargs = { scorers = [ { name = "instructions", args = { field = "ifc" } }, '
        '{ name = "exact_match" } ] }\n',
    )
    checks = [{"type": "word_count", "min": "ten"}]
    root.data("checks.jsonl", [{"id": "c1", "input": "W.", "target": "x", "metadata": {"ifc": checks}}])
    result = _validate(cli, "data/checks.jsonl")
    assert result.code == 1
    assert _after_dataset(result)[1:] == [
        "instruction checks (metadata.ifc): 1 sample, 1 problem",
        "data/checks.jsonl:1: metadata.ifc[0]: check 'word_count': min: Input should be a valid integer, got 'ten'",
    ]
