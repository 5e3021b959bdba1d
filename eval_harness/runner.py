"""The run loop: stream samples through template → provider → scorers into the crash-safe artifact.

``plan_run`` (new run) and ``plan_resume`` (existing run) check everything that can be checked before a
single call is made — dataset, template, scorers, model arguments, the resume fingerprint — and create
nothing on failure. ``Runner.run`` then keeps at most ``concurrency`` samples in flight with a fixed pool
of worker coroutines pulling from one stream, so memory does not grow with the dataset.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import re
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from eval_harness import __version__
from eval_harness.artifacts import (
    KeyScan,
    RunLock,
    RunPaths,
    SampleWriter,
    iter_record_dicts,
    read_manifest,
    read_resume_point,
    record_key,
    repair_tail,
    scan_keys,
    tail_digest,
    write_model,
)
from eval_harness.cache import Origin
from eval_harness.config import RunConfig, Settings, invalid_config, redact
from eval_harness.datasets import (
    DatasetReport,
    Position,
    file_sha256,
    is_compressed,
    iter_positioned,
    iter_samples,
    split,
    validate_dataset,
)
from eval_harness.datasets import sample as sample_subset
from eval_harness.durable import write_atomic
from eval_harness.errors import (
    ArtifactError,
    AuthenticationError,
    ConfigError,
    DatasetError,
    EvalHarnessError,
    ProviderError,
    ProviderTimeoutError,
    ReplayedError,
    ResumeMismatchError,
)
from eval_harness.frontier import START, FrontierTracker
from eval_harness.providers.base import Provider, ProviderContext, create_provider, estimate_tokens
from eval_harness.providers.gateway import CallTally, Gateway
from eval_harness.providers.replay import ReplayProvider
from eval_harness.scorers.base import ScoringPipeline, ScoringResult
from eval_harness.tally import SessionTally
from eval_harness.tasks import LoadedTask, find_task
from eval_harness.templates import PromptTemplate, load_template
from eval_harness.types import (
    ChatMessage,
    Completion,
    DatasetInfo,
    ErrorInfo,
    GenerateConfig,
    GenerateRequest,
    ModelInfo,
    ResumePoint,
    RunManifest,
    RunStatus,
    RunSummary,
    Sample,
    ScorerSpec,
    TaskInfo,
    Usage,
    split_rewrite,
)

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


_second_text: tuple[int, str] = (-1, "")


def _now() -> str:
    """UTC time in ISO 8601 with milliseconds; the text of the second is reused, as this runs once per record."""
    global _second_text
    second, millisecond = divmod(time.time_ns() // 1_000_000, 1000)
    if second != _second_text[0]:
        _second_text = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{_second_text[1]}.{millisecond:03d}Z"


def _import_aggregate_meanwhile() -> None:
    """Import the summary code (numpy and the column reader: ~0.3 s) in a thread while calls are in flight,
    instead of after the last one: a latency-bound run finishes that much sooner. Only when the summary
    will need it (a resumed session, or scores other than 0 and 1): on a busy event loop the importing
    thread and the loop trade the GIL at every write, which costs several times the import itself."""
    import threading

    threading.Thread(target=importlib.import_module, args=("eval_harness.aggregate",), daemon=True).start()


def new_run_id() -> str:
    """A sortable, unique default run id: UTC timestamp plus a short random suffix."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


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

    @property
    def mean(self) -> float | None:
        """Mean final score of this session's scored samples."""
        return self.score_sum / self.scored if self.scored else None


class ProgressListener(Protocol):
    """Receives progress; the CLI renders it, tests may record it."""

    def update(self, progress: Progress) -> None: ...


@dataclass
class RunPlan:
    """Everything checked and built before the first call."""

    config: RunConfig
    task: LoadedTask
    dataset_path: Path
    dataset_report: DatasetReport
    template: PromptTemplate
    scoring: ScoringPipeline
    pass_threshold: float
    provider: Provider
    judge: Gateway | None
    generation: GenerateConfig
    examples: list[Sample]
    excluded_ids: frozenset[str]
    manifest: RunManifest
    run_dir: Path
    dataset_stamp: tuple[int, int] | None = None
    """The dataset file's size and modification time before it was checked (see ``_file_stamp``)."""
    prompt_inputs_sha256: str | None = None
    """What the prompts are rendered from besides the template and the sample (see ``_prompt_inputs_sha256``)."""
    resuming: bool = False
    retry_errors: bool = False
    forced: list[str] = field(default_factory=list)


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

    @property
    def resume_command(self) -> str:
        """The exact command that continues this run."""
        return f"eval-harness resume {self.run_dir}"


