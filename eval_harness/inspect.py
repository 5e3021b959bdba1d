"""Look inside a run: its worst samples with their outputs and scorer explanations, and its errors by cause.

Reads only the run's artifacts (manifest.json and samples.jsonl), never the dataset: the input and the
target shown are the ones recorded with each sample. Finding the worst samples streams the file once
through the columnar reader; only the few records shown (and the ids of samples tied with them) are
read back whole, and the error records when the errors are asked for.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray
from pydantic import BaseModel, Field, ValidationError

from eval_harness.aggregate import (
    RunColumns,
    group_means,
    iter_records_at,
    load_run_columns,
    read_records_at,
)
from eval_harness.artifacts import RunPaths, observed_status, read_manifest
from eval_harness.errors import ConfigError
from eval_harness.tally import LENGTH_STOPS
from eval_harness.types import WEIGHT_0_FAILED, ScorerSpec, check_expected_records_bounds

__all__ = [
    "INSPECT_SCHEMA_VERSION",
    "EpochOutcome",
    "ErrorGroup",
    "FailureReason",
    "InspectedSample",
    "Inspection",
    "PromptMessage",
    "RecordKey",
    "SampleError",
    "inspect_run",
    "normalise_message",
    "shorten",
]

HEAD_CHARS = 200
"""Characters kept from the start of a long text in the listing."""
TAIL_CHARS = 600
"""Characters kept from the end of a long text: a model's extracted answer is usually at its end."""
INPUT_CHARS = HEAD_CHARS + TAIL_CHARS
"""Texts longer than this are shortened (middle elided) in the table view; JSON carries them whole."""

_HEAD_ID = re.compile(rb'\{"sample_id":"((?:[^"\\]|\\.)*)"')
# An option line as templates render a multiple-choice item: "A. text", "B) text" or "(C) text".
_OPTION = re.compile(r"^\(?([A-Z])[.):]\s+(.+)$")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
# Request ids, hashes, run ids: a run of 12+ word characters holding a digit.
_TOKEN_ID = re.compile(r"\b(?=[\w-]*\d)[\w-]{12,}\b")
# Numbers vary between records of one cause (a column, a count, a rate); an HTTP status names the cause.
_NUMBER = re.compile(r"(?<!HTTP )(?<![\w.])\d+(?:\.\d+)?")
# A wait as OpenAI writes it ("try again in 1m26.4s", "in 20ms"): one number of the cause, however long.
_DURATION = re.compile(r"(?<![\w.])(?:\d+h)?(?:\d+m(?!s))?\d+(?:\.\d+)?(?:ms|s)\b")
# The provider and model a message opens with (``openai/gpt-4o-mini:``) are one for the whole run: kept as
# written, not read as numbers (gpt-No-mini).
_LABEL = re.compile(r"^(?:embeddings )?[\w.-]+/[^\s:]+: ")
_SPACE = re.compile(r"\s+")
# A character named by its code point varies as a number does ("invalid character '“' (U+201C)", then U+201D).
_CODE_POINT = re.compile(r"\bU\+[0-9A-Fa-f]{4,6}\b")
MESSAGE_CHARS = 300
LISTED_KEYS = 1_000
"""At most this many keys (and sample ids) of an error group in JSON; its ``count`` is the whole."""
"""A normalised message is cut to this many characters, so a long tail (an HTTP body) does not split a cause."""


class RecordKey(BaseModel):
    """The identity of one record in a run."""

    sample_id: str
    epoch: int


class SampleError(BaseModel):
    """The error a record holds."""

    type: str = Field(description="Error class, e.g. ProviderError or SpentScoringError.")
    stage: str = Field(description="'generate' or 'score'.")
    message: str


class EpochOutcome(BaseModel):
    """How one epoch of a sample came out (``inspect --by-sample``)."""

    epoch: int
    value: float | None = Field(description="The ranked value (final score or the scorer's); None without one.")
    passed: bool | None
    error_type: str | None = Field(description="The record's error class; None when it was scored.")


class PromptMessage(BaseModel):
    """One message of a recorded prompt."""

    role: str
    content: str


