"""What a run will do, checked and built before a single call is made.

``plan_run`` (new run) and ``plan_resume`` (existing run) check everything that can be checked before a
single call is made — dataset, template, scorers, model arguments, the resume fingerprint — and create
nothing on failure. ``dry_run`` renders a plan's prompts and estimates what it would spend;
``eval_harness.runner`` executes it.

The plan is built here; the package has one private module per job beside it (import from
``eval_harness.planning``):

- ``_few_shot``: the few-shot examples, from a file of their own (``Pool``) or held out of the dataset
  (``FewShot``); the template loaded with their sources; a hold-out that leaves no sample is refused.
- ``_fingerprint``: the run's fingerprint, and the changes a resume finds in what it covers.
- ``_session``: the configuration of a resumed session, the settings and gates given anew.

Imports flow one way, down these rows: a module imports only from rows below its own, never from its row::

    _few_shot | _session
    _fingerprint
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from eval_harness import __version__
from eval_harness.artifacts import (
    RunPaths,
    new_run_id,
    read_manifest,
    record_key,
    records_stamp,
    scan_keys,
    utc_now,
)
from eval_harness.config import RunConfig, Settings, redact
from eval_harness.datasets import (
    DatasetReport,
    Position,
    dataset_sha256,
    dataset_stamp,
    is_compressed,
    iter_positioned,
    iter_samples,
    validate_dataset,
)
from eval_harness.errors import (
    ArtifactError,
    ConfigError,
    DatasetError,
    ResumeMismatchError,
    TemplateError,
    spoken_duration,
    undecodable_shown,
)
from eval_harness.planning._few_shot import (
    FewShot,
    Pool,
    _checked_pool,
    _resumed_few_shot,
    choose_few_shot,
    few_shot_file,
    few_shot_files,
    holdout_refusal,
    joined_pools,
    load_pool,
    prompt_template,
)
from eval_harness.planning._fingerprint import (
    ModelUpdate,
    ScoringSetup,
    _changes,
    _fingerprint,
    _fingerprint_parts,
    _model_update,
    _prompt_inputs_sha256,
    called,
    dataset_reading_change,
    files_changed,
)
from eval_harness.planning._session import (
    SessionOverrides,
    _resume_config,
    gate_changes,
    resumed_gates,
    session_settings,
)
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions, create_provider, estimate_tokens
from eval_harness.providers.gateway import Gateway
from eval_harness.providers.replay import ReplayProvider
from eval_harness.scorers.base import ScoringPipeline
from eval_harness.tasks import LoadedTask, find_task
from eval_harness.templates import PromptTemplate
from eval_harness.types import (
    DATASET_CHECKS,
    FINGERPRINT,
    ChatMessage,
    DatasetInfo,
    GateSettings,
    GenerateConfig,
    ModelInfo,
    RunManifest,
    Sample,
    TaskInfo,
    Usage,
    check_expected_records_bounds,
    first_problem,
    held_out_said,
)

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


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
    excluded_ids: frozenset[str]
    manifest: RunManifest
    run_dir: Path
    few_shot: FewShot = field(default_factory=FewShot)
    """The few-shot examples: a sample of a dataset directory's file is shown ``few_shot.for_member(file)``."""
    included_ids: frozenset[str] | None = None
    """The samples ``--limit-per-axis`` takes (None: every one not held out)."""
    dataset_stamp: tuple[int, ...] | None = None
    """The dataset's size and modification time before it was checked (see ``dataset_stamp``)."""
    prompt_inputs_sha256: str | None = None
    """What the prompts are rendered from besides the template and the sample (see ``_prompt_inputs_sha256``)."""
    resuming: bool = False
    retry_errors: bool = False
    forced: list[str] = field(default_factory=list)
    gates: GateSettings | None = None
    """The gates of this session, which the manifest records for the next resume (None: no gate)."""
    notes: list[str] = field(default_factory=list)
    """What the user should read before the run starts (the CLI prints them on stderr): e.g. few-shot examples
    left out because they are samples under evaluation."""
    model_update: ModelUpdate | None = None
    """A resume forced across changed model arguments: the model and fingerprint recorded from this session on,
    so that the next resume calls the model as this one does (None: as the manifest has them)."""
    dataset_update: DatasetInfo | None = None
    """What a resume records of the dataset anew: the same bytes passed this build's checks (None: as it is)."""
    expected_update: int | None = None
    """The records a resume forced across a changed dataset expects (see ``_expected_after_change``), recorded
    from this session on (None: as the manifest has them)."""
    session_model_args: dict[str, str] = field(default_factory=dict)
    """Options of how answers travel given to this resume, unlike the run's (``--model-arg`` text by name): the
    manifest keeps the run's, so the resume command printed at an interruption gives them again."""
    session_judge_args: dict[str, str] = field(default_factory=dict)
    """The same of the judge (``--judge-arg``)."""

    @property
    def expected_records(self) -> int:
        """The records the run expects once this session has started (see ``expected_update``)."""
        return self.manifest.expected_records if self.expected_update is None else self.expected_update


@dataclass
class DryRun:
    """Rendered prompts and an estimate of what the run would spend."""

    count: int
    first_prompts: list[list[ChatMessage]]
    prompt_tokens: int
    max_output_tokens: int | None
    estimated_cost_usd: float | None
    longest_prompt_tokens: int = 0
    """The estimate for the longest prompt: with max_tokens, what the model's context must hold."""
    longest_prompt_sample: str | None = None
    """The sample id of that prompt."""
    max_tokens: int | None = None
    """Each answer's max_tokens; None when the run sets none."""
    paced_prompt_tokens: float = 0.0
    """The prompts' tokens as ``--tpm`` books them: none above a minute's budget (see ``dry_run``'s ``tpm``)."""


