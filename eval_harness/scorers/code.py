"""``code_execution``: functional correctness, by running the model's code against the sample's tests.

The program is built the way HumanEval's reference harness builds it: the prompt, then the completion, then
the sample's test code and ``check(<entry_point>)``. When the completion defines the entry point itself
(a chat model's usual answer), it follows the part of the prompt before the entry point's ``def`` instead of
the whole prompt: the imports and the helper functions some prompts define (HumanEval/10, 32, 38, 50) and
that the tests call. The code is the last ```python fenced block of the output, else its first fenced block,
else the whole output. The sample passes (1.0) when the program exits with status 0; otherwise the
explanation names the failure on one line: the timeout, the last line of stderr (the exception), or the
signal that killed it. As in the reference harness, which ``exec``s the program, ``__name__`` is not
``"__main__"``: an ``if __name__ == "__main__": unittest.main()`` block in the answer does not run, and a
program that calls ``sys.exit`` before its tests have finished fails.

SAFETY. This scorer executes text a model wrote, on this machine, as the user running eval-harness. It
refuses to be built (the run stops before anything is written) unless ``EVAL_HARNESS_ALLOW_CODE_EXECUTION=1``
is set. What the isolation does:

- each program runs in a separate process, ``sys.executable -I`` (no ``PYTHON*`` variables, no user
  site-packages; the interpreter's own site-packages stay importable), in a session of its own whose whole
  process group is killed (SIGKILL) when the program exits, times out or the run is cancelled;
- its working directory, ``HOME`` and ``TMPDIR`` are a fresh temporary directory, removed afterwards;
- its environment is built from scratch (``PATH``, ``HOME``, ``TMPDIR``, ``LANG``): none of the user's
  variables reach it, API keys above all;
- resource limits set before ``exec``: CPU seconds (the timeout + 1, SIGKILL one second later), address space
  (``memory_mb``, 2 GiB by default), the size of a file it writes (16 MiB), no core dumps, and no new process
  or thread (``RLIMIT_NPROC`` = 0, unless ``allow_processes``);
- a wall-clock timeout (``timeout_s``, 10 s by default); stdin is empty; stdout and stderr go to files
  (each at most 16 MiB, the file size limit) of which the last 64 KiB are read (from the first line that
  starts in them), and the last 1,000 characters recorded, with the keys eval-harness knows redacted before
  anything is cut;
- at most ``max_parallel`` programs run at a time (default: the CPU count), so that a busy machine does
  not turn slow programs into timeouts.

What it does not do:

- no network isolation: the program can open sockets and reach whatever this machine can;
- no filesystem isolation beyond the working directory: it can read every file the user can (``.env``
  files, ``~/.ssh``, other runs' results) and write or delete wherever the user may;
- a process the program starts in a session of its own (``setsid``) escapes the group kill; that needs
  ``allow_processes``, or root;
- the limits are no barrier to root, which ignores ``RLIMIT_NPROC`` and may raise its own limits (containers
  often run as root);
- it does not resist code written to cheat: ``os._exit(0)`` before the tests run passes.

A container or a virtual machine with no credentials, no network and a read-only view of what it does not
need (e.g. ``docker run --network none``) is the real sandbox: run code evaluations inside one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import math
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_harness.config import Settings, redact_shown
from eval_harness.scorers.base import Scorer, register_scorer, unavailable_here
from eval_harness.types import Completion, Sample, Score

ALLOW_VARIABLE = "EVAL_HARNESS_ALLOW_CODE_EXECUTION"
"""The environment variable that must be ``1`` for the scorer to be built."""

MAX_CAPTURED_BYTES = 64 * 1024
"""How much of the end of each output stream is read back."""

RECORDED_CHARS = 1000
"""The end of stderr (and stdout) kept in a failed sample's metadata."""

_LINE_CUT = 1024
"""Characters dropped from the start of a captured window that holds no line start: more than any API key."""

FILE_SIZE_LIMIT = 16 * 1024 * 1024
"""The largest file the program may write (RLIMIT_FSIZE); beyond it the kernel sends SIGXFSZ."""

