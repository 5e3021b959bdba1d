"""The few-shot examples of a run: where they come from, which are drawn, and what drawing them takes away.

Examples come from a file of their own (the task's ``few_shot.path`` or ``path_from_dataset``), loaded whole as
a ``Pool`` before the dataset's one pass compares it with the samples, or are held out of the dataset
(``holdout_fraction``). ``validate-dataset --task`` uses the same steps (``eval_harness.validate``).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_harness.datasets import (
    DatasetReport,
    dataset_members,
    iter_positioned,
    iter_samples,
    split,
    validate_dataset,
    why_missing,
)
from eval_harness.datasets import sample as sample_subset
from eval_harness.errors import (
    ConfigError,
    DatasetError,
    DatasetUnreadableError,
    TemplateError,
    as_written,
    named_briefly,
)
from eval_harness.planning._fingerprint import _prompt_inputs_sha256
from eval_harness.tasks import LoadedTask
from eval_harness.templates import PromptTemplate, load_template
from eval_harness.types import ChatMessage, RunManifest, Sample, split_rewrite


class PoolOverlap:
    """Which examples of a few-shot pool are also samples of a dataset: the same input, target and choices
    (choices too: two multiple-choice items that share a question and the answer letter "B" are different items).
    Not the id: files are often numbered each on its own (0, 1, 2... in dev and in test), so a shared id says
    nothing about content.

    It is fed every valid line of one streaming pass over the dataset (``validate_dataset(..., overlap=)``, the
    pass that checks it anyway) and holds only the pool, which is small, and what it found: never the dataset.
    A line costs a dict lookup of its question text."""

    def __init__(self, pool: Iterable[Sample]) -> None:
        examples = list(pool)
        self._by_question: dict[str, list[Sample]] = {}
        for example in examples:
            self._by_question.setdefault(_question(example.input), []).append(example)
        self.found: dict[str, str] = {}
        """Pool example id -> the id of the first dataset sample found equal to it."""

    def see(self, sample_id: str, fields: dict[str, Any], member: str | None = None, /) -> None:
        """Compare one dataset sample (``Sample`` fields) with the pool (whatever file it is in)."""
        candidates = self._by_question.get(_question(fields["input"]))
        if candidates is None:
            return
        targets, choices = _as_tuple(fields["target"]), fields["choices"] or None
        for example in candidates:
            if (
                example.input == fields["input"]
                and _as_tuple(example.target) == targets
                and (example.choices or None) == choices
            ):
                self.found.setdefault(example.id, sample_id)


class _JoinedOverlap(PoolOverlap):
    """A dataset directory's pools, each compared with its own file's samples only: an example is shown only to
    the samples of the file whose pool it is in, so only those can have it leak (a directory then draws the
    examples each of its files would draw alone)."""

    def __init__(self, pools: dict[str, Pool]) -> None:
        super().__init__(())
        self._pools = pools

    def see(self, sample_id: str, fields: dict[str, Any], member: str | None = None, /) -> None:
        pool = self._pools.get(member) if member is not None else None
        if pool is None:
            return
        found = pool.overlap.found
        before = len(found)
        pool.overlap.see(sample_id, fields, member)
        if len(found) != before:  # rare: an example that is a sample; kept here too for the notes and counts
            for example_id, twin in found.items():
                self.found.setdefault(example_id, twin)


def _question(value: str | list[ChatMessage]) -> str:
    """The text a sample asks: its input, or the last (the user's) turn of a chat input."""
    return value if isinstance(value, str) else value[-1].content


def _as_tuple(target: str | list[str]) -> tuple[str, ...]:
    return (target,) if isinstance(target, str) else tuple(target)


@dataclass(frozen=True)
class FewShot:
    """The few-shot examples of a run, and what choosing them took away."""

    examples: list[Sample] = field(default_factory=list)
    excluded: frozenset[str] = frozenset()
    """Dataset samples held out of evaluation as the pool (``holdout_fraction``)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each example is, for a template error it causes: example id -> ``file:line`` (the file alone for a
    hold-out)."""
    note: str | None = None
    """What the run tells its user: the pool's examples left out as samples under evaluation."""
    by_member: dict[str, list[Sample]] = field(default_factory=dict)
    """A dataset directory's examples per file, by the file's name, when each file has its own few-shot file
    (``path_from_dataset``); ``examples`` then holds them all, in file order. Empty otherwise."""
    shortfall: str | None = None
    """What the run tells its user when the pool holds fewer examples than k (each prompt shows fewer)."""

    def for_member(self, member: str | None) -> list[Sample]:
        """The examples a sample of ``member`` (a dataset directory's file, None for one file) is shown."""
        return self.by_member[member] if self.by_member and member is not None else self.examples


@dataclass
class Pool:
    """A file of few-shot examples, loaded whole (it is small), to be compared with the dataset in one pass."""

    path: Path
    examples: list[Sample]
    lines: dict[str, int]
    overlap: PoolOverlap
    by_member: dict[str, Pool] = field(default_factory=dict)
    """A dataset directory's pools, one per file by the file's name (``path_from_dataset``): this pool is then
    all of them (its ``overlap`` compares every one with the dataset in the one pass). Empty otherwise."""


def few_shot_files(task: LoadedTask, dataset_path: Path) -> dict[str, Path]:
    """The few-shot file of each file of a dataset directory, by the file's name, when the task derives it from
    the dataset's path (``path_from_dataset``); empty otherwise (one file's ``few_shot_file`` serves all). Refused
    naming every few-shot file that cannot be read, not the first only: a directory of subjects often lacks
    several (one dev file per subject), which would otherwise be found one run at a time."""
    spec = task.spec.few_shot
    if spec is None or spec.path_from_dataset is None or spec.k == 0 or not dataset_path.is_dir():
        return {}
    files = {}
    members = dataset_members(dataset_path, task.spec.dataset)
    evaluated = frozenset(member.resolve() for member in members)  # once: each file's check compares with all
    for member in members:
        path = _few_shot_path(task, member, directory=dataset_path, evaluated=evaluated)
        assert path is not None, "path_from_dataset with k > 0 names a file"
        files[member.name] = path
    distinct = list(dict.fromkeys(files.values()))  # a file several share: once
    unreadable = {path: why for path in distinct if (why := _unreadable(path)) is not None}
    if unreadable:
        raise _unreadable_refusal(task, unreadable, len(distinct))
    return files


def few_shot_file(task: LoadedTask, dataset_path: Path) -> Path | None:
    """The file the few-shot examples come from, refused naming the spec's line when it cannot be read; None when
    they come from no file (none, or a hold-out)."""
    path = _few_shot_path(task, dataset_path)
    if path is not None and (why := _unreadable(path)) is not None:
        raise _unreadable_refusal(task, {path: why}, 1)
    return path


def _unreadable_refusal(task: LoadedTask, unreadable: dict[Path, str], total: int) -> ConfigError:
    """The refusal of the few-shot files that cannot be read (``unreadable``: each with why; of ``total``), on one
    line naming the spec's: the first few files named, the rest counted, a reason they all share (most often "no
    such file") said once."""
    place = task.place("few_shot", _source_key(task))
    if len(unreadable) == 1:
        [(path, why)] = unreadable.items()
        return ConfigError(f"{place}: {path}: cannot read the few-shot file: {why}")
    reasons = set(unreadable.values())
    shared = reasons.pop() if len(reasons) == 1 else None
    shown = named_briefly([str(path) if shared else f"{path} ({why})" for path, why in unreadable.items()])
    how_many = "any" if len(unreadable) == total else len(unreadable)
    why = f" ({shared})" if shared else ""
    return ConfigError(f"{place}: cannot read {how_many} of the {total} few-shot files{why}: {shown}")


def _few_shot_path(
    task: LoadedTask,
    dataset_path: Path,
    *,
    directory: Path | None = None,
    evaluated: frozenset[Path] | None = None,
) -> Path | None:
    """``few_shot_file``'s path, not yet opened. ``directory``: the dataset directory ``dataset_path`` is a file
    of (see ``few_shot_files``); ``evaluated``: the resolved paths of the files evaluated (read here when not
    given)."""
    spec = task.spec.few_shot
    if spec is None or spec.k == 0 or spec.holdout_fraction is not None:
        return None
    key = _source_key(task)
    if spec.path_from_dataset is not None:
        pattern, replacement = split_rewrite(spec.path_from_dataset)  # checked when the spec loaded
        # the absolute path: "test/x_test.csv" typed in the dataset's parent must match a pattern that wants
        # a directory before test/, as the same file given as ../test/x_test.csv does
        absolute = str(dataset_path.resolve())
        derived, matches = re.subn(pattern, replacement, absolute)
        if not matches:  # one that matches and gives the path back is the dataset itself, refused below
            why = (
                f" (a file of the dataset directory {directory}: each file's few-shot file is derived from its own "
                "path, so the pattern must match every file's)"
                if directory is not None
                else ""
            )
            raise ConfigError(f"{task.place('few_shot', key)}: {as_written(pattern)} does not match {absolute}{why}")
        if "\0" in derived:  # no path holds one: the OS would refuse it with a traceback's ValueError
            raise ConfigError(
                f"{task.place('few_shot', key)}: {as_written(replacement)} gives {derived!r}, which holds a NUL "
                "character: no file can be named so"
            )
        pool_path = Path(derived)
    else:
        assert spec.path is not None, "FewShotSpec requires one source when k > 0"
        pool_path = task.resolve(spec.path)
        found = task.elsewhere(spec.path)  # a task copied out of the built-ins keeps naming their file
        if found is not None:
            raise ConfigError(
                f"{task.place('few_shot', key)}: {pool_path}: no such file; there is {found}: copy it to "
                f"{pool_path.parent}"
            )
    # every file evaluated, not only this one: a pattern may map one file of a directory onto another
    if evaluated is None:  # of one file: {dataset_path}
        evaluated = frozenset(path.resolve() for path in dataset_members(directory or dataset_path, task.spec.dataset))
    if pool_path.resolve() in evaluated:
        which = f" ({pool_path.name}, for {dataset_path.name})" if directory is not None else ""
        raise ConfigError(
            f"{task.place('few_shot', key)}: few-shot examples would come from the dataset under evaluation{which}; "
            "use holdout_fraction instead"
        )
    return pool_path


def _source_key(task: LoadedTask) -> str:
    """The key of the task's ``[few_shot]`` that names its file."""
    spec = task.spec.few_shot
    return "path_from_dataset" if spec is not None and spec.path_from_dataset is not None else "path"


def _unreadable(path: Path) -> str | None:
    """Why a few-shot file cannot be opened, None when it can. It is asked before the file is read, so that the
    refusal names the spec's line: the dataset reader, which would refuse it later, calls any file it reads 'the
    dataset'. A pipe is refused before it is opened, which would block."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            return "it is a directory"
        if not stat.S_ISREG(mode):
            return "it is not a regular file (a pipe or a device); save it to a file first"
        with path.open("rb"):
            return None
    except FileNotFoundError:
        return why_missing(path)
    except OSError as exc:
        return exc.strerror or str(exc)


def _checked_pool(task: LoadedTask, dataset_path: Path, check_dataset: Callable[[], object]) -> Pool | None:
    """``_load_pool``; when the pool cannot be used, the dataset is checked first (``check_dataset``), so that its
    own problem is told before the pool's, as when the pool was read after it (the pool now comes first so that
    the dataset's one pass can compare them)."""
    try:
        return _load_pool(task, dataset_path)
    except (ConfigError, DatasetError):
        check_dataset()
        raise


def _load_pool(task: LoadedTask, dataset_path: Path) -> Pool | None:
    """The few-shot file, checked and loaded, before the dataset's pass compares it with the samples. None when
    the examples come from no file."""
    files = few_shot_files(task, dataset_path)
    if files:
        return joined_pools(dataset_path, files, lambda shots: _checked_file_pool(task, shots))
    path = few_shot_file(task, dataset_path)
    return None if path is None else _checked_file_pool(task, path)


def _checked_file_pool(task: LoadedTask, path: Path) -> Pool:
    """The few-shot file at ``path`` checked line by line (refused with its problems), then loaded."""
    try:
        report = validate_dataset(path, task.spec.dataset, task=task.spec.name)
    except DatasetUnreadableError as exc:  # opened, but not text (a corrupt gzip archive ...): not "the dataset"
        told = str(exc).replace(": cannot read the dataset: ", ": cannot read the few-shot file: ", 1)
        raise DatasetUnreadableError(f"{task.place('few_shot', _source_key(task))}: {told}") from None
    if not report.ok:
        raise DatasetError(f"{path}: few-shot file has {report.problems_counted}", report.problem_lines())
    return load_pool(task, path)


def joined_pools(dataset_path: Path, files: dict[str, Path], load: Callable[[Path], Pool]) -> Pool:
    """A dataset directory's few-shot files (``few_shot_files``), each loaded by ``load`` (a file several share:
    once), as the one pool its pass compares."""
    loaded: dict[Path, Pool] = {}
    for shots in files.values():
        if shots not in loaded:
            loaded[shots] = load(shots)
    pools = {member: loaded[shots] for member, shots in files.items()}
    examples = [example for pool in pools.values() for example in pool.examples]
    lines = {id_: line for pool in pools.values() for id_, line in pool.lines.items()}
    return Pool(dataset_path, examples, lines, _JoinedOverlap(pools), pools)


def load_pool(task: LoadedTask, path: Path) -> Pool:
    """The few-shot file at ``path`` (see ``few_shot_file``), already checked line by line, loaded whole."""
    examples, lines = [], {}
    for position, example in iter_positioned(path, task.spec.dataset):
        examples.append(example)
        lines[example.id] = position.line
    return Pool(path, examples, lines, PoolOverlap(examples))


def choose_few_shot(
    task: LoadedTask, dataset_path: Path, pool: Pool | None, *, leave_out_equal: bool = True, resumed: bool = False
) -> FewShot:
    """Few-shot examples: from the pool (once the dataset's pass compared it with the samples), or held out of
    the dataset (``leave_out_equal=False``: drawn from every held-out sample, as runs started before held-out
    samples equal to evaluated ones were left out drew them). A hold-out that holds out no sample is refused for a
    new run, not for a ``resumed`` one started before it was."""
    spec = task.spec.few_shot
    if spec is None or spec.k == 0:
        return FewShot()
    if spec.holdout_fraction is None:
        assert pool is not None, "a few-shot file is loaded before the dataset is checked (see _checked_pool)"
        return _chosen(task, pool, pool.overlap.found)
    everything = list(iter_samples(dataset_path, task.spec.dataset))
    parts = split(everything, {"shots": spec.holdout_fraction, "eval": 1 - spec.holdout_fraction}, spec.seed)
    held_out = parts["shots"]
    # a dataset may hold one item twice: the copy held out must not show its answer to the copy under evaluation
    overlap = PoolOverlap(held_out)
    for sample in parts["eval"]:
        overlap.see(sample.id, {"input": sample.input, "target": sample.target, "choices": sample.choices})
    # the file and the id, no line: keeping every sample's position beside the samples would cost more memory
    excluded = frozenset(sample.id for sample in held_out)
    if not leave_out_equal:
        examples = sample_subset(held_out, spec.k, spec.seed)
        sources = {example.id: str(dataset_path) for example in examples}
        twins = {example.id: overlap.found[example.id] for example in examples if example.id in overlap.found}
        return FewShot(examples, excluded, sources, _kept_twins_note(twins))
    kept = [example for example in held_out if example.id not in overlap.found]
    if not held_out and not resumed:  # every prompt would be zero-shot, the manifest saying k (a run started so
        # before this was refused resumes as it started)
        raise ConfigError(
            f"{task.path}: few-shot: holdout_fraction {spec.holdout_fraction:g} of the dataset's {len(everything):,} "
            f"samples holds out none, so no prompt would show an example; raise it, or take the examples from a file"
        )
    if held_out and not kept:
        raise ConfigError(
            f"{task.path}: few-shot: every one of the {len(held_out)} samples held out is equal to a sample under "
            "evaluation (same input and target); take the examples from a file of their own"
        )
    examples = sample_subset(kept, spec.k, spec.seed)
    sources = {example.id: str(dataset_path) for example in examples}
    short = _shortfall("the hold-out", len(kept), spec.k) if not overlap.found else None
    return FewShot(examples, excluded, sources, _held_out_note(overlap, kept, spec.k), shortfall=short)


def _held_out_note(overlap: PoolOverlap, kept: list[Sample], k: int) -> str | None:
    if not overlap.found:
        return None
    count = len(overlap.found)
    return (
        f"few-shot: left out {count} held-out sample{'s' if count != 1 else ''} equal to a sample under "
        f"evaluation (same input and target): {_left_out_listing(overlap.found, len(kept), k)}"
    )


def _kept_twins_note(twins: dict[str, str]) -> str | None:
    """The note of a resumed run that keeps examples drawn before held-out twins were left out (``twins``:
    example id -> the sample under evaluation equal to it)."""
    if not twins:
        return None
    many = len(twins) != 1
    return (
        "few-shot: this run keeps the examples it started with (before held-out samples equal to one under "
        f"evaluation were left out), which include held-out sample{'s' if many else ''} "
        f"{_left_out_listing(twins, len(twins), 0)}: {'their answers show' if many else 'its answer shows'} in "
        f"the prompt{'s' if many else ''} of the sample{'s' if many else ''} equal to {'them' if many else 'it'}"
    )


def _left_out_listing(found: dict[str, str], kept: int, k: int) -> str:
    """The examples left out (``found``: example id -> the sample equal to it), the first five named, and how
    many are left to draw from when fewer than ``k``."""
    named = [example if sample == example else f"{example} (= sample {sample})" for example, sample in found.items()]
    shown = ", ".join(named[:5]) + (f", ... ({len(named) - 5} more)" if len(named) > 5 else "")
    return shown + (f"; {kept} left to draw k = {k} from" if kept < k else "")


def _chosen(task: LoadedTask, pool: Pool, found: dict[str, str]) -> FewShot:
    """k examples of the pool, drawn from those that are no sample under evaluation (``found``: pool example id
    -> the dataset sample equal to it in content). They are left out before the draw rather than the
    run refused: the rest of the file is still a valid pool, and the draw stays a function of the files. A
    dataset directory's pools are drawn from each on its own."""
    if pool.by_member:
        # each file's own findings (an empty ``found`` asks for the draw that leaves nothing out)
        drawn = {
            member: _chosen(task, own, own.overlap.found if found else {}) for member, own in pool.by_member.items()
        }
        notes = [chosen.note for chosen in drawn.values() if chosen.note]
        shortfalls = list(dict.fromkeys(chosen.shortfall for chosen in drawn.values() if chosen.shortfall))
        return FewShot(
            [example for chosen in drawn.values() for example in chosen.examples],
            frozenset(),
            {id_: where for chosen in drawn.values() for id_, where in chosen.sources.items()},
            "\n".join(notes) or None,
            {member: chosen.examples for member, chosen in drawn.items()},
            "\n".join(shortfalls) or None,
        )
    spec = task.spec.few_shot
    assert spec is not None
    kept = [example for example in pool.examples if example.id not in found]
    if not kept:
        raise ConfigError(
            f"{task.path}: few-shot: every one of the {len(pool.examples)} examples in {pool.path} is also a sample "
            "of the dataset under evaluation (same input and target); take the examples from another "
            "file, or use holdout_fraction"
        )
    examples = sample_subset(kept, spec.k, spec.seed)
    sources = {example.id: f"{pool.path}:{pool.lines[example.id]}" for example in examples}
    # with examples left out, their note says how many are left to draw from
    short = _shortfall(str(pool.path), len(kept), spec.k) if not found else None
    return FewShot(examples, frozenset(), sources, _left_out_note(pool, found, len(kept), spec.k), shortfall=short)


def _shortfall(source: str, held: int, k: int) -> str | None:
    """The note of a pool that holds fewer than ``k`` examples: the manifest records k, the prompts show fewer."""
    if held >= k:
        return None
    return (
        f"few-shot: {source} holds {held} example{'s' if held != 1 else ''}, fewer than k = {k}: each prompt "
        f"shows {held}"
    )


def _left_out_note(pool: Pool, found: dict[str, str], kept: int, k: int) -> str | None:
    if not found:
        return None
    count = len(found)
    return (
        f"few-shot: left out {count} example{'s' if count != 1 else ''} of {pool.path} that "
        f"{'are' if count != 1 else 'is'} also {'samples' if count != 1 else 'a sample'} of the dataset "
        f"(same input and target): {_left_out_listing(found, kept, k)}"
    )


def _resumed_few_shot(
    task: LoadedTask, dataset_path: Path, pool: Pool | None, manifest: RunManifest, compared: bool
) -> FewShot:
    """The few-shot examples of a resumed run. When the dataset was not read again (its sha256 is the one the run
    started with), the examples the whole pool gives are taken if they are the ones the run recorded
    (``prompt_inputs_sha256``): the run drew them from the examples that this very dataset left in, so nothing
    needs reading. Otherwise (an example it left out would be drawn, or the pool changed) one streaming pass
    compares the pool with the dataset, as the run's start did."""
    if pool is None or compared:
        spec = task.spec.few_shot
        if pool is not None or spec is None or spec.holdout_fraction is None:
            return choose_few_shot(task, dataset_path, pool, resumed=True)
        try:
            chosen: FewShot | None = choose_few_shot(task, dataset_path, None, resumed=True)
        except ConfigError as refusal:  # every held-out sample is a twin: the run's own draw may still be kept
            chosen, refused = None, refusal
        if chosen is None or chosen.note is not None:
            # a run started before held-out samples equal to evaluated ones were left out may have drawn one:
            # it resumes with the examples it started with, not refused as changed
            drawn = choose_few_shot(task, dataset_path, None, leave_out_equal=False, resumed=True)
            recorded = manifest.task.prompt_inputs_sha256
            chosen_is_recorded = chosen is not None and _prompt_inputs_sha256(task, chosen.examples) == recorded
            if not chosen_is_recorded and _prompt_inputs_sha256(task, drawn.examples) == recorded:
                return drawn
        if chosen is None:
            raise refused
        return chosen
    unfiltered = _chosen(task, pool, {})
    if _prompt_inputs_sha256(task, unfiltered.examples) == manifest.task.prompt_inputs_sha256:
        return unfiltered
    validate_dataset(dataset_path, task.spec.dataset, task=task.spec.name, overlap=pool.overlap)
    return choose_few_shot(task, dataset_path, pool, resumed=True)


def prompt_template(task: LoadedTask, few_shot: FewShot) -> PromptTemplate:
    """The task's template, loaded knowing where each of ``few_shot``'s examples is (for an error one of them
    causes)."""
    spec = task.spec
    try:
        return load_template(
            task.templates_dir,
            spec.template,
            spec.system_prompt,
            spec.template_vars,
            example_sources=few_shot.sources,
            elsewhere=task.elsewhere(f"templates/{spec.template}"),
        )
    except TemplateError as exc:
        if not exc.not_found:
            raise
        # the spec's line names what to fix: the template's own path alone read as a file gone missing
        raise TemplateError(f"{task.place('template')}: {exc}", not_found=True) from None


def holdout_refusal(
    task: LoadedTask, dataset_path: Path, report: DatasetReport, excluded: frozenset[str]
) -> ConfigError | None:
    """Why a run refuses a hold-out (``excluded``: the samples held out as examples) that leaves no sample of the
    dataset to evaluate; None when one is left, or when the dataset has no valid sample at all (it is refused for
    that instead)."""
    if not 0 < report.valid <= len(excluded):
        return None
    return ConfigError(
        f"{task.path}: few_shot.holdout_fraction leaves no sample to evaluate "
        f"(it holds out {len(excluded)} of the {report.valid} in {dataset_path})"
    )


__all__ = [
    "FewShot",
    "Pool",
    "PoolOverlap",
    "choose_few_shot",
    "few_shot_file",
    "few_shot_files",
    "holdout_refusal",
    "joined_pools",
    "load_pool",
    "prompt_template",
]