def _scoring_setup(task: LoadedTask, config: RunConfig) -> ScoringSetup:
    if config.scorers is not None:
        return ScoringSetup(list(config.scorers), task.spec.pass_threshold, None)
    source = find_task(config.scorer_task) if config.scorer_task else task
    return ScoringSetup(list(source.spec.scorers), source.spec.pass_threshold, source)


def _dataset_pass(task: LoadedTask, path: Path, pool: Pool | None) -> DatasetReport:
    """One validating pass over the dataset, comparing a few-shot ``pool`` with its samples on the way."""
    return validate_dataset(path, task.spec.dataset, task=task.spec.name, overlap=pool.overlap if pool else None)


def _validated_dataset(
    task: LoadedTask,
    path: Path,
    skip_invalid: bool = False,
    pool: Pool | None = None,
    *,
    changed: Callable[[DatasetReport], str] | None = None,
) -> DatasetReport:
    """The dataset checked line by line (refused when broken); a few-shot ``pool`` is compared with its samples in
    the same pass. ``changed``: how a resumed run's dataset changed since it started (it is checked again), said
    from what the check read (``changed since the run started (sha256 ...)``)."""
    report = _dataset_pass(task, path, pool)
    if report.ok or (skip_invalid and report.valid and not report.duplicate_ids):
        return report
    if report.duplicate_ids:
        hint = "fix them (duplicate ids make --skip-invalid ambiguous: which record would count?)"
    elif skip_invalid or not report.valid:  # --skip-invalid would leave nothing to run either
        hint = "no valid line is left to run; fix them"
    elif changed is not None:  # a resume keeps the run's choice: it takes no --skip-invalid
        hint = "fix them, or start a new run (with --skip-invalid to run the valid lines only)"
    else:
        hint = "fix them, or pass --skip-invalid to run the valid lines only"
    if report.problem_count == 1:
        hint = hint.replace("fix them", "fix it")
    what = "the dataset" if changed is None else f"the dataset, {changed(report)},"
    raise DatasetError(f"{path}: {what} has {report.problems_counted}; {hint}", report.problem_lines())


def _resumed_dataset(
    task: LoadedTask, path: Path, manifest: RunManifest, reading: str | None, pool: Pool | None
) -> tuple[DatasetReport, bool]:
    """The dataset of a resumed run, and whether it was read line by line (then ``pool`` was compared with it).

    When its bytes still hash to the manifest's sha256 and the task reads them as it did, it was validated when
    the run started, so the hash is all that is checked (a second per-line validation of a million samples would
    dominate the resume), unless the run was validated by other checks (``DATASET_CHECKS``): they may have
    counted lines these refuse. Read otherwise (a forced resume across a changed ``[dataset]`` table), its lines
    are checked as a changed dataset's are: a line the new reading refuses has no record a session could write.
    ``reading``: that change (``dataset_reading_change``), or None."""
    sha256 = dataset_sha256(path, task.spec.dataset)
    count = manifest.dataset.sample_count
    if sha256 == manifest.dataset.sha256 and reading is None and manifest.dataset.checks == DATASET_CHECKS:
        return DatasetReport(path=str(path), sha256=sha256, lines=count, valid=count), False
    if sha256 == manifest.dataset.sha256 and reading is None:
        # the same bytes, validated by other checks: one added since may refuse a line the run counted, whose
        # record no resume could then write (each would end "interrupted", resume again, forever)
        report = _dataset_pass(task, path, pool)
        if report.valid != count:
            raise DatasetError(
                f"{path}: the dataset checks of this eval-harness find {report.valid:,} valid samples in it where "
                f"the run, started by an earlier version ({manifest.harness_version}), counted {count:,} (a check "
                "added since); resume it with that version, or fix the file and start a new run",
                report.problem_lines(),
            )
        return report, True

    def changed(report: DatasetReport) -> str:
        if sha256 == manifest.dataset.sha256:
            return f"read differently since the run started ({reading})"
        files = files_changed(manifest.dataset, report)
        content = f"sha256 {manifest.dataset.sha256[:12]} → {sha256[:12]}{files}"
        return f"changed since the run started ({content if reading is None else f'{content}; {reading}'})"

    return _validated_dataset(task, path, manifest.dataset.invalid_lines > 0, pool, changed=changed), True


def _judge(config: RunConfig, settings: Settings) -> Gateway | None:
    if config.judge_model is None:
        return None
    try:
        provider = create_provider(
            config.judge_model, config.judge_args, _provider_context(config, settings), flag="--judge-arg"
        )
    except ConfigError as exc:  # "unknown provider", "no API key": said of the judge, not the model under test
        message = str(exc)
        if message.startswith("--judge-arg"):  # names its flag already
            raise
        raise type(exc)(f"--judge-model {config.judge_model}: {message}") from None
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
    except ValidationError as exc:
        field, message = first_problem(exc)
        # the spec's own values were checked where it was loaded: a problem here is a flag's
        flag = {"max_tokens": "--max-tokens", "temperature": "--temperature"}.get(field, f"generation.{field}")
        raise ConfigError(f"{flag}: {message}") from None


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
        cache=config.cache,
    )


def _counted_samples(
    report: DatasetReport, excluded: frozenset[str], included: frozenset[str] | None, limit: int | None
) -> int:
    available = report.valid - len(excluded) if included is None else len(included)
    return min(available, limit) if limit is not None else available