_PROGRAM = "program.py"
# Runs the program under a name other than "__main__", as the reference harness's exec() does, and turns an
# early sys.exit into a failure: exiting 0 before check() has run must not read as passing the tests.
_BOOTSTRAP = (
    "import runpy, sys\n"
    "try:\n"
    f"    runpy.run_path({_PROGRAM!r}, run_name='__candidate__')\n"
    "except SystemExit as stop:\n"
    "    sys.exit(f'SystemExit: the program exited ({stop.code!r}) before its tests finished')\n"
)
# a block fenced by three or more backticks or tildes (CommonMark's two fences), closed by a fence of the same
# kind at least as long (so a ````-block may hold ``` lines)
_FENCE = re.compile(
    r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`~]*)[^\n]*\n(.*?)(?:^[ \t]*\2[`~]*[ \t]*$|\Z)", re.MULTILINE | re.DOTALL
)
_PYTHON_LANGUAGES = frozenset({"python", "py", "python3"})
_IMPORT = re.compile(r"^(?:import|from)[ \t]+\S.*$", re.MULTILINE)


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def allowed() -> bool:
    """Whether the user opted in to executing model-written code (``EVAL_HARNESS_ALLOW_CODE_EXECUTION=1``)."""
    return os.environ.get(ALLOW_VARIABLE) == "1"


def extract_code(output: str, entry_point: str | None = None) -> tuple[str, str]:
    """The code in a model's output and where it was found: the last ```python block (```py, ```python3)
    that defines ``entry_point`` (an "example usage" block after the answer is not the answer), else the last
    python block, else the first fenced block of any language, else the whole output. A block left open at the
    end of the output (a reply cut by max_tokens) runs to the end. A block loses the indentation of its fence
    (a block under a list item), and one defining the function any indentation its lines share; a block that
    does not keep the rest: it is the function's body (``    return x``), which follows the prompt indented."""
    blocks = [(match.group(3).lower(), _outdented(match.group(4), match.group(1))) for match in _FENCE.finditer(output)]
    python = [code for language, code in blocks if language in _PYTHON_LANGUAGES]
    if entry_point is not None:
        defining = [
            code for code in (_definition_dedented(c, entry_point) for c in python) if defines(code, entry_point)
        ]
        if defining:
            return defining[-1], "the last python block defining the function"
    if python:
        return python[-1], "the last python block"
    if blocks:
        return _definition_dedented(blocks[0][1], entry_point), "the first fenced block"
    return output, "the whole output"


def _definition_dedented(code: str, entry_point: str | None) -> str:
    """``code`` without the indentation its lines share when that makes it define ``entry_point`` at top level (a
    whole function indented inside its fence); a body keeps its indentation, as it follows the prompt."""
    if entry_point is None or defines(code, entry_point):
        return code
    dedented = textwrap.dedent(code)
    return dedented if defines(dedented, entry_point) else code


def _outdented(code: str, indent: str) -> str:
    """``code`` without the indentation of its fence on each line that has it."""
    if not indent:
        return code
    return "".join(line.removeprefix(indent) for line in code.splitlines(keepends=True))


