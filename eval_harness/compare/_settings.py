"""What tells two runs apart, read from their two manifests alone (no records, no numpy): what refuses the
comparison (``incomparable``), the settings of the evaluation that differ (``differing_settings``), and the notes
a manifest alone gives (one run rescores the other, a run resumed with --force, different pass thresholds)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_harness.compare._schema import SettingChange
from eval_harness.types import (
    FINGERPRINT_PARTS,
    RunManifest,
    ScorerSpec,
    dataset_reading_filled,
    roles_with_args_changed,
)


def _scorers_text(scorers: Sequence[ScorerSpec]) -> str:
    parts = []
    for spec in scorers:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.args.items()))
        extra = [f"weight={spec.weight:g}"] if spec.weight != 1.0 else []
        extra += ["gate"] if spec.gate else []
        inner = ", ".join([a for a in [args, *extra] if a])
        parts.append(f"{spec.key}({inner})" if inner else spec.key)
    return " + ".join(parts)


def _same_scorers(a: RunManifest, b: RunManifest) -> bool:
    return [s.model_dump() for s in a.task.scorers] == [s.model_dump() for s in b.task.scorers]


def incomparable(a: RunManifest, b: RunManifest) -> list[str]:
    """What differs between the runs' datasets and scorers (empty when they can be compared)."""
    problems = []
    if a.dataset.sha256 != b.dataset.sha256:
        problems.append(
            f"different datasets (A: {a.dataset.path} sha256 {a.dataset.sha256[:12]}, "
            f"B: {b.dataset.path} sha256 {b.dataset.sha256[:12]})"
        )
    if not _same_scorers(a, b):
        problems.append(f"different scorers (A: {_scorers_text(a.task.scorers)}, B: {_scorers_text(b.task.scorers)})")
    return problems


# What tells two runs apart, from their manifests. Left out as not settings of the evaluation: the run id,
# times, status, sessions and wall time (bookkeeping), and concurrency, timeout, rpm, tpm, max_retries and
# cache: they set the pace and the patience of the calls, not what is asked, of which model, or how it is
# scored (a short timeout can turn slow answers into errors, but then the error rates beside the scores show
# it). A dataset's path is left out when its content (sha256) is the same. Manifests hold no secrets (the
# providers drop them from the recorded arguments), so neither does this list.
_SHOWN_CHARS = 40
_LABELS = {"model.id": "model", "judge.id": "judge", "task.name": "task"}
# What the fingerprint covers that a manifest also records on its own: a change of one of them, named here,
# explains a different fingerprint. The judge too: unlike a resume (planning/_fingerprint.py), which takes the judge
# from the manifest, two runs may name different judges, each change its own line here.
_FINGERPRINTED = tuple(path for path in FINGERPRINT_PARTS.values() if path)


def differing_settings(a: RunManifest, b: RunManifest) -> list[SettingChange]:
    """The settings of the evaluation that are not the same in manifests ``a`` and ``b``, in the order a reader
    looks for them: model and its arguments, generation, prompt, dataset, scoring, judge, seed, epochs, limit."""
    ta, tb = a.task, b.task
    changes = _leaf_changes("model", a.model.model_dump(mode="json"), b.model.model_dump(mode="json"))
    generation = [t.generation.model_dump(mode="json") for t in (ta, tb)]
    changes += _leaf_changes("task.generation", *generation)
    changes += _leaf_changes("task.name", ta.name, tb.name)
    template = ta.template if ta.template == tb.template else f"{ta.template} → {tb.template}"
    changes += _digest_change("task.template_sha256", f"template {template}", ta.template_sha256, tb.template_sha256)
    changes += _leaf_changes("task.system_prompt", ta.system_prompt, tb.system_prompt)
    changes += _leaf_changes("task.few_shot", ta.few_shot, tb.few_shot)
    # the few-shot spec being the same, the examples' content or the template's variables changed (with the
    # spec changed, its entries say why); None: a run made before this was recorded
    if ta.few_shot == tb.few_shot and ta.prompt_inputs_sha256 is not None and tb.prompt_inputs_sha256 is not None:
        what = "few-shot examples or template variables"
        changes += _digest_change("task.prompt_inputs_sha256", what, ta.prompt_inputs_sha256, tb.prompt_inputs_sha256)
    names = [Path(m.dataset.path).name for m in (a, b)]
    dataset = names[0] if names[0] == names[1] else " → ".join(names)
    changes += _digest_change("dataset.sha256", f"dataset {dataset}", a.dataset.sha256, b.dataset.sha256)
    if ta.dataset_reading is not None and tb.dataset_reading is not None:  # None: a run made before it was recorded
        readings = dataset_reading_filled(ta.dataset_reading), dataset_reading_filled(tb.dataset_reading)
        changes += _leaf_changes("task.dataset_reading", *readings)
    if not _same_scorers(a, b):
        keys_a, keys_b = (" + ".join(spec.key for spec in t.scorers) for t in (ta, tb))
        # the keys when they tell the scorers apart: the whole specs (in the refusal, or the rescore note) are long
        if keys_a == keys_b:
            keys_a, keys_b = _scorers_text(ta.scorers), _scorers_text(tb.scorers)
        specs_a, specs_b = ([s.model_dump(mode="json") for s in t.scorers] for t in (ta, tb))
        changes.append(SettingChange(setting="task.scorers", a=specs_a, b=specs_b, text=f"scorers {keys_a} → {keys_b}"))
    changes += _leaf_changes("task.pass_threshold", ta.pass_threshold, tb.pass_threshold)
    judges = [m.judge.model_dump(mode="json") if m.judge else None for m in (a, b)]
    changes += _leaf_changes("judge", *judges)
    for name in ("seed", "epochs", "limit", "limit_per_axis"):
        changes += _leaf_changes(name, getattr(a, name), getattr(b, name))
    if a.source_run != b.source_run:  # a rescore's outputs, named by the source run's directory
        ids = " → ".join(Path(run).name if run else "unset" for run in (a.source_run, b.source_run))
        changes.append(SettingChange(setting="source_run", a=a.source_run, b=b.source_run, text=f"source_run {ids}"))
    # not a flag, but another version of the harness may render prompts or score answers differently
    changes += _leaf_changes("harness_version", a.harness_version, b.harness_version)
    if not any(_fingerprinted(change.setting) for change in changes):
        what = "a judge's rubric or another file a scorer reads"
        changes += _digest_change("fingerprint", what, a.fingerprint, b.fingerprint, "fingerprint")
    return changes