def _first_of_each_axis(
    task: LoadedTask, dataset_path: Path, excluded: frozenset[str], per_axis: int | None, axes: Iterable[str] | None
) -> frozenset[str] | None:
    """The ids of the first ``per_axis`` samples of each axis in dataset order, past those held out as examples
    (``--limit-per-axis``); None without it. The axis of a line is known once its sample is built: the pass stops
    once each of the dataset's ``axes`` (when known) has its share, and reads to the end when one has fewer."""
    if per_axis is None:
        return None
    taken: Counter[str] = Counter()
    chosen: set[str] = set()
    left = set(axes) if axes else None
    for sample in iter_samples(dataset_path, task.spec.dataset):
        if sample.id not in excluded and taken[sample.axis] < per_axis:
            taken[sample.axis] += 1
            chosen.add(sample.id)
            if left is not None and taken[sample.axis] == per_axis:
                left.discard(sample.axis)
                if not left:
                    break
    return frozenset(chosen)


@dataclass
class _Parts:
    """What a plan is built from, the same for a new run and a resumed one."""

    template: PromptTemplate
    provider: Provider
    judge: Gateway | None
    setup: ScoringSetup
    scoring: ScoringPipeline
    model: ModelInfo
    few_shot: FewShot
    fingerprint_parts: dict[str, Any]
    prompt_inputs_sha256: str
    included: frozenset[str] | None = None
    """The samples ``--limit-per-axis`` takes (None: every one; see ``_first_of_each_axis``)."""

    @property
    def fingerprint(self) -> str:
        """The run's fingerprint as it would be now."""
        return _fingerprint(self.fingerprint_parts)

    @property
    def model_options(self) -> type[ProviderOptions]:
        """The options of the model's provider (their defaults, and which change how answers travel)."""
        return type(self.provider.options)

    @property
    def judge_options(self) -> type[ProviderOptions] | None:
        """The same of the judge's provider (None without a judge)."""
        return type(self.judge.provider.options) if self.judge is not None else None


def _parts(
    config: RunConfig,
    task: LoadedTask,
    report: DatasetReport,
    settings: Settings,
    few_shot: FewShot,
    recorded: TaskInfo | None = None,
) -> _Parts:
    """What the run is made of; a resume gives the task as the run recorded it, whose template digest a run
    recorded before included templates were hashed keeps (``PromptTemplate.as_recorded``)."""
    template = prompt_template(task, few_shot)
    if recorded is not None:
        template = template.as_recorded(recorded.template_sha256, recorded.template_includes)
    # a resumed run's report is its manifest's hash and count (no axes): its options were checked at its start
    provider = _provider(config, settings, frozenset(report.axis_counts) or None)
    judge = _judge(config, settings)
    setup = _scoring_setup(task, config)
    # scorers given by --scorer (or recorded from it) carry text; a task spec's carry typed values
    scoring = ScoringPipeline(setup.specs, judge, where=setup.where, lines=setup.lines, text_args=setup.source is None)
    model = _model_info(config, provider)
    prompt_inputs = _prompt_inputs_sha256(task, few_shot.examples)
    fingerprinted = _fingerprint_parts(
        report.sha256, template, task, setup, scoring, model, judge_info(judge), config.seed
    )
    return _Parts(template, provider, judge, setup, scoring, model, few_shot, fingerprinted, prompt_inputs)


def _plan(
    config: RunConfig, task: LoadedTask, dataset_path: Path, report: DatasetReport, parts: _Parts,
    manifest: RunManifest, run_dir: Path, generation: GenerateConfig, dataset_stamp: tuple[int, ...] | None,
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
        few_shot=parts.few_shot,
        excluded_ids=parts.few_shot.excluded,
        included_ids=parts.included,
        manifest=manifest,
        run_dir=run_dir,
        dataset_stamp=dataset_stamp,
        prompt_inputs_sha256=parts.prompt_inputs_sha256,
        notes=[note for note in (parts.few_shot.note, parts.few_shot.shortfall) if note]
        + parts.provider.generation_notes(generation)
        + parts.scoring.notes(),
    )


def _check_utf8(config: RunConfig, task_path: Path, dataset_path: Path) -> None:
    """Refuse text the manifest would record that is not UTF-8 (a file name from a Latin-1 file system, a byte
    typed into a flag): JSON cannot hold it, and the run would stop with a traceback after its directory exists.
    Values of --model-arg and --judge-arg are named, never shown: one may be a key."""
    # a dataset directory's files' names (recorded in every record) are refused by the reader, as validate-dataset
    shown = {"--task": str(task_path), "the dataset": str(dataset_path), "--output-dir": str(config.output_dir)}
    shown |= {"--model": config.model, "--judge-model": config.judge_model or ""}
    hidden = {f"--model-arg {key}": f"{key}={value}" for key, value in config.model_args.items()}
    hidden |= {f"--judge-arg {key}": f"{key}={value}" for key, value in config.judge_args.items()}
    for what, text in (shown | hidden).items():
        if (quoted := undecodable_shown(text)) is not None:
            named = f"{what} {quoted}" if what in shown else f"{what}: its value"
            raise ConfigError(f"{named} is not valid UTF-8 (a name from another encoding?); rename it")


