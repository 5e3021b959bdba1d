"""Pydantic records at the boundaries: samples in, completions from providers, records and manifests out.

Field order in ``SampleRecord`` is part of the artifact format: ``sample_id`` and ``epoch`` come first so
that a resume can read the keys of a million records without parsing whole lines.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Annotated, Any, Final, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from eval_harness.errors import ArtifactError, json_type_name

SCHEMA_VERSION = 1
"""Version of manifest.json, samples.jsonl and summary.json written by this build."""

RunStatus = Literal["running", "complete", "interrupted", "failed"]

PairedTest = Literal["mcnemar", "sign-flip", "paired-t", "none"]
"""The test of two systems scored on the same items (``stats.paired_comparison``, compare's rows): McNemar's exact
test (0/1 scores), the sign-flip test (few pairs, or differences all equal), the paired t-test, or none (no pair).
Defined here rather than in stats, which imports numpy, for compare's JSON document, which does not."""
PairedInterval = Literal["newcombe", "t", "none"]
"""How the interval of a paired difference was made: Newcombe's score interval (0/1 scores), Student-t on the
differences, or none (no pair, or differences all equal: no spread to estimate one from)."""


class ChatMessage(BaseModel):
    """One chat turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"] = Field(description="Who speaks this turn.")
    content: str = Field(description="The turn's text.")


class Sample(BaseModel):
    """One dataset item after field mapping."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="Stable identifier; derived from the line's content when the file has none.")
    input: str | list[ChatMessage] = Field(description="The question, or a list of chat messages.")
    target: str | list[str] = Field(description="The reference answer, or several acceptable ones.")
    axis: str = Field(default="default", description="The capability axis this sample measures.")
    tags: list[str] = Field(default_factory=list, description="Free labels for slicing results.")
    choices: list[str] | None = Field(default=None, description="Options of a multiple-choice item.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Anything else the dataset carries.")

    @property
    def targets(self) -> list[str]:
        """All acceptable references as a list."""
        return [self.target] if isinstance(self.target, str) else list(self.target)


class GenerateConfig(BaseModel):
    """Sampling options passed to every provider; ``None`` means the provider's default.

    The ranges are the CLI's (``--temperature``, ``--max-tokens``), so a task spec cannot send what a flag
    may not; inf and nan are refused (TOML has literals for them, and JSON would record them as null)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    temperature: float | None = Field(
        default=None, ge=0, le=2, description="Sampling temperature (0-2, the widest range an API takes)."
    )
    top_p: float | None = Field(default=None, ge=0, le=1, description="Nucleus sampling mass (0-1).")
    # bounded so that the manifest can record them (JSON integers beyond 64 bits cannot be written); no tighter:
    # manifests are read back through this model, and one written with --max-tokens 1e10 must stay readable
    max_tokens: int | None = Field(
        default=None, ge=1, le=2**63 - 1, description="Upper bound on generated tokens (at least 1)."
    )
    stop: list[str] | None = Field(default=None, description="Stop sequences.")
    seed: int | None = Field(
        default=None, ge=-(2**63), lt=2**63, description="Sampling seed where the API supports one (64-bit)."
    )


@dataclass(slots=True, kw_only=True)
class GenerateRequest:
    """What the runner asks a provider for. ``sample`` and ``epoch`` are context a real API never sees;
    the deterministic mock uses them to decide its answer.

    A plain dataclass, not a pydantic model: it never crosses a boundary (the runner builds it from
    values already validated), and it is built once per sample.
    """

    messages: list[ChatMessage]
    """Rendered prompt, system message first when present."""
    sample: Sample
    """The sample being evaluated."""
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig())
    """Sampling options."""
    epoch: int = 0
    """Which repetition of the sample this is."""
    seed: int = 0
    """The run's seed."""


class Usage(BaseModel):
    """Token counts as the provider reports them."""

    prompt_tokens: int = Field(default=0, description="Input tokens.")
    completion_tokens: int = Field(default=0, description="Output tokens (reasoning included).")
    cached_tokens: int | None = Field(default=None, description="Input tokens served from a prompt cache.")
    reasoning_tokens: int | None = Field(default=None, description="Output tokens spent on hidden reasoning.")

    def __add__(self, other: Usage) -> Usage:
        def add_optional(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=add_optional(self.cached_tokens, other.cached_tokens),
            reasoning_tokens=add_optional(self.reasoning_tokens, other.reasoning_tokens),
        )


class Completion(BaseModel):
    """One provider answer, the same shape whatever the provider."""

    text: str = Field(description="The answer text (thinking excluded).")
    finish_reason: str | None = Field(default=None, description="Why generation stopped, as reported.")
    usage: Usage = Field(default_factory=Usage, description="Token counts.")
    cost_usd: float | None = Field(default=None, description="Cost in USD; None when the price is unknown.")
    latency_ms: float = Field(default=0.0, description="Wall time of the successful call.")
    model: str | None = Field(default=None, description="Model name the server reports.")
    request_id: str | None = Field(default=None, description="Provider request id, for support tickets.")
    thinking: str | None = Field(default=None, description="Extended-thinking text, kept apart from text.")
    cached: bool = Field(default=False, description="True when served from the response cache.")


class Score(BaseModel):
    """One scorer's verdict on one output."""

    value: float = Field(ge=0.0, le=1.0, description="Score in [0, 1].")
    answer: str | None = Field(default=None, description="What the scorer extracted from the output.")
    explanation: str | None = Field(default=None, description="Why the scorer gave this value.")
    usage: Usage | None = Field(default=None, description="Tokens a model-based scorer spent.")
    cost_usd: float | None = Field(default=None, description="Cost a model-based scorer spent.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Scorer-specific detail.")


class ErrorInfo(BaseModel):
    """Why a sample has no (complete) score."""

    type: str = Field(description="Error class, e.g. ProviderHTTPError or ScoringError.")
    message: str = Field(description="One-line message; never contains secrets.")
    stage: Literal["generate", "score"] = Field(default="generate", description="Where it failed.")


class SampleRecord(BaseModel):
    """One line of samples.jsonl: the outcome of one (sample_id, epoch)."""

    # Built on first use: the runner writes records from dicts in this field order, so a run that reads no
    # records back never needs the validator (~6 ms of every start-up).
    model_config = ConfigDict(defer_build=True)

    sample_id: str
    epoch: int
    axis: str
    tags: list[str] = Field(default_factory=list)
    input: str | list[ChatMessage]
    target: str | list[str]
    prompt: list[ChatMessage]
    output: str | None = None
    scores: dict[str, float] = Field(default_factory=dict, description="Per-scorer values in [0, 1].")
    score: float | None = Field(default=None, description="The final score; None when there is an error.")
    passed: bool | None = None
    latency_ms: float | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    error: ErrorInfo | None = None
    attempts: int = 0
    finished_at: str
    explanations: dict[str, str] = Field(default_factory=dict, description="Per-scorer explanations.")
    answers: dict[str, str] = Field(default_factory=dict, description="What each scorer extracted.")
    score_metadata: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per-scorer details: judge samples, position-swap verdicts, breakdowns."
    )
    judge_usage: Usage | None = Field(default=None, description="Tokens spent by model-based scorers.")
    judge_cost_usd: float | None = None
    cached: bool = False
    model: str | None = Field(default=None, description="Model name reported by the server.")
    request_id: str | None = None
    finish_reason: str | None = None
    thinking: str | None = None
    # before retries and backoff_s, not last: the columns reader's fast path finds a line's end by them
    dataset_file: str | None = Field(
        default=None,
        description="The file of a dataset directory the sample was read from, by name (None: a dataset of one "
        "file); dataset_line counts in it.",
    )
    dataset_line: int | None = Field(
        default=None,
        description="1-based line of the dataset file the sample was read from (of a CSV row: the line it starts "
        "on; of a gzipped file: of the decompressed text); None in records written before it was recorded.",
    )
    retries: dict[str, int] = Field(
        default_factory=dict,
        description="Retries of this sample by cause; a judge's (of the scoring that wrote it) as judge_<cause>.",
    )
    backoff_s: float = Field(default=0.0, description="Seconds the model's calls waited in retry backoff.")

    @property
    def key(self) -> tuple[str, int]:
        """The record's identity in a run."""
        return (self.sample_id, self.epoch)


