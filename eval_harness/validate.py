"""Dataset validation as a command: map the task's fields (when a task is named) and check every line."""

from __future__ import annotations

from pathlib import Path

from eval_harness.datasets import DatasetReport, validate_dataset
from eval_harness.tasks import find_task
from eval_harness.types import DatasetSpec


def validate(path: Path, task: str | None = None) -> DatasetReport:
    """Validate ``path`` with the field mapping of ``task`` (or the plain sample schema)."""
    if not task:
        return validate_dataset(path, DatasetSpec())
    loaded = find_task(task)
    return validate_dataset(path, loaded.spec.dataset, task=loaded.spec.name)
