"""Dataset validation as a command: map the task's fields (when a task is named) and check every line.

With a task, ``preflight`` also checks what ``run`` checks of a dataset before its first call, without calling a
model: the task's few-shot file (line by line), its examples that are also samples of the dataset, and every
prompt rendered with the task's template and the examples run would draw. It reuses run's own steps
(``eval_harness.planning``), so that it finds what run finds and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from eval_harness.datasets import (
    MEMBER_SUFFIXES,
    PROBLEMS_SHOWN,
    DatasetReport,
    Problem,
    foreign_format,
    iter_positioned,
    listed_problems,
    validate_dataset,
)
from eval_harness.errors import ConfigError, DatasetUnreadableError, EvalHarnessError, TemplateError
from eval_harness.tasks import LoadedTask, find_task, list_tasks
from eval_harness.types import DatasetSpec

if TYPE_CHECKING:
    from eval_harness.planning import FewShot
    from eval_harness.types import Completion, GenerateRequest


def validate(path: Path, task: str | None = None) -> DatasetReport:
    """Validate ``path`` with the field mapping of ``task`` (or the plain sample schema)."""
    if not task:
        _refuse_another_format(path)
        return validate_dataset(path, DatasetSpec())
    loaded = find_task(task)
    return validate_dataset(path, loaded.spec.dataset, task=loaded.spec.name)


def task_hint(path: Path, report: DatasetReport) -> str | None:
    """For a check without --task whose lines all lack ``input``: the tasks that map the first line's fields (an
    original GSM8K or OpenBookQA file holds ``question``), named as the advice to give one; None otherwise."""
    if report.valid or not report.problems or any(p.field != "input" for p in report.problems):
        return None
    keys = _first_line_keys(path)
    if not keys:
        return None
    readers = [name for _fields, name in sorted(_readers_of(keys))]
    held = ", ".join(sorted(keys)[:8]) + (", ..." if len(keys) > 8 else "")
    if not readers:
        return f"the lines hold {held}, and no input: give --task with a task whose [dataset] fields map them"
    return f"the lines hold {held}, and no input: give --task with a task that maps them, e.g. --task {readers[0]}"


def _readers_of(keys: set[str]) -> list[tuple[int, str]]:
    """(minus the fields mapped, name) of each JSONL task whose mapping reads ``input`` from one of ``keys`` and
    finds every field it maps there: the task mapping the most of them is likeliest the dataset's own."""
    found = []
    for task in list_tasks():
        dataset = task.spec.dataset
        sources = [source for source in dataset.fields.values() if isinstance(source, str)]
        if dataset.format == "jsonl" and dataset.fields.get("input") in keys and set(sources) <= keys:
            found.append((-len(sources), task.lookup_name))
    return found


def _first_line_keys(path: Path) -> set[str]:
    """The keys of the first non-blank line of the file ``path``, if it is a JSON object (a directory: none)."""
    import gzip

    if not path.is_file():
        return set()
    try:
        with gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    value = orjson.loads(line)
                    return set(value) if isinstance(value, dict) else set()
    except (OSError, ValueError, EOFError):
        return set()
    return set()


def _refuse_another_format(path: Path) -> None:
    """Refuse, in one line, a dataset whose names say it is not JSONL, which is all a check without --task reads:
    each line of a CSV file read as JSONL would be a problem of its own, and a CSV directory holds no file to
    read. Only a task knows a CSV file's columns, hence the advice to give one."""
    other = foreign_format(path)
    if other is None:
        return
    kind = other.upper()
    readers = sorted(task.lookup_name for task in list_tasks() if task.spec.dataset.format == other)
    example = f", e.g. --task {readers[0]}" if readers else ""
    advice = f"give --task with a task that reads {kind}{example}"
    if path.is_dir():
        what = f"the directory holds no {' or '.join(MEMBER_SUFFIXES['jsonl'])} file (it holds {kind} files: {advice})"
    else:
        what = f"its name says {kind}, and without --task a file is read as JSONL: {advice}"
    raise DatasetUnreadableError(f"{path}: cannot read the dataset: {what}")


@dataclass
class FewShotCheck:
    """The task's few-shot examples, checked against this dataset as ``run`` checks them."""

    path: str | None = None
    """The few-shot file as shown (None: none was read, or the examples are held out of the dataset)."""
    report: DatasetReport | None = None
    """The few-shot file checked line by line like a dataset (None: it was not read)."""
    unreadable: str | None = None
    """Why the file could not be found or read, when the dataset's own problems came first (run tells those)."""
    also_samples: int = 0
    """Examples that are also samples of the dataset (same input, target and choices): run leaves them out."""
    refusal: str | None = None
    """Why run would draw no example: every example is a sample, or a hold-out leaves no sample to evaluate."""
    note: str | None = None
    """What run prints on stderr about the examples it leaves out (a warning, not a problem)."""
    held_out: int | None = None
    """Samples held out of the dataset as examples (``holdout_fraction``; None for a file): never rendered as
    samples."""

    @property
    def ok(self) -> bool:
        """Whether run would take its examples."""
        return (self.report is None or self.report.ok) and self.unreadable is None and self.refusal is None