class InspectedSample(BaseModel):
    """One record as shown by ``inspect``; with ``--by-sample``, the worst epoch of a sample, with every epoch."""

    sample_id: str
    epoch: int
    axis: str
    value: float = Field(
        description="What the listing is ranked by: the final score or one scorer's value; 0 for an error "
        "record without one (an error counts as wrong, as in the report)."
    )
    score: float | None
    passed: bool | None
    input: str = Field(description="The recorded input, whole (the table view shortens it).")
    input_chars: int = Field(description="Characters in the input.")
    choices: list[str] | None = Field(
        default=None, description="A multiple-choice item's options as the prompt showed them ('A. text')."
    )
    target: str | list[str]
    output: str | None = Field(description="The model's output, whole (the table view shortens it).")
    output_chars: int | None = Field(description="Characters in the output; None without one.")
    scores: dict[str, float | None]
    explanations: dict[str, str]
    answers: dict[str, str]
    latency_ms: float | None
    cost_usd: float | None
    cached: bool = Field(default=False, description="The answer came from the response cache: its cost 0 is no price.")
    error: SampleError | None = Field(default=None, description="The record's error; None when it was scored.")
    finish_reason: str | None = Field(default=None, description="Why generation stopped, as the provider reported.")
    cut_off: bool = Field(
        default=False,
        description="The answer stopped at the output-token limit or the model's context window: its end may be "
        "missing.",
    )
    completion_tokens: int | None = Field(
        default=None, description="The answer's completion tokens as the provider counted them; None without one."
    )
    failed_gates: list[str] = Field(
        default_factory=list,
        description="The task's gate scorers whose value is below 1 on this record: each makes the final score 0.",
    )
    sample_mean: float | None = Field(
        default=None,
        description="With --by-sample: the sample's mean over its epochs (an error without a value counts 0), "
        "what it is ranked by; None otherwise.",
    )
    epochs: list[EpochOutcome] | None = Field(
        default=None, description="With --by-sample: every epoch of the sample in scope, by epoch; None otherwise."
    )
    dataset_file: str | None = Field(
        default=None,
        description="The file of a dataset directory (``dataset_path``) the sample was read from, by name; None "
        "for a dataset of one file.",
    )
    dataset_line: int | None = Field(
        default=None,
        description="The line of the run's dataset file (``dataset_path``, or ``dataset_file`` in it) the sample "
        "was read from; None in a record written before it was recorded.",
    )
    prompt: list[PromptMessage] = Field(
        default_factory=list,
        description="The rendered prompt as sent, system message and few-shot examples included (the table "
        "shows it with --prompt).",
    )
    score_metadata: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Each scorer's details as recorded (code_execution: the end of stdout and stderr, the exit "
        "status; a judge: its verdict); the table shows a scorer's stderr.",
    )


class ErrorGroup(BaseModel):
    """The error records of one cause (type, stage and normalised message), with one example."""

    type: str
    count: int
    stage: str
    message: str = Field(description="The normalised message: numbers 'N', quoted text '…', ids '<id>'.")
    example_sample_id: str = Field(description="The record with the smallest (sample id, epoch).")
    example_epoch: int
    example_axis: str
    example_message: str
    sample_ids: list[str] = Field(description="The group's distinct sample ids, sorted (the first 1,000).")
    keys: list[RecordKey] = Field(description="The group's records by sample id then epoch (the first 1,000).")


class FailureReason(BaseModel):
    """Failed records whose verdicts say the same once normalised, with the first of them."""

    reason: str = Field(
        description="Each scorer below 1 as 'key: explanation' (an error record: 'error Type: message'), joined by "
        "' · ', normalised as error messages are: numbers 'N', quoted text '…', ids '<id>'."
    )
    count: int
    example_sample_id: str = Field(description="The first of the records in the file.")
    example_epoch: int


FAILURE_REASONS_READ = 100_000
"""The failed records whose verdicts are read to group them (the first in the file): enough to see a run's kinds of
failure, a bounded read of a huge one."""

INSPECT_SCHEMA_VERSION = 1
"""The version of ``inspect --format json`` (``Inspection``): raised when a field changes meaning or goes."""