def plan_run(config: RunConfig, settings: Settings | None = None, *, gates: GateSettings | None = None) -> RunPlan:
    """Check a new run completely; raises before anything is written. ``gates`` are recorded in the manifest
    (a resume applies them), and a gate on an axis the run will not have is refused now."""
    settings = settings or Settings.load()
    task = find_task(config.task)
    dataset_path = task.dataset_path(config.dataset)
    _check_utf8(config, task.path, dataset_path)
    stamp = dataset_stamp(dataset_path, task.spec.dataset)
    pool = _checked_pool(task, dataset_path, lambda: _validated_dataset(task, dataset_path, config.skip_invalid))
    report = _validated_dataset(task, dataset_path, config.skip_invalid, pool)
    parts = _parts(config, task, report, settings, choose_few_shot(task, dataset_path, pool))
    generation = _generation(task, config.generation)
    run_id = new_run_id() if config.run_id is None else config.run_id  # "" is refused below, not the default
    if not _RUN_ID.match(run_id):
        raise ConfigError(
            f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-', starting with a letter or a digit "
            "(at most 128 characters)"
        )
    run_dir = config.output_dir / run_id
    _check_new_run_dir(run_dir)
    refusal = holdout_refusal(task, dataset_path, report, parts.few_shot.excluded)
    if refusal is not None:
        raise refusal
    parts.included = _first_of_each_axis(
        task, dataset_path, parts.few_shot.excluded, config.limit_per_axis, report.axis_counts
    )
    manifest = _new_manifest(config, task, dataset_path, report, parts, generation, run_id, gates)
    plan = _plan(config, task, dataset_path, report, parts, manifest, run_dir, generation, stamp)
    plan.gates = gates
    plan.notes += [report.passed_over] if report.passed_over else []
    few_shot = task.spec.few_shot
    if few_shot is not None and few_shot.k == 0 and few_shot.holdout_fraction:
        # a 0-shot run beside a k-shot one of the same spec evaluates the samples the other holds out
        plan.notes.append(
            f"few-shot: k = 0, so holdout_fraction {few_shot.holdout_fraction:g} holds nothing out: every sample of "
            "the dataset is evaluated"
        )
    held_out = len(parts.few_shot.excluded)
    if held_out:  # a reader of "gsm8k 1,293" should not have to guess where 26 of the 1,319 went
        plan.notes.append(held_out_said(held_out, report.valid))
    plan.notes += _repeated_content_notes(plan) + _pacing_notes(config, manifest.expected_records)
    _check_gate_axes(plan)
    _render_first_prompt(plan)
    plan.notes += _token_pacing_notes(plan)
    return plan


def _repeated_content_notes(plan: RunPlan) -> list[str]:
    """A line without an id that repeats an earlier one's content runs again under a derived id (``-2``...): the
    same item counted twice, which a run should say as validate-dataset does; of the lines the run takes (past
    --limit and the rest), read again only when it takes a part of the dataset."""
    repeats = plan.dataset_report.repeats
    if repeats and (plan.config.limit is not None or plan.included_ids is not None or plan.excluded_ids):
        taken = {sample.id for _position, sample, epoch in work_items(plan) if epoch == 0}
        repeats = [repeat for repeat in repeats if repeat.sample_id in taken]
    if not repeats:
        return []
    first = f"{repeats[0].path}:{repeats[0].line}: id {repeats[0].sample_id} was derived"
    if len(repeats) == 1:
        return [f"note: 1 line repeats an earlier line's content and runs again: {first}"]
    return [
        f"note: {len(repeats):,} lines repeat an earlier line's content and run again; the first: {first} "
        "(validate-dataset lists them)"
    ]


def _pacing_notes(config: RunConfig, requests: int) -> list[str]:
    """How long ``--rpm`` alone makes the run, when that is a minute or more: a low one looks like a hang."""
    if not config.rpm or requests < 2:
        return []
    seconds = 60 * (requests - 1) / config.rpm
    if seconds < 60:
        return []
    over = f"over at least {spoken_duration(seconds)}{_unpaced_cache(config)}"
    return [f"note: --rpm {_rate_text(config.rpm)} paces the run's {requests:,} requests {over}"]


def _rate_text(rate: float) -> str:
    """A budget as its flag was given: not :g, which writes 0.00001 as 1e-05."""
    return f"{rate:.10f}".rstrip("0").rstrip(".")


def _unpaced_cache(config: RunConfig) -> str:
    """What a pacing note adds under --cache."""
    return " (answers found in --cache are not paced)" if config.cache else ""


def _token_pacing_notes(plan: RunPlan) -> list[str]:
    """How long ``--tpm`` makes the run from its prompts' tokens alone, when that is a minute or more (the answers'
    tokens only add to it): a low one looks like a hang. Every prompt is rendered for it, with ``--tpm`` only."""
    tpm = plan.config.tpm
    if not tpm:
        return []
    try:
        estimate = dry_run(plan, show=0, tpm=tpm)
    except TemplateError:
        return []  # the run stops at that sample, naming it, as it would without --tpm
    tokens = estimate.prompt_tokens
    # the bucket starts full: one minute's tokens go at once; a prompt over a minute's budget is booked as one
    # minute's (hostile-s33: 3 prompts of ~80 tokens at --tpm 0.0001 were said to take 806 days; they took 2 min)
    seconds = 60 * (estimate.paced_prompt_tokens - tpm) / tpm
    if seconds < 60:
        return []
    return [
        f"note: --tpm {_rate_text(tpm)} paces the run's ~{tokens:,} prompt tokens (estimated) over at least "
        f"{spoken_duration(seconds)}, its answers' tokens aside{_unpaced_cache(plan.config)}"
    ]