def _definition(entry_point: str) -> re.Pattern[str]:
    return re.compile(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", re.MULTILINE)


def defines(code: str, entry_point: str) -> bool:
    """Whether ``code`` defines the function ``entry_point`` at top level (a text test: the code may not parse)."""
    return _definition(entry_point).search(code) is not None


def preamble(prompt: str, entry_point: str) -> str:
    """What the prompt gives before the entry point's ``def``: imports and helper functions. A prompt that does
    not define the entry point gives its import lines."""
    found = _definition(entry_point).search(prompt)
    if found is not None:
        return prompt[: found.start()]
    imports = _IMPORT.findall(prompt)
    return "\n".join(imports) + "\n" if imports else ""


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program HumanEval's harness runs: prompt + completion + test + ``check(entry_point)``; the prompt's
    preamble alone when the completion defines the entry point itself."""
    if not entry_point.isidentifier():
        raise ValueError(f"entry point {entry_point!r} is not a Python identifier")
    head = preamble(prompt, entry_point) if defines(completion, entry_point) else prompt
    return f"{head}{completion}\n{test}\ncheck({entry_point})\n"


@dataclass(frozen=True)
class Limits:
    """How long and how much one program may run."""

    timeout_s: float = 10.0
    memory_mb: int = 2048
    allow_processes: bool = False

    def rlimits(self) -> tuple[tuple[int, int, int], ...]:
        """``(resource, soft, hard)`` for the child, computed in the parent and capped at the current hard
        limits, so the function run between fork and exec only calls ``setrlimit`` and cannot fail."""
        cpu = math.ceil(self.timeout_s) + 1
        wanted = [
            (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_AS, self.memory_mb * 2**20, self.memory_mb * 2**20),
            (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT, FILE_SIZE_LIMIT),
            (resource.RLIMIT_CORE, 0, 0),
        ]
        if not self.allow_processes:
            wanted.append((resource.RLIMIT_NPROC, 0, 0))
        capped = []
        for which, soft, hard in wanted:
            current = resource.getrlimit(which)[1]
            if current != resource.RLIM_INFINITY:
                hard = min(hard, current)
            capped.append((which, min(soft, hard), hard))
        return tuple(capped)


@dataclass(frozen=True)
class Execution:
    """How one program ended."""

    returncode: int | None
    """The exit status; negative: killed by that signal; None: still running at the timeout (then killed)."""
    timed_out: bool
    duration_s: float
    stdout: str
    """The end of stdout (at most ``MAX_CAPTURED_BYTES``)."""
    stderr: str
    """The end of stderr (at most ``MAX_CAPTURED_BYTES``)."""


async def run_program(program: str, limits: Limits) -> Execution:
    """Run ``program`` in a fresh directory and process group, under ``limits``; kill the group when it is
    done, on timeout or on cancellation."""
    rlimits = limits.rlimits()

    def restrict() -> None:  # runs in the child between fork and exec: setrlimit only, nothing that may lock
        for which, soft, hard in rlimits:
            resource.setrlimit(which, (soft, hard))

    root = Path(tempfile.mkdtemp(prefix="eval-harness-code-"))
    try:
        work = root / "work"
        work.mkdir()
        # a lone surrogate (a reply's JSON may escape one) cannot be UTF-8: written as its escape, it is the same
        # character again inside a string literal and harmless text in a comment
        (work / _PROGRAM).write_text(program, encoding="utf-8", errors="backslashreplace")
        # Output goes to files, not pipes: asyncio's wait() returns only once the pipes are closed too, which a
        # process the program left behind (in another session) could put off for as long as it likes.
        with (root / "stdout").open("wb") as stdout, (root / "stderr").open("wb") as stderr:
            started = time.monotonic()
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-X", "utf8", "-c", _BOOTSTRAP,
                cwd=work,
                env={"PATH": os.defpath, "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8"},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=restrict,
            )  # fmt: skip
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), limits.timeout_s)
        except TimeoutError:
            timed_out = True
        finally:
            _kill_group(process.pid)  # also after a clean exit: what it started must not outlive it
            await process.wait()
        duration = time.monotonic() - started
        return Execution(
            None if timed_out else process.returncode,
            timed_out,
            duration,
            _tail(root / "stdout"),
            _tail(root / "stderr"),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _tail(path: Path) -> str:
    """The last ``MAX_CAPTURED_BYTES`` of a file, from the first line that starts in them: the line cut at the
    start could begin with the end of a key, which redaction no longer recognises (a window within one line
    loses its first ``_LINE_CUT`` characters instead)."""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - MAX_CAPTURED_BYTES))
        text = handle.read().decode("utf-8", errors="replace")
    if size <= MAX_CAPTURED_BYTES:
        return text
    rest = text.partition("\n")[2]
    return rest if rest.strip() else text[_LINE_CUT:]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def explain(execution: Execution, limits: Limits, secrets: Sequence[str] = ()) -> str:
    """One line saying how the program ended, without ``secrets``."""
    if execution.timed_out:
        return f"timed out after {limits.timeout_s:g} s; the process group was killed"
    code = execution.returncode
    if code == 0:
        return f"passed: exit status 0 in {execution.duration_s:.2f} s"
    if code is not None and code < 0:
        try:
            number = signal.Signals(-code)
        except ValueError:
            return f"killed by signal {-code}"
        if number == signal.SIGXCPU:
            return f"killed by SIGXCPU (the CPU time limit of {math.ceil(limits.timeout_s) + 1} s)"
        if number == signal.SIGXFSZ:
            return f"killed by SIGXFSZ (the file size limit of {FILE_SIZE_LIMIT // 2**20} MiB)"
        return f"killed by {number.name}"
    lines = [line.strip() for line in execution.stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no error message"
    said = f"exit status {code}: {redact_shown(last, secrets, 300)}"
    if f"[Errno {errno.EFBIG}]" in last:  # Python ignores SIGXFSZ: a write past the limit raises instead
        said += f" (a file it wrote, its stdout or stderr passed the file size limit of {FILE_SIZE_LIMIT // 2**20} MiB)"
    return said


class CodeExecutionScorer(Scorer):
    """Runs each output's code against its sample's tests; see the module docstring for the isolation."""

    def __init__(
        self, limits: Limits, test_field: str, entry_point_field: str, max_parallel: int, secrets: list[str]
    ) -> None:
        self.limits = limits
        self.test_field = test_field
        self.entry_point_field = entry_point_field
        self.secrets = secrets
        self._slots = asyncio.Semaphore(max_parallel)

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        if not isinstance(sample.input, str):
            raise ValueError(f"sample {sample.id}: the input must be the prompt text, not chat messages")
        test = self._field(sample, self.test_field)
        entry_point = self._field(sample, self.entry_point_field)
        code, found_in = extract_code(output, entry_point)
        program = build_program(sample.input, code, test, entry_point)
        async with self._slots:
            execution = await run_program(program, self.limits)
        explanation = explain(execution, self.limits, self.secrets)
        passed = execution.returncode == 0
        metadata: dict[str, Any] = {
            "code_from": found_in,
            "program": "preamble + completion" if defines(code, entry_point) else "prompt + completion",
            "duration_s": round(execution.duration_s, 3),
            "returncode": execution.returncode,
        }
        if not passed:
            for name in ("stderr", "stdout"):
                text = getattr(execution, name)
                if text.strip():
                    metadata[name] = redact_shown(text, self.secrets, RECORDED_CHARS, keep="tail")
        return Score(value=1.0 if passed else 0.0, answer=code, explanation=explanation, metadata=metadata)

    def notes(self, key: str) -> list[str]:
        if not _as_root():
            return []
        return [
            "warning: code_execution runs model-written code as root here, where its process limit does not hold "
            "(root ignores RLIMIT_NPROC and may raise its own limits): a program may start processes that outlive "
            "the run, or signal eval-harness itself; run code evaluations as an unprivileged user, in a container "
            "without credentials or network"
        ]

    @staticmethod
    def _field(sample: Sample, name: str) -> str:
        value = sample.metadata.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"sample {sample.id} has no text in metadata.{name}")
        return value


def sample_code_problems(
    sample: Sample, test_field: str = "test", entry_point_field: str = "entry_point"
) -> list[tuple[str, str]]:
    """What is wrong with ``sample``'s test code and entry point for the ``code_execution`` scorer, as ``(place,
    message)``: what scoring it would fail with (after the model's answer was paid for), found before a run
    (``validate-dataset --task``)."""
    problems = []
    for name in (test_field, entry_point_field):
        value = sample.metadata.get(name)
        if value is None:
            problems.append((f"metadata.{name}", "missing: the code_execution scorer reads it"))
        elif not isinstance(value, str):
            problems.append((f"metadata.{name}", f"expected text, got {json.dumps(value)[:60]}"))
        elif not value.strip():
            problems.append((f"metadata.{name}", "is empty"))
    entry_point = sample.metadata.get(entry_point_field)
    if isinstance(entry_point, str) and entry_point.strip() and not entry_point.isidentifier():
        problems.append((f"metadata.{entry_point_field}", f"{entry_point!r} is not a Python identifier"))
    return problems


@register_scorer("code_execution")
def code_execution_scorer(
    timeout_s: float = 10.0,
    memory_mb: int = 2048,
    test_field: str = "test",
    entry_point_field: str = "entry_point",
    allow_processes: bool = False,
    max_parallel: int | None = None,
    where: str = "task",
) -> Scorer:
    """Pass (1.0) when the output's code passes the sample's tests (``metadata.<test_field>`` defines
    ``check``, called with ``metadata.<entry_point_field>``). Refused unless EVAL_HARNESS_ALLOW_CODE_EXECUTION=1."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s:g}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb must be at least 64 (the interpreter needs it), got {memory_mb}")
    if max_parallel is not None and max_parallel < 1:
        raise ValueError(f"max_parallel must be at least 1, got {max_parallel}")
    for name, value in (("test_field", test_field), ("entry_point_field", entry_point_field)):
        if not value.strip():
            raise ValueError(f"{name} is empty")
    if not allowed():  # after the arguments: a check for a machine that may run code checks them here too
        given = os.environ.get(ALLOW_VARIABLE)
        got = (
            f" (it is {given!r}; only 1 enables it)"
            if given is not None
            else " (a .env entry does not count: turning it on is a decision for each shell)"
        )
        unavailable_here(
            f"{where}: scorer 'code_execution': disabled: this scorer executes model-written code on this machine, "
            "with resource limits but no network or filesystem isolation; run the evaluation in a container or VM "
            f"without credentials and set {ALLOW_VARIABLE}=1 in the environment to allow it{got}"
        )
    limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb, allow_processes=allow_processes)
    parallel = max_parallel or os.cpu_count() or 1
    return CodeExecutionScorer(limits, test_field, entry_point_field, parallel, Settings.load().secrets())


__all__ = [
    "ALLOW_VARIABLE",
    "FILE_SIZE_LIMIT",
    "MAX_CAPTURED_BYTES",
    "RECORDED_CHARS",
    "CodeExecutionScorer",
    "Execution",
    "Limits",
    "allowed",
    "build_program",
    "code_execution_scorer",
    "defines",
    "explain",
    "extract_code",
    "preamble",
    "run_program",
    "sample_code_problems",
]
