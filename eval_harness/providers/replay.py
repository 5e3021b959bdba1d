"""Replays the outputs of an earlier run instead of calling a model: how ``rescore`` re-scores without
re-generating. Not in the registry: it only makes sense with a source run, never as ``--model``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from eval_harness.artifacts import iter_record_dicts, record_key, regular_status
from eval_harness.errors import ArtifactError, ProviderError, ProviderResponseError, ReplayedError
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions
from eval_harness.types import Completion, GenerateRequest, Usage, first_problem

_KEPT = (
    "output", "usage", "cost_usd", "latency_ms", "model", "request_id", "finish_reason", "thinking", "error", "cached"
)  # fmt: skip


class ReplayProvider(Provider):
    """Answers each (sample_id, epoch) with the source run's recorded output, or re-raises its recorded
    generation error; the source's usage, cost and latency are kept (they are what producing it cost), and
    whether it was a cache hit (which billed nothing: a rescored hit is no $0 answer)."""

    provider_name = "replay"

    def __init__(self, model: str, source_run: Path, context: ProviderContext) -> None:
        super().__init__(model, ProviderOptions(), context)
        self.source_run = source_run
        self._records: dict[str, dict[str, Any]] = {}
        samples = source_run / "samples.jsonl"
        if regular_status(samples) is None:  # a pipe or a device is refused by name, not called missing
            raise ArtifactError(f"{samples}: not found; is {source_run} a run directory?")
        for record in iter_record_dicts(samples):
            key = record_key(str(record["sample_id"]), int(record["epoch"]))
            self._records[key] = {name: record.get(name) for name in _KEPT}

    @property
    def model_id(self) -> str:
        return self.model

    async def generate(self, request: GenerateRequest) -> Completion:
        record = self._records.get(record_key(request.sample.id, request.epoch))
        if record is None:
            raise ProviderError(f"replay: {self.source_run} has no record of this sample and epoch")
        if record["output"] is None:
            error = record["error"] if isinstance(record["error"], dict) else {}
            raise ReplayedError(
                str(error.get("type") or "ProviderError"),
                str(error.get("message") or "no output"),
                request_id=record["request_id"] if isinstance(record["request_id"], str) else None,
            )
        try:  # the source's record, as the wire answer it stands for: a hand-edited field fails this sample only
            return Completion(
                text=record["output"],
                finish_reason=record["finish_reason"],
                usage=Usage.model_validate(record["usage"] or {}),
                cost_usd=record["cost_usd"],
                latency_ms=record["latency_ms"] or 0.0,
                model=record["model"],
                request_id=record["request_id"],
                thinking=record["thinking"],
                cached=record["cached"] is True,
            )
        except ValidationError as exc:
            location, message = first_problem(exc)
            raise ProviderResponseError(
                f"replay: {self.source_run}: this sample's record: {location}: {message}"
            ) from None


__all__ = ["ReplayProvider"]