@dataclass
class DryRun:
    """Rendered prompts and an estimate of what the run would spend."""

    count: int
    first_prompts: list[list[ChatMessage]]
    prompt_tokens: int
    max_output_tokens: int | None
    estimated_cost_usd: float | None


@dataclass(frozen=True)
class ScoringSetup:
    """The scorers a run applies and where they came from (the task, another task, or named explicitly)."""

    specs: list[ScorerSpec]
    pass_threshold: float
    source: LoadedTask | None

    @property
    def where(self) -> str:
        return str(self.source.path) if self.source else "--scorer"

    @property
    def lines(self) -> tuple[int | None, ...]:
        """The line of each scorer in the task spec it came from (none for ``--scorer``)."""
        return self.source.scorer_lines if self.source else ()


def _scoring_setup(task: LoadedTask, config: RunConfig) -> ScoringSetup:
    if config.scorers is not None:
        return ScoringSetup(list(config.scorers), task.spec.pass_threshold, None)
    source = find_task(config.scorer_task) if config.scorer_task else task
    return ScoringSetup(list(source.spec.scorers), source.spec.pass_threshold, source)


def _fingerprint_parts(
    dataset_sha256: str,
    template: PromptTemplate,
    task: LoadedTask,
    setup: ScoringSetup,
    scoring: ScoringPipeline,
    model: ModelInfo,
    judge: ModelInfo | None,
    seed: int,
) -> dict[str, Any]:
    return {
        "judge": judge.model_dump(mode="json") if judge else None,
        "scorer_fingerprints": scoring.fingerprints(),
        "dataset_sha256": dataset_sha256,
        "template_sha256": template.sha256,
        "system_prompt": task.spec.system_prompt,
        "scorers": [s.model_dump(mode="json") for s in setup.specs],
        "pass_threshold": setup.pass_threshold,
        "model": model.model_dump(mode="json"),
        "seed": seed,
    }


