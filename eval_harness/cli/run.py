"""``eval-harness run`` and ``eval-harness resume``."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer

from eval_harness.cli import EXIT_INTERRUPTED, visible
from eval_harness.cli.gate_options import FailBelow, FailBelowAxis, GateOn, MaxErrorRate, ResumedGateOn
from eval_harness.errors import ConfigError

if TYPE_CHECKING:
    from eval_harness.planning import RunPlan, SessionOverrides
    from eval_harness.runner import Progress, RunResult
    from eval_harness.types import GateSettings


# Options shared by `run` and `resume`, declared once.
ModelArg = Annotated[
    list[str] | None, typer.Option("--model-arg", metavar="KEY=VALUE", help="Provider option KEY=VALUE (repeatable).")
]
RetryErrors = Annotated[bool, typer.Option("--retry-errors", help="Re-run samples whose record holds an error.")]
Force = Annotated[bool, typer.Option("--force", help="Resume although the dataset/template/scorers/model changed.")]


def _budget(value: float | None) -> float | None:
    if value is not None and not (value >= 0 and math.isfinite(value)):  # NaN fails both comparisons
        raise typer.BadParameter(f"must be 0 (no limit) or a positive number, got {value:g}")
    return value


def _temperature(value: float | None) -> float | None:
    if value is not None and not 0 <= value <= 2:  # the widest range an API takes (OpenAI's); NaN fails it
        raise typer.BadParameter(f"must be between 0 and 2, got {value:g}")
    return value


def timeout_seconds(value: float | None) -> float | None:
    """A ``--timeout``: finite and at least a millisecond (typer's own bound said "greater than or equal to 0.001"
    of a NaN)."""
    if value is not None and not (math.isfinite(value) and value >= 0.001):
        raise typer.BadParameter(f"must be a number of seconds of at least 0.001, got {value:g}")
    return value


MAX_CONCURRENCY = 100_000  # config.MAX_CONCURRENCY, written out: the CLI module is imported without pydantic
MAX_EPOCHS = 1_000  # config.MAX_EPOCHS, likewise
# 0 is "no limit" and --no-cache "no cache", so that a resume can switch off what the run recorded.
Rpm = Annotated[
    float | None, typer.Option(callback=_budget, help="Client-side limit: requests per minute (0: no limit).")
]
Tpm = Annotated[
    float | None, typer.Option(callback=_budget, help="Client-side limit: tokens per minute (0: no limit).")
]
Cache = Annotated[
    bool | None, typer.Option("--cache/--no-cache", help="Serve repeated requests from the on-disk cache.")
]
MaxRetries = Annotated[int | None, typer.Option(min=0, help="Retries of a transient provider error (default 5).")]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress and no profile table: stdout gets the run directory only.")
]
NoGates = Annotated[
    bool,
    typer.Option(
        "--no-gates",
        help="Resume: drop the gates the run recorded (for later resumes too); gates given with it apply instead.",
    ),
]


class _Display(Protocol):
    def update(self, progress: Progress) -> None: ...

    def note(self, message: str) -> None: ...


class _QuietDisplay:
    """``--quiet``: no progress; notes as plain lines on stderr. The views (and rich) are never imported."""

    def update(self, progress: Progress) -> None:
        pass

    def note(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)


def _interrupted_complete(result: RunResult, when: str) -> str:
    """What an interrupt of a complete run says: the records and the summary are written, and "interrupted"
    alone would read as a run to resume."""
    return f"interrupted{when}; the run is complete: eval-harness report --run {result.run_dir}"


class _Interrupts:
    """SIGINT and SIGTERM from the run's start until its result is shown, taken by one handler of Python's own
    (not the event loop's, whose handlers go when asyncio.run closes the loop, leaving gaps where an interrupt
    was a traceback, exit 1, a bare "interrupted" for a complete run, or a silent kill).

    The first asks the runner to stop (through the loop); once the runner has returned it is counted, and
    ``release`` raises it where the result is shown, which says what it means ("the run is complete"). A second
    quits at once. After ``release``, in the eval-harness process, an interrupt quits at once too, saying what
    the run is (complete, or the command that resumes it); called in-process, the host's handlers come back."""

    def __init__(self) -> None:
        self.count = 0
        self.signal_name = "Ctrl-C"
        """How the first interrupt came: "Ctrl-C" or "SIGTERM" (a CI runner's timeout: no key was pressed)."""
        self.stop: Callable[[str], None] | None = None
        """Asks the runner to stop (set while it runs)."""
        self.resume_hint: str | None = None
        """The command that resumes the run, said when a second interrupt quits before the run has stopped."""
        self.display_live = False
        """Whether the progress display is on screen (it hides the cursor, which quitting at once must show)."""
        self.result: RunResult | None = None
        """The runner's result, once it has returned."""
        self.at_end = False
        """Whether ``release`` raised an interrupt that came as the run ended."""
        self.quiet_run_dir: Path | None = None
        """A quiet run's directory until it is on stdout: the one line it owes, however it ends."""
        self._saved: dict[int, Any] = {}

    def take(self) -> None:
        """Handle SIGINT and SIGTERM from here (the main thread's to set; elsewhere they stay as they are)."""
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous = signal.getsignal(sig)
                if previous is signal.SIG_IGN:  # ignored when the process started (a script's background job)
                    continue
                self._saved[sig] = previous
                signal.signal(sig, self._arrived)

    def _arrived(self, signum: int, frame: object) -> None:
        self.count += 1
        if self.count > 1:  # the second: at once, what is written stays valid
            self._quit(signum, frame)
        self.signal_name = "SIGTERM" if signum == 15 else "Ctrl-C"
        stop = self.stop
        if self.result is None and stop is not None:  # else the runner is not running yet (it stops at once) or
            stop(self.signal_name)  # has ended: counted

    def release(self) -> None:
        """The handlers as they were (in the eval-harness process: one that quits at once); an interrupt that
        came as the run ended is raised now, for a complete run only: another run says what it is anyway."""
        import signal

        from eval_harness.cli.launch import entered_as_process

        result = self.result
        for sig, handler in self._saved.items():
            signal.signal(sig, self._quit if entered_as_process() else handler)
        self._saved.clear()
        if self.count and result is not None and result.status == "complete":
            self.count = 0
            self.at_end = True
            raise KeyboardInterrupt

    def say_run_dir(self) -> None:
        """A quiet run's one line on stdout, its directory (once: taken before it is written, so an interrupt that
        lands while it is written does not write it again, nor into the same buffer)."""
        run_dir, self.quiet_run_dir = self.quiet_run_dir, None
        if run_dir is not None:
            print(run_dir, flush=True)

    def _quit(self, signum: int, frame: object) -> None:
        result = self.result
        if result is not None or self.resume_hint is not None:
            # the run exists (stopping, stopped or complete): a script reading RUN=$(eval-harness run -q) needs it
            # most when the run was cut short
            with contextlib.suppress(OSError, ValueError, RuntimeError):  # stdout closed, or mid-write
                self.say_run_dir()
        if result is not None and result.status == "complete":
            said = _interrupted_complete(result, "")
        elif self.resume_hint is not None:  # the run is stopping, or has stopped short of complete
            said = f"interrupted; resume with: {self.resume_hint}"
        else:
            said = "interrupted"
        # the progress display, cut short, would leave its line unended and the terminal's cursor hidden
        live = "\x1b[?25h\n" if self.display_live and os.isatty(2) else ""
        with contextlib.suppress(OSError):
            os.write(2, f"{live}{said}\n".encode())
        os._exit(EXIT_INTERRUPTED)