MAX_WEIGHT = 1e6
"""The largest scorer weight: weights are relative, and a sum of huge ones would overflow to inf."""


class ScorerSpec(BaseModel):
    """A scorer as named in a task spec: registry name plus its arguments."""

    # An inf weight made every final score nan, written as null: a silent run of unscored samples. Strict: a spec's
    # values must already have their type (gate = "yes" made the scorer a gate); an integer passes for a float.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

    name: str = Field(description="Registry name, e.g. exact_match.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments for the scorer factory.")
    weight: float = Field(
        default=1.0, ge=0.0, le=MAX_WEIGHT, description="Weight in the final weighted mean (0 to 1e6)."
    )
    gate: bool = Field(default=False, description="When true, a score below 1 makes the final score 0.")
    alias: str | None = Field(default=None, description="Key in the record; defaults to name.")

    @property
    def key(self) -> str:
        """The name under which this scorer's value is stored."""
        return self.alias or self.name


class TaskInfo(BaseModel):
    """What the manifest records about the task."""

    name: str
    source: str | None = Field(default=None, description="Path of the task spec file used.")
    template: str
    template_sha256: str
    template_includes: list[str] | None = Field(
        default=None,
        description="The templates the template includes, extends or imports, whose text template_sha256 covers "
        "too; None: a run recorded before they were hashed (its template_sha256 is its main file's alone).",
    )
    system_prompt: str | None = None
    scorers: list[ScorerSpec]
    pass_threshold: float
    scorers_source: str | None = Field(
        default=None, description="Task spec the scorers came from; None when they were named explicitly."
    )
    generation: GenerateConfig
    generation_from_flags: list[str] = Field(
        default_factory=list,
        description="The generation options --temperature/--max-tokens set over the task's [generation].",
    )
    few_shot: dict[str, Any] | None = None
    prompt_inputs_sha256: str | None = Field(
        default=None,
        description="sha256 of the few-shot examples chosen, the few-shot spec and the template variables: what "
        "every prompt is rendered from besides the template file (None in runs made before it was recorded).",
    )
    dataset_reading: dict[str, Any] | None = Field(
        default=None,
        description="How the task reads its dataset: its [dataset] table but the path, without the values left at "
        "their defaults (fields, target_pattern, axis...). None in runs made before it was recorded.",
    )