def _check_new_run_dir(run_dir: Path) -> None:
    """A new run's directory must not exist yet, or hold only what a run killed before its manifest leaves (its
    lock; hidden files): a run's files written beside a user's would overwrite theirs (a summary.json), and a
    run inside another run's directory is one rescore and resume refuse to read."""
    paths = RunPaths(run_dir)
    if paths.manifest.exists():
        try:
            complete = read_manifest(run_dir).status == "complete"
        except ArtifactError:  # unreadable: resume says why
            complete = False
        resume = "" if complete else f"resume it with 'eval-harness resume {run_dir}' or "
        raise ArtifactError(
            f"{run_dir} already exists{' (a complete run)' if complete else ''}; {resume}pick another --run-id"
        )
    where = run_dir.parent.resolve()  # a relative --output-dir, or a symlink, may lead into a run as well
    for parent in (where, *where.parents):
        documents = RunPaths(parent)
        if documents.manifest.is_file() and documents.samples.is_file():
            inside = "the run directory" if parent == where else f"inside the run directory {parent}"
            raise ArtifactError(f"--output-dir {run_dir.parent} is {inside}; pick another")
    if run_dir.is_dir():
        visible = sorted(entry.name for entry in run_dir.iterdir() if not entry.name.startswith("."))
        if visible:
            listed = ", ".join(visible[:3]) + (", ..." if len(visible) > 3 else "")
            raise ArtifactError(
                f"{run_dir} already exists and holds files that are not a run's ({listed}); pick another --run-id"
            )


def _new_manifest(
    config: RunConfig, task: LoadedTask, dataset_path: Path, report: DatasetReport, parts: _Parts,
    generation: GenerateConfig, run_id: str, gates: GateSettings | None,
) -> RunManifest:  # fmt: skip
    """The manifest a new run starts with (status 'running', no session yet)."""
    setup = parts.setup
    now = utc_now()
    return RunManifest(
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
            template_includes=list(parts.template.includes),
            system_prompt=task.spec.system_prompt,
            scorers=setup.specs,
            pass_threshold=setup.pass_threshold,
            scorers_source=str(setup.source.path) if setup.source else None,
            generation=generation,
            generation_from_flags=sorted(config.generation),
            few_shot=task.spec.few_shot.model_dump(mode="json") if task.spec.few_shot else None,
            prompt_inputs_sha256=parts.prompt_inputs_sha256,
            dataset_reading=task.dataset_reading,
        ),
        model=parts.model,
        dataset=DatasetInfo(
            path=str(dataset_path.resolve()),
            sha256=report.sha256,
            sample_count=report.valid,
            format=task.spec.dataset.format,
            invalid_lines=report.problem_count,
            # a compressed file's byte positions are not its lines': a resume of it reads every record
            seekable=task.spec.dataset.format == "jsonl"
            and not report.repeats
            and not report.members  # a directory's records are found by reading them all, as a gzip file's
            and not is_compressed(dataset_path),
            files=report.members or None,
            files_sha256=report.members_sha256 or None,
            checks=DATASET_CHECKS,
            axes=sorted(report.axis_counts),
        ),
        seed=config.seed,
        epochs=config.epochs,
        limit=config.limit,
        limit_per_axis=config.limit_per_axis,
        fingerprint=parts.fingerprint,
        max_tokens_sent=parts.provider.output_cap(generation),
        **session_settings(config),
        expected_records=_counted_samples(report, parts.few_shot.excluded, parts.included, config.limit)
        * config.epochs,
        sessions=0,
        source_run=str(config.source_run.resolve()) if config.source_run else None,
        source_records=records_stamp(config.source_run) if config.source_run else None,
        judge=judge_info(parts.judge),
        gates=gates,
    )


def _check_gate_axes(plan: RunPlan) -> None:
    """A ``--fail-below-axis`` for an axis the run will not have is refused now, not after the whole run has
    been paid for: one the dataset lacks, or one that ``--limit`` (past ``--limit-per-axis``'s share) or a few-shot
    hold-out leaves out."""
    wanted = [axis for axis, _ in plan.gates.fail_below_axis] if plan.gates is not None else []
    if not wanted:
        return
    dataset_axes = set(plan.dataset_report.axis_counts)
    for axis in wanted:
        if axis not in dataset_axes:
            raise ConfigError(
                f"--fail-below-axis {axis}: the dataset has no such axis (its axes: {', '.join(sorted(dataset_axes))})"
            )
    limit = plan.config.limit
    if not plan.excluded_ids and (limit is None or limit >= plan.dataset_report.valid):
        return  # every sample of the dataset runs
    counts = _run_axes(plan)  # read only as far as --limit, a fraction of the validation's full read
    missing = [axis for axis in wanted if axis not in counts]
    if missing:
        per_axis = plan.config.limit_per_axis
        reasons = [f"--limit-per-axis {per_axis}"] if per_axis is not None else []
        reasons += [f"--limit {limit}"] if limit is not None else []
        why = " and ".join(reasons + (["the few-shot hold-out"] if plan.excluded_ids else []))
        taken = sum(counts.values())
        raise ConfigError(
            f"--fail-below-axis {missing[0]}: the run takes {taken:,} sample{'s' if taken != 1 else ''} ({why}), none "
            f"of that axis (their axes: {', '.join(sorted(counts))})"
        )


def _run_axes(plan: RunPlan) -> dict[str, int]:
    """The samples the run takes (after hold-out and --limit), counted by axis."""
    counts: dict[str, int] = {}
    for _position, sample, epoch in work_items(plan):
        if epoch == 0:
            counts[sample.axis] = counts.get(sample.axis, 0) + 1
    return counts


