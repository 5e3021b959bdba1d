"""The run's fingerprint, and what a resume finds changed in it.

A run records the sha256 of what its results depend on (dataset, template, scorers, model, seed, judge) in its
manifest; a resume computes it again and refuses a run whose fingerprint changed, naming each change.
tests/test_fingerprint_pinned.py pins what it computes for fixed inputs: an existing run must still resume.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import reduce
from operator import getitem
from typing import Any, Final, Literal, Protocol

import orjson

from eval_harness.config import shown_without_credentials
from eval_harness.datasets import DatasetReport
from eval_harness.errors import as_written
from eval_harness.providers.base import ProviderOptions
from eval_harness.scorers.base import ScoringPipeline
from eval_harness.tasks import LoadedTask
from eval_harness.templates import PromptTemplate
from eval_harness.types import (
    FINGERPRINT_PARTS,
    DatasetInfo,
    ModelInfo,
    RunManifest,
    Sample,
    ScorerSpec,
    args_change_of,
    dataset_reading_filled,
)

# The recorded parts that ``_changes`` names on a line of its own; any other that changed (the seed, which a resume
# takes from the manifest, or a part added to FINGERPRINT_PARTS) is named by its generic line, never passed over.
_NAMED: Final = frozenset(
    {"dataset_sha256", "template_sha256", "scorers", "system_prompt", "pass_threshold", "model", "judge"}
)


@dataclass(frozen=True)
class ModelUpdate:
    """What a manifest records of the model and the judge once a forced resume changed their arguments."""

    model: ModelInfo
    judge: ModelInfo | None
    fingerprint: str
    """The fingerprint the run would have recorded had it started with these arguments."""


@dataclass(frozen=True)
class Called:
    """A model the run calls (the model under test, or the judge) as the manifest records it and as a resume
    would call it now."""

    role: Literal["model", "judge"]
    """``model`` or ``judge``: how changes and notes name it, and its flag (``--model-arg``, ``--judge-arg``)."""
    recorded: ModelInfo
    now: ModelInfo
    options: type[ProviderOptions]

    @property
    def flag(self) -> str:
        return f"--{self.role}-arg"

    @property
    def defaults(self) -> dict[str, Any]:
        """Each of its provider's options at its default, as the manifest would record it."""
        fields = self.options.model_fields.items()
        return {name: info.get_default(call_default_factory=True) for name, info in fields if not info.is_required()}

    @property
    def as_compared(self) -> ModelInfo:
        """As it is now, less the options the manifest does not record that are at their default: options added to
        the provider since the run started (it ran with their default, so nothing changed); and with its transport
        options as recorded (given now, they hold for this session: no change to its answers)."""
        args = _known_or_set(self.now.args, self.recorded.args, self.defaults)
        return self.now.model_copy(update={"args": self._transport_as_recorded(args)})

    @property
    def changed(self) -> bool:
        return self.as_compared != self.recorded

    @property
    def to_record(self) -> ModelInfo:
        """What a forced resume records of it: its arguments as given now, less the transport options (given now,
        they hold for this session only: the manifest keeps the run's)."""
        return self.now.model_copy(update={"args": self._transport_as_recorded(self.now.args)})

    @property
    def args_change(self) -> str:
        """The arguments that differ, each as 'name recorded → now' (the manifest records no secret: a key given as
        an argument is dropped from both, see ``ProviderOptions.public``)."""
        return (
            f"{args_change_of(self.role)}{self.now.id}: {_settings_changed(self.recorded.args, self.as_compared.args)}"
        )

    def session_only(self, given: Collection[str] = ()) -> dict[str, str]:
        """Each option given now that changes how answers travel, unlike the run's, as its flag's text: it
        holds for this session only, forced or not (see ``as_compared``). One the run set that another ``given`` in
        its place unsets (``ProviderOptions.replaces``) is not among them: that one is, and unsets it again. One
        ``given`` empty to unset it is, as the empty text that unsets it again (the key sent as a Bearer after
        ``api_key_query``)."""
        recorded, now, defaults = self.recorded.args, self.now.args, self.defaults
        return {
            name: "" if now[name] is None else _arg_text(now[name])
            for name in sorted(self.options.transport_only)
            if name in now
            and (now[name] is not None or name in given)
            and now[name] != recorded.get(name, defaults.get(name))
        }

    def transport_notes(self, session_only: Mapping[str, str]) -> list[str]:
        """A line for each of the ``session_only`` options: the manifest keeps the run's."""
        recorded, now, defaults = self.recorded.args, self.now.args, self.defaults
        notes = []
        for name, text in session_only.items():
            unset = [
                f"{other}={_arg_text(recorded[other])}"
                for other in sorted(self.options.replaces.get(name, ()))
                if recorded.get(other) is not None and now.get(other) is None
            ]
            run_has = (
                f", in place of the run's {', '.join(unset)}"
                if unset
                else f" (the run records {_arg_text(recorded.get(name, defaults.get(name)))})"
            )
            notes.append(
                f"resume: {self.flag} {name}={text} holds for this session only{run_has}: give it again to a later "
                "resume"
            )
        return notes

    def _transport_as_recorded(self, now: Mapping[str, Any]) -> dict[str, Any]:
        """``now`` with each transport option as recorded (or left out where the run recorded none)."""
        transport = self.options.transport_only
        kept = {k: v for k, v in now.items() if k not in transport}
        return {**kept, **{k: v for k, v in self.recorded.args.items() if k in transport}}


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
    """What the fingerprint hashes, one entry per part of ``FINGERPRINT_PARTS``, each the JSON of its value."""
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


