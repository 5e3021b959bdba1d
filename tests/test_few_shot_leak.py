"""Few-shot examples are never samples under evaluation (issue 2, audit-ext F8), and an example that breaks the
template is named with its file and line (audit-ext F13).

An example of the few-shot file whose id, or whose input and target (and choices), equal a sample of the dataset
is left out of the pool before the draw, and the plan says how many. The comparison happens in the pass that
validates the dataset; a resume whose dataset is unchanged takes the recorded examples without reading it again,
or compares in one pass when the whole pool would give other examples. Every run goes through the real CLI
from the task root, with the mock provider; prompts are read back from samples.jsonl.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot, read_records

from eval_harness.config import RunConfig
from eval_harness.planning import plan_run

Cli = Callable[..., CliResult]

# The adder task's samples are q0000..q0039, "What is i + 1?" -> "i + 1" (conftest.arithmetic_records).
_TEMPLATE = "{% for e in examples %}Example: {{ e.input }} => {{ e.target }}\n{% endfor %}Q: {{ input }}\n"
_CLEAN = [
    {"id": "s1", "input": "What is 100 + 1?", "target": "101"},
    {"id": "s2", "input": "What is 200 + 1?", "target": "201"},
]


@pytest.fixture
def root(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root, made the current directory, its template showing each example as one line."""
    task_root.template("shots.jinja2", _TEMPLATE)
    monkeypatch.chdir(task_root.root)
    return task_root


def _with_pool(root: TaskRoot, pool: Sequence[dict[str, Any] | str], k: int, template: str = "shots.jinja2") -> Path:
    """data/shots.jsonl holding ``pool``, drawn k at a time by the adder task; the file's resolved path."""
    path = root.data("shots.jsonl", pool)
    spec = root.root / "tasks" / "adder.toml"
    body = spec.read_text().split("[few_shot]")[0].replace('"plain.jinja2"', f'"{template}"')
    spec.write_text(f'{body}[few_shot]\nk = {k}\npath = "data/shots.jsonl"\n')
    return path.resolve()


def _run(cli: Cli, run_id: str) -> CliResult:
    return cli("run", "--task", "adder", "--model", "mock/m", "--run-id", run_id, "--output-dir", "results", "-q")


def _prompt(record: dict[str, Any]) -> str:
    content = record["prompt"][-1]["content"]
    assert isinstance(content, str)
    return content


def _example_lines(record: dict[str, Any]) -> list[str]:
    return [line for line in _prompt(record).splitlines() if line.startswith("Example: ")]


def _own_example(record: dict[str, Any]) -> str:
    return f"Example: {record['input']} => {record['target']}"


def test_an_example_with_the_input_and_target_of_a_sample_is_left_out_whatever_its_id(cli: Cli, root: TaskRoot) -> None:
    _with_pool(root, [*_CLEAN, {"id": "dev-7", "input": "What is 7 + 1?", "target": "8"}], k=3)
    result = _run(cli, "r")
    assert result.code == 0, result.err
    records = read_records(root.root / "results" / "r")
    assert len(records) == 40
    assert all(_own_example(record) not in _prompt(record) for record in records)
    assert {line for record in records for line in _example_lines(record)} == {
        "Example: What is 100 + 1? => 101",
        "Example: What is 200 + 1? => 201",
    }


def test_an_example_sharing_only_its_id_with_a_sample_is_kept(cli: Cli, root: TaskRoot) -> None:
    # files numbered each on its own (0, 1, 2... in dev and in test) share ids, not items: only content is a leak
    _with_pool(root, [{"id": "q0007", "input": "What is 70 + 5?", "target": "75"}], k=1)
    result = _run(cli, "r")
    assert result.code == 0 and result.err == "", result.err
    records = read_records(root.root / "results" / "r")
    assert all("What is 70 + 5?" in _prompt(record) for record in records)