def _render_first_prompt(plan: RunPlan) -> None:
    """Render the first prompt (and each judge's rubric) now: a template that fails on every sample (an empty
    prompt, a name no sample has) is refused before the run directory exists, not found by the first call."""
    for position, sample, _epoch in work_items(plan):
        try:
            plan.template.render(sample, plan.few_shot.for_member(position.member))
        except TemplateError as exc:  # the template's line alone reads as if no sample had the field
            raise _of_sample(exc, plan, position, sample) from None
        plan.scoring.preflight(sample)  # a judge's rubric, the same way
        return


def _of_sample(error: TemplateError, plan: RunPlan, position: Position, sample: Sample) -> TemplateError:
    """``error`` (a template's, naming its own file and line) named by the dataset line and sample it met, unless
    it names its cause already (a few-shot example's error is no sample's)."""
    if error.sample_named:
        return error
    return TemplateError(f"{position.file_in(plan.dataset_path)}:{position.line}: sample {sample.id!r}: {error}")


def replaced_settings(plan: RunPlan) -> dict[str, tuple[Any, Any]]:
    """The recorded pacing and retry settings this resume replaces: field -> (recorded, now)."""
    recorded = plan.manifest.model_dump()
    return {
        name: (recorded[name], value)
        for name, value in session_settings(plan.config).items()
        if value != recorded[name]
    }


def plan_resume(
    run_dir: Path,
    overrides: SessionOverrides | None = None,
    *,
    retry_errors: bool = False,
    force: bool = False,
    settings: Settings | None = None,
    model_args: dict[str, Any] | None = None,
    gates: dict[str, Any] | None = None,
    keep_gates: bool = True,
    judge_args: dict[str, Any] | None = None,
) -> RunPlan:
    """Check that an existing run can continue: the fingerprint's parts must still match.

    ``model_args`` (``--model-arg`` given now) replace the recorded ones; the model's arguments are part of the
    fingerprint, so a changed one is refused unless ``force``, and a forced change is recorded for later resumes
    (see ``ModelUpdate``); ``judge_args`` (``--judge-arg``) the same of the judge's. ``gates`` (``GateSettings``
    fields given now) replace the recorded gates one by one, after every recorded gate was dropped when not
    ``keep_gates`` (``--no-gates``)."""
    settings = settings or Settings.load()
    manifest = read_manifest(run_dir)
    if not FINGERPRINT.fullmatch(manifest.fingerprint):
        # compared with what the run depends on now, a damaged one would read as a change of what only it holds
        # (a judge's rubric), which no --force should pass over
        shown = repr(manifest.fingerprint[:80]) + ("…" if len(manifest.fingerprint) > 80 else "")
        raise ArtifactError(
            f"{RunPaths(run_dir).manifest}: fingerprint: expected a sha256 (64 hexadecimal digits), got {shown}"
        )
    if manifest.source_run is not None and model_args:
        # a replay has no options: each one given would be a change to force and record, for no effect
        raise ConfigError(
            f"cannot resume {run_dir} with --model-arg: it rescores {manifest.source_run}, whose recorded answers "
            "it reads, so it calls no model"
        )
    if manifest.judge is None and judge_args:
        raise ConfigError(f"cannot resume {run_dir} with --judge-arg: the run has no judge model")
    if manifest.source_run is not None and not RunPaths(Path(manifest.source_run)).samples.exists():
        # its records are the answers this run scores: named as the source, not as a run the user asked for
        raise ConfigError(
            f"cannot resume {run_dir}: it rescores {manifest.source_run}, whose records are gone (moved or "
            "deleted); put that run back where it was, or rescore it anew where it is now"
        )
    task_ref = (
        manifest.task.source if manifest.task.source and Path(manifest.task.source).is_file() else manifest.task.name
    )
    task = find_task(task_ref)
    config = _resume_config(
        manifest, run_dir, task_ref, overrides or SessionOverrides(), model_args or {}, judge_args or {}
    )
    check_expected_records_bounds(manifest, RunPaths(run_dir).manifest)  # once its values are in the CLI's ranges
    dataset_path = Path(manifest.dataset.path)
    _check_utf8(config, task.path, dataset_path)  # an argument given now, which a forced change would record
    stamp = dataset_stamp(dataset_path, task.spec.dataset)
    reading = dataset_reading_change(task, manifest.task.dataset_reading)
    pool = _checked_pool(task, dataset_path, lambda: _resumed_dataset(task, dataset_path, manifest, reading, None))
    report, compared = _resumed_dataset(task, dataset_path, manifest, reading, pool)
    few_shot = _resumed_few_shot(task, dataset_path, pool, manifest, compared)
    parts = _parts(config, task, report, settings, few_shot, manifest.task)
    parts.included = _first_of_each_axis(
        task, dataset_path, few_shot.excluded, config.limit_per_axis, report.axis_counts or manifest.dataset.axes
    )
    # a plugin's option that holds a key in plain text would be shown and recorded: never one of ours
    secrets = parts.provider.secrets() + (parts.judge.secrets if parts.judge is not None else [])
    changed = [redact(change, secrets) for change in _changes(manifest, task, report, parts)]
    changed += _source_change(manifest)
    if changed and not force:
        since = "was last resumed with --force" if manifest.forced_changes else "started"
        raise ResumeMismatchError(
            f"cannot resume {run_dir}: changed since the run {since}: {'; '.join(changed)}. "
            "Use --force to resume anyway (the mix is recorded in the manifest), or start a new run"
        )
    if not changed:
        _check_recorded_dataset(manifest, run_dir, dataset_path, report, few_shot.excluded, parts.included)
    generation = GenerateConfig.model_validate(config.generation)
    plan = _plan(config, task, dataset_path, report, parts, manifest, run_dir, generation, stamp)
    plan.resuming, plan.retry_errors, plan.forced = True, retry_errors, changed
    plan.gates = resumed_gates(manifest.gates, gates, keep=keep_gates)
    _check_new_gate_axes(plan, [axis for axis, _ in (gates or {}).get("fail_below_axis", [])])
    plan.model_update = _model_update(manifest, parts)
    model, judge = called(manifest, parts)
    plan.session_model_args = model.session_only(model_args or {})
    plan.session_judge_args = judge.session_only(judge_args or {}) if judge is not None else {}
    # forced (refused above otherwise): the session runs the samples the dataset gives now
    read_anew = report.sha256 != manifest.dataset.sha256 or reading is not None
    if read_anew:
        expected = _expected_after_change(plan)
        plan.expected_update = expected if expected != manifest.expected_records else None
    plan.notes += _generation_kept(task, manifest) + model.transport_notes(plan.session_model_args)
    if judge is not None:
        plan.notes += judge.transport_notes(plan.session_judge_args)
    if compared and not read_anew:
        # the same bytes passed this build's checks: recorded, so the next resume checks the hash alone again
        checked: dict[str, Any] = {"checks": DATASET_CHECKS, "axes": sorted(report.axis_counts)}
        if report.members_sha256:  # a run recorded before each file's sha256 was: from now on
            checked["files_sha256"] = report.members_sha256
        plan.dataset_update = manifest.dataset.model_copy(update=checked)
    return plan