class _Fingerprinted(Protocol):
    """What the fingerprint covers as it is now (the plan's parts, ``planning._Parts``): what a resume compares
    with the manifest."""

    @property
    def template(self) -> PromptTemplate: ...

    @property
    def setup(self) -> ScoringSetup: ...

    @property
    def model(self) -> ModelInfo: ...

    @property
    def fingerprint_parts(self) -> dict[str, Any]: ...

    @property
    def prompt_inputs_sha256(self) -> str: ...

    @property
    def model_options(self) -> type[ProviderOptions]:
        """The options of the model's provider (their defaults, and which change how answers travel)."""
        ...

    @property
    def judge_options(self) -> type[ProviderOptions] | None:
        """The same of the judge's provider (None without a judge)."""
        ...


def called(manifest: RunManifest, parts: _Fingerprinted) -> tuple[Called, Called | None]:
    """The model, and the judge when the run has one, as recorded and as a resume would call them now."""
    model = Called("model", manifest.model, parts.model, parts.model_options)
    judge_now, judge_options = parts.fingerprint_parts.get("judge"), parts.judge_options
    if manifest.judge is None or judge_now is None or judge_options is None:
        return model, None  # a resume calls the judge the run recorded, or none: a judge cannot come or go
    return model, Called("judge", manifest.judge, ModelInfo.model_validate(judge_now), judge_options)