def test_an_example_of_another_multiple_choice_item_with_the_same_question_and_letter_is_kept(
    cli: Cli, root: TaskRoot
) -> None:
    # "Which is largest?" with answer "B" is two items when the choices differ: only the same choices make it one
    root.data("mc.jsonl", [{"id": "m1", "input": "Which is largest?", "choices": ["1", "9", "3"], "target": "B"}])
    root.task(
        "mc",
        'name = "mc"\ntemplate = "mc.jinja2"\n[dataset]\npath = "data/mc.jsonl"\n'
        '[few_shot]\nk = 2\npath = "data/mc_shots.jsonl"\n[[scorers]]\nname = "choice"\n',
    )
    root.template(
        "mc.jinja2", "{% for e in examples %}Example: {{ e.choices }} {{ e.target }}\n{% endfor %}{{ input }}"
    )
    root.data(
        "mc_shots.jsonl",
        [
            {"id": "x1", "input": "Which is largest?", "choices": ["5", "8", "2"], "target": "B"},
            {"id": "x2", "input": "Which is largest?", "choices": ["1", "9", "3"], "target": "B"},
        ],
    )
    result = cli("run", "--task", "mc", "--model", "mock/m", "--run-id", "mc", "--output-dir", "results", "-q")
    assert result.code == 0, result.err
    (record,) = read_records(root.root / "results" / "mc")
    assert _example_lines(record) == ["Example: ['5', '8', '2'] B"]


def test_the_plan_says_which_examples_were_left_out_and_how_many_are_left(root: TaskRoot) -> None:
    pool = _with_pool(
        root,
        [
            *_CLEAN,
            {"id": "q0003", "input": "What is 3 + 1?", "target": "4"},
            {"id": "d9", "input": "What is 9 + 1?", "target": "10"},
        ],
        k=3,
    )
    plan = plan_run(RunConfig(task="adder", model="mock/m", output_dir=Path("results"), run_id="r"))
    assert plan.notes == [
        f"few-shot: left out 2 examples of {pool} that are also samples of the dataset (same input and target)"
        ": q0003, d9 (= sample q0009); 2 left to draw k = 3 from"
    ]


def test_the_run_prints_the_left_out_examples_on_stderr(cli: Cli, root: TaskRoot) -> None:
    pool = _with_pool(root, [*_CLEAN, {"id": "dev-7", "input": "What is 7 + 1?", "target": "8"}], k=2)
    result = _run(cli, "r")
    assert result.code == 0, result.err
    assert result.err == (
        f"few-shot: left out 1 example of {pool} that is also a sample of the dataset (same input and target)"
        ": dev-7 (= sample q0007)\n"
    )


def test_a_few_shot_file_whose_every_example_is_a_sample_is_refused_before_anything_is_written(
    cli: Cli, root: TaskRoot
) -> None:
    pool = _with_pool(
        root, [{"id": f"q{i:04d}", "input": f"What is {i} + 1?", "target": str(i + 1)} for i in (1, 2)], k=1
    )
    result = _run(cli, "r")
    task = (root.root / "tasks" / "adder.toml").resolve()
    assert (result.code, result.err) == (
        2,
        f"error: {task}: few-shot: every one of the 2 examples in {pool} is also a sample of the dataset under "
        "evaluation (same input and target); take the examples from another file, or use "
        "holdout_fraction\n",
    )
    assert not (root.root / "results").exists()


