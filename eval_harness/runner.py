"""The run loop: stream samples through template → provider → scorers into the crash-safe artifact.

``Runner.run`` executes a plan (see ``eval_harness.planning``, which checks everything before a single call
is made): it keeps at most ``concurrency`` samples in flight with a fixed pool of worker coroutines pulling
from one stream, so memory does not grow with the dataset.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import shlex
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from eval_harness.artifacts import (
    KeyScan,
    RunLock,
    RunPaths,
    SampleWriter,
    check_run_files,
    iter_record_dicts,
    open_run_file,
    read_manifest,
    read_resume_point,
    record_key,
    repair_tail,
    scan_keys,
    tail_digest,
    utc_now,
    write_model,
)
from eval_harness.cache import SCORED_EPOCH, Origin
from eval_harness.config import redact
from eval_harness.datasets import Position, dataset_members, dataset_stamp, file_stamp
from eval_harness.durable import remove_stale_temporaries, write_atomic
from eval_harness.errors import (
    ArtifactError,
    AuthenticationError,
    ConfigError,
    DatasetError,
    EvalHarnessError,
    ProviderContractError,
    ProviderError,
    ProviderTimeoutError,
    ReplayedError,
    TemplateError,
)
from eval_harness.frontier import START, FrontierTracker
from eval_harness.planning import RunPlan, session_settings, work_items
from eval_harness.providers.gateway import JUDGE_RETRY, SCORING_CALLS, CallTally, Gateway, ScoringCalls
from eval_harness.scorers.base import ScoringResult
from eval_harness.tally import CONTEXT_WINDOW_STOP, LENGTH_STOPS, SessionTally, stopped_short, was_billed
from eval_harness.types import (
    ChatMessage,
    Completion,
    ErrorInfo,
    GenerateRequest,
    ResumePoint,
    RunManifest,
    RunStatus,
    RunSummary,
    Sample,
    Usage,
)


def _import_aggregate_meanwhile() -> None:
    """Import the summary code (numpy and the column reader: ~0.3 s) in a thread while calls are in flight,
    instead of after the last one: a latency-bound run finishes that much sooner. Only when the summary
    will need it (a resumed session, or scores other than 0 and 1): on a busy event loop the importing
    thread and the loop trade the GIL at every write, which costs several times the import itself."""
    import threading

    threading.Thread(target=importlib.import_module, args=("eval_harness.aggregate",), daemon=True).start()


@dataclass
class Progress:
    """A snapshot for progress displays."""

    done: int
    total: int
    errors: int
    score_sum: float
    scored: int
    cost_usd: float
    cost_known: bool
    elapsed_s: float
    session_done: int
    session_errors: int = 0
    first_error: str | None = None
    """This session's first error record, as ``sample_id: type: message``."""
    session_unanswered: int = 0
    """This session's records without an answer (the call failed)."""
    session_length_stops: int = 0
    """This session's answers that stopped at the output-token limit (``tally.LENGTH_STOPS`` but the context
    window's)."""
    length_stop_reason: str | None = None
    """The finish reason the first of them reported (``length``, or Anthropic's ``max_tokens``)."""
    session_short_length_stops: int = 0
    """Those of them with fewer completion tokens than max_tokens: stopped by the server's own limit."""
    session_context_stops: int = 0
    """This session's answers that filled the model's context window (``tally.CONTEXT_WINDOW_STOP``)."""
    session_cached: int = 0
    """This session's records served from the response cache (or replayed hits): billed nothing."""

    @property
    def mean(self) -> float | None:
        """Mean final score of this session's scored samples."""
        return self.score_sum / self.scored if self.scored else None


class ProgressListener(Protocol):
    """Receives progress; the CLI renders it, tests may record it."""

    def update(self, progress: Progress) -> None: ...


@dataclass
class RunResult:
    """What a finished (or interrupted) session produced."""

    run_dir: Path
    manifest: RunManifest
    summary: RunSummary
    new_records: int
    skipped: int
    status: RunStatus
    fatal: str | None = None
    resumed_at_line: int | None = None
    """Dataset line this session started reading at when a resume point let it skip the lines before."""
    session_errors: int = 0
    """Records of this session that hold an error."""
    first_error: str | None = None
    """The first of them, as ``sample_id: type: message``."""
    answers: int = 0
    """Records of this session that hold an answer (its call did not fail)."""
    length_stops: int = 0
    """Answers of this session that stopped at the output-token limit: perhaps cut short."""
    length_stop_reason: str | None = None
    """The finish reason the first of them reported (``length``, or Anthropic's ``max_tokens``)."""
    short_length_stops: int = 0
    """Those of them with fewer completion tokens than max_tokens (``stopped_short``): not max_tokens's doing."""
    context_window_stops: int = 0
    """Answers of this session that filled the model's context window: cut short, whatever max_tokens."""
    session_model_args: dict[str, str] = field(default_factory=dict)
    """Options this session was given for itself alone (see ``RunPlan.session_model_args``)."""
    session_judge_args: dict[str, str] = field(default_factory=dict)
    """The same of the judge (see ``RunPlan.session_judge_args``)."""
    retry_errors: bool = False
    """Whether this session generated recorded errors again (``--retry-errors``)."""
    output_cap: int | None = None
    """The output limit each call was sent (the task's max_tokens, plus any room to think or reason)."""
    cache_failures: int = 0
    """Answers of this session that could not be stored in the response cache."""
    cache_failure: str | None = None
    """Why the first of them could not (the OS's words)."""

    @property
    def resume_command(self) -> str:
        """The command that continues this run: with the options this session was given for itself alone, and
        ``--retry-errors`` when it was retrying errors (those it had not reached yet stay errors otherwise). A
        forced change that holds for one session only is not carried: stderr said so when the session began."""
        return resume_command(self.run_dir, self.session_model_args, self.retry_errors, self.session_judge_args)