def _changes(manifest: RunManifest, task: LoadedTask, report: DatasetReport, parts: _Fingerprinted) -> list[str]:
    """What the run's fingerprint covers and is no longer as it was, each named for the user."""
    changed = []
    if report.sha256 != manifest.dataset.sha256:
        files = files_changed(manifest.dataset, report)
        changed.append(f"dataset {report.path} (sha256 {manifest.dataset.sha256[:12]} → {report.sha256[:12]}{files})")
    old_template, new_template = manifest.task.template_sha256, parts.template.sha256
    if new_template != old_template:
        includes = ", or one it includes" if parts.template.includes else ""
        changed.append(f"template {task.spec.template}{includes} (sha256 {old_template[:12]} → {new_template[:12]})")
    old_inputs, new_inputs = manifest.task.prompt_inputs_sha256, parts.prompt_inputs_sha256
    if old_inputs is not None and new_inputs != old_inputs:  # None: a run started before this was recorded
        changed.append(
            f"few-shot examples or template variables of task {task.spec.name} "
            f"(sha256 {old_inputs[:12]} → {new_inputs[:12]})"
        )
    if (reading := dataset_reading_change(task, manifest.task.dataset_reading)) is not None:
        changed.append(reading)
    setup = parts.setup
    if [s.model_dump() for s in setup.specs] != [s.model_dump() for s in manifest.task.scorers]:
        changed.append(f"scorer config of task {setup.source.spec.name if setup.source else task.spec.name}")
    if task.spec.system_prompt != manifest.task.system_prompt:
        changed.append(f"system prompt of task {task.spec.name}")
    if setup.pass_threshold != manifest.task.pass_threshold:
        changed.append(
            f"pass threshold of task {task.spec.name} ({manifest.task.pass_threshold:g} → {setup.pass_threshold:g})"
        )
    model, judge = called(manifest, parts)
    if model.now.id != manifest.model.id:
        changed.append(f"model ({manifest.model.id} → {model.now.id})")
    elif model.changed:
        changed.append(model.args_change)
    if judge is not None and judge.changed:
        changed.append(judge.args_change)
    recorded, now = _recorded_parts(manifest), parts.fingerprint_parts
    changed += [
        f"{name} ({_arg_text(recorded[name])} → {_arg_text(now[name])})"
        for name in recorded
        if name not in _NAMED and recorded[name] != now[name]
    ]
    if not _unrecorded_parts_kept(manifest, parts):  # the files a scorer reads
        changed.append(_unrecorded_change(manifest, parts))
    return changed


def _unrecorded_change(manifest: RunManifest, parts: _Fingerprinted) -> str:
    """What changed of what only the fingerprint holds. A run whose scorers read no file has nothing of the kind:
    with the recorded parts as recorded, the fingerprint can only differ because the manifest does not hold the
    values it was made from (one edited by hand, the seed, or the fingerprint itself)."""
    if not parts.fingerprint_parts["scorer_fingerprints"]:
        return (
            f"the manifest's fingerprint ({manifest.fingerprint[:12]}) is not that of the values it records, and the "
            "run has no scorer file it could stand for (a value of the manifest edited by hand?)"
        )
    return "a judge rubric (or another file a scorer reads)"


def files_changed(recorded: DatasetInfo, report: DatasetReport) -> str:
    """Which files of a dataset directory came, went or changed, as the end of a change's parenthesis (``:
    c.jsonl added; b.jsonl removed; a.jsonl changed``), from the files (name → sha256) the check in ``report``
    read. A run recorded before each file's sha256 was says "a file's content changed" when none came or went.
    "" for a dataset of one file."""
    now = dict(zip(report.members, report.members_sha256, strict=False))  # none when the pass hashed no file
    if recorded.files is None or not now:
        return ""
    added = [name for name in now if name not in recorded.files]
    removed = [name for name in recorded.files if name not in now]
    before = dict(zip(recorded.files, recorded.files_sha256 or [], strict=False))
    edited = [name for name in now if name in before and before[name] != now[name]]
    parts = [
        f"{', '.join(names)} {what}"
        for names, what in ((added, "added"), (removed, "removed"), (edited, "changed"))
        if names
    ]
    if not parts:
        parts = ["a file's content changed"] if recorded.files_sha256 is None else []
    return ": " + "; ".join(parts) if parts else ""


def _recorded_parts(manifest: RunManifest) -> dict[str, Any]:
    """The fingerprint's parts that the manifest records on its own (``FINGERPRINT_PARTS``), as it records them."""
    document = manifest.model_dump(mode="json")
    return {name: reduce(getitem, path.split("."), document) for name, path in FINGERPRINT_PARTS.items() if path}