def _source_change(manifest: RunManifest) -> list[str]:
    """A rescore's source whose records changed since the rescore started (a ``resume --retry-errors`` of it, a
    forced resume): its sessions would score two states of the source's answers as one run."""
    if manifest.source_run is None or manifest.source_records is None:
        return []  # not a rescore, or one made before the source's records were stamped
    try:
        now = records_stamp(Path(manifest.source_run))
    except OSError:
        return []  # gone: reading its answers says so, naming it
    if now == tuple(manifest.source_records):
        return []
    size_then, size_now = manifest.source_records[0], now[0]
    how = f"{size_then:,} → {size_now:,} bytes" if size_now != size_then else f"rewritten, {size_now:,} bytes"
    return [f"the records of its source run {manifest.source_run} (samples.jsonl {how})"]


def _check_recorded_dataset(
    manifest: RunManifest,
    run_dir: Path,
    dataset_path: Path,
    report: DatasetReport,
    excluded: frozenset[str],
    included: frozenset[str] | None,
) -> None:
    """Refuse a manifest whose values about its dataset, unchanged since the run started, are not what the run
    would record now: ``seekable`` of a gzip file (a resume would seek into its compressed bytes), and
    ``expected_records`` (see ``check_expected_records_counted``)."""
    path = RunPaths(run_dir).manifest
    if manifest.dataset.seekable and manifest.dataset.files is None and is_compressed(dataset_path):
        raise ArtifactError(
            f"{path}: dataset.seekable: true, but the dataset is gzip-compressed; only a plain JSONL file is"
        )
    check_expected_records_counted(manifest, path, report, excluded, included)


def check_expected_records_counted(
    manifest: RunManifest,
    path: Path,
    report: DatasetReport,
    excluded: frozenset[str],
    included: frozenset[str] | None,
) -> None:
    """Refuse the manifest at ``path`` when its ``expected_records`` is not what the run's limits take of its
    dataset (``report``, the same bytes; ``excluded`` and ``included`` as ``work_items`` takes them), counted as a
    new run counts it (``_new_manifest``): a resume runs until that many records are written, so a ``limit`` edited
    up ran every sample the run never took, and an ``expected_records`` edited down called the run complete early.
    Not after a resume forced across changes (``forced_changes``): across a changed dataset it expects another
    count (``_expected_after_change``), across changed few-shot examples it may hold out other samples."""
    if manifest.forced_changes:
        return
    samples = _counted_samples(report, excluded, included, manifest.limit)
    expected = samples * manifest.epochs
    if expected == manifest.expected_records:
        return
    limits = [f"limit {manifest.limit}"] if manifest.limit is not None else []
    limits += [f"limit_per_axis {manifest.limit_per_axis}"] if manifest.limit_per_axis is not None else []
    takes = f"{' and '.join(limits)} take{'s' if len(limits) == 1 else ''} " if limits else ""
    held = " (after the few-shot hold-out)" if excluded else ""
    epochs = f"{manifest.epochs} epoch{'s' if manifest.epochs > 1 else ''}"
    raise ArtifactError(
        f"{path}: expected_records: {manifest.expected_records:,} is not what the run takes: {takes}{samples:,} of "
        f"the dataset's {report.valid:,} samples{held}, {expected:,} records over {epochs}"
    )


def _expected_after_change(plan: RunPlan) -> int:
    """The records a run resumed with --force across a changed dataset expects: one for each key the changed
    dataset gives, and one for each key already recorded that it no longer gives (its record stays and counts).
    With the old count, a dataset that lost lines left the run short of records it can never write
    ("interrupted" after every resume), and one that gained lines went past 100%; with the new dataset's count
    alone, the records of lines it lost would stand in for samples of it never written."""
    wanted = {record_key(sample.id, epoch) for _position, sample, epoch in work_items(plan)}
    samples = RunPaths(plan.run_dir).samples
    recorded = scan_keys(samples).done if samples.exists() else set()
    return len(wanted | recorded)