class DatasetInfo(BaseModel):
    """What the manifest records about the dataset."""

    path: str
    sha256: str
    sample_count: int = Field(ge=0, description="The valid samples the dataset held when the run started.")
    # the readers rely on it (the file endings of a directory's members), so no other value is kept
    format: Literal["jsonl", "csv"] = "jsonl"
    invalid_lines: int = Field(default=0, description="Lines left out with --skip-invalid (0: the file is clean).")
    seekable: bool = Field(
        default=False, description="A resume may seek into the file (JSONL whose sample ids need no counting)."
    )
    checks: int = Field(
        default=1,
        description="The version of the line checks the run was validated with (DATASET_CHECKS; 1: before it was "
        "recorded): a resume under other checks validates the same bytes again.",
    )
    axes: list[str] | None = Field(
        default=None,
        description="The dataset's axes, sorted (None: a run written before they were recorded): a gate on an "
        "axis of an incomplete run is told apart from a mistyped one.",
    )
    files: list[str] | None = Field(
        default=None,
        description="A dataset directory's files, by name, in the order they are read (None: path is one file).",
    )
    files_sha256: list[str] | None = Field(
        default=None,
        description="The sha256 of each of ``files``, in their order: a resume names the file that changed (None: one "
        "file, or a run recorded before these were).",
    )

    @model_validator(mode="after")
    def _seekable_file(self) -> DatasetInfo:
        # a resume seeks to the byte offset its resume point names: in a CSV (a row may span lines, the header is
        # at the top) or a directory that offset is no place to start reading from
        if self.seekable and (self.format != "jsonl" or self.files is not None):
            what = "a directory" if self.files is not None else "a CSV file"
            raise _field_error(self, "seekable", f"true, but the dataset is {what}; only a JSONL file is", True)
        return self


DATASET_CHECKS = 4
"""The version of the dataset's line checks, raised when a check refuses lines earlier versions accepted (2: a
mapped column must be on every line, a byte-order mark makes its line a problem; 3: a mapped axis column must be
on every line where axis_pattern does not match the file name; 4: a line of a choices string that opens like an
option is one the pattern matches, and a target letter names one of the line's options)."""


class ModelInfo(BaseModel):
    """The model under evaluation; ``args`` never hold secrets."""

    id: str
    args: dict[str, Any] = Field(default_factory=dict)


GateBasis = Literal["mean", "ci-low"]
"""What a score gate compares: the mean, or the lower end of the 95% interval (which must clear the bar)."""


class GateSettings(BaseModel):
    """The quality gates of a run (``--fail-below`` ...), as given and as its manifest records them, so that a
    resume, whose printed command names none of them, applies them again."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    fail_below: float | None = Field(default=None, ge=0, le=1, description="--fail-below: the overall minimum.")
    fail_below_axis: list[tuple[str, Annotated[float, Field(ge=0, le=1)]]] = Field(
        default_factory=list, description="--fail-below-axis: (axis, minimum) pairs, in the order given."
    )
    gate_on: GateBasis = Field(default="mean", description="--gate-on: what the score gates compare.")
    max_error_rate: float | None = Field(default=None, ge=0, le=1, description="--max-error-rate: the maximum.")

    @property
    def active(self) -> bool:
        """True when at least one gate is set (``gate_on`` alone gates nothing)."""
        return self.fail_below is not None or bool(self.fail_below_axis) or self.max_error_rate is not None


class RunManifest(BaseModel):
    """manifest.json: everything needed to resume or reproduce a run."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    status: RunStatus
    created_at: str
    updated_at: str
    harness_version: str
    task: TaskInfo
    model: ModelInfo
    dataset: DatasetInfo
    seed: int
    epochs: int = Field(ge=1)
    limit: int | None = Field(ge=1, description="--limit: the first N samples (None: all).")
    limit_per_axis: int | None = Field(
        default=None,
        ge=1,
        description="--limit-per-axis: the first N samples of each axis (None: all; before --limit).",
    )
    concurrency: int = Field(description="--concurrency of the last session (a resume keeps it).")
    timeout_s: float = Field(description="--timeout of the last session (a resume keeps it).")
    rpm: float | None = Field(default=None, description="--rpm of the last session (a resume keeps it).")
    tpm: float | None = Field(default=None, description="--tpm of the last session (a resume keeps it).")
    max_retries: int = Field(default=5, description="--max-retries of the last session (a resume keeps it).")
    cache: bool = Field(default=False, description="--cache of the last session (a resume keeps it).")
    gates: GateSettings | None = Field(
        default=None,
        description="The gates of the last session (a resume applies them unless given anew); None: no gate, or a "
        "run made before gates were recorded.",
    )
    fingerprint: str
    max_tokens_sent: int | None = Field(
        default=None,
        description="The output limit as sent: the task's max_tokens with any room to think or reason added, or "
        "the provider's default (Anthropic's 1,024); None: none was sent, or a run made before it was recorded.",
    )
    expected_records: int = Field(ge=0, description="sample_count after --limit, times epochs.")
    source_run: str | None = Field(default=None, description="For rescore runs: the run whose outputs are reused.")
    source_records: tuple[int, str] | None = Field(
        default=None,
        description="For rescore runs: the source's samples.jsonl as the rescore started, its size in bytes and the "
        "sha256 of its last 4 KB (a resume refuses a source changed since); None: a run made before it was recorded.",
    )
    judge: ModelInfo | None = Field(default=None, description="The judge model of judge scorers, if any.")
    forced_changes: list[str] = Field(
        default_factory=list, description="What had changed when a session was resumed with --force."
    )
    sessions: int = Field(default=1, description="How many processes have written this run (1 + resumes).")
    wall_time_s: float = Field(default=0.0, description="Wall time summed over the sessions.")

    def expected_records_problem(self) -> str | None:
        """What is wrong with ``expected_records`` that the other values tell without the dataset, or None (a resume
        compares it with the dataset too: ``planning.check_expected_records_counted``). Readers count the records
        missing from it, and a resume runs until it is reached. None after a resume forced across changes, which
        may expect another count (a changed dataset's). Asked by the readers (``check_expected_records_bounds``),
        not when the model is built: a resume names a value out of the CLI's range (epochs 5000) first, as such."""
        if self.forced_changes:
            return None
        epochs, samples = self.epochs, self.expected_records // self.epochs
        if self.expected_records % epochs:
            return f"is not a whole number of samples over {epochs} epochs"
        bounds = [(self.dataset.sample_count, f"the dataset's {self.dataset.sample_count:,} samples")]
        if self.limit is not None:
            bounds.append((self.limit, f"limit {self.limit}"))
        if self.limit_per_axis is not None and self.dataset.axes:
            axes = len(self.dataset.axes)
            bounds.append((self.limit_per_axis * axes, f"limit_per_axis {self.limit_per_axis} of {axes} axes"))
        most, what = min(bounds)
        if samples > most:
            return f"is more than {what} over {epochs} epoch{'s' if epochs > 1 else ''} can be ({most * epochs:,})"
        return None