def _as_recorded(manifest: RunManifest, parts: _Fingerprinted) -> dict[str, Any]:
    """The fingerprint's parts with every one the manifest records on its own (dataset, template, scorers, model,
    judge ...) as recorded: what is left as it is now is what only the fingerprint holds."""
    return {**parts.fingerprint_parts, **_recorded_parts(manifest)}


def _unrecorded_parts_kept(manifest: RunManifest, parts: _Fingerprinted) -> bool:
    """Whether what only the fingerprint holds (and the judge) is unchanged: with the rest as recorded, it is the
    manifest's (the changes of the rest are named on their own, and do not hide a change here or pass for one)."""
    return _fingerprint(_as_recorded(manifest, parts)) == manifest.fingerprint


def _model_update(manifest: RunManifest, parts: _Fingerprinted) -> ModelUpdate | None:
    """What a forced resume records when the arguments of the model or the judge changed: the new arguments, and
    the fingerprint the run would have had with them, so that the next resume calls them as this session does.
    None when they did not change, or when what only the fingerprint holds changed too (its old value is not
    known, so the fingerprint could not be made again: the arguments then hold for this session only)."""
    model, judge = called(manifest, parts)
    if not (model.changed or (judge is not None and judge.changed)) or not _unrecorded_parts_kept(manifest, parts):
        return None
    model_now = model.to_record if model.changed else manifest.model
    judge_now = judge.to_record if judge is not None and judge.changed else manifest.judge
    new = {
        "model": model_now.model_dump(mode="json"),
        "judge": judge_now.model_dump(mode="json") if judge_now is not None else None,
    }
    return ModelUpdate(model_now, judge_now, _fingerprint({**_as_recorded(manifest, parts), **new}))


_UNSET = object()


def _known_or_set(now: Mapping[str, Any], recorded: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``now`` less each option ``recorded`` lacks that is at its default."""
    return {k: v for k, v in now.items() if k in recorded or v != defaults.get(k, _UNSET)}


def dataset_reading_change(task: LoadedTask, recorded: dict[str, Any] | None) -> str | None:
    """How ``task`` reads its dataset now against how a run recorded it (``TaskInfo.dataset_reading``), each
    setting that differs as 'name recorded → now', a pattern quoted as the spec writes it; None when the two read
    alike, a setting left out being at its default, or when the run recorded none (one made before it was)."""
    if recorded is None:
        return None
    before, now = dataset_reading_filled(recorded), dataset_reading_filled(task.dataset_reading)
    if before == now:
        return None
    return f"[dataset] table of task {task.spec.name}: {_settings_changed(before, now, _reading_text)}"


def _reading_text(value: Any) -> str:
    """A setting of the ``[dataset]`` table as a change shows it: a pattern (or other text) quoted as written, cut
    to a line (a hand-edited manifest may hold anything)."""
    text = as_written(value) if isinstance(value, str) else _arg_text(value)
    return text if len(text) <= _READING_CHARS else text[: _READING_CHARS - 1] + "…"


_READING_CHARS = 100


def _settings_changed(
    recorded: Mapping[str, Any], now: Mapping[str, Any], text: Callable[[Any], str] | None = None
) -> str:
    """Each setting whose value differs, as 'name recorded → now' (an absent one is 'unset'), each value shown by
    ``text`` (``_arg_text`` unless given)."""
    shown = text or _arg_text
    names = dict.fromkeys([*recorded, *now])
    return ", ".join(
        f"{name} {shown(recorded.get(name))} → {shown(now.get(name))}"
        for name in names
        if recorded.get(name) != now.get(name)
    )


def _arg_text(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, str):
        # a base_url recorded before credentials in its query were refused: named without them
        return shown_without_credentials(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


__all__ = ["Called", "ModelUpdate", "ScoringSetup", "called", "dataset_reading_change", "files_changed"]