class Inspection(BaseModel):
    """``eval-harness inspect --format json``."""

    schema_version: int = INSPECT_SCHEMA_VERSION
    run_id: str
    run_dir: str = Field(default="", description="The run directory inspected, as given.")
    dataset_path: str = Field(
        default="", description="The run's dataset file as its manifest records it: what dataset_line counts in."
    )
    model: str
    task: str
    status: str
    records: int
    expected_records: int
    ranked_by: str = Field(description="'score' (the final score) or a scorer's name.")
    axis: str | None = Field(description="The axis the listing and the errors were limited to.")
    tag: str | None = Field(default=None, description="The tag the listing and the errors were limited to.")
    failures_only: bool
    epochs: int = Field(default=1, description="The run's epochs: above 1, the listing ranks records (epochs).")
    by_sample: bool = Field(
        default=False,
        description="Samples ranked by their mean over epochs, each shown by its worst epoch (candidates then "
        "counts samples).",
    )
    candidates: int = Field(
        description="Records eligible for the listing: with a value, in the axis; with failures_only, the "
        "failed ones and the error records. With by_sample, the samples that have such a record."
    )
    error_records: int = Field(
        description="Error records in scope (the axis; with a scorer, those without its value): counted as wrong."
    )
    candidate_errors: int = Field(
        default=0,
        description="Error records among the candidates (with failures_only: those ranked, a scorer's value or 0).",
    )
    without_value: int = Field(
        default=0,
        description="With a scorer: scored records in scope (with failures_only, failed ones) that have no value of "
        "it (a staged scorer skipped there, or a weight-0 scorer failed: see failed_without_value), left out of the "
        "listing.",
    )
    failed_without_value: int = Field(
        default=0,
        description="Of without_value, the records where the scorer failed (weight 0, so not counted; its "
        "explanation says why).",
    )
    first_failed: str | None = Field(
        default=None, description="The first of those in the file, as 'sample_id (epoch N): its explanation'."
    )
    torn_bytes: int = Field(description="Bytes of a torn last line that was ignored (0 when none).")
    samples_missing: bool = Field(
        default=False, description="The run's samples.jsonl does not exist (removed, or never written)."
    )
    max_tokens: int | None = Field(default=None, description="The run's max_tokens; None when it set none.")
    worst: list[InspectedSample] | None = Field(description="Lowest first, ties broken by sample id and epoch.")
    errors: list[ErrorGroup] | None = Field(description="Most frequent first.")
    failure_reasons: list[FailureReason] | None = Field(
        default=None,
        description="With failures_only: the failed records (and error records) grouped by what their verdicts say, "
        "most frequent first: what a listing ranked by score alone does not show when most fail at 0.",
    )
    failure_reasons_read: int = Field(
        default=0, description="The failed records read for failure_reasons (the first FAILURE_REASONS_READ)."
    )


def shorten(text: str, limit: int = INPUT_CHARS, *, head: int | None = None) -> str:
    """``text`` with its middle replaced by ' … N characters … ' when longer than ``limit`` characters and the
    marker is shorter than what it stands for.

    Keeps ``head`` characters of the start (a quarter of ``limit`` unless given) and the rest of ``limit``
    from the end.
    """
    cut = len(text) - limit
    marker = f" … {cut:,} character{'' if cut == 1 else 's'} … "
    if cut <= len(marker):  # shortening would lengthen it (or save nothing)
        return text
    first = limit // 4 if head is None else min(head, limit)
    last = limit - first
    return f"{text[:first]}{marker}{text[len(text) - last :]}"


def normalise_message(message: str, sample_id: str = "") -> str:
    """``message`` with what varies between records of one cause replaced: the sample id by '<sample>',
    quoted text by '…', long ids by '<id>', numbers by 'N' (an HTTP status is kept).

    The sample id is replaced only where it stands alone and has 3 characters or more: a short id ("0", "e")
    would otherwise be found inside the message's own words and numbers and split one cause into several."""
    if len(sample_id) >= 3 and sample_id in message:
        message = _without_id(message, sample_id)
    return _normalised(message)


def _joins(char: str) -> bool:
    """Whether ``char`` would continue an id: what ``[\\w-]`` matches."""
    return char.isalnum() or char in "_-"