def _generation_kept(task: LoadedTask, manifest: RunManifest) -> list[str]:
    """A note when the task's ``[generation]`` now differs from what the run started with: a resume keeps the
    run's own options (it would otherwise mix two settings in one run), and an edit ignored without a word reads
    as applied. A value the run took from ``--temperature``/``--max-tokens`` is the run's choice, not an edit."""
    recorded = manifest.task.generation.model_dump()
    flags = set(manifest.task.generation_from_flags)  # the run's own choice over the task's: not an edit
    now = {k: v for k, v in task.spec.generation.model_dump(exclude_none=True).items() if k not in flags}

    def shown(value: Any) -> str:
        return "unset" if value is None else repr(value)

    changes = [
        f"{name} {now[name]!r} (the run has {shown(recorded.get(name))})"
        for name in now
        if now[name] != recorded.get(name)
    ]
    if not changes:
        return []
    return [
        f"note: {task.path}'s [generation] now says {', '.join(changes)}; a resume keeps the run's own generation "
        "options: start a new run to use the new ones"
    ]


def _check_new_gate_axes(plan: RunPlan, axes: list[str]) -> None:
    """A ``--fail-below-axis`` given anew to a resume, for an axis the run has no sample of, is refused before
    the session runs (and before it is recorded: every later resume would fail on it). A resume does not
    validate the dataset again, so its axes are read here, only when such a gate is given."""
    if not axes:
        return
    present = _run_axes(plan)
    for axis in axes:
        if axis not in present:
            raise ConfigError(
                f"--fail-below-axis {axis}: the run has no sample of that axis (its axes: {', '.join(sorted(present))})"
            )


def work_items(
    plan: RunPlan,
    finished: Callable[[str, Position], bool] | None = None,
    start: Position | None = None,
    taken_before: int = 0,
) -> Iterator[tuple[Position, Sample, int]]:
    """(position, sample, epoch) in dataset order, after hold-out, --limit-per-axis and --limit.

    ``finished(sample_id, position)`` lets a resume pass over samples whose every epoch is recorded without
    building them; they still count toward --limit. ``start`` (a resume frontier) begins there, with
    ``taken_before`` samples already counted.
    """
    taken = taken_before
    limit = plan.config.limit

    included = plan.included_ids
    # the samples --limit-per-axis takes that are still ahead: at 0 the rest of the file is passed over unread;
    # without it nothing is counted down (-1 stays -1)
    included_left = len(included) if included is not None else -1
    counted = 1 if included is not None else 0

    def pass_over(sample_id: str, position: Position) -> bool:
        nonlocal taken, included_left
        if included is not None and sample_id not in included:
            return included_left != 0  # past the last sample it takes: let the loop below see it and stop
        if sample_id in plan.excluded_ids:
            return True
        if limit is not None and taken >= limit:
            return False  # let the loop below see it and stop
        if finished is not None and finished(sample_id, position):
            taken += 1
            included_left -= counted
            return True
        return False

    for position, sample in iter_positioned(plan.dataset_path, plan.task.spec.dataset, pass_over, start):
        if included_left == 0 or (limit is not None and taken >= limit):
            return
        taken += 1
        included_left -= counted
        for epoch in range(plan.config.epochs):
            yield position, sample, epoch


def dry_run(plan: RunPlan, *, show: int = 3, tpm: float | None = None) -> DryRun:
    """Render every prompt and estimate tokens and cost; calls nothing and writes nothing. With ``tpm``, also the
    tokens as that budget books them (``paced_prompt_tokens``: a request over a minute's budget takes a minute)."""
    first: list[list[ChatMessage]] = []
    count = 0
    prompt_tokens = 0
    paced = 0.0
    longest, longest_sample = 0, None
    max_out = plan.provider.output_cap(plan.generation)  # thinking included, which is billed as output
    cost: float | None = 0.0
    for position, sample, _epoch in work_items(plan):
        try:
            messages = plan.template.render(sample, plan.few_shot.for_member(position.member))
        except TemplateError as exc:
            # named by the sample, as validate-dataset --task names it: the run would stop there
            raise _of_sample(exc, plan, position, sample) from None
        if len(first) < show:
            first.append(messages)
        count += 1
        tokens = estimate_tokens(messages)
        prompt_tokens += tokens
        paced += min(tokens, tpm) if tpm else 0.0
        if tokens > longest:
            longest, longest_sample = tokens, sample.id
        if cost is not None:  # priced one request at a time: a long prompt's request may cost more a token
            one = plan.provider.cost(Usage(prompt_tokens=tokens, completion_tokens=max_out or 0))
            cost = None if one is None else cost + one
    if not count:
        cost = plan.provider.cost(Usage())  # nothing to run: 0, or unknown without a price
    return DryRun(
        count,
        first,
        prompt_tokens,
        max_out * count if max_out else None,
        cost,
        longest_prompt_tokens=longest,
        longest_prompt_sample=longest_sample,
        max_tokens=max_out,
        paced_prompt_tokens=paced,
    )


__all__ = [
    "DryRun",
    "FewShot",
    "ModelUpdate",
    "Pool",
    "RunPlan",
    "ScoringSetup",
    "SessionOverrides",
    "check_expected_records_counted",
    "choose_few_shot",
    "dataset_reading_change",
    "dry_run",
    "few_shot_file",
    "few_shot_files",
    "files_changed",
    "gate_changes",
    "holdout_refusal",
    "joined_pools",
    "judge_info",
    "load_pool",
    "plan_resume",
    "plan_run",
    "prompt_template",
    "replaced_settings",
    "resumed_gates",
    "session_settings",
    "work_items",
]