@dataclass
class Problems:
    """Problems of one kind: every one counted, the first ``PROBLEMS_SHOWN`` kept to show."""

    shown: list[Problem] = field(default_factory=list)
    count: int = 0
    alike: bool = True
    """Every problem says what the first one says, on another line."""

    def add(self, problem: Problem) -> None:
        self.count += 1
        if self.shown and not self.shown[0].says_what(problem):
            self.alike = False
        if len(self.shown) < PROBLEMS_SHOWN:
            self.shown.append(problem)

    def lines(self) -> list[str]:
        """The shown problems, then a count of the rest (see ``listed_problems``)."""
        return listed_problems(self.shown, self.count, self.alike)


@dataclass
class RenderCheck:
    """Every sample the run would send, rendered with the task's template and few-shot examples as run does."""

    template: str
    """The template file as shown."""
    examples: int
    """The few-shot examples in every prompt."""
    samples: int = 0
    problems: Problems = field(default_factory=Problems)
    """Samples whose prompt failed to render."""
    check_fields: list[tuple[str, int]] = field(default_factory=list)
    """The metadata fields whose instruction checks an ``instructions`` scorer of the task reads, each with the
    number of checks that scorer has of its own."""
    check_problems: Problems = field(default_factory=Problems)
    """Samples' own instruction checks that scoring would refuse (a bad type or value: each sample's error)."""
    code_fields: list[tuple[str, str]] = field(default_factory=list)
    """The (test, entry point) metadata fields a ``code_execution`` scorer of the task reads."""
    code_problems: Problems = field(default_factory=Problems)
    """Samples whose test code or entry point a ``code_execution`` scorer would fail on (each sample's error)."""

    @property
    def rendered(self) -> int:
        """Samples whose prompt rendered."""
        return self.samples - self.problems.count


@dataclass
class Preflight:
    """What ``run`` would refuse or warn about for this dataset and task."""

    dataset: DatasetReport
    few_shot: FewShotCheck | None
    """None when the task draws no few-shot example."""
    render: RenderCheck | None
    """None when the examples run would draw are not known (``not_rendered`` says why)."""
    not_rendered: str | None = None
    scorer_note: str | None = None
    """What this machine lacks to run the task's scorers (code execution not enabled, an extra not installed):
    run would refuse them here."""

    @property
    def ok(self) -> bool:
        """True when run would take this dataset as it is (warnings and blank lines allowed)."""
        few_shot_ok = self.few_shot is None or self.few_shot.ok
        rendered_ok = self.render is None or not (
            self.render.problems.count or self.render.check_problems.count or self.render.code_problems.count
        )
        return self.dataset.ok and few_shot_ok and rendered_ok


def preflight(path: Path, task: str) -> Preflight:
    """Check ``path`` against ``task`` as ``run`` does before its first call: its lines (with the task's field
    mapping), the few-shot file line by line, the examples that are also samples, every prompt rendered.

    Raises, as run does, what cannot be checked at all: an unknown task, a template that does not load, a dataset
    that cannot be read, a few-shot file that cannot be found or read (this one only when the dataset has no
    problem of its own: run tells the dataset's problems first)."""
    # here, not at the top: planning imports the providers (~0.2 s), which a check without a task does not need
    from eval_harness.planning import FewShot, prompt_template

    loaded = find_task(task)
    # before the dataset is read: a template that cannot load, or a scorer run would refuse, without a pass over
    # a big file
    prompt_template(loaded, FewShot())
    scorer_note = _build_scorers(loaded)
    checked = _checked(loaded, path)
    checked.scorer_note = scorer_note
    return checked