def _without_id(message: str, sample_id: str) -> str:
    """``message`` with each standalone ``sample_id`` replaced by '<sample>'. By ``str.find``, not a regex built
    from the id: every record has its own id, so each would compile a pattern (~100 µs, past re's cache)."""
    parts: list[str] = []
    start = found = 0
    while (found := message.find(sample_id, found)) >= 0:
        end = found + len(sample_id)
        alone = (found == 0 or not _joins(message[found - 1])) and (end == len(message) or not _joins(message[end]))
        if alone:
            parts += [message[start:found], "<sample>"]
            start = found = end
        else:
            found += 1
    return "".join([*parts, message[start:]])


@functools.lru_cache(maxsize=4096)
def _normalised(text: str) -> str:
    """The id-free part of ``normalise_message``: cached, since one cause's messages repeat (an outage over
    200,000 records is one message, normalised once)."""
    label = _LABEL.match(text)
    head, text = (label.group(), text[label.end() :]) if label else ("", text)
    text = _QUOTED.sub("'…'", text)
    text = _CODE_POINT.sub("U+…", text)
    text = _TOKEN_ID.sub("<id>", text)
    text = _DURATION.sub("Ns", text)
    text = _NUMBER.sub("N", text)
    return _SPACE.sub(" ", head + text).strip()[:MESSAGE_CHARS]


def _input_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in value if isinstance(m, dict))
    return str(value)


def _choices(record: dict[str, Any]) -> list[str] | None:
    """The options of a multiple-choice record: recorded ``choices`` when present, else the option lines
    ("A. text") that follow the input in the last user message of the prompt."""
    recorded = record.get("choices")
    if isinstance(recorded, list) and recorded:
        return [f"{chr(ord('A') + i)}. {c}" if i < 26 else str(c) for i, c in enumerate(recorded)]
    user = [m for m in record.get("prompt") or [] if isinstance(m, dict) and m.get("role") == "user"]
    question = record.get("input")
    if not user or not isinstance(question, str) or not question.strip():
        return None
    content = str(user[-1].get("content", ""))
    at = content.rfind(question.strip())
    if at < 0:
        return None
    options: list[str] = []
    for line in content[at + len(question.strip()) :].splitlines():
        match = _OPTION.match(line.strip())
        if match is not None and ord(match.group(1)) - ord("A") == len(options):
            options.append(line.strip())
        elif options or line.strip():
            break
    return options if len(options) >= 2 else None


def _sample_ids(path: Path, offsets: list[int]) -> list[str]:
    """The sample id of the record at each offset, reading only the head of each line."""
    ids: list[str] = []
    with path.open("rb") as handle:
        for offset in offsets:
            handle.seek(offset)
            head = handle.read(512)
            match = _HEAD_ID.match(head)
            if match is not None:
                raw = match.group(1)
                ids.append(orjson.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode())
            else:
                handle.seek(offset)
                ids.append(str(orjson.loads(handle.readline())["sample_id"]))
    return ids


def _worst_rows(
    path: Path,
    values: NDArray[np.float64],
    eligible: NDArray[np.bool_],
    offsets: NDArray[np.int64],
    epochs: NDArray[np.int64],
    n: int,
) -> list[int]:
    """The ``n`` eligible rows with the lowest value, ties broken by sample id then epoch."""
    rows = np.flatnonzero(eligible)
    if rows.size == 0 or n <= 0:
        return []
    candidate_values = values[rows]
    if rows.size > n:
        cutoff = np.partition(candidate_values, n - 1)[n - 1]
        rows = rows[candidate_values <= cutoff]  # everything tied with the n-th lowest competes on id
    order = np.argsort(offsets[rows], kind="stable")  # read the ids in file order: sequential IO
    rows = rows[order]
    ids = _sample_ids(path, offsets[rows].tolist())
    ranked = sorted(range(rows.size), key=lambda i: (float(values[rows[i]]), ids[i], int(epochs[rows[i]])))
    return [int(rows[i]) for i in ranked[:n]]