def _fingerprinted(setting: str) -> bool:
    """Whether ``setting`` (a dotted path, as ``_leaf_changes`` names them) is, or is in, a recorded part of the
    fingerprint."""
    return any(setting == path or setting.startswith(f"{path}.") for path in _FINGERPRINTED)


def _digest_change(setting: str, what: str, a: str, b: str, digest: str = "sha256") -> list[SettingChange]:
    """A change of content known by its digest, as ``what (sha256 1a2b3c… → 4d5e6f…)``; none when they match."""
    return [] if a == b else [SettingChange(setting=setting, a=a, b=b, text=f"{what} ({digest} {a[:12]} → {b[:12]})")]


def _leaves(value: Any, path: str) -> dict[str, Any]:
    """``value`` flattened: each non-dict value under its dotted path (an empty dict holds none)."""
    if not isinstance(value, dict):
        return {path: value}
    leaves: dict[str, Any] = {}
    for key, item in value.items():
        leaves.update(_leaves(item, f"{path}.{key}"))
    return leaves


def _leaf_changes(path: str, a: Any, b: Any) -> list[SettingChange]:
    """One change per dotted path under ``path`` whose value differs (a path missing on one side: unset)."""
    leaves_a, leaves_b = _leaves(a, path), _leaves(b, path)
    changes = []
    for key in dict.fromkeys([*leaves_a, *leaves_b]):
        value_a, value_b = leaves_a.get(key), leaves_b.get(key)
        if value_a == value_b:
            continue
        label = _LABELS.get(key) or key.removeprefix("task.")
        shown_a, shown_b = _shown(value_a), _shown(value_b)
        if shown_a == shown_b:  # two long values cut to the same text: their digests tell them apart
            text = f"{label} (sha256 {_digest(value_a)} → {_digest(value_b)})"
        else:
            text = f"{label} {shown_a} → {shown_b}"
        changes.append(SettingChange(setting=key, a=value_a, b=value_b, text=text))
    return changes


def _shown(value: Any) -> str:
    """A setting's value as printed: a plain word bare, other text quoted, the rest as JSON; cut to a line."""
    if value is None:
        return "unset"
    if isinstance(value, str) and value and value != "unset" and not any(c.isspace() or c == '"' for c in value):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def _forced_notes(a: RunManifest, b: RunManifest) -> list[str]:
    """A run resumed with --force across a change holds records made under two settings, while its manifest
    (which ``differs`` reads) keeps the first session's; but for the arguments of the model and the judge, which it
    records as a forced session changed them (later resumes call them so)."""
    notes = []
    for side, m in (("A", a), ("B", b)):
        if not m.forced_changes:
            continue
        moved = roles_with_args_changed(m.forced_changes)
        # unless a scorer's file changed in the same session: then they held for that session alone
        held = (
            f" (its {' and '.join(moved)} arguments: a forced session's, where it could record them)" if moved else ""
        )
        notes.append(
            f"{side} was resumed with --force across changes ({'; '.join(m.forced_changes)}): its records may mix "
            f"the settings before and after them, while its manifest, which differs compares, holds the first "
            f"session's{held}"
        )
    return notes


def _rescore_of(a: RunManifest, b: RunManifest, run_a: Path, run_b: Path) -> str | None:
    """A note when one run rescores the other's outputs (``rescore``'s ``source_run``), else None."""
    if b.source_run is not None and Path(b.source_run) == run_a.resolve():
        rescored, source, which = b, a, "B rescores A's outputs"
    elif a.source_run is not None and Path(a.source_run) == run_b.resolve():
        rescored, source, which = a, b, "A rescores B's outputs"
    else:
        return None
    if _same_scorers(rescored, source):
        return f"{which} under the same scorers"
    return (
        f"{which}: the differences are the scorers' (A: {_scorers_text(a.task.scorers)}, "
        f"B: {_scorers_text(b.task.scorers)}), the answers are the same"
    )


def _threshold_notes(a: RunManifest, b: RunManifest) -> list[str]:
    """Different pass thresholds: the comparison is of the scores, which pass rates would not follow."""
    if a.task.pass_threshold == b.task.pass_threshold:
        return []
    return ["the runs use different pass thresholds; scores are compared, not pass rates"]


__all__ = ["differing_settings", "incomparable"]