def _checked(loaded: LoadedTask, path: Path) -> Preflight:
    """The preflight of a task whose template and scorers load: its dataset, few-shot examples and prompts."""
    from eval_harness.planning import choose_few_shot, holdout_refusal

    spec = loaded.spec
    few_shot = spec.few_shot
    if few_shot is not None and few_shot.path is not None and loaded.resolve(few_shot.path).resolve() == path.resolve():
        # the task's own few-shot file, checked under the task's field mapping: its lines are what matters here
        report = validate_dataset(path, spec.dataset, task=spec.name)
        own = (
            f"{path} is the few-shot file of task {spec.name!r} (its lines are checked; run refuses it as the "
            "dataset: its samples would be their own few-shot examples)"
        )
        return Preflight(report, None, None, own)
    if few_shot is not None and few_shot.k > 0 and few_shot.holdout_fraction is None:
        return _with_pool(loaded, path)
    report = validate_dataset(path, spec.dataset, task=spec.name)
    if report.valid == 0 and few_shot is not None and few_shot.k > 0:
        # no line the task can read (a misspelt field mapping, another task's file): what the lines say is the
        # finding; a hold-out of none would only be the echo of it
        return Preflight(report, None, None, "no line of the dataset is valid, so none is held out as an example")
    chosen = choose_few_shot(loaded, path, None)  # none, or held out of the dataset
    render = _render(path, loaded, chosen)
    if few_shot is None or few_shot.k == 0:
        return Preflight(report, None, render)
    check = FewShotCheck(held_out=len(chosen.excluded))
    if (refusal := holdout_refusal(loaded, path, report, chosen.excluded)) is not None:  # run's, in its words
        check.refusal = str(refusal)
    return Preflight(report, check, render)


class _UncalledJudge:
    """The judge model a task's judge scorers are built with here: a check calls no model, and whether run is
    given ``--judge-model`` is not known."""

    async def complete(self, request: GenerateRequest) -> Completion:
        raise AssertionError("validate-dataset calls no model")


def _build_scorers(loaded: LoadedTask) -> str | None:
    """Build the task's scorers as run does, so that a bad argument (an unknown mode, a negative tolerance, a
    rubric file that is not there) is refused here in run's words, naming the spec's line. What this machine
    lacks to run a scorer (code execution not enabled, an extra not installed) is not the dataset's or the task's
    problem (the run may be meant for a container): the note that says so, or None."""
    from eval_harness.scorers.base import ScoringPipeline, checking_only

    with checking_only() as lacking:  # every argument of every scorer, nothing written (the embeddings cache)
        ScoringPipeline(loaded.spec.scorers, _UncalledJudge(), where=str(loaded.path), lines=loaded.scorer_lines)
    return "; ".join(lacking) + "; run refuses it here" if lacking else None


def _with_pool(loaded: LoadedTask, path: Path) -> Preflight:
    """The preflight of a task that draws its few-shot examples from a file: the file is checked first, so that
    the dataset's one pass compares its examples with the samples (as in run)."""
    from eval_harness.planning import choose_few_shot, few_shot_file, few_shot_files, joined_pools, load_pool

    spec = loaded.spec
    try:
        # a dataset directory's files may each have their own (path_from_dataset)
        files = few_shot_files(loaded, path)
        single = None if files else few_shot_file(loaded, path)
        assert files or single is not None, "a task that draws k > 0 examples from a file names one"
        pool_paths = list(dict.fromkeys(files.values())) if files else [single]  # a file several share: once
        pool_report = _joined(
            [validate_dataset(Path(_shown(each)), spec.dataset, task=spec.name) for each in pool_paths if each]
        )
    except (ConfigError, DatasetUnreadableError) as exc:
        report = validate_dataset(path, spec.dataset, task=spec.name)
        failure = _naming_the_few_shot_file(exc, loaded)
        if report.ok:
            raise failure from None
        return Preflight(report, FewShotCheck(unreadable=str(failure)), None, "the few-shot file cannot be read")
    check = FewShotCheck(path=pool_report.path, report=pool_report)
    if not pool_report.ok:
        report = validate_dataset(path, spec.dataset, task=spec.name)
        return Preflight(report, check, None, "the few-shot file has problems (run takes no example from it)")
    # checked just above: its examples held as run holds them
    pool = load_pool(loaded, single) if single is not None else joined_pools(path, files, partial(load_pool, loaded))
    report = validate_dataset(path, spec.dataset, task=spec.name, overlap=pool.overlap)
    check.also_samples = len(pool.overlap.found)
    try:
        chosen = choose_few_shot(loaded, path, pool)
    except ConfigError as exc:  # every example is a sample of the dataset: run's refusal, word for word
        check.refusal = str(exc)
        return Preflight(report, check, None, "every few-shot example is a sample (run draws none)")
    check.note = "\n".join(note for note in (chosen.note, chosen.shortfall) if note) or None
    return Preflight(report, check, _render(path, loaded, chosen))