def inspect_run(
    run_dir: Path,
    *,
    n: int = 5,
    axis: str | None = None,
    tag: str | None = None,
    scorer: str | None = None,
    failures_only: bool = False,
    show_worst: bool = True,
    show_errors: bool = True,
    by_sample: bool = False,
) -> Inspection:
    """The worst ``n`` samples of a run (by final score, or by ``scorer``'s value) and its errors by cause.

    ``axis`` limits both the listing and the errors to one axis, ``tag`` to the records that carry a tag. With
    ``scorer``, the listing holds the records that have its value (an error record too, when the scorer ran
    before another one failed) and the errors are those of records without its value. ``failures_only`` limits
    the listing to records that did not pass and adds the error records, which the report counts as wrong:
    ranked at their value, or at 0 without one, among the others. Without it, error records with no value appear only
    under the errors. ``by_sample`` ranks samples instead of records, by their mean over their epochs in
    scope (an error record without a value counts 0, as in the report's headline): each listed sample is
    its lowest epoch among the eligible ones, with every epoch's outcome; a sample is listed when one of its
    records is eligible. Raises ``ConfigError`` for an axis, tag or scorer the run does not have.
    """
    if n < 1:
        raise ConfigError(f"--n: {n} must be at least 1")
    manifest = read_manifest(run_dir)
    check_expected_records_bounds(manifest, RunPaths(run_dir).manifest)
    path = RunPaths(run_dir).samples
    columns = load_run_columns(path, manifest)
    in_scope = np.ones(columns.n, dtype=np.bool_)
    if axis is not None:
        if axis not in columns.axes:
            known = ", ".join(sorted(columns.axes)) or "none yet"
            raise ConfigError(f"--axis: the run has no axis {axis!r} (its axes: {known})")
        in_scope &= columns.axis == columns.axes.index(axis)
    if tag is not None:
        if tag not in columns.tag_names:
            raise ConfigError(f"--tag: the run has no tag {tag!r} ({_known_tags(columns.tag_names)})")
        in_scope &= columns.with_tag(tag)
    if scorer is not None:
        if scorer in columns.scorers:
            values = columns.scorers[scorer]
        elif scorer in _composite_parts(manifest.task.scorers):  # declared, with no value on any record yet
            values = np.full(columns.n, np.nan)
        else:
            raise ConfigError(f"--scorer: the run has no scorer {scorer!r} (its scorers: {', '.join(columns.scorers)})")
    else:
        values = columns.score
    has_value = ~np.isnan(values)
    has_error = columns.error_type >= 0
    scoped_errors = in_scope & has_error & ~has_value
    unvalued = in_scope & ~has_value & ~has_error & (~columns.passed if failures_only else True)
    if failures_only:
        eligible = in_scope & ((has_value & ~columns.passed) | (columns.error & ~has_value))
        values = np.where(has_value, values, 0.0)
    else:
        eligible = in_scope & has_value
    candidates = int(np.count_nonzero(eligible))
    gates = [spec.key for spec in manifest.task.scorers if spec.gate]
    worst: list[InspectedSample] | None = None
    if by_sample:
        # what a sample's epochs count: a value, or an error without one (wrong: 0)
        counted = in_scope & (has_value | (columns.error & ~has_value))
        # nan where a record has no value, also under failures_only (which ranks such error records at 0)
        units = _SampleUnits.of(columns, np.where(has_value, values, np.nan), eligible, counted)
        candidates = int(np.count_nonzero(units.shown))
        if show_worst:
            rows = _worst_rows(path, units.mean_of_row, units.shown, columns.offset, columns.epoch, n)
            records = read_records_at(path, columns.offset[rows].tolist())
            worst = [
                _sample(record, float(units.mean_of_row[row]), gates).model_copy(
                    update={"sample_mean": float(units.mean_of_row[row]), "epochs": units.outcomes(row, in_scope)}
                )
                for record, row in zip(records, rows, strict=True)
            ]
    elif show_worst:
        rows = _worst_rows(path, values, eligible, columns.offset, columns.epoch, n)
        records = read_records_at(path, columns.offset[rows].tolist())
        worst = [_sample(record, float(values[row]), gates) for record, row in zip(records, rows, strict=True)]
    errors = _errors(path, columns.offset[scoped_errors].tolist()) if show_errors else None
    reasons: list[FailureReason] | None = None
    reasons_read = 0
    if failures_only and show_worst:
        offsets = columns.offset[eligible][:FAILURE_REASONS_READ].tolist()
        reasons, reasons_read = _failure_reasons(path, sorted(offsets), scorer), len(offsets)
    failed, first_failed = (
        _failed_unvalued(path, columns.offset[unvalued].tolist(), scorer) if scorer is not None else (0, None)
    )
    return Inspection(
        run_id=manifest.run_id,
        run_dir=str(run_dir),
        dataset_path=manifest.dataset.path,
        model=manifest.model.id,
        task=manifest.task.name,
        status=observed_status(run_dir, manifest),
        records=columns.n,
        expected_records=manifest.expected_records,
        ranked_by=scorer or "score",
        axis=axis,
        tag=tag,
        failures_only=failures_only,
        epochs=manifest.epochs,
        by_sample=by_sample,
        candidates=candidates,
        error_records=int(np.count_nonzero(scoped_errors)),
        candidate_errors=int(np.count_nonzero(eligible & has_error)),
        without_value=0 if scorer is None else int(np.count_nonzero(unvalued)),
        failed_without_value=failed,
        first_failed=first_failed,
        torn_bytes=columns.torn_bytes,
        samples_missing=not path.exists(),
        max_tokens=manifest.task.generation.max_tokens,
        worst=worst,
        errors=errors,
        failure_reasons=reasons,
        failure_reasons_read=reasons_read,
    )


