"""The code_execution scorer and the humaneval task: real programs in real subprocesses, no mocks.

A mock with skill=1 answers each sample with its target, HumanEval's canonical solution (a function body),
so a score of 1.0 checks the whole chain: field mapping, metadata, program building and execution.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED, CliResult, TaskRoot, read_records

import eval_harness.scorers.code  # noqa: F401  registers code_execution before its entry point is installed
from eval_harness.errors import ConfigError
from eval_harness.scorers import Scorer, build_scorer
from eval_harness.scorers.code import ALLOW_VARIABLE, extract_code
from eval_harness.types import Sample, ScorerSpec

Cli = Callable[..., CliResult]
HUMANEVAL = SHARED / "datasets" / "humaneval" / "HumanEval.jsonl.gz"
needs_humaneval = pytest.mark.skipif(not HUMANEVAL.is_file(), reason=f"{HUMANEVAL} (the shared HumanEval) is absent")

PROMPT = '''import math


def halve(x: float) -> float:
    """Half of x.
    >>> halve(4)
    2.0
    """
'''
TEST = "\n\ndef check(candidate):\n    assert candidate(4) == 2.0\n    assert candidate(-1) == -0.5\n"
BODY = "    return x / 2\n"
HELPER_PROMPT = '''def double(x: int) -> int:
    return 2 * x


def quadruple(x: int) -> int:
    """Four times x."""
'''
HELPER_TEST = "\n\ndef check(candidate):\n    assert candidate(3) == double(6)\n"


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_VARIABLE, "1")


def sample(prompt: str = PROMPT, metadata: dict[str, Any] | None = None) -> Sample:
    fields = {"test": TEST, "entry_point": "halve"} if metadata is None else metadata
    return Sample(id="p0", input=prompt, target=BODY, metadata=fields)


def scorer(**args: Any) -> Scorer:
    return build_scorer(ScorerSpec(name="code_execution", args=args))


# extraction


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("```python\nx = 1\n```\ntext\n```python\nx = 2\n```\n", "x = 2\n"),  # the last python block
        ("```bash\nls\n```\n```py\nx = 3\n```", "x = 3\n"),  # a python block over another language's
        ("Here:\n```\nx = 4\n```\n```sh\nls\n```", "x = 4\n"),  # else the first fenced block
        ("```python\nx = 5\n", "x = 5\n"),  # a block cut by max_tokens runs to the end
        ("    return x\n", "    return x\n"),  # else the whole output, indentation kept
        ("~~~python\nx = 6\n~~~\n", "x = 6\n"),  # tildes fence a block too (CommonMark); before: the whole output
        ('~~~python\nx = "```"\n~~~', 'x = "```"\n'),  # closed by the fence that opened it
        ("````python\ns = 1  # ```\n```\nx = 7\n````\n", "s = 1  # ```\n```\nx = 7\n"),  # a longer fence holds ```
    ],
)
def test_code_is_the_last_python_block_else_the_first_block_else_the_output(output: str, code: str) -> None:
    assert extract_code(output)[0] == code


# building the program and running it


async def test_a_function_body_completes_the_prompt_and_passes(allowed: None) -> None:
    score = await scorer().score(BODY, sample())
    assert score.value == 1.0
    assert score.explanation is not None and score.explanation.startswith("passed: exit status 0")


@pytest.mark.parametrize(
    "output",
    [
        f"```python\n{BODY}```\n",  # the form HumanEval's own completions take, fenced
        f"Here is the body:\n\n```python\n{BODY}```\n",
        f"1. The body:\n   ```python\n   {BODY}   ```\n",  # under a list item: the fence's indentation goes
    ],
)
async def test_a_fenced_function_body_keeps_its_indentation_and_passes(allowed: None, output: str) -> None:
    # datasets-s30 F1: every block was dedented, so a fenced body became top-level code after the prompt's def
    # ("SyntaxError: 'return' outside function"): 0 of 164 HumanEval canonical solutions passed fenced
    score = await scorer().score(output, sample())
    assert score.value == 1.0, score.explanation


async def test_an_indented_fenced_definition_is_dedented_and_passes(allowed: None) -> None:
    output = "```python\n    def halve(x: float) -> float:\n        return x / 2\n```\n"
    score = await scorer().score(output, sample())
    assert score.value == 1.0, score.explanation
    assert score.metadata["program"] == "preamble + completion"


async def test_a_completion_that_defines_the_function_itself_passes(allowed: None) -> None:
    output = "Sure.\n```python\ndef halve(x: float) -> float:\n    return math.ldexp(x, -1)\n```\n"
    score = await scorer().score(output, sample())  # math comes from the prompt's imports
    assert score.value == 1.0, score.explanation
    assert score.metadata["program"] == "preamble + completion"


async def test_helpers_the_prompt_defines_stay_available_to_a_whole_function_answer(allowed: None) -> None:
    # HumanEval/32's tests call poly(), defined in the prompt before find_zero: the prompt's imports alone
    # would fail them
    output = "```python\ndef quadruple(x: int) -> int:\n    return double(double(x))\n```"
    score = await scorer().score(output, sample(HELPER_PROMPT, {"test": HELPER_TEST, "entry_point": "quadruple"}))
    assert score.value == 1.0, score.explanation


async def test_test_and_entry_point_fields_are_configurable(allowed: None) -> None:
    custom = sample(metadata={"tests": TEST, "fn": "halve"})
    score = await scorer(test_field="tests", entry_point_field="fn").score(BODY, custom)
    assert score.value == 1.0, score.explanation


async def test_a_sample_without_its_test_code_is_a_scoring_error(allowed: None) -> None:
    with pytest.raises(ValueError, match=r"sample p0 has no text in metadata\.test"):
        await scorer().score(BODY, sample(metadata={"entry_point": "halve"}))


async def test_a_wrong_answer_fails_with_the_assertion_named(allowed: None) -> None:
    score = await scorer().score("    return x\n", sample())
    assert score.value == 0.0
    assert score.explanation is not None and score.explanation.startswith("exit status 1: AssertionError")
    assert "check(halve)" in score.metadata["stderr"]


async def test_a_syntax_error_is_explained_by_the_last_line_of_stderr(allowed: None) -> None:
    score = await scorer().score("    return (x / 2\n", sample())
    assert score.value == 0.0
    assert score.explanation == "exit status 1: SyntaxError: '(' was never closed"


async def test_output_past_the_file_size_limit_is_explained_by_the_limit(allowed: None) -> None:
    # adopt-s33 4: a correct answer that printed 17 MiB failed with a bare "OSError: [Errno 27] File too large"
    body = "    import sys\n    sys.stdout.write('x' * (17 * 2**20))\n    sys.stdout.flush()\n    return x / 2\n"
    score = await scorer().score(body, sample())
    assert score.value == 0.0
    assert score.explanation == (
        "exit status 1: OSError: [Errno 27] File too large (a file it wrote, its stdout or stderr passed the file "
        "size limit of 16 MiB)"
    )


@pytest.mark.parametrize("euid", [0, 1000])
def test_a_run_of_code_execution_as_root_warns_that_the_process_limit_does_not_hold(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: None, euid: int
) -> None:
    # adopt-s33 3: as root a program started processes that outlived the run and stopped eval-harness with SIGTERM,
    # which only the scorer's docstring said could happen
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    result = cli("run", "--task", "humaneval", "--dataset", _humaneval_dataset(tmp_path), "--model", "mock/x",
                 "--model-arg", "skill=1", "--output-dir", tmp_path / "out", "-q")  # fmt: skip
    assert result.code == 0, result.err
    warning = (
        "warning: code_execution runs model-written code as root here, where its process limit does not hold (root "
        "ignores RLIMIT_NPROC and may raise its own limits): a program may start processes that outlive the run, or "
        "signal eval-harness itself; run code evaluations as an unprivileged user, in a container without "
        "credentials or network"
    )
    assert (warning in result.err.splitlines()) is (euid == 0), result.err


async def test_an_infinite_loop_times_out_and_its_process_group_is_killed(allowed: None, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    body = (
        "    import os, subprocess, sys\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"    open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "    while True:\n"
        "        pass\n"
    )
    score = await scorer(timeout_s=1, allow_processes=True).score(body, sample())
    assert score.value == 0.0
    assert score.explanation == "timed out after 1 s; the process group was killed"
    program, grandchild = map(int, pids.read_text().split())
    assert not _alive(program)
    assert _eventually_dead(grandchild)  # its own child too, though it never ran out of time itself


async def test_a_process_left_running_does_not_hold_the_verdict_back(allowed: None, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    body = (  # the function, then top-level code that starts a process in a session of its own, once
        "    return x / 2\n"
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
    )
    try:
        score = await scorer(timeout_s=5, allow_processes=True).score(body, sample())
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # it left the process group: nothing else kills it
    assert score.explanation is not None and score.explanation.startswith("passed"), score.explanation


async def test_the_program_sees_none_of_the_users_variables(allowed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-0123456789")
    body = "    import os\n    raise RuntimeError(sorted(os.environ))\n"  # fails on purpose to show them
    score = await scorer().score(body, sample())
    assert score.explanation == "exit status 1: RuntimeError: ['HOME', 'LANG', 'PATH', 'TMPDIR']"


async def test_memory_beyond_the_limit_is_refused(allowed: None) -> None:
    score = await scorer(memory_mb=256).score("    return len(bytearray(512 * 2**20))\n", sample())
    assert score.explanation == "exit status 1: MemoryError"


async def test_exiting_before_the_tests_finish_is_a_failure(allowed: None) -> None:
    score = await scorer().score("    return x / 2\nimport sys\nsys.exit(0)\n", sample())
    assert score.value == 0.0
    assert score.explanation == "exit status 1: SystemExit: the program exited (0) before its tests finished"


async def test_a_main_guard_in_the_answer_does_not_run(allowed: None) -> None:
    # as in the reference harness (exec), __name__ is not "__main__"
    output = "```python\ndef halve(x):\n    return x / 2\n\nif __name__ == '__main__':\n    raise SystemExit(1)\n```"
    assert (await scorer().score(output, sample())).value == 1.0


# the opt-in


def test_the_scorer_is_refused_without_the_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_VARIABLE, raising=False)
    # adopt-s33 5: "set it to allow it" to a user who had set it, in .env
    with pytest.raises(
        ConfigError,
        match=f"executes model-written code.*set {ALLOW_VARIABLE}=1 in the environment to allow it "
        r"\(a \.env entry does not count: turning it on is a decision for each shell\)$",
    ):
        scorer()


def test_an_opt_in_other_than_1_is_refused_and_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_VARIABLE, "true")
    with pytest.raises(ConfigError, match=r"\(it is 'true'; only 1 enables it\)"):
        scorer()


def test_a_run_without_the_opt_in_stops_before_writing_anything(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ALLOW_VARIABLE, raising=False)
    record = {"task_id": "T/0", "prompt": PROMPT, "canonical_solution": BODY, "test": TEST, "entry_point": "halve"}
    dataset = tmp_path / "he.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    result = cli(
        "run", "--task", "humaneval", "--dataset", dataset, "--model", "mock/x", "--output-dir", tmp_path / "out"
    )
    assert result.code == 2
    assert "scorer 'code_execution': disabled" in result.err and f"{ALLOW_VARIABLE}=1" in result.err
    assert not (tmp_path / "out").exists()


# the task on the original file


@pytest.fixture
def humaneval_jsonl() -> Path:
    """HumanEval.jsonl.gz as it ships (the dataset reader reads gzip through)."""
    return HUMANEVAL


def _run(cli: Cli, tmp_path: Path, dataset: Path, skill: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / "out"
    result = cli(
        "run", "--task", "humaneval", "--dataset", dataset, "--model", "mock/x", "--model-arg", f"skill={skill}",
        "--limit", "10", "--output-dir", out, "--run-id", "r", "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    return json.loads((out / "r" / "summary.json").read_text()), read_records(out / "r")


@needs_humaneval
def test_canonical_solutions_of_the_first_ten_problems_pass(
    cli: Cli, tmp_path: Path, humaneval_jsonl: Path, allowed: None
) -> None:
    summary, records = _run(cli, tmp_path, humaneval_jsonl, "1")
    assert summary["overall"]["mean"] == 1.0
    assert sorted(r["sample_id"] for r in records) == sorted(f"HumanEval/{i}" for i in range(10))
    assert all(r["explanations"]["code_execution"].startswith("passed") for r in records)


@needs_humaneval
def test_wrong_answers_to_the_first_ten_problems_fail_with_an_explanation(
    cli: Cli, tmp_path: Path, humaneval_jsonl: Path, allowed: None
) -> None:
    summary, records = _run(cli, tmp_path, humaneval_jsonl, "0")
    assert summary["overall"]["mean"] == 0.0
    for record in records:
        assert record["error"] is None
        assert record["explanations"]["code_execution"].startswith("exit status 1: "), record["explanations"]
        assert "Error" in record["explanations"]["code_execution"]  # IndentationError, SyntaxError ...


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped by its new parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _eventually_dead(pid: int, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while _alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # do not leave it behind when the assertion fails
            return False
        time.sleep(0.02)
    return True


def test_the_answer_block_is_the_one_defining_the_function_not_a_later_usage_example() -> None:
    output = (
        "Here is the function:\n```python\ndef add(a, b):\n    return a + b\n```\n"
        "Example usage:\n```python\nprint(add(1, 2))\n```\n"
    )
    assert extract_code(output, "add") == (
        "def add(a, b):\n    return a + b\n",
        "the last python block defining the function",
    )


def test_a_block_indented_under_a_list_item_is_dedented() -> None:
    output = "1. The function:\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n"
    assert extract_code(output, "add")[0] == "def add(a, b):\n    return a + b\n"


def _humaneval_dataset(tmp_path: Path) -> Path:
    record = {"task_id": "T/0", "prompt": PROMPT, "canonical_solution": BODY, "test": TEST, "entry_point": "halve"}
    dataset = tmp_path / "he.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    return dataset


def test_validate_dataset_names_the_lines_whose_test_or_entry_point_the_scorer_would_fail_on(
    cli: Cli, tmp_path: Path, allowed: None
) -> None:
    # datasets-s30 F4: such lines passed the check, and each became a scoring error after its answer was paid for
    good = {"task_id": "T/0", "prompt": PROMPT, "canonical_solution": BODY, "test": TEST, "entry_point": "halve"}
    lines = [
        good,
        {key: value for key, value in good.items() if key != "test"} | {"task_id": "T/1"},
        good | {"task_id": "T/2", "entry_point": "not an identifier"},
        good | {"task_id": "T/3", "test": 5},
        good | {"task_id": "T/4", "test": "  "},
    ]
    dataset = tmp_path / "he.jsonl"
    dataset.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = cli("validate-dataset", "--task", "humaneval", "--path", dataset)
    assert result.code == 1, result.out + result.err
    assert "code tests (metadata.test, metadata.entry_point): 5 samples, 4 problems" in result.out
    for line in (
        f"{dataset}:2: metadata.test: missing: the code_execution scorer reads it",
        f"{dataset}:3: metadata.entry_point: 'not an identifier' is not a Python identifier",
        f"{dataset}:4: metadata.test: expected text, got 5",
        f"{dataset}:5: metadata.test: is empty",
    ):
        assert line in result.out, result.out


def test_validate_dataset_without_the_opt_in_checks_the_task_and_notes_that_run_would_refuse_here(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the opt-in is the machine's (a run may be meant for a container), not the dataset's or the task's
    monkeypatch.delenv(ALLOW_VARIABLE, raising=False)
    result = cli("validate-dataset", "--task", "humaneval", "--path", _humaneval_dataset(tmp_path))
    assert result.code == 0, result.out + result.err
    note = next(line for line in result.out.splitlines() if line.startswith("note: "))
    assert note.endswith(f"scorer 'code_execution': disabled: this scorer executes model-written code on this "
                         "machine, with resource limits but no network or filesystem isolation; run the evaluation in "
                         f"a container or VM without credentials and set {ALLOW_VARIABLE}=1 in the environment to "
                         "allow it (a .env entry does not count: turning it on is a decision for each shell); run "
                         "refuses it here")  # fmt: skip
    assert "1 rendered" in result.out


@pytest.mark.parametrize("opted_in", [True, False])
def test_validate_dataset_refuses_a_bad_argument_of_a_code_execution_task_with_or_without_the_opt_in(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opted_in: bool
) -> None:
    if opted_in:
        monkeypatch.setenv(ALLOW_VARIABLE, "1")
    else:
        monkeypatch.delenv(ALLOW_VARIABLE, raising=False)
    root = TaskRoot(tmp_path)
    root.template("t.jinja2", "{{ input }}\n")
    spec = root.task(
        "he",
        'name = "he"\ntemplate = "t.jinja2"\n[dataset]\nformat = "jsonl"\n'
        'fields = { id = "task_id", input = "prompt", target = "canonical_solution" }\n'
        '[[scorers]]\nname = "code_execution"\nargs = { timeout_s = 5 }\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "strictest" }\n',
    )
    result = cli("validate-dataset", "--task", spec, "--path", _humaneval_dataset(tmp_path))
    assert (result.code, result.err.strip()) == (
        2,
        f"error: {spec}:9: scorer 'exact_match': unknown mode 'strictest'; use one of strict, lenient, numeric",
    )


async def test_a_lone_surrogate_in_the_answer_does_not_keep_the_program_from_running(allowed: None) -> None:
    # a reply's JSON may escape a lone surrogate; before: UnicodeEncodeError writing the program, a scoring error
    score = await scorer().score("    return x / 2  # \ud800\n", sample())
    assert score.value == 1.0
    inside_a_string = await scorer().score("    assert '\ud800' != ''\n    return x / 2\n", sample())
    assert inside_a_string.value == 1.0


async def test_an_indented_definition_in_an_unlabelled_fence_is_dedented_and_passes(allowed: None) -> None:
    # review-s30 8: only python blocks were dedented for a definition; "the first fenced block" kept the indentation
    output = "```\n    def halve(x: float) -> float:\n        return x / 2\n```\n"
    score = await scorer().score(output, sample())
    assert score.value == 1.0, score.explanation