def resume_command(
    run_dir: Path,
    session_model_args: Mapping[str, str],
    retry_errors: bool,
    session_judge_args: Mapping[str, str] | None = None,
) -> str:
    """``eval-harness resume RUN_DIR``, with the options a session was given for itself alone (the model's and
    the judge's) and ``--retry-errors`` when it was retrying errors (see ``RunResult.resume_command``)."""
    given = [
        f"{flag} {shlex.quote(f'{name}={text}')}"
        for flag, args in (("--model-arg", session_model_args), ("--judge-arg", session_judge_args or {}))
        for name, text in args.items()
    ]
    again = ["--retry-errors"] if retry_errors else []
    return " ".join(["eval-harness resume", shlex.quote(str(run_dir)), *given, *again])


def _starts_a_line(path: Path, offset: int) -> bool:
    """Whether ``offset`` is the first byte of a line of ``path`` (a resume point's frontier must be)."""
    if offset == 0:
        return True
    try:
        with path.open("rb") as handle:
            handle.seek(offset - 1)
            return handle.read(1) == b"\n"
    except (OSError, ValueError):
        return False


@dataclass
class _Start:
    """What a session knows before its first call: recorded keys, how many, and where to begin."""

    scan: KeyScan
    done_keys: int
    frontier: Position | None
    taken_before: int
    drop_point: bool = False
    """Whether the resume point must go once the session starts (it was not trusted, and would mislead a later one)."""


@dataclass(frozen=True)
class _Before:
    """The documents a resumed session rewrites, as it found them. A session refused at its end by a record that
    was there before it (the summary reads every line; the key scan does not), having appended none, puts them
    back: a refused command changes no artifact, and a complete run does not turn "failed"."""

    manifest: bytes
    resume_point: bytes | None

    @classmethod
    def of(cls, paths: RunPaths) -> _Before:
        with open_run_file(paths.manifest) as handle:
            manifest = handle.read()
        try:
            with open_run_file(paths.resume_point) as handle:
                point: bytes | None = handle.read()
        except (OSError, ArtifactError):
            point = None  # none, or none usable: read_resume_point ignored it
        return cls(manifest, point)

    def restore(self, paths: RunPaths) -> None:
        """Put the documents back; a disk that refuses leaves the ones the session wrote (the refusal still stands)."""
        with contextlib.suppress(OSError):
            write_atomic(paths.manifest, self.manifest)
            if self.resume_point is None:
                paths.resume_point.unlink(missing_ok=True)
            else:
                write_atomic(paths.resume_point, self.resume_point)


_YIELD_EVERY = 32
"""Records a worker writes before it gives the event loop a turn of its own (see ``Runner._worker``)."""