KNOWN_TAGS_LISTED = 20
"""An unknown --tag's message names at most this many of the run's tags."""


def _known_tags(names: Sequence[str]) -> str:
    """The run's tags for an unknown --tag's message: sorted, the first ``KNOWN_TAGS_LISTED``, and how many more."""
    if not names:
        return "no record has a tag"
    known = sorted(names)
    more = f", and {len(known) - KNOWN_TAGS_LISTED:,} more" if len(known) > KNOWN_TAGS_LISTED else ""
    return f"its tags: {', '.join(known[:KNOWN_TAGS_LISTED])}{more}"


class _SampleUnits:
    """A run's records grouped by sample, for ranking samples by their mean over epochs."""

    def __init__(
        self,
        columns: RunColumns,
        index: NDArray[np.intp],
        values: NDArray[np.float64],
        mean_of_row: NDArray[np.float64],
        shown: NDArray[np.bool_],
    ) -> None:
        self.columns, self.index = columns, index
        self.values = values
        """Each row's ranked value; nan without one."""
        self.mean_of_row = mean_of_row
        """Each row's sample mean (nan for a sample with no counted record)."""
        self.shown = shown
        """One row per listable sample: its lowest eligible epoch (lowest value, then lowest epoch)."""

    @classmethod
    def of(
        cls, columns: RunColumns, values: NDArray[np.float64], eligible: NDArray[np.bool_], counted: NDArray[np.bool_]
    ) -> _SampleUnits:
        index = np.unique(columns.sample_hash[:, 0], return_inverse=True)[1].astype(np.intp)
        filled = np.where(np.isnan(values), 0.0, values)
        means = np.full(int(index.max()) + 1 if index.size else 0, np.nan)
        if np.any(counted):
            present, dense = np.unique(index[counted], return_inverse=True)
            # summed in value order (group_means): a mean must not depend on the order the epochs were written
            means[present] = group_means(filled[counted], dense.astype(np.intp))
        rows = np.flatnonzero(eligible)
        first_rows = rows[np.lexsort((columns.epoch[rows], filled[rows], index[rows]))]
        _, first = np.unique(index[first_rows], return_index=True)
        shown = np.zeros(columns.n, dtype=np.bool_)
        shown[first_rows[first]] = True
        return cls(columns, index, values, means[index], shown)

    def outcomes(self, row: int, in_scope: NDArray[np.bool_]) -> list[EpochOutcome]:
        """Every epoch in scope of ``row``'s sample, by epoch."""
        c = self.columns
        rows = np.flatnonzero((self.index == self.index[row]) & in_scope)
        rows = rows[np.argsort(c.epoch[rows], kind="stable")]
        names = c.error_types
        return [
            EpochOutcome(
                epoch=int(c.epoch[r]),
                value=None if np.isnan(self.values[r]) else float(self.values[r]),
                passed=None if c.error[r] else bool(c.passed[r]),
                error_type=names[int(c.error_type[r])] if c.error_type[r] >= 0 else None,
            )
            for r in rows.tolist()
        ]