async def _execute(plan: RunPlan, display: _Display, interrupts: _Interrupts) -> RunResult:
    import asyncio

    from eval_harness.runner import Runner, resume_command

    runner = Runner(plan, display)
    loop = asyncio.get_running_loop()

    def stop(again: str) -> None:
        runner.request_stop()  # first: saying so may fail (a closed stderr), stopping must not
        display.note(
            f"stopping: no new samples; in-flight ones get {plan.config.grace_s:g}s to finish "
            f"({again} again to quit at once; what is written stays valid)"
        )

    def stop_soon(again: str) -> None:
        # the handler runs on the main thread between two steps of the loop's own code: the loop does the stopping,
        # and the workers take no sample more meanwhile
        runner.ask_stop()
        loop.call_soon_threadsafe(stop, again)

    interrupts.resume_hint = resume_command(
        plan.run_dir, plan.session_model_args, plan.retry_errors, plan.session_judge_args
    )
    interrupts.stop = stop_soon
    if interrupts.count:  # it came while the run was being set up: stop now
        stop(interrupts.signal_name)
    try:
        interrupts.result = await runner.run()
    finally:
        interrupts.stop = None  # the loop is about to close: an interrupt from here is counted, never sent to it
    return interrupts.result


def finish_run(ended: tuple[RunResult, _Interrupts], gates: GateSettings, quiet: bool) -> None:
    """Show the result and turn it into the exit code: 130 interrupted, 2 failed, 1 a failed gate."""
    from eval_harness.cli.stream_guard import verdict_follows
    from eval_harness.gates import evaluate_gates, gate_failure

    result, end = ended
    verdict_follows()  # stopped, failed, gated: each is said after the result
    try:
        end.release()  # an interrupt that came as a complete run ended is raised here
        # the one line a quiet run writes to stdout, whatever follows (interrupted, failed gate): the directory a
        # script's next step reads, which a default run id (time and random suffix) leaves it no way to guess
        end.say_run_dir()
        if not quiet:
            _show_result(result)
    except KeyboardInterrupt:
        if result.status != "complete":
            raise
        end.say_run_dir()
        when = "as the run ended" if end.at_end else "while the result was shown"
        print(_interrupted_complete(result, f" {when}"), file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if result.new_records and result.session_errors == result.new_records and result.fatal is None:
        _tell(
            f"warning: every sample of this session failed ({result.new_records:,}); the first: "
            f"{result.first_error}; see eval-harness inspect --run {result.run_dir} --errors"
        )
    elif result.summary.overall.errors and result.status == "complete" and result.fatal is None:
        # they count as wrong answers; a plain resume of a complete run keeps them, and nothing else says how
        _tell(_errors_note(result))
    if result.length_stops:
        print(_length_warning(result), file=sys.stderr)
    if result.cache_failures:
        one = result.cache_failures == 1
        answers, they, them = (
            ("1 answer", "it was", "it") if one else (f"{result.cache_failures:,} answers", "they were", "them")
        )
        print(
            f"warning: {answers} could not be stored in the response cache ({result.cache_failure}); {they} "
            f"recorded, but a later run will call the model for {them} again",
            file=sys.stderr,
        )
    if result.context_window_stops:
        from eval_harness.tally import CONTEXT_WINDOW_ADVICE

        print(
            f"warning: {result.context_window_stops:,} of {result.answers:,} answers stopped at the model's context "
            f"window (finish_reason model_context_window_exceeded): {CONTEXT_WINDOW_ADVICE}",
            file=sys.stderr,
        )
    if result.fatal is not None:
        if result.session_errors:
            # a server that held its connections silent until they timed out, then refused: its stop line counts
            # only the samples cut while it refused, and a plain resume keeps every error as the sample's record
            errors = "1 record is an error" if result.session_errors == 1 else f"{result.session_errors:,} are errors"
            _tell(
                f"note: of the records this session wrote before it stopped, {errors} (the first: "
                f"{result.first_error}); a plain resume keeps them: {_retrying(result.resume_command)} runs them "
                "again"
            )
        raise ConfigError(f"run failed: {result.fatal}")
    if result.status == "interrupted":
        print(f"interrupted; resume with: {result.resume_command}", file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED)
    failure = gate_failure(evaluate_gates(result.summary, gates))
    if failure is not None:
        raise failure


def _show_result(result: RunResult) -> None:
    """A run's profile (not quiet), and the judge's reliability when it had a judge."""
    from eval_harness.cli.render import run as run_views

    run_views.print_result(result)
    if result.manifest.judge is not None:
        from eval_harness.cli.render import stdout
        from eval_harness.cli.render.profile import reliability_table
        from eval_harness.report import run_judge_reliability

        figures = run_judge_reliability(result.run_dir, result.manifest)
        if figures:
            stdout.print(reliability_table(figures))


def _tell(text: str) -> None:
    """``text`` on stderr with its control characters shown, not sent: a sample id, a dataset's line, an axis or a
    server's message quoted in a note may hold an escape sequence."""
    print(visible(text), file=sys.stderr)


def _errors_note(result: RunResult) -> str:
    """The error records of a complete run (every session's), which count as wrong, and what runs them again:
    a retry for failed calls; for scoring errors, a look first (a retry scores the same answer alike); for a
    rescore's records without an answer, a retry of its source (the rescore calls no model)."""
    errors = result.summary.overall.errors
    one = errors == 1
    counted = "1 record is an error, which counts" if one else f"{errors:,} records are errors, which count"
    if result.first_error is None:  # this session wrote none of them
        first = ", all written by earlier sessions"
    elif result.session_errors == errors:
        first = f" (the first: {result.first_error})"
    else:
        first = f" ({result.session_errors:,} written by this session, the first: {result.first_error})"
    them, retrying = "it" if one else "them", _retrying(result.resume_command)
    source = result.manifest.source_run
    scoring_only = result.session_errors and result.answers == result.new_records  # every answer there: scoring failed
    if source is not None and not scoring_only:
        # this session's records may say which they are; a session that wrote none cannot: say both
        retry = "" if result.answers < result.new_records else f"{retrying} scores a scoring error again; "
        again = (
            f"{retry}those without an answer are its source's generation errors, which a rescore cannot run again: "
            f"eval-harness resume {shlex.quote(source)} --retry-errors, then rescore it anew"
        )
    elif scoring_only:
        again = (
            f"see {them} with eval-harness inspect --run {result.run_dir} --errors ({retrying} scores {them} again, "
            "which helps only where the failure passes, a judge's call)"
        )
    elif result.first_error is not None and _REFUSED.search(result.first_error):
        # a request the server refused (an over-long prompt's 400) is refused again as it is: a look first
        again = (
            f"see {them} with eval-harness inspect --run {result.run_dir} --errors: a request the server refused "
            f"(HTTP 4xx, as the first) is refused again unless it changes; {retrying} runs {them} again"
        )
    else:
        again = f"{retrying} runs {them} again"
    return f"note: {counted} as wrong{first}; {again}"


_REFUSED = re.compile(r"\bHTTP 4(?:0[0-7]|1[0-8]|2[0-8])\b")
"""An error message of a request the server refused as it was (a 4xx other than the transient 408, 409, 429)."""


def _retrying(command: str) -> str:
    """``command`` (a resume) with ``--retry-errors``, which a session that was retrying errors already gives."""
    return command if command.endswith(" --retry-errors") else f"{command} --retry-errors"


def _length_warning(result: RunResult) -> str:
    """A score of 0 from a wrong answer and from one cut off before its last line look alike: say how many
    answers of this session stopped at the length limit, and what set it."""
    from eval_harness.tally import SERVER_LIMIT, limit_said

    recorded = result.manifest.max_tokens_sent  # a rescore's: its source's; None in a run made before it was
    limit, sent = result.manifest.task.generation.max_tokens, recorded if recorded is not None else result.output_cap
    stopped = f"{result.length_stops:,} of {result.answers:,} answers stopped at the length limit"
    reason = result.length_stop_reason
    if limit is None and sent is None:
        return f"warning: {stopped} (finish_reason {reason}; {limit_said(limit, sent)}); they may be cut short"
    short = result.short_length_stops
    if short and short == result.length_stops:  # none of them reached max_tokens: raising it cannot help
        return (
            f"warning: {stopped} (finish_reason {reason}) with fewer completion tokens than max_tokens {limit:,}: "
            f"{SERVER_LIMIT}; shorten the prompts or give the server more context"
        )
    if result.manifest.source_run is not None:  # a rescore reads the source's answers: it has no --max-tokens
        advice = f"the answers of {result.manifest.source_run}; a new run with a larger --max-tokens answers anew"
    else:
        advice = "raise --max-tokens if they were cut short"
    also = f"; {short:,} of them stopped with fewer completion tokens than max_tokens: {SERVER_LIMIT}" if short else ""
    return f"warning: {stopped} (finish_reason {reason}, {limit_said(limit, sent)}); {advice}{also}"


def print_notes(plan: RunPlan) -> None:
    """What planning found worth saying before the run starts (few-shot, resumed settings...): on stderr."""
    for note in plan.notes:
        _tell(note)


def start_run(plan: RunPlan, quiet: bool) -> tuple[RunResult, _Interrupts]:
    """Execute the plan with a progress display and Ctrl-C handling; the result, and the interrupts handled
    until ``finish_run`` shows it (see ``_Interrupts``)."""
    import asyncio

    interrupts = _Interrupts()
    interrupts.take()
    try:
        if quiet:
            interrupts.quiet_run_dir = plan.run_dir
            asyncio.run(_execute(plan, _QuietDisplay(), interrupts))
        else:
            from eval_harness.cli.render import run as run_views

            label = f"{plan.manifest.model.id} · {plan.task.spec.name}"
            with run_views.ProgressDisplay(plan.expected_records, label) as display:
                interrupts.display_live = True
                try:
                    asyncio.run(_execute(plan, display, interrupts))
                finally:
                    interrupts.display_live = False
    except BaseException:
        interrupts.release()  # no result to show: the handlers as they were, for the error's own path
        raise
    assert interrupts.result is not None
    if interrupts.count and interrupts.result.status != "complete":
        interrupts.count = 0  # it came as the run stopped: the result says it was interrupted
    return interrupts.result, interrupts


def _generation_overrides(temperature: float | None, max_tokens: int | None) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if temperature is not None:
        overrides["temperature"] = temperature
    if max_tokens is not None:
        overrides["max_tokens"] = max_tokens
    return overrides


_FLAGS = {
    "task": "--task", "model": "--model", "model_args": "--model-arg", "dataset": "--dataset",
    "output_dir": "--output-dir", "run_id": "--run-id", "concurrency": "--concurrency", "epochs": "--epochs",
    "limit": "--limit", "limit_per_axis": "--limit-per-axis", "seed": "--seed", "timeout_s": "--timeout",
    "max_retries": "--max-retries",
    "generation": "--temperature/--max-tokens", "rpm": "--rpm", "tpm": "--tpm", "judge_model": "--judge-model",
    "judge_args": "--judge-arg", "cache": "--cache",
}  # fmt: skip
"""The flag that sets each RunConfig field, to name it in an error."""


_FIXED_BY_THE_RUN = {
    "task": "--task", "model": "--model", "dataset": "--dataset",
    "skip_invalid": "--skip-invalid", "run_id": "--run-id", "output_dir": "--output-dir", "epochs": "--epochs",
    "limit": "--limit", "limit_per_axis": "--limit-per-axis", "seed": "--seed", "temperature": "--temperature",
    "max_tokens": "--max-tokens",
    "dry_run_": "--dry-run", "judge_model": "--judge-model",
}  # fmt: skip
"""The options (parameter name: flag) a resumed run keeps from its manifest."""

FIXED_BY_THE_RUN = frozenset({*_FIXED_BY_THE_RUN.values(), "-t", "-m"})
"""The flags of a new run that a resume cannot take, short spellings included."""


def fixed_by_the_run(resuming: str, flags: list[str]) -> ConfigError:
    """The refusal of ``flags`` (a new run's) given to a resume: ``--resume continues results/r as it started, so
    --limit, --epochs cannot change it; drop them, or start a new run``."""
    them = "it" if len(flags) == 1 else "them"
    return ConfigError(
        f"{resuming} as it started, so {', '.join(flags)} cannot change it; drop {them}, or start a new run"
    )


def _given(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def run_command(
    ctx: typer.Context,
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="Task name (see 'eval-harness tasks') or spec path.")
    ] = None,
    model: Annotated[
        str, typer.Option("--model", "-m", help="provider/model, e.g. mock/strong, openai/gpt-4o-mini.")
    ] = "mock/default",
    model_arg: ModelArg = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            help="Dataset file overriding the task's own, or a directory whose files of the task's format are read "
            "in name order as one dataset."
        ),
    ] = None,
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid", help="Run the valid lines of a dataset with problems (counted in the manifest)."
        ),
    ] = False,
    output_dir: Annotated[Path, typer.Option(help="Where run directories are created.")] = Path("results"),
    run_id: Annotated[str | None, typer.Option(help="Run directory name (default: timestamp + suffix).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY, help="Samples in flight at most.")] = 16,
    epochs: Annotated[int, typer.Option(min=1, max=MAX_EPOCHS, help="Run each sample K times.")] = 1,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N samples.")] = None,
    limit_per_axis: Annotated[
        int | None,
        typer.Option(
            min=1, help="Only the first N samples of each axis (a quick run over every subject; --limit then applies)."
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            min=-(2**63),
            max=2**63 - 1,
            help="Seed of the mock provider's draws. Not sent to APIs: a task's [generation] seed is.",
        ),
    ] = 0,
    timeout: Annotated[
        float,
        typer.Option(
            callback=timeout_seconds,
            help="Per-sample timeout in seconds, applied to generation (retries included; it starts when the "
            "sample's first request may be sent — waiting for --rpm/--tpm, or a run-wide pause after a 429, at most "
            "60 s, is not counted) and then, as a budget of its own, to scoring.",
        ),
    ] = 120.0,
    max_retries: MaxRetries = None,
    temperature: Annotated[float | None, typer.Option(callback=_temperature, help="Sampling temperature.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Max output tokens.")] = None,
    dry_run_: Annotated[
        bool, typer.Option("--dry-run", help="Render prompts and estimate cost; call nothing.")
    ] = False,
    fail_below: FailBelow = None,
    fail_below_axis: FailBelowAxis = None,
    gate_on: GateOn = "mean",
    max_error_rate: MaxErrorRate = None,
    no_gates: NoGates = False,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue the run in this directory.")] = None,
    retry_errors: RetryErrors = False,
    force: Force = False,
    rpm: Rpm = None,
    tpm: Tpm = None,
    cache: Cache = None,
    judge_model: Annotated[str | None, typer.Option(help="provider/model for judge scorers.")] = None,
    judge_arg: Annotated[
        list[str] | None, typer.Option("--judge-arg", metavar="KEY=VALUE", help="Judge option KEY=VALUE (repeatable).")
    ] = None,
    quiet: Quiet = False,
) -> None:
    """Run a task against a model and write results/<run_id>/ (manifest, samples.jsonl, summary)."""
    from eval_harness.gates import check_basis_used, gates_from_flags

    gates = gates_from_flags(fail_below, fail_below_axis, gate_on, max_error_rate)  # bad flags fail first
    if resume is None:
        check_basis_used(gates)
        for on, refusal in (
            (no_gates, "--no-gates drops the gates a run recorded, for --resume; a new run has none to drop"),
            (retry_errors, "--retry-errors runs a run's error records again, for --resume; a new run has none"),
            (force, "--force resumes a run whose inputs changed, for --resume; a new run has nothing to force"),
        ):
            if on:  # silently accepted, it would read as done
                raise ConfigError(refusal)
    if resume is not None:
        # an option given at all is refused, even at its default value: "--epochs 1" on a run of 3 epochs
        # would otherwise be ignored without a word
        given = [flag for name, flag in _FIXED_BY_THE_RUN.items() if _given(ctx, name)]
        if given:
            raise fixed_by_the_run(f"--resume continues {resume}", given)
        # concurrency and timeout have defaults here (a new run's): only values given replace the recorded ones
        from eval_harness.planning import SessionOverrides

        overrides = SessionOverrides(
            concurrency=concurrency if _given(ctx, "concurrency") else None,
            timeout_s=timeout if _given(ctx, "timeout") else None,
            max_retries=max_retries,
            rpm=rpm,
            tpm=tpm,
            cache=cache,
        )
        resumed_gates = _Gates(_gates_given(gates, _given(ctx, "gate_on")), not no_gates)
        _resume(resume, overrides, model_arg, retry_errors, force, resumed_gates, quiet, judge_arg)
        return
    from pydantic import ValidationError

    from eval_harness.config import RunConfig, invalid_config, parse_key_values
    from eval_harness.planning import dry_run, plan_run

    if task is None:
        raise ConfigError("--task is required (or --resume RUN_DIR); see 'eval-harness tasks'")
    try:
        config = RunConfig(
            task=task,
            model=model,
            model_args=parse_key_values(model_arg or [], "--model-arg"),
            dataset=dataset,
            skip_invalid=skip_invalid,
            output_dir=output_dir,
            run_id=run_id,
            concurrency=concurrency,
            epochs=epochs,
            limit=limit,
            limit_per_axis=limit_per_axis,
            seed=seed,
            timeout_s=timeout,
            max_retries=5 if max_retries is None else max_retries,
            generation=_generation_overrides(temperature, max_tokens),
            rpm=rpm or None,
            tpm=tpm or None,
            cache=bool(cache),
            judge_model=judge_model,
            judge_args=parse_key_values(judge_arg or [], "--judge-arg"),
            dry_run=dry_run_,
        )
    except ValidationError as exc:
        raise invalid_config(exc, _FLAGS, "run") from None
    plan = plan_run(
        config, gates=gates if gates.active else None
    )  # recorded, so that a resume applies them; axes checked now
    print_notes(plan)
    if not plan.dataset_report.ok:
        from eval_harness.cli import render

        report = plan.dataset_report
        left_out = render.counted(report.problem_count, "line")
        render.stderr.print(f"--skip-invalid: leaving out {left_out} with problems:", markup=False)
        for line in report.problem_lines()[:10]:
            render.stderr.print(f"  {line}", markup=False)
    if dry_run_:
        from eval_harness.cli.render import run as run_views

        run_views.print_dry_run(dry_run(plan))
        return
    finish_run(start_run(plan, quiet), gates, quiet)


def _setting(value: Any) -> str:
    if value is None:  # only rpm and tpm may be None
        return "0 (no limit)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}"


_GATE_FLAGS = {
    "fail_below": "--fail-below", "fail_below_axis": "--fail-below-axis", "gate_on": "--gate-on",
    "max_error_rate": "--max-error-rate",
}  # fmt: skip
"""The flag of each GateSettings field."""


@dataclass(frozen=True)
class _Gates:
    """The gates of a resume as given: settings given now (GateSettings field: value), and whether the run's
    recorded gates stay (not with ``--no-gates``)."""

    given: dict[str, Any]
    keep: bool


def _gates_given(spec: GateSettings, gate_on_given: bool) -> dict[str, Any]:
    """The gate settings given on the command line, each to replace the run's recorded one."""
    given: dict[str, Any] = {}
    if spec.fail_below is not None:
        given["fail_below"] = spec.fail_below
    if spec.fail_below_axis:
        given["fail_below_axis"] = list(spec.fail_below_axis)
    if gate_on_given:
        given["gate_on"] = spec.gate_on
    if spec.max_error_rate is not None:
        given["max_error_rate"] = spec.max_error_rate
    return given


def _gate_setting(value: Any) -> str:
    if value is None or value == []:
        return "none"
    if isinstance(value, list):
        return " ".join(f"{axis}={threshold:.15g}" for axis, threshold in value)
    return value if isinstance(value, str) else f"{value:.15g}"


def _gate_notes(plan: RunPlan, gates: _Gates) -> list[str]:
    """What a resume says of its gates: the recorded ones it drops (--no-gates), each one given anew that
    replaces (or adds to) them, and the recorded ones that still apply, which its printed command leaves out."""
    from eval_harness.gates import gate_flags
    from eval_harness.planning import gate_changes
    from eval_harness.types import GateSettings

    recorded = plan.manifest.gates
    notes = []
    if recorded is not None and not gates.keep:
        notes.append(
            f"resume: --no-gates drops the run's recorded gates ({' '.join(gate_flags(recorded))}) for this session "
            "and later resumes"
        )
    base = recorded if gates.keep else None
    for name, (before, now) in gate_changes(base, plan.gates).items():
        shown = f"{_GATE_FLAGS[name]} {_gate_setting(now)}"
        if base is None or before is None or before == []:
            notes.append(f"resume: {shown} is added to the run's gates (kept for later resumes)")
        else:
            recorded_value = _gate_setting(before)
            notes.append(f"resume: {shown} replaces the run's recorded {recorded_value} for this and later resumes")
    if base is not None and plan.gates is not None:
        kept = GateSettings.model_validate({k: v for k, v in base.model_dump().items() if k not in gates.given})
        if gate_flags(kept):
            notes.append(f"resume: the run's recorded gates apply: {' '.join(gate_flags(kept))}")
    return notes


def _resume(
    run_dir: Path,
    overrides: SessionOverrides,
    model_arg: list[str] | None,
    retry_errors: bool,
    force: bool,
    gates: _Gates,
    quiet: bool,
    judge_arg: list[str] | None = None,
) -> None:
    from eval_harness.config import parse_key_values
    from eval_harness.gates import check_basis_used
    from eval_harness.planning import plan_resume, replaced_settings
    from eval_harness.types import GateSettings, is_args_change, roles_with_args_changed

    plan = plan_resume(
        run_dir, overrides, retry_errors=retry_errors, force=force,
        model_args=parse_key_values(model_arg or [], "--model-arg"), gates=gates.given, keep_gates=gates.keep,
        judge_args=parse_key_values(judge_arg or [], "--judge-arg"),
    )  # fmt: skip
    if gates.given.get("gate_on") == "ci-low":  # it re-bases the recorded gates: there must be one it applies to
        check_basis_used(plan.gates or GateSettings(gate_on="ci-low"))
    print_notes(plan)
    for name, (recorded, now) in replaced_settings(plan).items():
        print(
            f"resume: {_FLAGS[name]} {_setting(now)} replaces the run's recorded {_setting(recorded)} for this and "
            "later resumes",
            file=sys.stderr,
        )
    for note in _gate_notes(plan, gates):
        _tell(note)
    if plan.forced:
        _tell(f"--force: resuming although {'; '.join(plan.forced)}")
    args_changed = " and ".join(roles_with_args_changed(plan.forced))  # model, judge, model and judge, or ""
    if any(not is_args_change(change) for change in plan.forced):
        # the manifest records what the run started with: the next resume finds the same change again
        print(
            "resume: the manifest keeps what the run started with (of a forced change, only the new arguments of "
            "the model and the judge are recorded): a later resume needs --force again",
            file=sys.stderr,
        )
    if plan.model_update is not None:
        print(f"resume: the {args_changed}'s new arguments are recorded: later resumes keep them", file=sys.stderr)
    elif args_changed:
        print(
            f"resume: the {args_changed}'s new arguments hold for this session only (a scorer's file changed as "
            "well, so the run's fingerprint cannot be remade with them): give them again to a later resume",
            file=sys.stderr,
        )
    finish_run(start_run(plan, quiet), plan.gates or GateSettings(), quiet)


def resume_command(
    ctx: typer.Context,
    run_dir: Annotated[Path, typer.Argument(help="The run directory, e.g. results/<run_id>.")],
    concurrency: Annotated[
        int | None, typer.Option(min=1, max=MAX_CONCURRENCY, help="Samples in flight (default: as before).")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(callback=timeout_seconds, help="Per-sample timeout in seconds (generation, then scoring)."),
    ] = None,
    retry_errors: RetryErrors = False,
    force: Force = False,
    max_retries: MaxRetries = None,
    rpm: Rpm = None,
    tpm: Tpm = None,
    cache: Cache = None,
    model_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--model-arg",
            metavar="KEY=VALUE",
            help="Provider option KEY=VALUE replacing the recorded one (repeatable), e.g. a new base_url; a changed "
            "one needs --force, and holds for later resumes; stream, timeouts, max_response_bytes, http_transport, "
            "api_key_env, api_key_header and api_key_query need no --force and hold for this session only.",
        ),
    ] = None,
    judge_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-arg",
            metavar="KEY=VALUE",
            help="Judge option KEY=VALUE replacing the recorded one (repeatable), as --model-arg does for the model: "
            "e.g. the judge's api_key, or a new base_url (with --force).",
        ),
    ] = None,
    fail_below: FailBelow = None,
    fail_below_axis: FailBelowAxis = None,
    gate_on: ResumedGateOn = "mean",
    max_error_rate: MaxErrorRate = None,
    no_gates: NoGates = False,
    quiet: Quiet = False,
) -> None:
    """Continue an interrupted run: skip every recorded (sample_id, epoch), run the rest, append. The run's
    recorded gates apply unless given anew."""
    from eval_harness.gates import gates_from_flags
    from eval_harness.planning import SessionOverrides

    gates = gates_from_flags(fail_below, fail_below_axis, gate_on, max_error_rate)
    overrides = SessionOverrides(
        concurrency=concurrency, timeout_s=timeout, max_retries=max_retries, rpm=rpm, tpm=tpm, cache=cache
    )
    given = _Gates(_gates_given(gates, _given(ctx, "gate_on")), not no_gates)
    _resume(run_dir, overrides, model_arg, retry_errors, force, given, quiet, judge_arg)


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("resume")(resume_command)


__all__ = [
    "FIXED_BY_THE_RUN",
    "finish_run",
    "fixed_by_the_run",
    "print_notes",
    "register",
    "resume_command",
    "run_command",
    "start_run",
    "timeout_seconds",
]