class Runner:
    """Executes a plan; ``request_stop`` (first Ctrl-C) drains in-flight samples and marks the run interrupted."""

    def __init__(self, plan: RunPlan, listener: ProgressListener | None = None) -> None:
        if plan.config.dry_run:  # planned without the key check: running it would call (and pay) or fail each sample
            raise ConfigError(
                "the plan is a dry run (RunConfig(dry_run=True)), which calls nothing: "
                "eval_harness.planning.dry_run(plan) estimates it; plan without dry_run to run it"
            )
        self.plan = plan
        self.listener = listener
        self.gateway = Gateway.from_config(plan.provider, plan.config)
        self._stop = asyncio.Event()
        self._stop_asked = False
        """Set by ``ask_stop`` where the event loop cannot run (a signal handler): read by every worker."""
        self._fatal: BaseException | None = None
        self._member_stamps: dict[str, tuple[int, int] | None] | None = None  # a dataset directory's, as first read
        self._writer: SampleWriter | None = None
        self._tally: SessionTally | None = None
        self._secrets = self.gateway.secrets
        self._threshold = plan.pass_threshold

    def ask_stop(self) -> None:
        """``request_stop`` from a signal handler, which runs between two steps of the loop and may not touch it:
        each worker stops taking samples at its next one (``request_stop``, called soon after by the loop, drains
        the samples in flight). Without it a worker whose samples never wait would go on until its next yield."""
        self._stop_asked = True

    @property
    def _stopping(self) -> bool:
        return self._stop_asked or self._stop.is_set()

    def request_stop(self) -> None:
        """Stop scheduling new samples; in-flight ones get ``grace_s`` to finish."""
        self._stop.set()

    async def run(self) -> RunResult:
        """Run the plan to completion, interruption or a fatal error; always leaves a valid artifact."""
        plan = self.plan
        paths = RunPaths(plan.run_dir)
        try:
            plan.run_dir.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise ArtifactError(f"cannot create the run directory {plan.run_dir}: a file is in the way") from None
        except OSError as exc:  # no permission, a full disk, a file where a folder should be: without errno's number
            raise ArtifactError(f"cannot create the run directory {plan.run_dir}: {exc.strerror or exc}") from None
        started = time.monotonic()
        check_run_files(paths)  # before the lock, whose taking already writes a file of the run
        with RunLock(plan.run_dir):
            self._check_unchanged_since_planned(paths)
            before = _Before.of(paths) if plan.resuming else None
            repair_tail(paths.samples)
            remove_stale_temporaries(paths.documents)  # a session killed mid-write left them
            if plan.resuming:
                _check_records(paths.samples, plan.manifest)
            # Records written to an empty artifact are the whole artifact: the summary can come from them,
            # unless epochs make each sample one unit of the intervals (the tally keeps no sample identity)
            fresh = not paths.samples.exists() or paths.samples.stat().st_size == 0
            self._tally = SessionTally() if fresh and plan.config.epochs == 1 else None
            start = self._resume_start(paths)
            previous = self._previous_outputs(paths.samples, start.scan) if plan.retry_errors else {}
            forced = [f"session {plan.manifest.sessions + 1}: {change}" for change in plan.forced]
            task_info = plan.manifest.task
            if task_info.prompt_inputs_sha256 is None:  # a run started before it was recorded: from now on
                task_info = task_info.model_copy(update={"prompt_inputs_sha256": plan.prompt_inputs_sha256})
            if task_info.dataset_reading is None:  # the same
                task_info = task_info.model_copy(update={"dataset_reading": plan.task.dataset_reading})
            update = plan.model_update
            # a forced change of the model's arguments holds for later resumes, which call the model as recorded
            anew: dict[str, Any] = {}
            if update is not None:
                anew |= {"model": update.model, "judge": update.judge, "fingerprint": update.fingerprint}
            if plan.dataset_update is not None:
                anew["dataset"] = plan.dataset_update
            if plan.expected_update is not None:
                anew["expected_records"] = plan.expected_update
            manifest = plan.manifest.model_copy(
                update={
                    "task": task_info,
                    "status": "running",
                    "updated_at": utc_now(),
                    "sessions": plan.manifest.sessions + 1,
                    **session_settings(plan.config),  # as this session runs: what the next resume keeps
                    "gates": plan.gates,
                    **anew,
                    "forced_changes": [*plan.manifest.forced_changes, *forced],
                }
            )
            if start.drop_point:
                # this session appends records of samples before that point's frontier: a later session trusting
                # the point would count them as beyond it and never reach them, and so never write a point again
                with contextlib.suppress(OSError):
                    paths.resume_point.unlink()
            write_model(paths.manifest, manifest)
            origin = Origin(str(plan.run_dir.resolve()), manifest.sessions, manifest.created_at)
            for gateway in (self.gateway, plan.judge):
                if gateway is not None:
                    gateway.origin = origin
            self._writer = SampleWriter(paths.samples, plan.config.fsync_interval_s)
            scan = start.scan
            self._done_before = start.done_keys
            # records that replace an error record (--retry-errors) add no key to the done_keys count
            self._superseded = 0
            self._errored_before: set[str] = scan.errored if plan.retry_errors else set()
            # every key recorded before this session (an error to retry is not), beyond the start's frontier
            recorded_before = len(scan.done) - (len(scan.errored) if plan.retry_errors else 0)
            self._tracker = FrontierTracker(
                plan.config.epochs, start.frontier or START, start.taken_before, recorded_before
            )
            self._paths = paths
            self._progress = Progress(
                done=start.done_keys - (len(scan.errored) if plan.retry_errors else 0),
                total=manifest.expected_records,
                errors=0,
                score_sum=0.0,
                scored=0,
                cost_usd=0.0,
                cost_known=True,
                elapsed_s=0.0,
                session_done=0,
            )
            epochs = range(plan.config.epochs)
            tracker = self._tracker

            def recorded(key: str) -> bool:
                return key in scan.done and not (plan.retry_errors and key in scan.errored)

            def finished(sample_id: str, position: Position) -> bool:
                if all(recorded(record_key(sample_id, epoch)) for epoch in epochs):
                    tracker.seen(sample_id, position, epochs)
                    return True
                return False

            unchanged = self._dataset_watch()

            def todo() -> Iterator[_Work]:
                items = work_items(plan, finished if scan.done else None, start.frontier, start.taken_before)
                for position, sample, epoch in items:
                    if epoch == 0:
                        if not unchanged(position):
                            raise self._dataset_changed(position)
                        done = [e for e in epochs if recorded(record_key(sample.id, e))] if scan.done else []
                        tracker.seen(sample.id, position, done)
                    key = record_key(sample.id, epoch)
                    if not recorded(key):
                        yield sample, epoch, position, previous.get(key)

            if self._tally is None:
                _import_aggregate_meanwhile()
            try:
                await self._execute(todo(), started)
            finally:
                self._close_writer()
                self._write_resume_point()
            if self._fatal is None and not self._stopping:
                self._fatal = self.gateway.server_gone_at_end()
            if self._fatal is None and plan.dataset_stamp is not None:
                self._check_dataset_unchanged()
            status: RunStatus
            if self._fatal is not None:
                status = "failed"
            elif self._stopping:
                status = "interrupted"
            else:
                status = "complete"
            manifest = manifest.model_copy(
                update={
                    "status": status,
                    "updated_at": utc_now(),
                    "wall_time_s": round(manifest.wall_time_s + time.monotonic() - started, 3),
                }
            )
            try:
                # in a thread, so the event loop still answers a second Ctrl-C (exit at once) meanwhile
                summary = await asyncio.to_thread(self._summary, paths, manifest, status)
            except ArtifactError:
                # a line the key scan did not read cannot be summed up (another hand or tool changed it)
                if before is not None and self._writer.written == 0:
                    # and this session added none: the command is refused, so the run stays as it found it
                    before.restore(paths)
                else:  # the manifest says the session failed rather than that it is still running
                    with contextlib.suppress(ArtifactError):
                        write_model(paths.manifest, manifest.model_copy(update={"status": "failed"}))
                raise
            if status == "complete" and summary.missing > 0:
                status = "interrupted"
                if start.frontier is not None:
                    # Every sample after the resume point ran, yet records are missing: the point was wrong
                    # (edited, or damaged on disk). Drop it, so that the next resume reads everything.
                    with contextlib.suppress(OSError):
                        paths.resume_point.unlink()
                manifest = manifest.model_copy(update={"status": status})
                summary = summary.model_copy(update={"status": status})
            elif status == "interrupted" and summary.missing == 0:
                # a stop that came after the last record: nothing is left to resume (the CLI says it came late)
                status = "complete"
                manifest = manifest.model_copy(update={"status": status})
                summary = summary.model_copy(update={"status": status})
            unsaved = None
            try:
                write_model(paths.summary, summary)
                write_model(paths.manifest, manifest)
            except ArtifactError as exc:
                if self._fatal is None:
                    raise
                unsaved = exc  # the disk that failed the run refuses these too: report the cause first
        await self.gateway.aclose()
        if plan.judge is not None:
            await plan.judge.aclose()
        fatal = None
        if self._fatal is not None:
            fatal = _fatal_text(self._fatal) + (f"; then {unsaved}" if unsaved is not None else "")
            if isinstance(self._fatal, _SampleFailedError) and isinstance(self._fatal.__cause__, TemplateError):
                # a resume would stop at the same sample: what gets past it changes the run's template or dataset
                fatal += (
                    "; the records written are kept: fix the template or that sample's line, then: "
                    f"eval-harness resume {shlex.quote(str(plan.run_dir))} --force"
                )
            fatal = redact(fatal, self._secrets)
        already = start.done_keys - (len(start.scan.errored) if plan.retry_errors else 0)
        resumed_at = start.frontier.line if start.frontier is not None else None
        progress = self._progress
        return RunResult(
            plan.run_dir, manifest, summary, self._writer.written, already, status, fatal, resumed_at,
            progress.session_errors, progress.first_error,
            answers=progress.session_done - progress.session_unanswered,
            length_stops=progress.session_length_stops, length_stop_reason=progress.length_stop_reason,
            short_length_stops=progress.session_short_length_stops,
            context_window_stops=progress.session_context_stops, session_model_args=plan.session_model_args,
            session_judge_args=plan.session_judge_args,
            retry_errors=plan.retry_errors, output_cap=plan.provider.output_cap(plan.generation),
            cache_failures=self.gateway.cache_failures, cache_failure=self.gateway.cache_failure,
        )  # fmt: skip

    def _close_writer(self) -> None:
        assert self._writer is not None
        try:
            self._writer.close()
        except ArtifactError as exc:  # the last fsync failed: the records may not survive a power loss
            if self._fatal is None:
                self._fatal = exc

    def _check_unchanged_since_planned(self, paths: RunPaths) -> None:
        """Under the run's lock: the run is still as the plan found it. The plan's checks ran before the lock
        was taken, so another process may have written the run since (two runs given one --run-id; a session
        that ran and ended in between), and this one would append every key again or overwrite the manifest."""
        plan = self.plan
        if not plan.resuming:
            if paths.manifest.exists() or (paths.samples.exists() and paths.samples.stat().st_size > 0):
                raise ArtifactError(
                    f"{plan.run_dir} already exists (another process created it meanwhile); resume it with "
                    f"'eval-harness resume {plan.run_dir}' or pick another --run-id"
                )
        elif read_manifest(plan.run_dir) != plan.manifest:
            raise ArtifactError(
                f"{plan.run_dir}: another session wrote the run since this one read it; resume it again"
            )

    def _line_of(self, position: Position) -> str:
        """``file:line`` of the sample at ``position``: what to fix when it stops the run."""
        return f"{position.file_in(self.plan.dataset_path)}:{position.line}"

    def _dataset_watch(self) -> Callable[[Position], bool]:
        """Whether the dataset is still as the plan found it, asked for each sample as it is read (a stat of its
        file): a sample read after the file changed is never sent, so no record holds a line read half before
        and half after a rewrite (one whose derived id named no sample of either version stayed in the run and
        counted, beside the record of the line it was read in place of)."""
        plan = self.plan
        if plan.dataset_stamp is None:
            return lambda _position: True
        path = plan.dataset_path
        if not path.is_dir():
            return lambda _position: file_stamp(path) == plan.dataset_stamp
        try:
            members = self._member_stamps_now()
        except DatasetError:  # its files went or changed kind since the plan: changed, as the first sample says
            return lambda _position: False
        if dataset_stamp(path, plan.task.spec.dataset) != plan.dataset_stamp:  # changed before this session read
            return lambda _position: False
        self._member_stamps = members
        return lambda position: (
            position.member is None or file_stamp(path / position.member) == members.get(position.member)
        )

    def _dataset_changed(self, position: Position | None = None) -> DatasetError:
        path = self.plan.dataset_path
        kept = "its files" if self.plan.manifest.dataset.files else "the file"
        if position is None:  # each line was read before its file changed, or the change is of the files' list
            happened = "during the run, after the run had read what changed (every record is of a line as it was)"
            if (names := self._changed_members()) is not None:
                happened = f"during the run ({names}), after the run had read it (every record is of a line as it was)"
        else:
            at = f"{position.member}:{position.line}" if position.member else f"line {position.line}"
            happened = f"while the run read it: it stopped at {at} (every record is of a line read before the change)"
        return DatasetError(
            f"{path}: the dataset changed {happened}; keep {kept} unchanged during a run (a resume compares its "
            "sha256 and names what changed)"
        )

    def _member_stamps_now(self) -> dict[str, tuple[int, int] | None]:
        """Each file of the dataset directory by name, with its ``file_stamp``; ``DatasetError`` when the directory
        cannot be listed as the dataset's files."""
        return {m.name: file_stamp(m) for m in dataset_members(self.plan.dataset_path, self.plan.task.spec.dataset)}

    def _changed_members(self) -> str | None:
        """A dataset directory's files that changed since this session listed them, named ('q.jsonl changed, r.jsonl
        added'); None for a dataset of one file, or when the directory cannot be listed again."""
        before = self._member_stamps
        if before is None:
            return None
        try:
            now = self._member_stamps_now()
        except DatasetError:
            return None
        changes = [f"{name} changed" for name in before if name in now and now[name] != before[name]]
        changes += [f"{name} removed" for name in before if name not in now]
        changes += [f"{name} added" for name in now if name not in before]
        return ", ".join(changes) or None

    def _check_dataset_unchanged(self) -> None:
        if dataset_stamp(self.plan.dataset_path, self.plan.task.spec.dataset) != self.plan.dataset_stamp:
            self._fatal = self._dataset_changed()

    def _summary(self, paths: RunPaths, manifest: RunManifest, status: RunStatus) -> RunSummary:
        tally = self._tally
        if tally is not None and status == "complete":
            if tally.binary:
                return tally.summarize_binary(manifest)
            from eval_harness.aggregate import summarize_tally

            return summarize_tally(tally, manifest)
        from eval_harness.aggregate import summarize

        return summarize(paths.samples, manifest, keep_cache=True)  # the next session resumes from its cache

    def _resume_start(self, paths: RunPaths) -> _Start:
        """Where this session starts: the top for a new run; the resume point when it can be trusted, which
        spares reading the records and samples already done; else the top, after reading every record."""
        plan = self.plan
        if not plan.resuming:
            return _Start(KeyScan(), 0, None, 0)
        point = read_resume_point(plan.run_dir)
        trusted = (
            point is not None
            and not plan.retry_errors
            and not plan.forced
            and plan.manifest.dataset.seekable
            and plan.dataset_report.sha256 == plan.manifest.dataset.sha256
            and _starts_a_line(plan.dataset_path, point.frontier_offset)
        )
        if not trusted or point is None:
            scan = scan_keys(paths.samples, epochs=plan.config.epochs)
            drop = point is not None and (plan.retry_errors or bool(plan.forced))
            return _Start(scan, len(scan.done), None, 0, drop_point=drop)
        tail = scan_keys(paths.samples, start=point.samples_bytes, epochs=plan.config.epochs)
        tail.done.update(point.keys_beyond)
        frontier = Position(point.frontier_offset, point.frontier_line, -1)
        return _Start(tail, point.done_keys + tail.lines, frontier, point.taken_before_frontier)

    def _resume_point(self) -> dict[str, Any] | None:
        """What a resume point made now would say, but its digest (read once the bytes are durable)."""
        writer, tracker = self._writer, self._tracker
        if writer is None or not self.plan.manifest.dataset.seekable or self.plan.forced:
            # a forced session may read another dataset than the manifest's: its byte offsets would be trusted
            # against the original file once it is restored, and the samples between run again
            return None
        if tracker.unseen_recorded > 0:
            # records of samples this session has not reached would be left out of keys_beyond; the point on
            # disk (if any) stays, and stays true: it claims no more than the file then held
            return None
        return {
            "samples_bytes": writer.size,
            "done_keys": self._done_before + writer.written - self._superseded,
            "frontier_offset": tracker.frontier.offset,
            "frontier_line": tracker.frontier.line,
            "taken_before_frontier": tracker.taken_before,
            "keys_beyond": tracker.keys_beyond(),
        }

    def _store_resume_point(self, fields: dict[str, Any]) -> None:
        """Write the resume point; only ever after samples.jsonl is durable up to ``samples_bytes``.

        It only saves a resume time, so a disk that refuses it fails nothing: the previous point stays (the
        replacement is atomic), and it is still true, for it claims no more than the file then held."""
        with contextlib.suppress(OSError):
            digest = tail_digest(self._paths.samples, fields["samples_bytes"])
            point = ResumePoint(samples_digest=digest, **fields)
            write_atomic(self._paths.resume_point, point.model_dump_json().encode())

    def _sync_soon(self) -> None:
        """fsync in the writer's thread, then the resume point of this moment (so it never claims a record
        the file may still lose)."""
        assert self._writer is not None
        if self._writer.syncing:
            return  # the next record due will try again
        fields = self._resume_point()
        self._writer.sync_soon(None if fields is None else lambda _size: self._store_resume_point(fields))

    def _write_resume_point(self) -> None:
        """Record where a resume can start; called right after samples.jsonl was made durable."""
        fields = self._resume_point()
        if fields is not None:
            self._store_resume_point(fields)

    def _previous_outputs(self, path: Path, scan: KeyScan) -> dict[str, dict[str, Any]]:
        """Records with a scoring error whose output can be re-scored without calling the model."""
        if not scan.errored:
            return {}
        kept = {}
        for record in iter_record_dicts(path):
            key = record_key(record["sample_id"], record["epoch"])
            error = record.get("error") or {}
            if key in scan.errored and error.get("stage") == "score" and record.get("output") is not None:
                kept[key] = record
        return kept

    async def _execute(self, work: Iterator[_Work], started: float) -> None:
        self._deadlines = _Deadlines(self.plan.config.timeout_s)
        watchdog = asyncio.create_task(self._deadlines.watch())
        workers = [asyncio.create_task(self._worker(work, started)) for _ in range(self.plan.config.concurrency)]
        stop_wait = asyncio.create_task(self._stop.wait())
        everything = asyncio.gather(*workers)
        try:
            await asyncio.wait([everything, stop_wait], return_when=asyncio.FIRST_COMPLETED)  # type: ignore[type-var]
            if not everything.done():
                # a refused key or an unwritable artifact fails every answer still to come; anything else
                # (one sample's failure) leaves the answers in flight worth recording
                doomed = isinstance(self._fatal, AuthenticationError | ArtifactError)
                grace = 0.0 if doomed else self.plan.config.grace_s
                await asyncio.wait(workers, timeout=grace)
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
        finally:
            stop_wait.cancel()
            watchdog.cancel()
            if not everything.done():
                everything.cancel()
            await asyncio.gather(everything, stop_wait, watchdog, return_exceptions=True)

    async def _worker(self, work: Iterator[_Work], started: float) -> None:
        task = asyncio.current_task()
        assert task is not None
        since_yield = 0
        try:
            for sample, epoch, position, previous in work:
                if self._stopping:
                    return
                try:
                    record = await self._process(sample, epoch, position, previous, task)
                except AuthenticationError:
                    raise
                except Exception as exc:  # a template that fails on this sample's fields, a bug
                    raise _SampleFailedError(sample.id, epoch, self._line_of(position), exc) from exc
                self._append(record, started)
                since_yield += 1
                if since_yield == _YIELD_EVERY:
                    # a sample that never waits (a rescore's scorers, the mock at latency 0) gives the event loop no
                    # turn: what it runs (the progress display, the timeout watchdog, Ctrl-C's drain) would wait for
                    # the whole session
                    since_yield = 0
                    await asyncio.sleep(0)
        except Exception as exc:  # a refused key, an unwritable artifact, an unreadable dataset: stop them all
            if self._fatal is None:
                self._fatal = exc
            self._stop.set()

    def _append(self, record: dict[str, Any], started: float) -> None:
        assert self._writer is not None
        due = self._writer.append(record)
        self._tracker.recorded(record["sample_id"], record["epoch"])
        if self._errored_before and record_key(record["sample_id"], record["epoch"]) in self._errored_before:
            self._superseded += 1
        tally = self._tally
        if tally is not None:
            binary = tally.binary
            tally.add(record)
            if binary and not tally.binary:
                _import_aggregate_meanwhile()
        if due:
            self._sync_soon()
        progress = self._progress
        progress.done += 1
        progress.session_done += 1
        error = record["error"]
        if error is not None:
            progress.errors += 1
            progress.session_errors += 1
            if progress.first_error is None:
                progress.first_error = f"{record['sample_id']}: {error['type']}: {error['message']}"
            if record["output"] is None:
                progress.session_unanswered += 1
        finish = record["finish_reason"]
        if finish in LENGTH_STOPS:  # the one test every record pays: the rest is for the few cut short
            if finish == CONTEXT_WINDOW_STOP:
                progress.session_context_stops += 1
            else:
                progress.session_length_stops += 1
                if progress.length_stop_reason is None:
                    progress.length_stop_reason = finish
                if stopped_short(record["usage"]["completion_tokens"], self.plan.generation.max_tokens):
                    progress.session_short_length_stops += 1
        score = record["score"]
        if score is not None:
            progress.scored += 1
            progress.score_sum += score
        if record["cached"]:
            progress.session_cached += 1
        cost = record["cost_usd"]
        if cost is None:
            # as in the summary: a failed call billed nothing, so only a billed one without a price makes it unknown
            progress.cost_known = progress.cost_known and not was_billed(error is not None, record["latency_ms"])
        else:
            progress.cost_usd += cost
        progress.elapsed_s = time.monotonic() - started
        if self.listener is not None:
            self.listener.update(progress)

    async def _process(
        self, sample: Sample, epoch: int, position: Position, previous: dict[str, Any] | None, task: asyncio.Task[None]
    ) -> dict[str, Any]:
        plan = self.plan
        messages = plan.template.render(sample, plan.few_shot.for_member(position.member))
        if previous is not None:
            return await self._rescore(sample, epoch, position, messages, previous, task)
        request = GenerateRequest(
            messages=messages, config=plan.generation, sample=sample, epoch=epoch, seed=plan.config.seed
        )
        deadlines = self._deadlines
        # the sample's clock starts when its first request may be sent: queueing for --rpm/--tpm is not its time
        tally = CallTally(
            on_first_send=lambda: deadlines.start(task), on_queue=lambda waiting: deadlines.queued(task, waiting)
        )
        try:
            outcome = await self.gateway.generate(request, tally)
        except asyncio.CancelledError:
            if not deadlines.timed_out(task):
                raise  # not (only) the per-sample timeout: the run is being cancelled
            timeout = ProviderTimeoutError(f"no answer within the per-sample timeout of {plan.config.timeout_s:g}s")
            outcome = self.gateway.cancelled(tally, timeout)
        else:
            deadlines.finished(task)  # a provider that swallowed the watchdog's cancellation and answered: kept
        spent = (outcome.attempts, outcome.retries, round(outcome.backoff_s, 3))
        if outcome.completion is None:
            failure = outcome.error or ProviderError("no completion")
            error = self._generation_error(failure)
            request_id = redact(failure.request_id, self._secrets) if failure.request_id else None
            return _record(sample, epoch, position, messages, spent, error=error, request_id=request_id)
        return await self._scored(sample, epoch, position, messages, spent, outcome.completion, task)

    async def _scored(
        self,
        sample: Sample,
        epoch: int,
        position: Position,
        messages: list[ChatMessage],
        spent: _Spent,
        completion: Completion,
        task: asyncio.Task[None],
    ) -> dict[str, Any]:
        deadlines = self._deadlines
        deadlines.start(task)  # scoring's own budget (see _Deadlines): how long the model took is not its time
        partial = ScoringResult()
        scored = SCORED_EPOCH.set(epoch)  # a judge's cached answer belongs to this record's epoch
        calls = ScoringCalls(on_queue=lambda waiting: deadlines.queued(task, waiting))
        calling = SCORING_CALLS.set(calls)
        try:
            result = await self.plan.scoring.score(completion.text, sample, completion, into=partial)
        except asyncio.CancelledError:
            if not deadlines.timed_out(task):
                raise  # not (only) the per-sample timeout: the run is being cancelled
            result = self._scoring_timed_out(partial)
        except BaseException:
            deadlines.stop(task)  # a refused judge key, a bug: the run stops, and this budget with it
            raise
        else:
            deadlines.finished(task)  # a scorer that swallowed the watchdog's cancellation and finished: it stands
        finally:
            SCORING_CALLS.reset(calling)
            SCORED_EPOCH.reset(scored)
        spent = _with_judge_calls(spent, calls)
        error = result.error
        if error is not None:
            error = error.model_copy(update={"message": redact(error.message, self._secrets)})
        for key in result.skipped:  # a weight-0 scorer's failure is kept as its explanation: its message too
            result.explanations[key] = redact(result.explanations[key], self._secrets)
        return _record(sample, epoch, position, messages, spent, completion, result, error, self._threshold)

    async def _rescore(
        self,
        sample: Sample,
        epoch: int,
        position: Position,
        messages: list[ChatMessage],
        previous: dict[str, Any],
        task: asyncio.Task[None],
    ) -> dict[str, Any]:
        completion = Completion(
            text=previous["output"],
            finish_reason=previous.get("finish_reason"),
            usage=Usage.model_validate(previous.get("usage") or {}),
            cost_usd=previous.get("cost_usd"),
            latency_ms=previous.get("latency_ms") or 0.0,
            model=previous.get("model"),
            request_id=previous.get("request_id"),
            thinking=previous.get("thinking"),
            cached=bool(previous.get("cached")),
        )
        spent = (previous.get("attempts", 1), previous.get("retries") or {}, previous.get("backoff_s") or 0.0)
        return await self._scored(sample, epoch, position, messages, spent, completion, task)

    def _scoring_timed_out(self, partial: ScoringResult) -> ScoringResult:
        """The verdict on an answer whose scorers outlived the timeout: a scoring error naming the scorer cut
        short (inside a composite, the part of it too), with the scorers that finished before it — a composite's
        finished parts included — and their spend (the answer is kept, and ``resume --retry-errors`` scores it
        again without calling the model)."""
        running = f" ({partial.running})" if partial.running else ""
        message = f"timed out after {self.plan.config.timeout_s:g} s while scoring{running}"
        partial.error = ErrorInfo(type="TimeoutError", message=message, stage="score")
        partial.final = None
        return partial

    def _generation_error(self, error: BaseException) -> ErrorInfo:
        message = redact(str(error) or type(error).__name__, self._secrets)
        # a replayed error, or a provider's own exception: recorded under the type it had, not as ours
        kind = error.recorded_type if isinstance(error, ReplayedError | ProviderContractError) else type(error).__name__
        return ErrorInfo(type=kind, message=message, stage="generate")