FINGERPRINT = re.compile(r"[0-9a-f]{64}")
"""What a run's fingerprint is: a sha256 in hexadecimal (``RunManifest.fingerprint``)."""

WEIGHT_0_FAILED: Final = "failed, not counted (weight 0): "
"""How a weight-0 scorer's failure opens its explanation (the record's score leaves it out; readers tell it from a
scorer skipped by staging by it)."""

CALLED_ROLES: Final = ("model", "judge")
"""The models a run calls: a forced resume records anew the arguments of either ("model args of ...", "judge args of
...": ``args_change_of``), and keeps every other forced change as the run started."""


def args_change_of(role: str) -> str:
    """How a resume's change of ``role``'s arguments begins (``planning.Called.args_change``)."""
    return f"{role} args of "


def roles_with_args_changed(changes: Iterable[str]) -> list[str]:
    """The roles (in ``CALLED_ROLES`` order) whose arguments ``changes`` name: a plan's ``forced``, or a manifest's
    ``forced_changes``, whose entries begin 'session N: '."""
    named = [_SESSION_PREFIX.sub("", change, count=1) for change in changes]
    return [role for role in CALLED_ROLES if any(change.startswith(args_change_of(role)) for change in named)]


def is_args_change(change: str) -> bool:
    """Whether ``change`` (as ``roles_with_args_changed`` reads it) is of a called model's arguments."""
    return bool(roles_with_args_changed([change]))


_SESSION_PREFIX = re.compile(r"^session \d+: ")


FINGERPRINT_PARTS: Final[Mapping[str, str | None]] = {
    "dataset_sha256": "dataset.sha256",
    "template_sha256": "task.template_sha256",
    "system_prompt": "task.system_prompt",
    "scorers": "task.scorers",
    "pass_threshold": "task.pass_threshold",
    "model": "model",
    "judge": "judge",
    "seed": "seed",
    "scorer_fingerprints": None,
}
"""What ``RunManifest.fingerprint`` covers: each part's name (as hashed, see ``planning._fingerprint``) and the
dotted path of the manifest field that records the same value (its JSON), or None for a part only the fingerprint
holds (the digests of the files a scorer reads, such as a judge's rubric). A resume names a changed part from its
recorded value, and compare knows which differences of two manifests the fingerprint covers: a new part is one
entry here, besides its value in ``planning._fingerprint._fingerprint_parts``."""


class ResumePoint(BaseModel):
    """.resume.json: where a resume can start without reading everything already done.

    Written atomically right after each fsync of samples.jsonl, so it never claims a record the file may
    have lost. Every dataset sample before ``frontier_offset`` has all its epochs recorded; ``keys_beyond``
    are the records of samples at or after it; records after ``samples_bytes`` are found by reading that
    tail. A resume that cannot trust it (file changed, --retry-errors, a CSV dataset) reads everything.
    """

    schema_version: int = SCHEMA_VERSION
    samples_bytes: int = Field(description="Length of samples.jsonl the point describes.")
    samples_digest: str = Field(description="sha256 of the last 4 KB of those bytes.")
    done_keys: int = Field(description="Distinct (sample_id, epoch) recorded in those bytes.")
    frontier_offset: int = Field(description="Dataset byte offset before which every sample is complete.")
    frontier_line: int = Field(description="1-based dataset line number at frontier_offset.")
    taken_before_frontier: int = Field(description="Samples before the frontier that count toward --limit.")
    keys_beyond: list[str] = Field(default_factory=list, description="Record keys of samples at/after it.")