def _fingerprint(parts: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _prompt_inputs_sha256(task: LoadedTask, examples: list[Sample]) -> str:
    """What every prompt is rendered from besides the template file and the sample: the few-shot examples
    chosen (their content, wherever they came from), the few-shot spec and the template's variables."""
    return _fingerprint(
        {
            "examples": [example.model_dump(mode="json") for example in examples],
            "few_shot": task.spec.few_shot.model_dump(mode="json") if task.spec.few_shot else None,
            "template_vars": task.spec.template_vars,
        }
    )


def _validated_dataset(task: LoadedTask, path: Path, skip_invalid: bool = False) -> DatasetReport:
    report = validate_dataset(path, task.spec.dataset, task=task.spec.name)
    if report.ok or (skip_invalid and report.valid and not report.duplicate_ids):
        return report
    if report.duplicate_ids:
        hint = "fix them (duplicate ids make --skip-invalid ambiguous: which record would count?)"
    elif skip_invalid:
        hint = "no valid line is left to run; fix them"
    else:
        hint = "fix them, or pass --skip-invalid to run the valid lines only"
    raise DatasetError(f"{path}: the dataset has {report.problem_count} problem(s); {hint}", report.problem_lines())


def _resumed_dataset(task: LoadedTask, path: Path, manifest: RunManifest) -> DatasetReport:
    """The dataset of a resumed run: when its bytes still hash to the manifest's sha256 it was validated
    when the run started, so the hash is all that is checked (a second per-line validation of a million
    samples would dominate the resume)."""
    sha256 = file_sha256(path)
    if sha256 == manifest.dataset.sha256:
        return DatasetReport(
            path=str(path), sha256=sha256, lines=manifest.dataset.sample_count, valid=manifest.dataset.sample_count
        )
    return _validated_dataset(task, path, skip_invalid=manifest.dataset.invalid_lines > 0)


def _few_shot(task: LoadedTask, dataset_path: Path, seed: int) -> tuple[list[Sample], frozenset[str]]:
    """Few-shot examples and the sample ids they take away from evaluation."""
    spec = task.spec.few_shot
    if spec is None or spec.k == 0:
        return [], frozenset()
    if spec.holdout_fraction is not None:
        everything = list(iter_samples(dataset_path, task.spec.dataset))
        parts = split(everything, {"shots": spec.holdout_fraction, "eval": 1 - spec.holdout_fraction}, spec.seed)
        pool = parts["shots"]
        return sample_subset(pool, spec.k, spec.seed), frozenset(s.id for s in pool)
    if spec.path_from_dataset is not None:
        pattern, replacement = split_rewrite(spec.path_from_dataset)  # checked when the spec loaded
        # the absolute path: "test/x_test.csv" typed in the dataset's parent must match a pattern that wants
        # a directory before test/, as the same file given as ../test/x_test.csv does
        absolute = str(dataset_path.resolve())
        derived = re.sub(pattern, replacement, absolute)
        if derived == absolute:
            raise ConfigError(f"{task.path}: few_shot.path_from_dataset {pattern!r} does not match {absolute}")
        pool_path = Path(derived)
    else:
        assert spec.path is not None, "FewShotSpec requires one source when k > 0"
        pool_path = task.resolve(spec.path)
    if pool_path.resolve() == dataset_path.resolve():
        raise ConfigError(
            f"{task.path}: few-shot examples would come from the dataset under evaluation; use holdout_fraction instead"
        )
    report = validate_dataset(pool_path, task.spec.dataset, task=task.spec.name)
    if not report.ok:
        raise DatasetError(f"{pool_path}: few-shot file has {report.problem_count} problem(s)", report.problem_lines())
    return sample_subset(iter_samples(pool_path, task.spec.dataset), spec.k, spec.seed), frozenset()


def _judge(config: RunConfig, settings: Settings) -> Gateway | None:
    if config.judge_model is None:
        return None
    provider = create_provider(
        config.judge_model, config.judge_args, _provider_context(config, settings), flag="--judge-arg"
    )
    return Gateway.from_config(provider, config)


def _provider(config: RunConfig, settings: Settings, axes: frozenset[str] | None) -> Provider:
    """The model under evaluation, or, for a rescore, a replay of the source run's outputs."""
    context = _provider_context(config, settings, axes)
    if config.source_run is not None:
        return ReplayProvider(config.model, config.source_run, context)
    return create_provider(config.model, config.model_args, context)


def _model_info(config: RunConfig, provider: Provider) -> ModelInfo:
    if isinstance(provider, ReplayProvider):  # the model that produced the replayed outputs, as recorded
        return ModelInfo(id=config.model, args=dict(config.model_args))
    return ModelInfo(id=config.model, args=provider.options.public())


def _generation(task: LoadedTask, overrides: dict[str, Any]) -> GenerateConfig:
    merged = {**task.spec.generation.model_dump(exclude_none=True), **overrides}
    try:
        return GenerateConfig.model_validate(merged)
    except ValueError as exc:
        raise ConfigError(f"generation options: {exc}") from None


def judge_info(judge: Gateway | None) -> ModelInfo | None:
    """What the manifest records of the judge model (never secrets)."""
    if judge is None:
        return None
    provider = judge.provider
    return ModelInfo(id=provider.model_id, args=provider.options.public())


def _provider_context(config: RunConfig, settings: Settings, axes: frozenset[str] | None = None) -> ProviderContext:
    return ProviderContext(
        settings=settings,
        concurrency=config.concurrency,
        read_timeout_s=config.timeout_s,
        offline=config.dry_run,
        axes=axes,
    )


def _counted_samples(
    task: LoadedTask, path: Path, report: DatasetReport, excluded: frozenset[str], limit: int | None
) -> int:
    available = report.valid - len(excluded)
    return min(available, limit) if limit is not None else available


@dataclass
class _Parts:
    """What a plan is built from, the same for a new run and a resumed one."""

    template: PromptTemplate
    provider: Provider
    judge: Gateway | None
    setup: ScoringSetup
    scoring: ScoringPipeline
    model: ModelInfo
    examples: list[Sample]
    excluded: frozenset[str]
    fingerprint: str
    prompt_inputs_sha256: str


def _parts(
    config: RunConfig, task: LoadedTask, dataset_path: Path, report: DatasetReport, settings: Settings
) -> _Parts:
    template = load_template(task.templates_dir, task.spec.template, task.spec.system_prompt, task.spec.template_vars)
    # a resumed run's report is its manifest's hash and count (no axes): its options were checked at its start
    provider = _provider(config, settings, frozenset(report.axis_counts) or None)
    judge = _judge(config, settings)
    setup = _scoring_setup(task, config)
    scoring = ScoringPipeline(setup.specs, judge, where=setup.where, lines=setup.lines)
    model = _model_info(config, provider)
    examples, excluded = _few_shot(task, dataset_path, config.seed)
    prompt_inputs = _prompt_inputs_sha256(task, examples)
    fingerprint = _fingerprint(
        _fingerprint_parts(report.sha256, template, task, setup, scoring, model, judge_info(judge), config.seed)
    )
    return _Parts(template, provider, judge, setup, scoring, model, examples, excluded, fingerprint, prompt_inputs)


def _plan(
    config: RunConfig, task: LoadedTask, dataset_path: Path, report: DatasetReport, parts: _Parts,
    manifest: RunManifest, run_dir: Path, generation: GenerateConfig, dataset_stamp: tuple[int, int] | None,
) -> RunPlan:  # fmt: skip
    parts.provider.check_generation(generation)
    return RunPlan(
        config=config,
        task=task,
        dataset_path=dataset_path,
        dataset_report=report,
        template=parts.template,
        scoring=parts.scoring,
        pass_threshold=parts.setup.pass_threshold,
        provider=parts.provider,
        judge=parts.judge,
        generation=generation,
        examples=parts.examples,
        excluded_ids=parts.excluded,
        manifest=manifest,
        run_dir=run_dir,
        dataset_stamp=dataset_stamp,
        prompt_inputs_sha256=parts.prompt_inputs_sha256,
    )


def plan_run(config: RunConfig, settings: Settings | None = None) -> RunPlan:
    """Check a new run completely; raises before anything is written."""
    settings = settings or Settings.load()
    task = find_task(config.task)
    dataset_path = task.dataset_path(config.dataset)
    stamp = _file_stamp(dataset_path)
    report = _validated_dataset(task, dataset_path, config.skip_invalid)
    parts = _parts(config, task, dataset_path, report, settings)
    generation = _generation(task, config.generation)
    run_id = config.run_id or new_run_id()
    if not _RUN_ID.match(run_id):
        raise ConfigError(
            f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-', starting with a letter or a digit "
            "(at most 128 characters)"
        )
    run_dir = config.output_dir / run_id
    if (run_dir / "manifest.json").exists() or (run_dir / "samples.jsonl").exists():
        raise ArtifactError(
            f"{run_dir} already exists; resume it with 'eval-harness resume {run_dir}' or pick another --run-id"
        )
    count = _counted_samples(task, dataset_path, report, parts.excluded, config.limit)
    if count <= 0:
        raise ConfigError(
            f"{task.path}: few_shot.holdout_fraction leaves no sample to evaluate "
            f"(it holds out {len(parts.excluded)} of the {report.valid} in {dataset_path})"
        )
    setup = parts.setup
    now = _now()
    manifest = RunManifest(
        run_id=run_id,
        status="running",
        created_at=now,
        updated_at=now,
        harness_version=__version__,
        task=TaskInfo(
            name=task.spec.name,
            source=str(task.path),
            template=task.spec.template,
            template_sha256=parts.template.sha256,
            system_prompt=task.spec.system_prompt,
            scorers=setup.specs,
            pass_threshold=setup.pass_threshold,
            scorers_source=str(setup.source.path) if setup.source else None,
            generation=generation,
            few_shot=task.spec.few_shot.model_dump(mode="json") if task.spec.few_shot else None,
            prompt_inputs_sha256=parts.prompt_inputs_sha256,
        ),
        model=parts.model,
        dataset=DatasetInfo(
            path=str(dataset_path.resolve()),
            sha256=report.sha256,
            sample_count=report.valid,
            format=task.spec.dataset.format,
            invalid_lines=report.problem_count,
            # a compressed file's byte positions are not its lines': a resume of it reads every record
            seekable=task.spec.dataset.format == "jsonl" and not report.warnings and not is_compressed(dataset_path),
        ),
        seed=config.seed,
        epochs=config.epochs,
        limit=config.limit,
        fingerprint=parts.fingerprint,
        **_session_settings(config),
        expected_records=count * config.epochs,
        sessions=0,
        source_run=str(config.source_run.resolve()) if config.source_run else None,
        judge=judge_info(parts.judge),
    )
    plan = _plan(config, task, dataset_path, report, parts, manifest, run_dir, generation, stamp)
    _render_first_prompt(plan)
    return plan


def _session_settings(config: RunConfig) -> dict[str, Any]:
    """The pacing and retry settings a manifest records (the last session's), so a resume keeps them."""
    return {
        "concurrency": config.concurrency,
        "timeout_s": config.timeout_s,
        "rpm": config.rpm,
        "tpm": config.tpm,
        "max_retries": config.max_retries,
        "cache": config.cache,
    }


def _render_first_prompt(plan: RunPlan) -> None:
    """Render the first prompt now: a template that fails on every sample (an empty prompt, a name no
    sample has) is refused before the run directory exists, not found by the first call."""
    for _position, sample, _epoch in _work_items(plan):
        plan.template.render(sample, plan.examples)
        return


def _resume_config(manifest: RunManifest, run_dir: Path, task_ref: str, overrides: dict[str, Any]) -> RunConfig:
    """The configuration the run started with, from its manifest, with the operational overrides given now."""
    overrides = dict(overrides)
    explicit_scorers = manifest.task.scorers_source is None
    try:
        return RunConfig(
            task=task_ref,
            scorer_task=manifest.task.scorers_source if not explicit_scorers else None,
            scorers=list(manifest.task.scorers) if explicit_scorers else None,
            source_run=Path(manifest.source_run) if manifest.source_run else None,
            judge_model=manifest.judge.id if manifest.judge else None,
            judge_args=dict(manifest.judge.args) if manifest.judge else {},
            model=manifest.model.id,
            model_args=dict(manifest.model.args),
            dataset=Path(manifest.dataset.path),
            output_dir=run_dir.parent,
            run_id=manifest.run_id,
            concurrency=_kept(overrides, "concurrency", manifest.concurrency),
            epochs=manifest.epochs,
            limit=manifest.limit,
            seed=manifest.seed,
            timeout_s=_kept(overrides, "timeout_s", manifest.timeout_s),
            rpm=_kept(overrides, "rpm", manifest.rpm),
            tpm=_kept(overrides, "tpm", manifest.tpm),
            max_retries=_kept(overrides, "max_retries", manifest.max_retries),
            cache=_kept(overrides, "cache", manifest.cache),
            generation=manifest.task.generation.model_dump(exclude_none=True),
            **{k: v for k, v in overrides.items() if v is not None},
        )
    except ValidationError as exc:  # the flags were checked by the CLI: what is wrong came from the manifest
        raise invalid_config(exc, {}, str(RunPaths(run_dir).manifest)) from None


def _kept(overrides: dict[str, Any], name: str, recorded: Any) -> Any:
    """The override given now (None: not given), else the value the manifest recorded."""
    given = overrides.pop(name, None)
    return recorded if given is None else given


def replaced_settings(plan: RunPlan) -> dict[str, tuple[Any, Any]]:
    """The recorded pacing and retry settings this resume replaces: field -> (recorded, now)."""
    recorded = plan.manifest.model_dump()
    return {
        name: (recorded[name], value)
        for name, value in _session_settings(plan.config).items()
        if value != recorded[name]
    }


def _changes(manifest: RunManifest, task: LoadedTask, report: DatasetReport, parts: _Parts) -> list[str]:
    """What the run's fingerprint covers and is no longer as it was, each named for the user."""
    changed = []
    if report.sha256 != manifest.dataset.sha256:
        changed.append(f"dataset {report.path} (sha256 {manifest.dataset.sha256[:12]} → {report.sha256[:12]})")
    old_template, new_template = manifest.task.template_sha256, parts.template.sha256
    if new_template != old_template:
        changed.append(f"template {task.spec.template} (sha256 {old_template[:12]} → {new_template[:12]})")
    old_inputs, new_inputs = manifest.task.prompt_inputs_sha256, parts.prompt_inputs_sha256
    if old_inputs is not None and new_inputs != old_inputs:  # None: a run started before this was recorded
        changed.append(
            f"few-shot examples or template variables of task {task.spec.name} "
            f"(sha256 {old_inputs[:12]} → {new_inputs[:12]})"
        )
    setup = parts.setup
    if [s.model_dump() for s in setup.specs] != [s.model_dump() for s in manifest.task.scorers]:
        changed.append(f"scorer config of task {setup.source.spec.name if setup.source else task.spec.name}")
    if task.spec.system_prompt != manifest.task.system_prompt or setup.pass_threshold != manifest.task.pass_threshold:
        changed.append(f"system prompt or pass threshold of task {task.spec.name}")
    if parts.model != manifest.model:
        changed.append(f"model ({manifest.model.id} → {parts.model.id})")
    if parts.fingerprint != manifest.fingerprint and not changed:
        changed.append("a judge rubric or the judge model")
    return changed


def plan_resume(
    run_dir: Path,
    overrides: dict[str, Any] | None = None,
    *,
    retry_errors: bool = False,
    force: bool = False,
    settings: Settings | None = None,
) -> RunPlan:
    """Check that an existing run can continue: the fingerprint's parts must still match."""
    settings = settings or Settings.load()
    manifest = read_manifest(run_dir)
    task_ref = (
        manifest.task.source if manifest.task.source and Path(manifest.task.source).is_file() else manifest.task.name
    )
    task = find_task(task_ref)
    config = _resume_config(manifest, run_dir, task_ref, overrides or {})
    dataset_path = Path(manifest.dataset.path)
    stamp = _file_stamp(dataset_path)
    report = _resumed_dataset(task, dataset_path, manifest)
    parts = _parts(config, task, dataset_path, report, settings)
    changed = _changes(manifest, task, report, parts)
    if changed and not force:
        raise ResumeMismatchError(
            f"cannot resume {run_dir}: changed since the run started: {'; '.join(changed)}. "
            "Use --force to resume anyway (the mix is recorded in the manifest), or start a new run"
        )
    generation = GenerateConfig.model_validate(config.generation)
    plan = _plan(config, task, dataset_path, report, parts, manifest, run_dir, generation, stamp)
    plan.resuming, plan.retry_errors, plan.forced = True, retry_errors, changed
    return plan


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


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """Size and modification time (ns): cheap evidence that a file was not rewritten (None: unreadable).

    The runner reads the dataset twice, to check it and then to run it; comparing this stamp taken before
    the check with one taken after the run catches a file edited in between (hashing it again would cost a
    second full read)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


def _work_items(
    plan: RunPlan,
    finished: Callable[[str, Position], bool] | None = None,
    start: Position | None = None,
    taken_before: int = 0,
) -> Iterator[tuple[Position, Sample, int]]:
    """(position, sample, epoch) in dataset order, after hold-out and --limit.

    ``finished(sample_id, position)`` lets a resume pass over samples whose every epoch is recorded without
    building them; they still count toward --limit. ``start`` (a resume frontier) begins there, with
    ``taken_before`` samples already counted.
    """
    taken = taken_before
    limit = plan.config.limit

    def pass_over(sample_id: str, position: Position) -> bool:
        nonlocal taken
        if sample_id in plan.excluded_ids:
            return True
        if limit is not None and taken >= limit:
            return False  # let the loop below see it and stop
        if finished is not None and finished(sample_id, position):
            taken += 1
            return True
        return False

    for position, sample in iter_positioned(plan.dataset_path, plan.task.spec.dataset, pass_over, start):
        if limit is not None and taken >= limit:
            return
        taken += 1
        for epoch in range(plan.config.epochs):
            yield position, sample, epoch


def dry_run(plan: RunPlan, *, show: int = 3) -> DryRun:
    """Render every prompt and estimate tokens and cost; calls nothing and writes nothing."""
    first: list[list[ChatMessage]] = []
    count = 0
    prompt_tokens = 0
    for _position, sample, _epoch in _work_items(plan):
        messages = plan.template.render(sample, plan.examples)
        if len(first) < show:
            first.append(messages)
        count += 1
        prompt_tokens += estimate_tokens(messages)
    max_out = plan.generation.max_tokens
    cost = plan.provider.cost(Usage(prompt_tokens=prompt_tokens, completion_tokens=(max_out or 0) * count))
    return DryRun(count, first, prompt_tokens, max_out * count if max_out else None, cost)


@dataclass
class _Start:
    """What a session knows before its first call: recorded keys, how many, and where to begin."""

    scan: KeyScan
    done_keys: int
    frontier: Position | None
    taken_before: int


class Runner:
    """Executes a plan; ``request_stop`` (first Ctrl-C) drains in-flight samples and marks the run interrupted."""

    def __init__(self, plan: RunPlan, listener: ProgressListener | None = None) -> None:
        self.plan = plan
        self.listener = listener
        self.gateway = Gateway.from_config(plan.provider, plan.config)
        self._stop = asyncio.Event()
        self._fatal: BaseException | None = None
        self._writer: SampleWriter | None = None
        self._tally: SessionTally | None = None
        self._secrets = plan.provider.secrets()
        self._threshold = plan.pass_threshold

    def request_stop(self) -> None:
        """Stop scheduling new samples; in-flight ones get ``grace_s`` to finish."""
        self._stop.set()

    async def run(self) -> RunResult:
        """Run the plan to completion, interruption or a fatal error; always leaves a valid artifact."""
        plan = self.plan
        paths = RunPaths(plan.run_dir)
        plan.run_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with RunLock(plan.run_dir):
            self._check_unchanged_since_planned(paths)
            repair_tail(paths.samples)
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
            manifest = plan.manifest.model_copy(
                update={
                    "task": task_info,
                    "status": "running",
                    "updated_at": _now(),
                    "sessions": plan.manifest.sessions + 1,
                    **_session_settings(plan.config),  # as this session runs: what the next resume keeps
                    "forced_changes": [*plan.manifest.forced_changes, *forced],
                }
            )
            write_model(paths.manifest, manifest)
            origin = Origin(str(plan.run_dir.resolve()), manifest.sessions)
            for gateway in (self.gateway, plan.judge):
                if gateway is not None:
                    gateway.origin = origin
            self._writer = SampleWriter(paths.samples, plan.config.fsync_interval_s)
            scan = start.scan
            self._done_before = start.done_keys
            # records that replace an error record (--retry-errors) add no key to the done_keys count
            self._superseded = 0
            self._errored_before: set[str] = scan.errored if plan.retry_errors else set()
            self._tracker = FrontierTracker(plan.config.epochs, start.frontier or START, start.taken_before)
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

            def todo() -> Iterator[tuple[Sample, int, dict[str, Any] | None]]:
                items = _work_items(plan, finished if scan.done else None, start.frontier, start.taken_before)
                for position, sample, epoch in items:
                    if epoch == 0:
                        done = [e for e in epochs if recorded(record_key(sample.id, e))] if scan.done else []
                        tracker.seen(sample.id, position, done)
                    key = record_key(sample.id, epoch)
                    if not recorded(key):
                        yield sample, epoch, previous.get(key)

            if self._tally is None:
                _import_aggregate_meanwhile()
            try:
                await self._execute(todo(), started)
            finally:
                self._close_writer()
                self._write_resume_point()
            if self._fatal is None and plan.dataset_stamp is not None:
                self._check_dataset_unchanged()
            status: RunStatus
            if self._fatal is not None:
                status = "failed"
            elif self._stop.is_set():
                status = "interrupted"
            else:
                status = "complete"
            manifest = manifest.model_copy(
                update={
                    "status": status,
                    "updated_at": _now(),
                    "wall_time_s": round(manifest.wall_time_s + time.monotonic() - started, 3),
                }
            )
            try:
                # in a thread, so the event loop still answers a second Ctrl-C (exit at once) meanwhile
                summary = await asyncio.to_thread(self._summary, paths, manifest, status)
            except ArtifactError:
                # a line the key scan did not read cannot be summed up (another hand or tool changed it):
                # the manifest says the session failed rather than that it is still running
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
            fatal = redact(fatal, self._secrets)
        already = start.done_keys - (len(start.scan.errored) if plan.retry_errors else 0)
        resumed_at = start.frontier.line if start.frontier is not None else None
        progress = self._progress
        return RunResult(
            plan.run_dir, manifest, summary, self._writer.written, already, status, fatal, resumed_at,
            progress.session_errors, progress.first_error,
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

    def _check_dataset_unchanged(self) -> None:
        path = self.plan.dataset_path
        if _file_stamp(path) != self.plan.dataset_stamp:
            self._fatal = DatasetError(
                f"{path}: the dataset file changed while the run read it, so its records may mix the old lines "
                "and the new; keep the file unchanged during a run (a resume compares its sha256 and names "
                "what changed)"
            )

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
            scan = scan_keys(paths.samples)
            return _Start(scan, len(scan.done), None, 0)
        tail = scan_keys(paths.samples, start=point.samples_bytes)
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

    async def _execute(self, work: Iterator[tuple[Sample, int, dict[str, Any] | None]], started: float) -> None:
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

    async def _worker(self, work: Iterator[tuple[Sample, int, dict[str, Any] | None]], started: float) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            for sample, epoch, previous in work:
                if self._stop.is_set():
                    return
                try:
                    record = await self._process(sample, epoch, previous, task)
                except AuthenticationError:
                    raise
                except Exception as exc:  # a template that fails on this sample's fields, a bug
                    raise _SampleFailedError(sample.id, epoch, exc) from exc
                self._append(record, started)
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
        score = record["score"]
        if score is not None:
            progress.scored += 1
            progress.score_sum += score
        cost = record["cost_usd"]
        if cost is None:
            # as in the summary: a failed call was not billed, so only an answer without a price makes it unknown
            progress.cost_known = progress.cost_known and error is not None
        else:
            progress.cost_usd += cost
        progress.elapsed_s = time.monotonic() - started
        if self.listener is not None:
            self.listener.update(progress)

    async def _process(
        self, sample: Sample, epoch: int, previous: dict[str, Any] | None, task: asyncio.Task[None]
    ) -> dict[str, Any]:
        plan = self.plan
        messages = plan.template.render(sample, plan.examples)
        if previous is not None:
            return await self._rescore(sample, epoch, messages, previous)
        request = GenerateRequest(
            messages=messages, config=plan.generation, sample=sample, epoch=epoch, seed=plan.config.seed
        )
        deadlines = self._deadlines
        # the sample's clock starts when its first request may be sent: queueing for --rpm/--tpm is not its time
        tally = CallTally(on_first_send=lambda: deadlines.start(task))
        try:
            outcome = await self.gateway.generate(request, tally)
        except asyncio.CancelledError:
            if not deadlines.stop(task) or task.uncancel() > 0:
                raise  # not (only) the per-sample timeout: the run is being cancelled
            timeout = ProviderTimeoutError(f"no answer within the per-sample timeout of {plan.config.timeout_s:g}s")
            outcome = self.gateway.cancelled(tally, timeout)
        else:
            deadlines.stop(task)
        spent = (outcome.attempts, outcome.retries, round(outcome.backoff_s, 3))
        if outcome.completion is None:
            failure = outcome.error or ProviderError("no completion")
            error = self._generation_error(failure)
            return _record(sample, epoch, messages, spent, error=error, request_id=failure.request_id)
        return await self._scored(sample, epoch, messages, spent, outcome.completion)

    async def _scored(
        self, sample: Sample, epoch: int, messages: list[ChatMessage], spent: _Spent, completion: Completion
    ) -> dict[str, Any]:
        result = await self.plan.scoring.score(completion.text, sample, completion)
        error = result.error
        if error is not None:
            error = error.model_copy(update={"message": redact(error.message, self._secrets)})
        return _record(sample, epoch, messages, spent, completion, result, error, self._threshold)

    async def _rescore(
        self, sample: Sample, epoch: int, messages: list[ChatMessage], previous: dict[str, Any]
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
        return await self._scored(sample, epoch, messages, spent, completion)

    def _generation_error(self, error: BaseException) -> ErrorInfo:
        message = redact(str(error) or type(error).__name__, self._secrets)
        kind = error.recorded_type if isinstance(error, ReplayedError) else type(error).__name__
        return ErrorInfo(type=kind, message=message, stage="generate")


class _Deadlines:
    """The per-sample timeout of every worker, enforced by one periodic check.

    ``asyncio.timeout`` costs a timer, a context object and a task lookup per sample: about a twelfth of the
    runner's CPU with a zero-latency model. Here a sample costs two dict operations; a watchdog cancels
    a worker whose sample is overdue, at most ``slack`` (a quarter of the timeout, at most 1 s) late.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.slack = min(1.0, timeout_s / 4)
        self._loop = asyncio.get_running_loop()
        self._due: dict[asyncio.Task[None], float] = {}
        self._expired: set[asyncio.Task[None]] = set()

    def start(self, task: asyncio.Task[None]) -> None:
        """``task``'s sample may send its first request: its timeout runs from now."""
        self._due[task] = self._loop.time() + self.timeout_s

    def stop(self, task: asyncio.Task[None]) -> bool:
        """The wait ended; True when it was the watchdog that ended it."""
        self._due.pop(task, None)  # never started: a cached answer, or cancelled before its first request
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

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


class _SampleFailedError(EvalHarnessError):
    """What stopped the run happened while processing one sample (outside the provider and the scorers,
    whose failures are the sample's record)."""

    def __init__(self, sample_id: str, epoch: int, cause: Exception) -> None:
        super().__init__(f"sample {sample_id!r} (epoch {epoch}): {_fatal_text(cause)}")


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


def _record(
    sample: Sample,
    epoch: int,
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
        "finished_at": _now(),
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
        "retries": retries,
        "backoff_s": backoff_s,
    }


def run_directory_exists(run_dir: Path) -> bool:
    """True when ``run_dir`` holds a manifest."""
    return RunPaths(run_dir).manifest.is_file()


__all__ = [
    "DryRun",
    "Progress",
    "ProgressListener",
    "RunPlan",
    "RunResult",
    "Runner",
    "dry_run",
    "new_run_id",
    "plan_resume",
    "plan_run",
    "replaced_settings",
    "run_directory_exists",
]