def _cut(run_dir: Path, kept: int) -> None:
    """The run as a crash after its first ``kept`` records leaves it."""
    lines = (run_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_bytes(b"".join(lines[:kept]))
    (run_dir / "summary.json").unlink()


def test_a_resume_draws_the_examples_the_run_started_with_leaving_out_the_same_ones(cli: Cli, root: TaskRoot) -> None:
    # the dataset is unchanged, so a resume does not validate it again: the whole pool would give the leaking
    # example, which does not match the recorded examples, so the pool is compared with the dataset once more
    _with_pool(root, [*_CLEAN, {"id": "dev-7", "input": "What is 7 + 1?", "target": "8"}], k=2)
    assert _run(cli, "r").code == 0
    run_dir = root.root / "results" / "r"
    _cut(run_dir, 10)
    result = cli("resume", run_dir, "-q")
    assert result.code == 0, result.err
    records = read_records(run_dir)
    assert len(records) == 40
    assert {tuple(_example_lines(record)) for record in records} == {
        ("Example: What is 100 + 1? => 101", "Example: What is 200 + 1? => 201")
    }


def test_a_resume_after_the_few_shot_file_gained_a_sample_leaves_it_out_and_goes_on(cli: Cli, root: TaskRoot) -> None:
    _with_pool(root, _CLEAN, k=3)  # two examples for k = 3: a third one added would be drawn
    assert _run(cli, "r").code == 0
    run_dir = root.root / "results" / "r"
    _cut(run_dir, 10)
    _with_pool(root, [*_CLEAN, {"id": "dev-7", "input": "What is 7 + 1?", "target": "8"}], k=3)
    result = cli("resume", run_dir, "-q")
    assert result.code == 0, result.err
    records = read_records(run_dir)
    assert len(records) == 40
    assert all(_own_example(record) not in _prompt(record) for record in records)


_REASONING = "{% for e in examples %}{{ e.input }} because {{ e.metadata.reasoning }}\n{% endfor %}Q: {{ input }}\n"


def test_an_example_lacking_a_field_the_template_uses_is_named_with_its_file_and_line(cli: Cli, root: TaskRoot) -> None:
    template = root.template("why.jinja2", _REASONING).resolve()
    pool = _with_pool(
        root,
        [
            {**_CLEAN[0], "metadata": {"reasoning": "100 and one"}},
            "",
            _CLEAN[1],
        ],  # a blank line: the line is the file's, not an index
        k=2,
        template="why.jinja2",
    )
    result = _run(cli, "r")
    assert (result.code, result.err) == (
        2,
        f"error: {template}:1: UndefinedError: 'dict object' has no attribute 'reasoning' (if that is metadata: the "
        f"example's metadata is empty) (in few-shot example 's2', {pool}:3)\n",
    )


def test_an_error_inside_the_loop_over_examples_names_the_example_it_was_at(cli: Cli, root: TaskRoot) -> None:
    root.template("plus.jinja2", "{% for e in examples %}{{ e.metadata.n + 1 }}\n{% endfor %}{{ input }}\n")
    pool = _with_pool(
        root,
        [{**_CLEAN[0], "metadata": {"n": 1}}, {**_CLEAN[1], "metadata": {"n": "one"}}],
        k=2,
        template="plus.jinja2",
    )
    result = _run(cli, "r")
    assert result.code == 2
    assert result.err.endswith(
        f"TypeError: can only concatenate str (not \"int\") to str (in few-shot example 's2', {pool}:2)\n"
    )


def test_the_manifest_records_the_examples_drawn_after_leaving_out(cli: Cli, root: TaskRoot) -> None:
    # a resume compares the examples it draws with this digest: it must be that of the examples the run used
    _with_pool(root, [*_CLEAN, {"id": "dev-7", "input": "What is 7 + 1?", "target": "8"}], k=3)
    assert _run(cli, "r").code == 0
    _with_pool(root, _CLEAN, k=3)
    assert _run(cli, "clean").code == 0
    recorded = [
        json.loads((root.root / "results" / run / "manifest.json").read_text())["task"]["prompt_inputs_sha256"]
        for run in ("r", "clean")
    ]
    assert recorded[0] == recorded[1]


def _twins_task(root: TaskRoot) -> None:
    """Task dup: 12 items each twice and 12 once, half held out, k = 4."""
    twice = [
        {"id": f"{n}{copy}", "input": f"What is {n} + 1?", "target": str(n + 1)} for n in range(12) for copy in "ab"
    ]
    once = [{"id": f"u{n}", "input": f"What is {n} + 100?", "target": str(n + 100)} for n in range(12)]
    root.data("dup.jsonl", [*twice, *once])
    root.task(
        "dup",
        'name = "dup"\ntemplate = "shots.jinja2"\n[dataset]\npath = "data/dup.jsonl"\n'
        '[few_shot]\nk = 4\nholdout_fraction = 0.5\n[[scorers]]\nname = "exact_match"\n',
    )


def _interrupt(run: Path, keep: int, prompt_inputs_sha256: str | None = None) -> None:
    """Make ``run`` look interrupted after its first ``keep`` records (recording other examples' hash if given)."""
    manifest = json.loads((run / "manifest.json").read_text())
    if prompt_inputs_sha256 is not None:
        manifest["task"]["prompt_inputs_sha256"] = prompt_inputs_sha256
    manifest["status"] = "interrupted"
    (run / "manifest.json").write_text(json.dumps(manifest))
    lines = (run / "samples.jsonl").read_text().splitlines(keepends=True)
    (run / "samples.jsonl").write_text("".join(lines[:keep]))


def _run_task(cli: Cli, task: str, run_id: str) -> CliResult:
    return cli("run", "--task", task, "--model", "mock/m", "--run-id", run_id, "--output-dir", "results", "-q")


def test_a_held_out_sample_equal_to_one_under_evaluation_is_not_drawn(cli: Cli, root: TaskRoot) -> None:
    """A dataset may hold one item twice (the bundled capability profile held 15 such groups): the copy held out
    as an example showed its answer in the prompt of the copy under evaluation."""
    _twins_task(root)
    result = _run_task(cli, "dup", "d")
    assert result.code == 0, result.err
    records = read_records(root.root / "results" / "d")
    assert len(records) == 18 and all(len(_example_lines(record)) == 4 for record in records)
    assert all(_own_example(record) not in _prompt(record) for record in records)
    assert "held-out samples equal to a sample under evaluation (same input and target)" in result.err


def test_a_hold_out_run_that_drew_a_twin_before_they_were_left_out_resumes_with_its_examples(
    cli: Cli, root: TaskRoot
) -> None:
    """A run started before held-out twins were left out may have drawn one: its resume was refused as if the
    task had changed ('few-shot examples or template variables ... changed'), though only the harness had."""
    from eval_harness.planning._few_shot import choose_few_shot
    from eval_harness.planning._fingerprint import _prompt_inputs_sha256
    from eval_harness.tasks import find_task

    _twins_task(root)
    assert _run_task(cli, "dup", "d").code == 0
    run = root.root / "results" / "d"
    task = find_task("dup")
    drawn = choose_few_shot(task, root.root / "data" / "dup.jsonl", None, leave_out_equal=False)
    assert {e.id for e in drawn.examples} != {
        e.id for e in choose_few_shot(task, root.root / "data" / "dup.jsonl", None).examples
    }
    # what such a run looks like: its recorded examples are the old draw's, and it was interrupted
    _interrupt(run, keep=5, prompt_inputs_sha256=_prompt_inputs_sha256(task, drawn.examples))
    resumed = cli("resume", run, "-q")
    assert resumed.code == 0, resumed.err
    later = read_records(run)[5:]
    shown = {f"Example: {e.input} => {e.target}" for e in drawn.examples}
    assert len(later) == 13 and all(set(_example_lines(record)) == shown for record in later)
    assert "few-shot: this run keeps the examples it started with (before held-out samples equal" in resumed.err


def test_an_old_hold_out_run_whose_held_out_samples_are_all_twins_resumes_with_its_examples_and_says_so(
    cli: Cli, root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run started before held-out twins were left out, whose held-out samples all equal evaluated ones: a fresh
    start is refused (nothing left to draw from), but that run drew its examples already; its resume was refused
    the same way before the draw it recorded was tried (review-s19b 6). It resumes with them and says they
    include a twin."""
    import functools

    import eval_harness.planning as planning
    from eval_harness.planning._few_shot import choose_few_shot

    twice = [{"id": f"{n}{c}", "input": f"What is {n} + 1?", "target": str(n + 1)} for n in range(30) for c in "ab"]
    root.data("dup.jsonl", twice)
    root.task(
        "dup",
        'name = "dup"\ntemplate = "shots.jinja2"\n[dataset]\npath = "data/dup.jsonl"\n'
        '[few_shot]\nk = 2\nholdout_fraction = 0.05\n[[scorers]]\nname = "exact_match"\n',
    )
    refused = _run_task(cli, "dup", "fresh")
    assert refused.code == 2 and "every one of the 3 samples held out is equal to a sample" in refused.err
    # the harness as it was: held-out twins drawn like any held-out sample
    with monkeypatch.context() as old:
        old.setattr(planning, "choose_few_shot", functools.partial(choose_few_shot, leave_out_equal=False))
        assert _run_task(cli, "dup", "d").code == 0
    run = root.root / "results" / "d"
    started = read_records(run)
    _interrupt(run, keep=10)
    resumed = cli("resume", run, "-q")
    assert resumed.code == 0, resumed.err
    records = read_records(run)
    assert len(records) == len(started) == 57
    assert [_example_lines(r) for r in records[10:]] == [_example_lines(r) for r in started[10:]]
    assert "few-shot: this run keeps the examples it started with (before held-out samples equal" in resumed.err
    assert "(= sample " in resumed.err


def test_a_few_shot_file_that_is_the_dataset_itself_is_refused_naming_the_spec_line(cli: Cli, root: TaskRoot) -> None:
    spec = root.root / "tasks" / "adder.toml"
    body = spec.read_text().replace('"plain.jinja2"', '"shots.jinja2"')
    spec.write_text(f'{body}[few_shot]\nk = 2\npath = "data/adder.jsonl"\n')
    result = _run(cli, "itself")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: {spec}:10: few_shot.path: few-shot examples would come from the dataset under evaluation; use "
        "holdout_fraction instead",
    )
    assert not (root.root / "results").exists()


def test_a_rewrite_that_gives_the_dataset_back_is_refused_as_the_dataset_itself(cli: Cli, root: TaskRoot) -> None:
    # fuzz-s25 6: '^(.*)$ => \1' matched, gave the path back, and was refused as a pattern that "does not match"
    spec = root.root / "tasks" / "adder.toml"
    body = spec.read_text().replace('"plain.jinja2"', '"shots.jinja2"')
    spec.write_text(body + "[few_shot]\nk = 2\npath_from_dataset = '^(.*)$ => \\1'\n")
    result = _run(cli, "same")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: {spec}:10: few_shot.path_from_dataset: few-shot examples would come from the dataset under "
        "evaluation; use holdout_fraction instead",
    )


def test_a_rewrite_that_gives_a_nul_character_is_refused_not_a_traceback(cli: Cli, root: TaskRoot) -> None:
    # fuzz-s25 3: "ValueError: embedded null byte" with a traceback and exit 1, from run, --dry-run and validate-dataset
    spec = root.root / "tasks" / "adder.toml"
    body = spec.read_text().replace('"plain.jinja2"', '"shots.jinja2"')
    spec.write_text(body + "[few_shot]\nk = 2\npath_from_dataset = '^(.*)$ => \\1\\0'\n")
    for args in (["run", "--task", "adder", "--model", "mock/m", "--dry-run"], ["validate-dataset", "--path",
                 "data/adder.jsonl", "--task", "adder"]):  # fmt: skip
        result = cli(*args)
        assert result.code == 2 and "Traceback" not in result.err, result.err
        assert result.err.strip().startswith(f"error: {spec}:10: few_shot.path_from_dataset: '\\1\\0' gives '"), (
            result.err
        )
        assert result.err.strip().endswith("', which holds a NUL character: no file can be named so"), result.err


def test_a_few_shot_file_smaller_than_k_says_each_prompt_shows_fewer(cli: Cli, root: TaskRoot) -> None:
    # templates-s30 F3: k = 10 from 2 examples ran 2-shot without a word, the manifest saying k 10
    pool = _with_pool(root, _CLEAN, k=10)
    result = _run(cli, "r")
    assert result.code == 0, result.err
    assert result.err == f"few-shot: {pool} holds 2 examples, fewer than k = 10: each prompt shows 2\n"
    assert all(len(_example_lines(record)) == 2 for record in read_records(root.root / "results" / "r"))


def test_a_hold_out_that_holds_out_no_sample_is_refused(cli: Cli, root: TaskRoot) -> None:
    # templates-s30 F3: holdout_fraction 0.01 of 34 samples held out none: every prompt zero-shot, no word
    _twins_task(root)
    spec = root.root / "tasks" / "dup.toml"
    spec.write_text(spec.read_text().replace("holdout_fraction = 0.5", "holdout_fraction = 0.01"))
    result = _run_task(cli, "dup", "z")
    assert result.code == 2 and not (root.root / "results" / "z").exists()
    assert "few-shot: holdout_fraction 0.01 of the dataset's 36 samples holds out none, so no prompt" in result.err


def _ten_task(root: TaskRoot, few_shot: str) -> None:
    """The `ten` task: 10 samples "What is n + 7?", drawing examples as ``few_shot`` says (the [few_shot] body and
    any table after it)."""
    root.data("ten.jsonl", [{"id": f"t{n}", "input": f"What is {n} + 7?", "target": str(n + 7)} for n in range(10)])
    root.task(
        "ten",
        'name = "ten"\ntemplate = "shots.jinja2"\n[dataset]\npath = "data/ten.jsonl"\n'
        f'[[scorers]]\nname = "exact_match"\n[few_shot]\n{few_shot}',
    )


def test_a_hold_out_smaller_than_k_says_each_prompt_shows_fewer(cli: Cli, root: TaskRoot) -> None:
    _ten_task(root, "k = 30\nholdout_fraction = 0.3\n")
    result = _run_task(cli, "ten", "h")
    assert result.code == 0, result.err
    assert result.err == (
        "few-shot: the hold-out holds 3 examples, fewer than k = 30: each prompt shows 3\n"
        # adopt-s32 6: a reader of "n 7" was left to guess where 3 of the 10 samples went
        "few-shot: 3 of the dataset's 10 samples held out as examples (holdout_fraction), not evaluated\n"
    )
    report = cli("report", "--run", root.root / "results" / "h", "--format", "json")
    note = "few-shot: 3 of the dataset's 10 samples held out as examples (holdout_fraction), not evaluated"
    assert report.code == 0 and note in json.loads(report.out)["notes"]


def test_a_hold_out_with_k_0_says_it_holds_nothing_out(cli: Cli, root: TaskRoot) -> None:
    # adopt-s32 14: k = 0 beside holdout_fraction ran every sample without a word, and a compare with the k-shot run
    # of the same spec found samples without a pair
    _ten_task(root, "k = 0\nholdout_fraction = 0.3\n")
    result = _run_task(cli, "ten", "z")
    assert result.code == 0 and result.err == (
        "few-shot: k = 0, so holdout_fraction 0.3 holds nothing out: every sample of the dataset is evaluated\n"
    )
    assert len(read_records(root.root / "results" / "z")) == 10


def test_the_reports_configuration_says_how_the_run_was_made(cli: Cli, root: TaskRoot) -> None:
    # adopt-s32 5: a report pasted in a pull request had no few-shot k, generation settings, template or version
    _ten_task(root, 'k = 2\nholdout_fraction = 0.3\n[generation]\nmax_tokens = 20\nstop = ["Q:"]\n')
    assert _run_task(cli, "ten", "h").code == 0
    run = root.root / "results" / "h"
    settings = json.loads(cli("report", "--run", run, "--format", "json").out)["run"]["settings"]
    assert settings["generation"] == {"max_tokens": 20, "stop": ["Q:"]} and settings["few_shot"]["k"] == 2
    markdown = cli("report", "--run", run, "--format", "markdown").out
    configuration = markdown.split("### Configuration\n\n")[1].split("\n\n")[0].splitlines()
    sha = settings["template_sha256"][:12]
    assert configuration[1:3] == [
        '- generation: max_tokens 20 · stop ["Q:"]',
        f"- template shots.jinja2 (sha256 {sha}) · few-shot: k 2 (holdout_fraction 0.3, seed 0)",
    ]
    assert configuration[-1].startswith("- eval-harness ") and configuration[0].startswith("- model mock/m · args ")


def test_a_resumed_run_whose_hold_out_holds_nothing_keeps_running_as_it_started(root: TaskRoot) -> None:
    # review-s30: the refusal of a hold-out holding nothing is for new runs; one started before it resumes
    from eval_harness.errors import ConfigError
    from eval_harness.planning import choose_few_shot
    from eval_harness.tasks import find_task

    _twins_task(root)
    spec = root.root / "tasks" / "dup.toml"
    spec.write_text(spec.read_text().replace("holdout_fraction = 0.5", "holdout_fraction = 0.01"))
    task, dataset = find_task(str(spec)), root.root / "data" / "dup.jsonl"
    with pytest.raises(ConfigError, match="holds out none"):
        choose_few_shot(task, dataset, None)
    kept = choose_few_shot(task, dataset, None, resumed=True)
    assert (kept.examples, kept.excluded) == ([], frozenset())
