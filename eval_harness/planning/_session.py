"""The settings of a resumed session: the configuration the run started with, and what is given anew.

A resume rebuilds the run's ``RunConfig`` from its manifest; the pacing and retry settings and the gates given
now replace the recorded ones (the manifest records the last session's, so that the next resume keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from eval_harness.artifacts import RunPaths
from eval_harness.config import RunConfig, invalid_config
from eval_harness.providers.base import resumed_args
from eval_harness.types import GateSettings, RunManifest

T = TypeVar("T")


def session_settings(config: RunConfig) -> dict[str, Any]:
    """The pacing and retry settings a manifest records (the last session's), so a resume keeps them."""
    return {
        "concurrency": config.concurrency,
        "timeout_s": config.timeout_s,
        "rpm": config.rpm,
        "tpm": config.tpm,
        "max_retries": config.max_retries,
        "cache": config.cache,
    }


@dataclass(frozen=True)
class SessionOverrides:
    """The pacing and retry settings given to a resume (the flags the CLI checked); None keeps the value the
    manifest recorded. The fields are ``session_settings``'s."""

    concurrency: int | None = None
    timeout_s: float | None = None
    max_retries: int | None = None
    rpm: float | None = None
    """0: no limit from here on."""
    tpm: float | None = None
    """0: no limit from here on."""
    cache: bool | None = None


def _resume_config(
    manifest: RunManifest,
    run_dir: Path,
    task_ref: str,
    overrides: SessionOverrides,
    model_args: dict[str, Any],
    judge_args: dict[str, Any],
) -> RunConfig:
    """The configuration the run started with, from its manifest, with the operational overrides and the
    arguments of the model and the judge given now (each replacing the recorded one)."""
    explicit_scorers = manifest.task.scorers_source is None
    try:
        return RunConfig(
            task=task_ref,
            scorer_task=manifest.task.scorers_source if not explicit_scorers else None,
            scorers=list(manifest.task.scorers) if explicit_scorers else None,
            source_run=Path(manifest.source_run) if manifest.source_run else None,
            judge_model=manifest.judge.id if manifest.judge else None,
            judge_args=resumed_args(manifest.judge.id, manifest.judge.args, judge_args) if manifest.judge else {},
            model=manifest.model.id,
            model_args=resumed_args(manifest.model.id, manifest.model.args, model_args),
            dataset=Path(manifest.dataset.path),
            output_dir=run_dir.parent,
            run_id=manifest.run_id,
            concurrency=_kept(overrides.concurrency, manifest.concurrency),
            epochs=manifest.epochs,
            limit=manifest.limit,
            limit_per_axis=manifest.limit_per_axis,
            seed=manifest.seed,
            timeout_s=_kept(overrides.timeout_s, manifest.timeout_s),
            rpm=_kept(overrides.rpm, manifest.rpm) or None,  # 0 given now: no limit from here on
            tpm=_kept(overrides.tpm, manifest.tpm) or None,
            max_retries=_kept(overrides.max_retries, manifest.max_retries),
            cache=_kept(overrides.cache, manifest.cache),
            generation=manifest.task.generation.model_dump(exclude_none=True),
        )
    except ValidationError as exc:  # named by the flag given now, else it came from the manifest
        given = {name: flag for name, flag in _SESSION_FLAGS.items() if getattr(overrides, name) is not None}
        raise invalid_config(exc, given, str(RunPaths(run_dir).manifest)) from None


_SESSION_FLAGS = {
    "concurrency": "--concurrency", "timeout_s": "--timeout", "max_retries": "--max-retries", "rpm": "--rpm",
    "tpm": "--tpm", "cache": "--cache",
}  # fmt: skip


def _kept(given: T | None, recorded: T) -> T:
    """The value given now, else (None: not given) the one the manifest recorded."""
    return recorded if given is None else given


def resumed_gates(
    recorded: GateSettings | None, given: dict[str, Any] | None = None, *, keep: bool = True
) -> GateSettings | None:
    """The gates of a resumed session: the recorded ones (none when not ``keep``: ``--no-gates``), each field of
    ``given`` (a ``GateSettings`` field: the value given now) replacing its recorded value; None when no gate is
    left (``--gate-on`` alone gates nothing)."""
    base = recorded.model_dump() if recorded is not None and keep else {}
    merged = GateSettings.model_validate({**base, **(given or {})})
    return merged if merged.active else None


def gate_changes(before: GateSettings | None, now: GateSettings | None) -> dict[str, tuple[Any, Any]]:
    """The gate settings that differ between ``before`` and ``now``: field -> (before, now), None for a gate not
    set (``gate_on`` is 'mean' when no gate is)."""
    old, new = (settings.model_dump() if settings else GateSettings().model_dump() for settings in (before, now))
    return {name: (old[name], new[name]) for name in old if old[name] != new[name]}


__all__ = [
    "SessionOverrides",
    "gate_changes",
    "resumed_gates",
    "session_settings",
]