class _Deadlines:
    """The per-sample timeout of every worker, enforced by one periodic check.

    A sample has two budgets of ``timeout_s`` each, one after the other: its generation (from when its first
    request may be sent, retries and their waits included) and its scoring (every scorer, a judge's calls and
    a code scorer's sandbox included). Scoring has a budget of its own, not what generation left: a verdict
    must not depend on how fast the model answered, and a rescore (whose replayed answers take no time) must
    time out where the run did.

    ``asyncio.timeout`` costs a timer, a context object and a task lookup per sample: about a twelfth of the
    runner's CPU with a zero-latency model. Here a budget costs two dict operations; a watchdog cancels
    a worker whose sample is overdue, at most ``slack`` (a quarter of the timeout, at most 1 s) late.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.slack = min(1.0, timeout_s / 4)
        self._loop = asyncio.get_running_loop()
        self._due: dict[asyncio.Task[None], float] = {}
        self._paused: dict[asyncio.Task[None], float] = {}
        """Tasks whose clock is stopped, with the time they had left."""
        self._queueing: dict[asyncio.Task[None], int] = {}
        """Calls of each task queueing now (a judge's self-consistency calls queue together)."""
        self._expired: set[asyncio.Task[None]] = set()

    def start(self, task: asyncio.Task[None]) -> None:
        """``task``'s sample may send its first request, or starts scoring: its timeout runs from now."""
        self._due[task] = self._loop.time() + self.timeout_s

    def queued(self, task: asyncio.Task[None], waiting: bool) -> None:
        """``task``'s retry starts (True) or ends (False) queueing for admission: its clock stops meanwhile,
        as a first request's has not started while it queues (``--rpm`` and a halved limit slow a run, never
        time its samples out)."""
        count = self._queueing.get(task, 0) + (1 if waiting else -1)
        if count > 0:
            self._queueing[task] = count
        else:
            self._queueing.pop(task, None)
        if waiting and count == 1:
            due = self._due.pop(task, None)
            if due is not None:
                self._paused[task] = due - self._loop.time()
        elif not waiting and count <= 0 and (left := self._paused.pop(task, None)) is not None:
            self._due[task] = self._loop.time() + left

    def stop(self, task: asyncio.Task[None]) -> bool:
        """The wait ended; True when it was the watchdog that ended it."""
        self._due.pop(task, None)  # never started: a cached answer, or cancelled before its first request
        self._paused.pop(task, None)
        self._queueing.pop(task, None)
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

    def timed_out(self, task: asyncio.Task[None]) -> bool:
        """After a timed wait raised ``CancelledError``: True when the watchdog alone cancelled it (its timeout, to
        record; the cancellation is taken back), False when the run is being cancelled too (to re-raise)."""
        return self.stop(task) and task.uncancel() == 0

    def finished(self, task: asyncio.Task[None]) -> None:
        """A timed wait ended normally: a watchdog cancellation that came too late, and was swallowed by the
        code it interrupted, is taken back, so the task's next await is not cancelled."""
        if self.stop(task):
            task.uncancel()

    async def watch(self) -> None:
        """Cancel each task whose wait outlived the timeout (runs until cancelled)."""
        while True:
            await asyncio.sleep(self.slack)
            now = self._loop.time()
            for task, due in list(self._due.items()):
                if due <= now and task not in self._expired:
                    self._expired.add(task)
                    task.cancel()


_Spent = tuple[int, dict[str, int], float]
"""What a sample's generation took: attempts, retries by cause, seconds of backoff."""

_Work = tuple[Sample, int, Position, dict[str, Any] | None]
"""One record to make: the sample, its epoch, where it is in the dataset, and the record whose answer is scored again
(``--retry-errors`` of a scoring error) or None."""


class _SampleFailedError(EvalHarnessError):
    """What stopped the run happened while processing one sample (outside the provider and the scorers,
    whose failures are the sample's record)."""

    def __init__(self, sample_id: str, epoch: int, where: str, cause: Exception) -> None:
        super().__init__(f"sample {sample_id!r} (epoch {epoch}, {where}): {_fatal_text(cause)}")


def _with_judge_calls(spent: _Spent, calls: ScoringCalls) -> _Spent:
    """A record's spend with this scoring's judge calls counted in: their retries, as ``judge_<cause>``. The model's
    spend is the answer's (carried when an answer is scored again); a judge's of an earlier scoring is not: like a
    retried generation's, the verdict it did not produce is superseded. A judge's waits are not the model's
    backoff (``backoff_s``), which an answer scored again must keep apart."""
    attempts, carried, backoff = spent
    kept = {cause: count for cause, count in carried.items() if not cause.startswith(JUDGE_RETRY)}
    retries = calls.retries()
    if not retries and len(kept) == len(carried):
        return spent
    return attempts, dict(sorted({**kept, **retries}.items())), backoff


def _fatal_text(error: BaseException) -> str:
    """Our own errors speak for themselves; anything else (a bug) is named by its type too."""
    return str(error) if isinstance(error, EvalHarnessError) else f"{type(error).__name__}: {error}"


def _usage_fields(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def _message_fields(messages: list[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


_NO_USAGE = _usage_fields(Usage())


def _check_records(samples: Path, manifest: RunManifest) -> None:
    """Read the run's records as ``report`` reads them, refusing a damaged one (``ArtifactError``, naming its line
    and field) before the session calls the model: found by the summary at the end, it came after a session's
    spend. The columns cache, brought up to date here, is what the summary's read of this session's records
    builds on: a stale one (samples.jsonl edited in place since) is read again now, not trusted after an append."""
    if not samples.exists():
        return
    from eval_harness.aggregate import refresh_run_columns

    refresh_run_columns(samples, manifest)


def _record(
    sample: Sample,
    epoch: int,
    position: Position,
    messages: list[ChatMessage],
    spent: _Spent,
    completion: Completion | None = None,
    result: ScoringResult | None = None,
    error: ErrorInfo | None = None,
    threshold: float = 0.5,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The fields of one ``SampleRecord``, in its field order (the artifact's format: see ``record_line``);
    ``request_id`` is the provider's id of a failed call (a completion carries its own)."""
    attempts, retries, backoff_s = spent
    final = result.final if result is not None else None
    judge_usage = result.judge_usage if result is not None else None
    return {
        "sample_id": sample.id,
        "epoch": epoch,
        "axis": sample.axis,
        "tags": sample.tags,
        "input": sample.input if isinstance(sample.input, str) else _message_fields(sample.input),
        "target": sample.target,
        "prompt": _message_fields(messages),
        "output": completion.text if completion is not None else None,
        "scores": result.scores if result is not None else {},
        "score": final,
        "passed": None if final is None else final >= threshold,
        "latency_ms": round(completion.latency_ms, 3) if completion is not None else None,
        "usage": _usage_fields(completion.usage) if completion is not None else _NO_USAGE,
        "cost_usd": (0.0 if completion.cached else completion.cost_usd) if completion is not None else None,
        "error": None if error is None else {"type": error.type, "message": error.message, "stage": error.stage},
        "attempts": attempts,
        "finished_at": utc_now(),
        "explanations": result.explanations if result is not None else {},
        "answers": result.answers if result is not None else {},
        "score_metadata": result.metadata if result is not None else {},
        "judge_usage": _usage_fields(judge_usage) if judge_usage is not None else None,
        "judge_cost_usd": result.judge_cost_usd if result is not None else None,
        "cached": completion.cached if completion is not None else False,
        "model": completion.model if completion is not None else None,
        "request_id": completion.request_id if completion is not None else request_id,
        "finish_reason": completion.finish_reason if completion is not None else None,
        "thinking": completion.thinking if completion is not None else None,
        # before retries and backoff_s, not last: the columns reader's fast path finds a line's end by them
        "dataset_file": position.member,
        "dataset_line": position.line,
        "retries": retries,
        "backoff_s": backoff_s,
    }


__all__ = [
    "Progress",
    "ProgressListener",
    "RunResult",
    "Runner",
    "resume_command",
]