def _error_fields(record: dict[str, Any]) -> tuple[str, str, str] | None:
    """A record's error as (type, stage, message), None when it has none: a tuple, not a model, because
    ``_errors`` reads it for every error record (a pydantic model each cost 1 s in 200,000)."""
    error = record.get("error")
    if not isinstance(error, dict):
        return None
    return str(error.get("type", "")), str(error.get("stage", "generate")), str(error.get("message", ""))


def _completion_tokens(record: dict[str, Any]) -> int | None:
    usage = record.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) and record.get("output") is not None else None


def _record_error(record: dict[str, Any]) -> SampleError | None:
    fields = _error_fields(record)
    if fields is None:
        return None
    kind, stage, message = fields
    return SampleError(type=kind, stage=stage, message=message)


def _below_one(value: Any) -> bool:
    """A gate's recorded value below 1 (readers accept null: no value is no failed gate)."""
    return isinstance(value, int | float) and value < 1.0


def _sample(record: dict[str, Any], value: float, gates: Sequence[str] = ()) -> InspectedSample:
    """``record`` as listed; ``gates``: the keys of the run's gate scorers."""
    text = _input_text(record.get("input", ""))
    output = record.get("output")
    finish = record.get("finish_reason")
    finish = None if finish is None else str(finish)
    return InspectedSample(
        sample_id=str(record["sample_id"]),
        epoch=int(record["epoch"]),
        axis=str(record.get("axis", "default")),
        value=value,
        score=record.get("score"),
        passed=record.get("passed"),
        input=text,
        input_chars=len(text),
        choices=_choices(record),
        target=record.get("target", ""),
        output=output,
        output_chars=None if output is None else len(output),
        scores=record.get("scores") or {},
        explanations=record.get("explanations") or {},
        answers=record.get("answers") or {},
        latency_ms=record.get("latency_ms"),
        cost_usd=record.get("cost_usd"),
        cached=record.get("cached") is True,
        error=_record_error(record),
        finish_reason=finish,
        cut_off=finish in LENGTH_STOPS,
        completion_tokens=_completion_tokens(record),
        failed_gates=[key for key in gates if _below_one((record.get("scores") or {}).get(key))],
        dataset_file=_file_name(record.get("dataset_file")),
        dataset_line=_line_number(record.get("dataset_line")),
        prompt=_prompt(record.get("prompt")),
        score_metadata=_score_metadata(record.get("score_metadata")),
    )


def _prompt(value: Any) -> list[PromptMessage]:
    """A record's prompt messages; what a hand-edited record holds instead is left out, never the listing."""
    if not isinstance(value, list):
        return []
    return [
        PromptMessage(role=str(m.get("role", "?")), content=str(m.get("content", "")))
        for m in value
        if isinstance(m, dict)
    ]


