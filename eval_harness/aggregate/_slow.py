"""The slow path: a line parsed with orjson, for lines of any other shape than the fast path's; it decides
what is read and what is refused (naming the field).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

from eval_harness.aggregate._columns import _Chunk, _code
from eval_harness.artifacts import record_problem
from eval_harness.errors import json_type_name


class _BadField(Exception):
    """A record's field that the columns cannot be read from: ``(field, message)`` as in ``record_problem``."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(name, message)
        self.problem = (name, message)


def _number(value: Any, name: str, *, unit: bool = False) -> float:
    """A number of a record (every one is at least 0; ``unit``: at most 1 too), NaN for null."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _BadField(name, f"expected a number or null, got {json_type_name(value)}")
    number = float(value)
    if unit and not 0.0 <= number <= 1.0:
        raise _BadField(name, f"expected a number in [0, 1] or null, got {value!r}")
    if number < 0.0:
        raise _BadField(name, f"expected a non-negative number or null, got {value!r}")
    return number


def _flag(value: Any, name: str) -> bool:
    if value is not None and not isinstance(value, bool):
        raise _BadField(name, f"expected a boolean or null, got {json_type_name(value)}")
    return value is True


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadField(name, f"expected an integer or null, got {json_type_name(value)}")
    if value < 0:
        raise _BadField(name, f"expected a non-negative integer or null, got {value}")
    return _int64(value, name)


def _int64(value: int, name: str) -> int:
    # orjson reads integers up to 2**64 - 1 (smaller negative ones as floats); a column holds up to 2**63 - 1
    if value > _INT64_MAX:
        raise _BadField(name, f"{value} is out of range")
    return value


_INT64_MAX: Final[int] = 2**63 - 1


def _object(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _BadField(name, f"expected an object or null, got {json_type_name(value)}")
    return value


def _usage_tokens(usage: Any, name: str) -> tuple[int, int]:
    fields = _object(usage, name)
    prompt, completion = fields.get("prompt_tokens"), fields.get("completion_tokens")
    return _count(prompt, f"{name}.prompt_tokens"), _count(completion, f"{name}.completion_tokens")


@dataclass
class _SlowNames:
    """What the slow path adds to a chunk's name tables as it goes: their indexes, and the tags it reads."""

    axis: dict[str, int]
    error_type: dict[str, int]
    finish_reason: dict[str, int]
    tag: dict[str, int]
    tag_rows: list[int] = field(default_factory=list)
    tag_codes: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, chunk: _Chunk) -> _SlowNames:
        """The indexes of the names the fast path put in ``chunk``."""

        def index(names: list[str]) -> dict[str, int]:
            return {name: i for i, name in enumerate(names)}

        return cls(
            index(chunk.axis_name),
            index(chunk.error_type_name),
            index(chunk.finish_reason_name),
            index(chunk.tag_name),
        )


def _slow_row(record: Any, chunk: _Chunk, row: int, names: _SlowNames, ids: list[str], light: bool) -> None:
    """Fill row ``row`` of ``chunk`` from a parsed line; raises ``_BadField`` when it is not a record of this
    schema version (``record_problem``) or a field read here has the wrong type. ``light`` reads (and checks)
    what the fast path's light read does, and nothing else."""
    problem = record_problem(record)
    if problem is not None:
        raise _BadField(*problem)
    chunk.epoch[row] = _int64(record["epoch"], "epoch")
    chunk.axis[row] = _code(chunk.axis_name, names.axis, record["axis"])
    score = _number(record.get("score"), "score", unit=True)
    error = record.get("error")
    chunk.score[row] = score
    chunk.error[row] = error is not None or math.isnan(score)
    if error is not None:
        error_type = _object(error, "error").get("type")
        if not isinstance(error_type, str):
            raise _BadField("error.type", f"expected a string, got {json_type_name(error_type)}")
        chunk.error_type[row] = _code(chunk.error_type_name, names.error_type, error_type)
    chunk.passed[row] = _flag(record.get("passed"), "passed")
    chunk.latency_ms[row] = _number(record.get("latency_ms"), "latency_ms")
    chunk.cost_usd[row] = _number(record.get("cost_usd"), "cost_usd")
    ids.append(record["sample_id"])
    if not light:
        _slow_heavy_fields(record, chunk, row, names)


def _slow_heavy_fields(record: dict[str, Any], chunk: _Chunk, row: int, names: _SlowNames) -> None:
    """The fields of a record that a light read leaves out, unread and unchecked on both paths: usage,
    attempts (checked, not kept), judge_usage, judge_cost_usd, cached, backoff_s, scores, retries, tags and
    finish_reason (``compare`` reads none of them)."""
    chunk.prompt_tokens[row], chunk.completion_tokens[row] = _usage_tokens(record.get("usage"), "usage")
    _count(record.get("attempts"), "attempts")
    judge_usage = record.get("judge_usage")
    chunk.judge_used[row] = judge_usage is not None
    chunk.judge_prompt_tokens[row], chunk.judge_completion_tokens[row] = _usage_tokens(judge_usage, "judge_usage")
    chunk.judge_cost_usd[row] = _number(record.get("judge_cost_usd"), "judge_cost_usd")
    chunk.cached[row] = _flag(record.get("cached"), "cached")
    backoff = _number(record.get("backoff_s"), "backoff_s")
    chunk.backoff_s[row] = 0.0 if math.isnan(backoff) else backoff
    for name, value in _object(record.get("scores"), "scores").items():
        chunk.scorer(name)[row] = _number(value, f"scores.{name}", unit=True)
    retries = _object(record.get("retries"), "retries")
    if retries:
        chunk.retries[row] = {cause: _count(count, f"retries.{cause}") for cause, count in retries.items()}
    finish = record.get("finish_reason")
    if finish is not None:
        if not isinstance(finish, str):
            raise _BadField("finish_reason", f"expected a string or null, got {json_type_name(finish)}")
        chunk.finish_reason[row] = _code(chunk.finish_reason_name, names.finish_reason, finish)
    for tag in _tags(record.get("tags")):
        names.tag_rows.append(row)
        names.tag_codes.append(_code(chunk.tag_name, names.tag, tag))


def _tags(value: Any) -> list[str]:
    """A record's tags: a list of strings (null or missing: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _BadField("tags", f"expected an array of strings or null, got {json_type_name(value)}")
    for i, tag in enumerate(value):
        if not isinstance(tag, str):
            raise _BadField(f"tags[{i}]", f"expected a string, got {json_type_name(tag)}")
    return value


__all__ = []