def _joined(reports: list[DatasetReport]) -> DatasetReport:
    """Few-shot files' reports as one of the check: one file's, or a sum named by the files whose problems are
    each file's (every problem names its file), so that every broken file is told at once."""
    if len(reports) == 1:
        return reports[0]
    joined = DatasetReport(path=f"{len(reports)} files ({reports[0].path}, ...)")
    for report in reports:
        joined.lines += report.lines
        joined.valid += report.valid
        joined.blank_lines += report.blank_lines
        joined.repeats += report.repeats
        joined.duplicate_ids += report.duplicate_ids
        joined.not_json_spans += report.not_json_spans
        joined.add_problems_of(report)
    return joined


def _render(path: Path, loaded: LoadedTask, chosen: FewShot) -> RenderCheck:
    """Render the prompt of every valid sample but those held out as examples, as run renders it (its template
    loaded as run loads it, with the examples' sources, for an error one of them causes); a sample whose prompt
    fails is a problem on its line, and so is a sample whose own instruction checks an ``instructions`` scorer of
    the task would refuse, or whose test code or entry point a ``code_execution`` scorer would (each such sample
    would be a scoring error of the run, its answer paid for)."""
    from eval_harness.planning import prompt_template
    from eval_harness.scorers.code import sample_code_problems
    from eval_harness.scorers.instructions import sample_check_problems

    template = prompt_template(loaded, chosen)
    shown_each = max(map(len, chosen.by_member.values()), default=len(chosen.examples))  # a directory's: per file
    check = RenderCheck(_shown(template.path), shown_each)
    scorers = [(s.name, s.args) for s in loaded.spec.scorers]
    check.check_fields = list(dict.fromkeys(_instruction_fields(scorers)))
    check.code_fields = list(dict.fromkeys(_code_fields(scorers)))
    excluded = chosen.excluded
    skip = (lambda sample_id, _position: sample_id in excluded) if excluded else None
    for position, sample in iter_positioned(path, loaded.spec.dataset, skip):
        where = str(position.file_in(path))
        check.samples += 1
        try:
            template.render(sample, chosen.for_member(position.member))
        except TemplateError as exc:
            check.problems.add(Problem(where, position.line, "template", str(exc)))
        for check_field, common in check.check_fields:
            for place, message in sample_check_problems(sample, check_field, common):
                check.check_problems.add(Problem(where, position.line, place, message))
        for test_field, entry_point_field in check.code_fields:
            for place, message in sample_code_problems(sample, test_field, entry_point_field):
                check.code_problems.add(Problem(where, position.line, place, message))
    return check


def _args_of(scorers: list[tuple[Any, Any]], wanted: str) -> Iterator[dict[str, Any]]:
    """The arguments of every scorer named ``wanted`` among ``scorers`` (name and args of each), those inside a
    ``composite`` too."""
    for name, args in scorers:
        args = args if isinstance(args, dict) else {}
        if name == wanted:
            yield args
        elif name == "composite" and isinstance(args.get("scorers"), list):
            parts = [part for part in args["scorers"] if isinstance(part, dict)]
            yield from _args_of([(part.get("name"), part.get("args")) for part in parts], wanted)


def _instruction_fields(scorers: list[tuple[Any, Any]]) -> list[tuple[str, int]]:
    """The (metadata field, number of its own checks) of every ``instructions`` scorer among ``scorers``."""
    return [
        (str(args.get("field", "checks")), len(common) if isinstance(common := args.get("checks"), list) else 0)
        for args in _args_of(scorers, "instructions")
    ]


def _code_fields(scorers: list[tuple[Any, Any]]) -> list[tuple[str, str]]:
    """The (test, entry point) metadata fields of every ``code_execution`` scorer among ``scorers``."""
    return [
        (str(args.get("test_field", "test")), str(args.get("entry_point_field", "entry_point")))
        for args in _args_of(scorers, "code_execution")
    ]


def _naming_the_few_shot_file(exc: EvalHarnessError, loaded: LoadedTask) -> EvalHarnessError:
    """The error, saying that the file is the task's few-shot file (the reader calls any file it reads 'the
    dataset')."""
    if isinstance(exc, DatasetUnreadableError):
        told, owner = str(exc), f"the few-shot file of task {loaded.spec.name!r}"
        named = told.replace(": cannot read the dataset: ", f": cannot read {owner}: ", 1)
        return DatasetUnreadableError(named if named != told else f"{owner}: {told}")
    return exc


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when it lies inside it (as a user types it), else as given."""
    absolute = Path(os.path.abspath(path))
    cwd = Path.cwd()
    return str(absolute.relative_to(cwd)) if absolute.is_relative_to(cwd) else str(path)


__all__ = ["FewShotCheck", "Preflight", "Problems", "RenderCheck", "preflight", "task_hint", "validate"]