class AxisStats(BaseModel):
    """Aggregates of one axis (or of the whole run, axis='overall')."""

    axis: str
    n: int = Field(description="Records (errors included).")
    errors: int
    error_rate: float
    mean: float | None = Field(description="Mean final score, errors counted as 0.")
    mean_excluding_errors: float | None
    ci: tuple[float, float] | None
    ci_method: str
    pass_rate: float | None
    cost_total_usd: float | None
    cost_mean_usd: float | None
    cost_known: bool = Field(
        description="False when a billed record (no error, or an answer that came before its scoring failed) has "
        "an unknown (null) cost; a failed call's null is no unknown price."
    )
    accuracy_per_dollar: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    prompt_tokens: int
    completion_tokens: int
    samples: int | None = Field(
        default=None,
        description="Samples that mean and ci are over (each the mean of its epochs) when a sample has several "
        "records; None when every sample has one record (n is then the number of samples).",
    )


class RunSummary(BaseModel):
    """summary.json: aggregates over the whole artifact (every session of the run)."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    status: RunStatus
    task: str
    model: str
    expected_records: int
    records: int
    missing: int
    micro_mean: float | None = Field(description="Mean over samples.")
    macro_mean: float | None = Field(description="Mean over axes of the per-axis means.")
    error_policy: str = "errors counted as wrong (score 0)"
    axes: list[AxisStats]
    overall: AxisStats
    judge_cost_usd: float | None
    errors_by_type: dict[str, int]
    retries_by_cause: dict[str, int]
    backoff_s: float
    cached_records: int
    wall_time_s: float | None = Field(description="Sum of the sessions' wall times.")


SAMPLE_FIELDS = ("id", "input", "target", "axis", "tags", "choices", "metadata")

RESERVED_AXIS = "overall"
"""The report's row for the whole run: an axis of that name would be a second "overall" row, and
``--fail-below-axis overall=X`` could not say which one it means."""
RESERVED_AXIS_MESSAGE = f"{RESERVED_AXIS!r} is reserved for the whole run"

TARGET_PATTERN_FLAGS = re.MULTILINE | re.DOTALL
"""How ``target_pattern`` and ``axis_pattern`` are compiled."""
CHOICES_PATTERN_FLAGS = re.MULTILINE
"""How ``choices_pattern`` is compiled: one option per line, so '.' does not run across lines."""


def _compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` compiled, or a validation error saying why it is not a regular expression."""
    try:
        return re.compile(pattern, flags)
    except (re.error, OverflowError) as exc:  # OverflowError: a repeat count such as a{99999999999}
        reason = str(exc)
    except RecursionError:
        reason = "groups nested too deeply"
    raise PydanticCustomError("regex", "invalid regular expression: {reason}", {"reason": reason})


_DATASET_PATTERNS: dict[str, tuple[int, str | None]] = {
    "target_pattern": (TARGET_PATTERN_FLAGS, None),
    "axis_pattern": (TARGET_PATTERN_FLAGS, "group 1 of its match on the file name is the axis"),
    "choices_pattern": (CHOICES_PATTERN_FLAGS, "group 1 of each match is an option"),
}
"""The regex fields of ``DatasetSpec``: their flags, and what their group 1 is where the reader needs one."""


def split_rewrite(rule: str) -> tuple[str, str]:
    """``'PATTERN => REPLACEMENT'`` as ``(pattern, replacement)``, both stripped (the first '=>' splits)."""
    pattern, _, replacement = rule.partition("=>")
    return pattern.strip(), replacement.strip()