def _score_metadata(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        return {}
    return {str(name): details for name, details in value.items() if isinstance(details, dict)}


def _file_name(value: Any) -> str | None:
    """A record's ``dataset_file`` when it names a file in the directory (no reader checks this field, and a
    hand-edited ``../x`` would point a path shown beside it elsewhere)."""
    if isinstance(value, str) and value and "/" not in value and "\\" not in value and value not in (".", ".."):
        return value
    return None


def _line_number(value: Any) -> int | None:
    """A record's ``dataset_line`` when it is one: no reader checks this field, and a hand-edited value only
    loses the location shown, never the listing."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _composite_parts(specs: Sequence[ScorerSpec], prefix: str = "") -> list[str]:
    """The keys a task's composite scorers record their parts under (``quality.rl``), nested ones too: a part that
    failed on every record has no column, but the user may still ask why."""
    keys = []
    for spec in specs:
        parts = spec.args.get("scorers") if spec.name == "composite" else None
        if not isinstance(parts, list):
            continue
        for table in parts:
            try:
                part = ScorerSpec.model_validate(table)
            except ValidationError:
                continue  # refused when the run was planned: none of its records has it
            key = f"{prefix}{spec.key}.{part.key}"
            keys += [key, *_composite_parts([part], f"{prefix}{spec.key}.")]
    return keys


def _failed_unvalued(path: Path, offsets: Sequence[int], scorer: str) -> tuple[int, str | None]:
    """Of the records without ``scorer``'s value, how many it failed on with weight 0 (not counted), and the first
    in the file as 'sample_id (epoch N): its explanation': "skipped there" would hide why (a judge's outage)."""
    count, first = 0, None
    for record in iter_records_at(path, offsets):
        explanation = (record.get("explanations") or {}).get(scorer)
        if isinstance(explanation, str) and explanation.startswith(WEIGHT_0_FAILED):
            count += 1
            if first is None:
                first = f"{record.get('sample_id')} (epoch {record.get('epoch')}): {explanation}"
    return count, first


def _failure_reasons(path: Path, offsets: Sequence[int], scorer: str | None) -> list[FailureReason]:
    """The failed records at ``offsets`` (in file order) grouped by what their verdicts say: each scorer below 1
    (only ``scorer`` when the listing is ranked by it) with its explanation, or the record's error, normalised."""
    groups: dict[str, list[Any]] = {}  # reason: [count, first sample id, its epoch]
    for record in iter_records_at(path, offsets):
        sample_id = str(record.get("sample_id"))
        error = _error_fields(record)
        if error is not None and (scorer is None or scorer not in (record.get("scores") or {})):
            reason = f"error {error[0]}: {normalise_message(error[2], sample_id)}"
        else:
            scores, explanations = record.get("scores") or {}, record.get("explanations") or {}
            keys = [scorer] if scorer is not None else [key for key, value in scores.items() if _below_one(value)]
            said = [
                f"{key}: {normalise_message(str(explanations.get(key) or 'no explanation'), sample_id)}" for key in keys
            ]
            reason = " · ".join(said) or "below the pass threshold"
        group = groups.setdefault(reason, [0, sample_id, int(record.get("epoch") or 0)])
        group[0] += 1
    ordered = sorted(groups.items(), key=lambda item: (-item[1][0], item[0]))
    return [
        FailureReason(reason=reason, count=count, example_sample_id=sample_id, example_epoch=epoch)
        for reason, (count, sample_id, epoch) in ordered
    ]


def _errors(path: Path, offsets: Sequence[int]) -> list[ErrorGroup]:
    """The error records at ``offsets`` grouped by (type, stage, normalised message).

    Only what a group shows is kept of each record (a run that is all errors holds hundreds of thousands),
    and a group lists at most ``LISTED_KEYS`` of its keys: ``resume --retry-errors`` retries them all."""
    members: dict[tuple[str, str, str], list[tuple[str, int, str, str]]] = {}
    for record in iter_records_at(path, offsets):
        fields = _error_fields(record)
        if fields is None:
            continue
        kind, stage, message = fields
        sample_id = str(record["sample_id"])
        cause = (kind, stage, normalise_message(message, sample_id))
        member = (sample_id, int(record["epoch"]), str(record.get("axis", "default")), message)
        members.setdefault(cause, []).append(member)
    groups = []
    for (type_, stage, message), records in members.items():
        records.sort(key=lambda r: (r[0], r[1]))
        sample_id, epoch, axis, example_message = records[0]
        groups.append(
            ErrorGroup(
                type=type_,
                count=len(records),
                stage=stage,
                message=message,
                example_sample_id=sample_id,
                example_epoch=epoch,
                example_axis=axis,
                example_message=example_message,
                sample_ids=sorted({r[0] for r in records})[:LISTED_KEYS],
                keys=[RecordKey(sample_id=r[0], epoch=r[1]) for r in records[:LISTED_KEYS]],
            )
        )
    groups.sort(key=lambda g: (-g.count, g.type, g.stage, g.message))
    return groups
