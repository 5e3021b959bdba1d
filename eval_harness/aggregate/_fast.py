"""The fast path: the fields of a line of the runner's exact shape, located with numpy (``_fast_rows``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import orjson

from eval_harness.aggregate._arrays import F64, I64, Bool
from eval_harness.aggregate._buffer import _IS_DIGIT, _NUMBER_BITS, _Buffer
from eval_harness.aggregate._columns import _Chunk, _out_of_range
from eval_harness.aggregate._hashing import _hash_spans
from eval_harness.types import RESERVED_AXIS

_HEAD = b'{"sample_id":"'
_EPOCH = b',"epoch":'
_AXIS = b',"axis":"'
_RESERVED_NAME = RESERVED_AXIS.encode() + b'"'
_TAGS = b',"tags":'
_LATENCY = b',"latency_ms":'
_PASSED = b',"passed":'
_SCORE = b',"score":'
_SCORES_EMPTY = b',"scores":{}'
_USAGE = b',"usage":{"prompt_tokens":'
_COMPLETION = b',"completion_tokens":'
_CACHED_TOKENS = b',"cached_tokens":'
_REASONING = b',"reasoning_tokens":'
_COST = b',"cost_usd":'
_NO_ERROR = b',"error":null,"attempts":'
_ERROR = b',"error":{"type":"'
_MESSAGE = b',"message":"'
_JUDGE_COST = b',"judge_cost_usd":'
_JUDGE_NULL = b',"judge_usage":null'
_JUDGE_USAGE = b',"judge_usage":{"prompt_tokens":'
_CACHED = b',"cached":'
_RETRIES_EMPTY = b',"retries":{}'
_BACKOFF = b',"backoff_s":'
_INPUT = b',"input":'
_TARGET = b',"target":'
_PROMPT = b',"prompt":['
_FINISHED_AT = b',"finished_at":"'
# What follows the error object of a record that has one (its message may hold commas: found by search), with
# attempts of one digit, as the fast path reads it on the other lines: other values are left to orjson.
_FINISHED_AFTER_ERROR = re.compile(rb'\},"attempts":[0-9],"finished_at":"')
_SCHEMA_VERSION = b',"schema_version":'
_MODEL = b',"model":'
_REQUEST_ID = b',"request_id":'
_FINISH = b',"finish_reason":'
_THINKING = b',"thinking":'
_NULL = b"null"
_QUOTE, _BRACE, _OPEN_LIST, _CLOSE_LIST = ord('"'), ord("}"), ord("["), ord("]")
# A record with more tags than this goes to orjson: it bounds the fast path's work on a line of many commas.
_MAX_TAGS = 64


def _tag_lists(b: _Buffer, i_tags: I64, c_tags: I64, ends: I64) -> tuple[Bool, I64, I64, I64]:
    """Which lines' tags the fast path reads, and the tags it reads: (lines, and per tag its line and the span of
    its text).

    A list it reads is ``[]`` or ``["t1","t2",...]`` whose tags hold no quote, backslash or comma, followed by
    ``,"input":``: then every comma between the tags' comma and the input's separates two tags, so the tags
    lie between consecutive commas. Any other list (a tag with a comma in it, an escape, a number) goes to
    orjson, which reads or refuses it."""
    open_at = c_tags + len(_TAGS)
    opened = b.byte(open_at) == _OPEN_LIST
    c_next = b.at(i_tags, 1)
    empty = opened & (b.byte(open_at + 1) == _CLOSE_LIST) & (c_next == open_at + 2) & b.match(c_next, _INPUT)
    listed = np.flatnonzero(opened & (b.byte(open_at + 1) == _QUOTE))
    read = empty.copy()
    none = np.zeros(0, dtype=np.int64)
    if not listed.size:
        return read, none, none, none
    first = i_tags[listed]
    # the input's comma, the first after the tags' to match: a comma further per tag, so a few steps for all
    count = np.zeros(listed.size, dtype=np.int64)
    pending = np.arange(listed.size)
    for step in range(1, _MAX_TAGS + 1):
        hit = b.match(b.at(first[pending], step), _INPUT)
        count[pending[hit]] = step
        pending = pending[~hit]
        if not pending.size:
            break
    c_input = b.at(first + count)
    good = (count > 0) & (c_input < ends[listed]) & (b.byte(c_input - 1) == _CLOSE_LIST)
    count = np.where(good, count, 0)
    owner = np.repeat(np.arange(listed.size), count)
    place = np.arange(owner.size) - np.repeat(np.cumsum(count) - count, count)
    left = first[owner] + place  # the comma before the tag (the tags' own comma for the first)
    start = np.where(place == 0, open_at[listed][owner] + 1, b.at(left) + 1)
    end = b.at(left + 1) - (place == count[owner] - 1)  # the comma after it, or the list's closing bracket
    quoted = (end - start >= 2) & (b.byte(start) == _QUOTE) & (b.byte(end - 1) == _QUOTE)
    quoted &= b.plain(start + 1, end - 1)
    good &= np.bincount(owner[~quoted], minlength=listed.size) == 0
    read[listed[good]] = True
    kept = good[owner]
    return read, listed[owner[kept]], start[kept] + 1, end[kept] - 1


def _fast_rows(b: _Buffer, chunk: _Chunk, keys: Sequence[str], light: bool = False) -> Bool:
    """Fill ``chunk`` for every line of the expected shape; return which lines were filled.

    ``light`` reads only what a comparison needs (identity, axis, score, error, passed, latency, cost) and
    checks the shape of each line only around those fields, the fields every record has and the end of the
    line: about half the work. It does not look inside the values of the fields it does not read.
    """
    starts, ends = b.starts, b.ends
    # Head: {"sample_id":"ID","epoch":N,"axis":"AXIS","tags":
    i_epoch = b.first_comma_index(starts)
    c_epoch, c_axis, c_tags = b.at(i_epoch), b.at(i_epoch, 1), b.at(i_epoch, 2)
    ok = b.match(starts, _HEAD)
    ok &= (b.byte(c_epoch - 1) == _QUOTE) & b.match(c_epoch, _EPOCH)
    ok &= b.match(c_axis, _AXIS)
    ok &= (b.byte(c_tags - 1) == _QUOTE) & b.match(c_tags, _TAGS)
    id_start, id_end = starts + len(_HEAD), c_epoch - 1
    axis_start, axis_end = c_axis + len(_AXIS), c_tags - 1
    ok &= b.plain(id_start, id_end) & b.plain(axis_start, axis_end)  # a raw quote: not JSON, left to orjson
    # a record of the axis no dataset may name is orjson's to refuse, naming the field (a superseded one too);
    # looked for only in names of its length, which most axes do not have
    named = np.flatnonzero(ok & (axis_end - axis_start == len(RESERVED_AXIS)))
    if named.size:
        ok[named] &= ~b.match(axis_start[named], _RESERVED_NAME)

    # The anchor: ,"latency_ms": occurs once per line, after the text fields; its neighbours by comma.
    i_latency, once = b.keyed_comma_index(_LATENCY)
    ok &= once
    c_latency, c_passed, c_score = b.at(i_latency), b.at(i_latency, -1), b.at(i_latency, -2)
    ok &= b.match(c_passed, _PASSED)
    ok &= b.match(c_score, _SCORE) & (b.byte(c_score - 1) == _BRACE) & (c_score > c_tags)

    # Forward from latency: usage, cost, error.
    c_usage, c_completion, c_cached_tokens = b.at(i_latency, 1), b.at(i_latency, 2), b.at(i_latency, 3)
    c_reasoning, c_cost, c_error, c_message = (b.at(i_latency, k) for k in (4, 5, 6, 7))
    ok &= b.match(c_usage, _USAGE) & b.match(c_completion, _COMPLETION)
    ok &= b.match(c_cached_tokens, _CACHED_TOKENS) & b.match(c_reasoning, _REASONING)
    ok &= b.match(c_cost, _COST) & (b.byte(c_cost - 1) == _BRACE)
    no_error = b.match(c_error, _NO_ERROR)
    has_error = b.match(c_error, _ERROR) & (b.byte(c_message - 1) == _QUOTE) & b.match(c_message, _MESSAGE)
    has_error &= b.no_backslash(c_error + len(_ERROR), c_message - 1)
    ok &= no_error | has_error

    # The other fields every record has (see artifacts.record_problem), which the fast path does not read:
    # input, target and prompt between the tags and the score; finished_at after attempts; and no
    # schema_version (a nested one only sends the line to orjson, which looks at the top level alone).
    ok &= b.has_keys((_INPUT, _TARGET, _PROMPT), c_tags, c_score, first=(b'"[', b'"[', b"{]"))
    c_finished = b.at(i_latency, 8)
    ok &= b.match(c_finished, _FINISHED_AT) | has_error
    for row in np.flatnonzero(ok & has_error).tolist():  # about 1% of the lines
        ok[row] = _FINISHED_AFTER_ERROR.search(b.text(int(c_message[row]), int(ends[row]))) is not None
    ok &= ~b.has_keys((_SCHEMA_VERSION,), starts - 1, ends)
    # The end of the line: ,"backoff_s":X} after the error (a line cut short and ended by hand goes to orjson).
    # Its last comma is the one before the next line's first (no comma lies between a line and the next).
    i_backoff = np.concatenate((i_epoch[1:], b.first_comma_index(ends[-1:]))) - 1
    c_backoff = b.at(i_backoff)
    ok &= b.match(c_backoff, _BACKOFF) & (b.byte(ends - 1) == _BRACE) & (c_backoff > c_error)

    spans: dict[str, tuple[I64, I64]] = {
        "epoch": (c_epoch + len(_EPOCH), c_axis),
        "score": (c_score + len(_SCORE), c_passed),
        "latency_ms": (c_latency + len(_LATENCY), c_usage),
        "cost_usd": (c_cost + len(_COST), c_error),
    }
    integers = {"epoch"}
    literals = {"passed": (c_passed + len(_PASSED), c_latency)}
    scorer_spans: list[tuple[I64, I64]] = []
    walk_ok = np.zeros(starts.size, dtype=np.bool_)
    judge_object = np.zeros(starts.size, dtype=np.bool_)
    finish_named = np.zeros(starts.size, dtype=np.bool_)
    finish_start = finish_end = tag_line = tag_start = tag_end = np.zeros(0, dtype=np.int64)
    if not light:
        # The scores dict, walked backwards from its closing brace: one comma per scorer in the task's order.
        empty = c_score - len(_SCORES_EMPTY)
        empty_scores = b.match(empty, _SCORES_EMPTY) & (empty > c_tags)
        walk_ok[:] = bool(keys)
        value_end = c_score - 1
        for j in range(len(keys) - 1, -1, -1):
            comma = b.at(i_latency, -3 - (len(keys) - 1 - j))
            pattern = (b',"scores":{' if j == 0 else b",") + orjson.dumps(keys[j]) + b":"
            walk_ok &= b.match(comma, pattern)
            if j == 0:
                walk_ok &= comma > c_tags
            scorer_spans.append((comma + len(pattern), value_end))
            value_end = comma
        scorer_spans.reverse()
        ok &= walk_ok | empty_scores

        # ,"judge_cost_usd": occurs once per line, after the explanations; the judge usage just before it.
        i_judge, once = b.keyed_comma_index(_JUDGE_COST)
        c_judge, c_cached, c_after_cached = b.at(i_judge), b.at(i_judge, 1), b.at(i_judge, 2)
        ok &= once & (c_judge > c_error) & b.match(c_cached, _CACHED)
        c_j_reasoning, c_j_cached, c_j_completion, c_j_usage = (b.at(i_judge, k) for k in (-1, -2, -3, -4))
        judge_null = b.match(c_j_reasoning, _JUDGE_NULL) & (c_j_reasoning + len(_JUDGE_NULL) == c_judge)
        judge_object = (
            b.match(c_j_usage, _JUDGE_USAGE)
            & b.match(c_j_completion, _COMPLETION)
            & b.match(c_j_cached, _CACHED_TOKENS)
            & b.match(c_j_reasoning, _REASONING)
            & (b.byte(c_judge - 1) == _BRACE)
            & (c_j_usage > c_error)
            & ~judge_null
        )
        ok &= judge_null | judge_object

        # No retries just before the backoff: a record that has some goes to orjson, which reads them.
        c_retries = b.at(i_backoff, -1)
        ok &= b.match(c_retries, _RETRIES_EMPTY) & (c_retries + len(_RETRIES_EMPTY) == c_backoff)
        ok &= c_retries > c_cached
        # attempts, checked and not kept, is one digit (more than one attempt leaves retries) unless the line has
        # an error, whose _FINISHED_AFTER_ERROR checked it
        c_attempts = c_error + len(_NO_ERROR)
        one_digit = (c_finished - c_attempts == 1) & (_NUMBER_BITS[b.byte(c_attempts)] == _IS_DIGIT)
        ok &= has_error | one_digit

        # finish_reason, null or a string, after cached, model and request_id (a comma in the model's name or the
        # request's id sends the line to orjson), thinking just after it.
        c_model, c_request, c_finish, c_thinking = (b.at(i_judge, k) for k in (2, 3, 4, 5))
        ok &= b.match(c_model, _MODEL) & b.match(c_request, _REQUEST_ID) & b.match(c_finish, _FINISH)
        ok &= b.match(c_thinking, _THINKING) & (c_thinking < c_retries)
        finish_start, finish_end = c_finish + len(_FINISH), c_thinking
        finish_null = (finish_end - finish_start == len(_NULL)) & b.match(finish_start, _NULL)
        finish_named = (finish_end - finish_start >= 2) & (b.byte(finish_start) == _QUOTE)
        finish_named &= (b.byte(finish_end - 1) == _QUOTE) & b.plain(finish_start + 1, finish_end - 1)
        ok &= finish_null | finish_named

        tags_read, tag_line, tag_start, tag_end = _tag_lists(b, i_epoch + 2, c_tags, ends)
        ok &= tags_read

        spans |= {
            "prompt_tokens": (c_usage + len(_USAGE), c_completion),
            "completion_tokens": (c_completion + len(_COMPLETION), c_cached_tokens),
            "judge_cost_usd": (c_judge + len(_JUDGE_COST), c_cached),
            "backoff_s": (c_backoff + len(_BACKOFF), ends - 1),
            "judge_prompt_tokens": (c_j_usage + len(_JUDGE_USAGE), c_j_completion),
            "judge_completion_tokens": (c_j_completion + len(_COMPLETION), c_j_cached),
        }
        integers |= {"prompt_tokens", "completion_tokens", "judge_prompt_tokens", "judge_completion_tokens"}
        literals["cached"] = (c_cached + len(_CACHED), c_after_cached)

    rows = np.flatnonzero(ok)
    if rows.size == 0:
        return ok
    good = np.ones(rows.size, dtype=np.bool_)
    judged = judge_object[rows]
    values: dict[str, F64] = {}
    for name, (start, end) in spans.items():
        if name.startswith("judge_") and name.endswith("_tokens"):
            # Only records with a judge usage object have these counts.
            parsed = np.zeros(rows.size)
            if judged.any():
                counted = rows[judged]
                parsed[judged], parsed_ok = b.integers(start[counted], end[counted])
                good[judged] &= parsed_ok
        else:
            parsed, parsed_ok = (b.integers if name in integers else b.numbers)(start[rows], end[rows])
            good &= parsed_ok
        values[name] = parsed
    flags: dict[str, Bool] = {}
    for name, (start, end) in literals.items():
        flags[name], recognised = b.literals(start[rows], end[rows])
        good &= recognised
    if "backoff_s" in values:  # null: the orjson path reads it as 0
        good &= ~np.isnan(values["backoff_s"])
    scored = walk_ok[rows]
    scores: list[F64] = []
    for start, end in scorer_spans:
        parsed, parsed_ok = b.numbers(start[rows], end[rows])
        good &= ~scored | parsed_ok
        scores.append(np.where(scored, parsed, np.nan))

    # A line whose values did not parse, or hold a value out of its field's range, goes to orjson like any
    # other odd line (which refuses the latter naming the field).
    good &= ~_out_of_range(values, scores)
    ok[rows[~good]] = False
    rows = rows[good]
    if rows.size == 0:
        return ok
    chunk.epoch[rows] = values.pop("epoch")[good].astype(np.int64)
    for name, parsed in values.items():
        column = getattr(chunk, name)
        column[rows] = parsed[good].astype(column.dtype)
    for name, flag in flags.items():
        getattr(chunk, name)[rows] = flag[good]
    chunk.judge_used[rows] = judged[good]
    errored = has_error[rows]
    chunk.error[rows] = errored | np.isnan(chunk.score[rows])
    for key, parsed in zip(keys if scorer_spans else (), scores, strict=True):
        chunk.scorer(key)[rows] = parsed[good]
    chunk.sample_hash[rows] = _hash_spans(b.buf, id_start[rows], id_end[rows] - id_start[rows])
    chunk.axis_name, chunk.axis[rows] = b.names(axis_start[rows], axis_end[rows])
    error_rows = rows[errored]
    if error_rows.size:
        type_start = c_error[error_rows] + len(_ERROR)
        chunk.error_type_name, chunk.error_type[error_rows] = b.names(type_start, c_message[error_rows] - 1)
    named = rows[finish_named[rows]]
    if named.size:
        finish_names = b.names(finish_start[named] + 1, finish_end[named] - 1)
        chunk.finish_reason_name, chunk.finish_reason[named] = finish_names
    tagged = ok[tag_line]
    if tagged.any():
        chunk.tag_name, codes = b.names(tag_start[tagged], tag_end[tagged])
        chunk.tag_entries.append((tag_line[tagged], codes))
    return ok


__all__ = []