class DatasetSpec(BaseModel):
    """How to read a dataset file into ``Sample`` records, as written in a task spec."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    path: str | None = Field(default=None, description="Default dataset, relative to the task root.")
    format: Literal["jsonl", "csv"] = Field(default="jsonl", description="File format.")
    csv_columns: list[str] | None = Field(
        default=None, description="Column names of a header-less CSV; None means the first row is a header."
    )
    fields: dict[str, str | list[str]] = Field(
        default_factory=dict,
        description="Sample field -> source field (or several, for choices), e.g. {input = 'question'}.",
    )
    target_pattern: str | None = Field(
        default=None, description="Regex applied to the target; its first group becomes the target."
    )
    axis: str | None = Field(
        default=None, description="Constant axis for every sample; '{stem}' is the file name's stem."
    )
    axis_pattern: str | None = Field(
        default=None, description="Regex on the file name whose first group is the axis (e.g. MMLU subject)."
    )
    choices_pattern: str | None = Field(
        default=None,
        description="For choices given as one string: a regex whose first group, over each match, is an option "
        r"(e.g. '^[A-Z]\. (.*)$' for OpenBookQA's 'A. ...\nB. ...').",
    )

    # The patterns are compiled when the spec loads, so a bad one is an error naming the spec and the field,
    # not a traceback on the first line read.
    @field_validator(*_DATASET_PATTERNS)
    @classmethod
    def _pattern(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            flags, group = _DATASET_PATTERNS[str(info.field_name)]
            if _compile_pattern(value, flags).groups < 1 and group is not None:
                raise PydanticCustomError("regex_group", "has no group; {what}", {"what": group})
        return value

    @field_validator("fields")
    @classmethod
    def _sample_fields(cls, value: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        unknown = [name for name in value if name not in SAMPLE_FIELDS]
        if unknown:  # a misspelt key mapped nothing, silently: the reader took the field by its own name
            import difflib  # only on this error path

            close = difflib.get_close_matches(unknown[0], SAMPLE_FIELDS, n=1)
            raise PydanticCustomError(
                "sample_field",
                "{name} is no sample field{hint}; a mapping is SAMPLE_FIELD = 'column of the file', where the sample "
                "fields are {known}",
                {
                    "name": repr(unknown[0]),
                    "hint": f" (did you mean {close[0]!r}?)" if close else "",
                    "known": ", ".join(SAMPLE_FIELDS),
                },
            )
        return value

    @field_validator("axis")
    @classmethod
    def _constant_axis(cls, value: str | None) -> str | None:
        if value is not None:
            if not value.strip():
                raise PydanticCustomError("axis", "is empty")
            if value == RESERVED_AXIS:
                raise PydanticCustomError("axis", RESERVED_AXIS_MESSAGE)
        return value

    def reading(self, *, defaults: bool = True) -> dict[str, Any]:
        """How this table reads a dataset: every setting but the path, which ``--dataset`` replaces and a
        manifest's ``dataset`` records. ``defaults=False`` leaves out the settings at their defaults, as a manifest
        records it (``TaskInfo.dataset_reading``), so a setting added to the table later is no change to runs
        recorded before. A field mapped to its own name is left out of ``fields``: the reader takes it as unmapped."""
        reading = self.model_dump(mode="json", exclude={"path", "fields"}, exclude_defaults=not defaults)
        fields = _mapped(self.fields)
        return {**reading, "fields": fields} if fields or defaults else reading


def _mapped(fields: Mapping[Any, Any]) -> dict[Any, Any]:
    """A ``fields`` mapping without the fields mapped to their own name, which the reader takes as unmapped."""
    return {name: source for name, source in fields.items() if source != name}


def dataset_reading_filled(recorded: dict[str, Any]) -> dict[str, Any]:
    """A recorded ``TaskInfo.dataset_reading`` with each setting it leaves out at its default, and without a field
    mapped to its own name (as ``DatasetSpec.reading`` leaves it out): what it reads as."""
    fields = recorded.get("fields")
    if isinstance(fields, dict):  # a hand-edited manifest may hold anything: compared as it is
        recorded = {**recorded, "fields": _mapped(fields)}
    return DatasetSpec().reading() | recorded


def stays_inside(name: str) -> bool:
    """Whether ``name`` names a file inside the directory it is looked up in: not empty, not absolute, no ``..``
    (a template ``../.env`` would put any readable file, keys included, into the prompts)."""
    parts = PurePath(name).parts
    return bool(parts) and not PurePath(name).is_absolute() and ".." not in parts


TEMPLATE_SAMPLE_VARIABLES: Final = ("input", "sample", "target", "choices", "letters", "examples", "metadata")
"""What a template gets from each sample (templates.PromptTemplate.render), so no template_vars name; in the order
a template error lists them."""


def held_out_said(held: int, total: int) -> str:
    """The note of a few-shot hold-out, said at the run's start and in its report in the same words: where the
    samples that n lacks went."""
    return (
        f"few-shot: {held:,} of the dataset's {total:,} samples held out as examples (holdout_fraction), not evaluated"
    )


class FewShotSpec(BaseModel):
    """Where few-shot examples come from; never from the samples under evaluation."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

    k: int = Field(ge=0, description="Examples per prompt.")
    path: str | None = Field(default=None, description="File of examples, relative to the task root.")
    path_from_dataset: str | None = Field(
        default=None,
        description="Derive the examples file from the dataset path with a regex 'PATTERN => REPLACEMENT'.",
    )
    holdout_fraction: float | None = Field(
        default=None, gt=0, lt=1, description="Hold out this stratified fraction of the dataset as the pool."
    )
    seed: int = Field(default=0, description="Seed for choosing the examples.")

    @field_validator("path_from_dataset")
    @classmethod
    def _rewrite(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if "=>" not in value:
            raise PydanticCustomError("rewrite", "expected 'PATTERN => REPLACEMENT'")
        pattern, replacement = split_rewrite(value)
        if not pattern:
            raise PydanticCustomError("rewrite", "the pattern before '=>' is empty")
        compiled = _compile_pattern(pattern)
        try:
            # the replacement is parsed before any match is looked for, so an empty string checks it
            compiled.sub(replacement, "")
        except (re.error, IndexError) as exc:  # IndexError: \g<name> names no group of the pattern
            raise PydanticCustomError("rewrite", "invalid replacement: {reason}", {"reason": str(exc)}) from None
        return value

    @model_validator(mode="after")
    def _one_source(self) -> FewShotSpec:
        given = [name for name in ("path", "path_from_dataset", "holdout_fraction") if getattr(self, name) is not None]
        if self.k > 0 and len(given) != 1:
            # two sources given, one silently won; none given failed only when the run was planned
            raise ValueError(
                f"give one of path, path_from_dataset or holdout_fraction, got {', '.join(given) or 'none'}"
            )
        return self


class TaskSpec(BaseModel):
    """A task spec file (tasks/<name>.toml) after parsing.

    Strict, as its parts are: TOML types every value, so one of another type is a mistake to name, not text to
    convert (``pass_threshold = true`` was read as 1.0); an integer passes for a float."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

    name: str = Field(description="The task's name, recorded in manifests and shown by report.")
    description: str = ""
    template: str = Field(description="Template file name under templates/.")
    system_prompt: str | None = None
    pass_threshold: float = Field(default=0.5, ge=0, le=1, description="A sample passes at or above this.")
    dataset: DatasetSpec = Field(default_factory=DatasetSpec)
    generation: GenerateConfig = Field(default_factory=GenerateConfig)
    scorers: list[ScorerSpec] = Field(min_length=1)
    few_shot: FewShotSpec | None = None
    template_vars: dict[str, Any] = Field(default_factory=dict, description="Extra variables for the template.")

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise PydanticCustomError("name", "is empty")
        return value

    @field_validator("template")
    @classmethod
    def _in_templates(cls, value: str) -> str:
        if not stays_inside(value):  # as load_template refuses it, but named by the spec's line here
            raise PydanticCustomError(
                "template_path",
                "a template is a file in the task's templates/ (no absolute path, no '..'); it would otherwise read "
                "any file into the prompts",
            )
        return value

    @field_validator("template_vars")
    @classmethod
    def _not_a_sample_variable(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value).intersection(TEMPLATE_SAMPLE_VARIABLES))
        if taken:  # the sample's own value would silently win over it
            raise ValueError(f"{', '.join(taken)}: the template gets these from each sample; use another name")
        if "self" in value:  # a plain template read the value, Jinja its own template object
            raise ValueError("self: Jinja's name for the template itself; use another name")
        return value


class CompletionClient(Protocol):
    """Anything that turns a request into a completion: how scorers reach a judge model.

    Raises ``ProviderError`` when the call fails after its retries.
    """

    async def complete(self, request: GenerateRequest) -> Completion: ...


class ErrorPlace(NamedTuple):
    """Where one error of a ``ValidationError`` is."""

    loc: tuple[int | str, ...]
    """pydantic's location without the names of the union members it tried: a place in the user's data."""
    tags: frozenset[int]
    """The positions in pydantic's location that named a union member."""


def error_places(error: ValidationError, count: int | None = None) -> list[ErrorPlace]:
    """Where each of the first ``count`` errors of ``error`` (all by default) is, without union members.

    pydantic tries each member of a union on the value and reports one error per member, its location the
    union's place followed by the member's name: ``fields.input.str`` and ``fields.input.list[str]``. Such a
    name (``int``, ``list[str]``, ``constrained-str``, a model class's) can also be a key of the data, an axis
    called ``int``, so the errors' shape decides: the parts after one place name union members when the
    errors under them were given the same value there, and keys or fields when they were given different ones.
    """
    problems = error.errors(include_url=False)
    verdicts: dict[tuple[int | str, ...], bool] = {}
    places = []
    for problem in problems[:count]:
        loc = problem["loc"]
        tags = frozenset(
            i for i, part in enumerate(loc) if isinstance(part, str) and _union_at(problems, loc[:i], verdicts)
        )
        places.append(ErrorPlace(tuple(part for i, part in enumerate(loc) if i not in tags), tags))
    return places


@dataclass(frozen=True)
class _Seen:
    """One error under a place: the branch it is under, and the value it was given, found at ``rest`` within
    the value the branch was given."""

    branch: int | str
    rest: tuple[int | str, ...]
    value: Any
    kind: str


_COMPARED = 64
"""The errors under one place that are compared pairwise: enough for any union, and bounded for a list of
thousands of bad items."""

_NOT_FOUND: Final = object()


def _union_at(
    problems: list[ErrorDetails], place: tuple[int | str, ...], verdicts: dict[tuple[int | str, ...], bool]
) -> bool:
    """Whether the errors under ``place`` branch there into the members of a union (not into keys or fields)."""
    if place not in verdicts:
        seen = _seen_under(problems, place)
        verdicts[place] = seen is not None and _one_value(seen)
    return verdicts[place]


def _seen_under(problems: list[ErrorDetails], place: tuple[int | str, ...]) -> list[_Seen] | None:
    """The errors under ``place``; None when a field is missing right under it, which makes it a table."""
    depth = len(place)
    seen: list[_Seen] = []
    for problem in problems:
        loc = problem["loc"]
        if len(loc) <= depth or loc[:depth] != place:
            continue
        rest = loc[depth + 1 :]
        if problem["type"].startswith("missing"):  # its value is the table the field is missing from
            if not rest:
                return None
            rest = rest[:-1]
        seen.append(_Seen(loc[depth], rest, problem["input"], problem["type"]))
        if len(seen) == _COMPARED:
            break
    return seen


def _one_value(seen: list[_Seen]) -> bool:
    """Whether errors under different branches were given one value: its members, if the place is a union."""
    agreed = False
    for a, b in itertools.combinations(seen, 2):
        if a.branch == b.branch:
            continue
        if len(a.rest) > len(b.rest):
            a, b = b, a
        if b.rest[: len(a.rest)] != a.rest:
            continue
        found = _value_at(a.value, b.rest[len(a.rest) :])
        if found is _NOT_FOUND:
            continue
        if found is not b.value:
            return False  # two values at one place: the branches are keys or fields of a table
        agreed = agreed or len(b.rest) > len(a.rest) or _members(a, b, found)
    return agreed


def _members(a: _Seen, b: _Seen, value: Any) -> bool:
    """Whether ``a`` and ``b``, given the same ``value`` at the same place, are members of a union."""
    if not isinstance(value, str | bytes | int | float | None):
        return True  # one table or list at two places of parsed data is one place
    # Python shares one object for small ints, None, True and short strings, so two keys given 1 may hold the
    # same one. Keys of one table reject it the same way, members of a union each in its own; and pydantic names
    # members by their type.
    if a.kind != b.kind:
        return _type_name(a.branch) or _type_name(b.branch)
    # alike: two members of the same shape (list[int] | list[str]); a key that is no identifier (an axis called
    # multi-step) is not one
    return all(isinstance(x.branch, str) and _COMPOSITE_MEMBER.fullmatch(x.branch) for x in (a, b))


def _value_at(value: Any, path: tuple[int | str, ...]) -> Any:
    """The part of ``value`` at ``path``, or ``_NOT_FOUND``."""
    for part in path:
        if isinstance(value, list | tuple):
            held = isinstance(part, int) and -len(value) <= part < len(value)
        else:
            held = isinstance(value, Mapping) and part in value
        if not held:
            return _NOT_FOUND
        value = value[part]
    return value


_SCALAR_MEMBERS = frozenset({"str", "int", "float", "bool", "bytes", "none"})
_COMPOSITE_MEMBER = re.compile(
    r"function-(?:after|before|wrap|plain)\[.*\]|constrained-(?:int|str|float|bytes|decimal)|[a-z-]+\[.*\]", re.DOTALL
)
"""How pydantic names a union member that is not a scalar or a model: ``list[str]``, ``constrained-str``,
``function-after[...]``, ``json-or-python[...]``."""


def _type_name(branch: int | str) -> bool:
    """Whether ``branch`` reads as pydantic's name of a type (``list[str]``, ``constrained-str``, ``int``)
    rather than as a field's."""
    return isinstance(branch, str) and (not branch.isidentifier() or branch in _SCALAR_MEMBERS)


def first_problem(error: ValidationError) -> tuple[str, str]:
    """The first problem of a validation error as ``(location, message)``; the location is its dotted field
    path ("" for the value as a whole), without the union members pydantic tried."""
    place = error_places(error, 1)[0]
    return ".".join(map(str, place.loc)), problem_message(error.errors(include_url=False)[0])


def problem_message(problem: Mapping[str, Any]) -> str:
    """One problem of a validation error in words: a validator's own read as written, without the "Value error, "
    pydantic puts before them; a table that is not one is said so, without pydantic's class name ("Input should be a
    valid dictionary or instance of ModelInfo")."""
    if problem.get("type") == "model_type":
        return f"expected a table (a JSON object), got {json_type_name(problem.get('input'))}"
    return str(problem["msg"]).removeprefix("Value error, ")


def _field_error(model: BaseModel, name: str, message: str, value: Any) -> ValidationError:
    """The error of ``model``'s field ``name`` found by a model validator, which checks fields against each other:
    raised there, pydantic places it under that field (``dataset.seekable``), where a ValueError would be the
    model's as a whole and name no field."""
    details = InitErrorDetails(
        type=PydanticCustomError("inconsistent", "{message}", {"message": message}), loc=(name,), input=value
    )
    return ValidationError.from_exception_data(type(model).__name__, [details])


def check_expected_records_bounds(manifest: RunManifest, path: Path) -> None:
    """Refuse (``ArtifactError``) the manifest at ``path`` when the other values of ``manifest`` tell that its
    ``expected_records`` cannot be right (``RunManifest.expected_records_problem``)."""
    problem = manifest.expected_records_problem()
    if problem is not None:
        raise ArtifactError(f"{path}: expected_records: {manifest.expected_records:,} {problem}")


def beyond_epochs(epoch: int, epochs: int) -> str:
    """What is wrong with a record's ``epoch`` in a run of ``epochs`` that it is not below: no session of the run
    writes it, and no resume looks for it."""
    expected = "0" if epochs == 1 else f"0 to {epochs - 1}"
    return f"expected {expected} (the run has {epochs} epoch{'s' if epochs > 1 else ''}), got {epoch}"


__all__ = [
    "CALLED_ROLES",
    "CHOICES_PATTERN_FLAGS",
    "DATASET_CHECKS",
    "FINGERPRINT",
    "FINGERPRINT_PARTS",
    "MAX_WEIGHT",
    "RESERVED_AXIS",
    "RESERVED_AXIS_MESSAGE",
    "SAMPLE_FIELDS",
    "SCHEMA_VERSION",
    "TARGET_PATTERN_FLAGS",
    "TEMPLATE_SAMPLE_VARIABLES",
    "WEIGHT_0_FAILED",
    "AxisStats",
    "ChatMessage",
    "Completion",
    "CompletionClient",
    "DatasetInfo",
    "DatasetSpec",
    "ErrorInfo",
    "ErrorPlace",
    "FewShotSpec",
    "GateBasis",
    "GateSettings",
    "GenerateConfig",
    "GenerateRequest",
    "ModelInfo",
    "PairedInterval",
    "PairedTest",
    "ResumePoint",
    "RunManifest",
    "RunStatus",
    "RunSummary",
    "Sample",
    "SampleRecord",
    "Score",
    "ScorerSpec",
    "TaskInfo",
    "TaskSpec",
    "Usage",
    "args_change_of",
    "beyond_epochs",
    "check_expected_records_bounds",
    "dataset_reading_filled",
    "error_places",
    "first_problem",
    "held_out_said",
    "is_args_change",
    "problem_message",
    "roles_with_args_changed",
    "split_rewrite",
    "stays_inside",
]
