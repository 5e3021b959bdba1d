"""Field checking: one record of the file (a JSON object, or a CSV row by column) mapped and type-checked into
``Sample`` fields.

The task's mapping (``fields``), ``target_pattern``, ``choices_pattern``, ``axis`` and ``axis_pattern`` are
applied here; a bad field raises ``_FieldProblem`` naming it as the file names it (``question``, not ``input``).
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Collection
from pathlib import Path
from typing import Any

from eval_harness.errors import as_written, json_type_name, named_briefly, shortened
from eval_harness.types import (
    CHOICES_PATTERN_FLAGS,
    RESERVED_AXIS,
    RESERVED_AXIS_MESSAGE,
    SAMPLE_FIELDS,
    TARGET_PATTERN_FLAGS,
    ChatMessage,
    DatasetSpec,
)

_ROLES = ("system", "user", "assistant")


class _FieldProblem(Exception):
    """A bad field of one record; ``labelled`` once ``field_name`` is the file's own name for it."""

    def __init__(self, field_name: str, message: str, *, labelled: bool = False) -> None:
        super().__init__(message)
        self.field_name = field_name
        self.message = message
        self.labelled = labelled


def _source(spec: DatasetSpec, name: str) -> str | list[str]:
    return spec.fields.get(name, name)


_SAMPLE_FIELD_SET = frozenset(SAMPLE_FIELDS)


def _mapped(obj: dict[str, Any], spec: DatasetSpec) -> tuple[dict[str, Any], set[str] | frozenset[str]]:
    """The record's values under sample field names, and the source fields they came from."""
    if not spec.fields:
        return obj, _SAMPLE_FIELD_SET
    values: dict[str, Any] = {}
    used: set[str] = set()
    for name in SAMPLE_FIELDS:
        source = spec.fields.get(name, name)
        if isinstance(source, list):
            used.update(source)
            missing = [column for column in source if column not in obj]
            if missing:
                raise _FieldProblem(missing[0], _missing_text(missing[0], name, obj), labelled=True)
            values[name] = [obj[column] for column in source]
        else:
            used.add(source)
            if source in obj:
                values[name] = obj[source]
            elif source != name and name in _REQUIRED_WHEN_MAPPED and not (name == "axis" and spec.axis_pattern):
                # a mapping names the column the task reads: a line without it is a misspelt mapping or a broken
                # line, not an optional field left out (a missing choices column sent every prompt without options)
                raise _FieldProblem(source, _missing_text(source, name, obj), labelled=True)
    return values, used


_FIELDS_SHOWN = 12


def _missing_text(source: str, name: str, obj: dict[str, Any]) -> str:
    """``missing (mapped to input; the line has answer, question: did you mean 'question'?)``: a misspelt mapping
    is told by the fields the line does have (a dataset of 1,319 lines said only "missing", on each)."""
    fields = [str(key) for key in obj]
    close = difflib.get_close_matches(source, fields, n=1)
    guess = f": did you mean {close[0]!r}?" if close else ""
    has = f"; the line has {named_briefly(fields, _FIELDS_SHOWN)}{guess}" if fields else "; the line has no field"
    return f"missing (mapped to {name}{has})"


_REQUIRED_WHEN_MAPPED = frozenset({"id", "input", "target", "axis", "choices"})
"""Sample fields a line must hold once the task maps them to a column of another name; ``tags`` and
``metadata`` stay optional (absent means none), a mapping to the field's own name (``choices = "choices"``) keeps
it as optional as without one, and an ``axis`` column is a fallback of ``axis_pattern``."""


def _header_misses(columns: Collection[str], spec: DatasetSpec, path: Path) -> list[tuple[str, str]]:
    """The columns every row must hold that a CSV header lacks, each with what it is read for ("mapped to
    target", "required"): every row would fail on the same column, so the header is where to say it, once."""
    misses = []
    named_axis = spec.axis_pattern is not None and _axis_from_name(spec.axis_pattern, path) is not None
    for name in SAMPLE_FIELDS:
        source = _source(spec, name)
        if isinstance(source, list):
            misses += [(column, f"mapped to {name}") for column in source if column not in columns]
        elif source in columns:
            continue
        elif source != name and name in _REQUIRED_WHEN_MAPPED and not (name == "axis" and named_axis):
            misses.append((source, f"mapped to {name}"))
        elif name in ("input", "target"):
            misses.append((source, "required"))
    return misses


_PLAIN_KEYS = frozenset({"id", "input", "target", "axis"})


def _plain_fields(obj: dict[str, Any], spec: DatasetSpec, sample_id: str) -> dict[str, Any] | None:
    """The fields of the most common line (no mapping; non-blank string input, target and axis; no other
    keys) with a few checks instead of the general path's many; None for any other line."""
    if spec.fields or spec.target_pattern is not None or spec.axis is not None or spec.axis_pattern is not None:
        return None
    input_value, target, axis = obj.get("input"), obj.get("target"), obj.get("axis", "default")
    if (
        type(input_value) is str
        and type(target) is str
        and type(axis) is str
        and input_value.strip()
        and target.strip()
        and axis.strip()
        and axis != RESERVED_AXIS
        and obj.keys() <= _PLAIN_KEYS
    ):
        return {
            "id": sample_id,
            "input": input_value,
            "target": target,
            "axis": axis,
            "tags": [],
            "choices": None,
            "metadata": {},
        }
    return None


def _sample_fields(obj: dict[str, Any], spec: DatasetSpec, path: Path, sample_id: str) -> dict[str, Any]:
    """Map and type-check one record whose id ``_line_id`` gave; raise ``_FieldProblem`` naming the first bad
    field as the file names it."""
    # Checked by hand, not by Sample.model_validate: a problem must name the file's own column (``question``,
    # not ``input``) after the task's mapping and target_pattern, and a plain line takes a fast path; the
    # Sample built from these fields is still a pydantic model.
    plain = _plain_fields(obj, spec, sample_id)
    if plain is not None:
        return plain
    values, used = _mapped(obj, spec)
    try:
        input_value = _check_input(values.get("input"))
        target = _check_target(values.get("target"), spec.target_pattern)
        axis = _check_axis(values.get("axis"), spec, path)
        tags = _check_str_list(values.get("tags"), "tags") or []
        raw_choices = values.get("choices")
        if isinstance(raw_choices, str) and spec.choices_pattern is not None:
            # a match whose group 1 took no part is no match (an optional group: '^(?:[A-Z]\. (.*))?$')
            raw_choices = _options(raw_choices, spec.choices_pattern)
        choices = _check_str_list(raw_choices, "choices")
        choice_columns = spec.fields.get("choices")
        if isinstance(choice_columns, list):
            _check_choice_letter(target, string.ascii_uppercase[: len(choice_columns)])
        elif choices:
            _check_letter_has_an_option(target, choices)
        metadata = values.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            raise _FieldProblem("metadata", f"expected an object, got {json_type_name(metadata)}")
    except _FieldProblem as problem:
        if problem.labelled:
            raise
        raise _FieldProblem(_label(spec, problem.field_name), problem.message, labelled=True) from None
    extra = {k: v for k, v in obj.items() if k not in used}
    if spec.target_pattern is not None:
        target_source = _source(spec, "target")
        if isinstance(target_source, str):
            extra.setdefault("target_raw", obj.get(target_source))
    return {
        "id": sample_id,
        "input": input_value,
        "target": target,
        "axis": axis,
        "tags": tags,
        "choices": choices,
        "metadata": {**extra, **metadata} if extra else metadata,
    }


def _label(spec: DatasetSpec, field_path: str) -> str:
    """``input[0].role`` as the file names it: the mapped source field replaces the sample field."""
    head = field_path.split("[", 1)[0].split(".", 1)[0]
    rest = field_path[len(head) :]
    source = _source(spec, head)
    return (",".join(source) if isinstance(source, list) else source) + rest


def _check_id(value: Any, label: str = "id") -> str:
    if type(value) is str and value.strip():  # the common case first: this runs once per line
        return value
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        # a whole number is taken (as its digits); JSON's reader gives 1.0, 1e3 and a whole number past 64 bits as
        # floats, whose text is not the id's
        if isinstance(value, float):
            raise _FieldProblem(
                label, "expected a string or a whole number within 64 bits, got another number: quote it as the id"
            )
        raise _FieldProblem(label, f"expected a string or a whole number, got {json_type_name(value)}")
    text = str(value)
    if not text.strip():
        raise _FieldProblem(label, "is empty")
    return text


def _check_input(value: Any, label: str = "input") -> str | list[ChatMessage]:
    if type(value) is str and value.strip():
        return value
    if value is None:
        raise _FieldProblem(label, "missing (required)")
    if isinstance(value, str):
        if not value.strip():
            raise _FieldProblem(label, "is empty")
        return value
    if isinstance(value, list):
        if not value:
            raise _FieldProblem(label, "is an empty list of messages")
        messages = []
        for index, message in enumerate(value):
            where = f"{label}[{index}]"
            if not isinstance(message, dict):
                raise _FieldProblem(where, f"expected a message object, got {json_type_name(message)}")
            role, content = message.get("role"), message.get("content")
            if role not in _ROLES:
                raise _FieldProblem(f"{where}.role", f"expected one of {', '.join(_ROLES)}, got {role!r}")
            if not isinstance(content, str):
                raise _FieldProblem(f"{where}.content", f"expected a string, got {json_type_name(content)}")
            messages.append(ChatMessage(role=role, content=content))
        if messages[-1].role != "user":
            # the template renders the last message as the user's turn: an assistant or system turn there would
            # silently change role and reach the model as a second user turn
            raise _FieldProblem(
                f"{label}[{len(messages) - 1}].role",
                f"the last message must be the user's (the turn the model answers), got {messages[-1].role!r}",
            )
        return messages
    raise _FieldProblem(label, f"expected a string or a list of messages, got {json_type_name(value)}")


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _check_target(value: Any, pattern: str | None, label: str = "target") -> str | list[str]:
    # An empty target is refused: exact match (and SQuAD EM) would credit a model that says nothing, F1 and
    # ROUGE score every answer 0 against it, and the choice scorer fails on it.
    if type(value) is str and pattern is None and value.strip():
        return value
    if value is None:
        raise _FieldProblem(label, "missing (required)")
    text = _scalar_text(value)
    if text is not None:
        return _non_empty(_apply_pattern(text, label, pattern), label)
    if isinstance(value, list) and value:
        items = [_scalar_text(v) for v in value]
        if any(item is None for item in items):
            raise _FieldProblem(label, "expected a list of strings")
        return [
            _non_empty(_apply_pattern(item, label, pattern), f"{label}[{index}]")
            for index, item in enumerate(items)
            if item is not None
        ]
    if isinstance(value, list):
        raise _FieldProblem(label, "is an empty list")
    raise _FieldProblem(label, f"expected a string or a list of strings, got {json_type_name(value)}")


def _non_empty(text: str, label: str) -> str:
    if not text.strip():
        raise _FieldProblem(label, "is empty")
    return text


def _check_choice_letter(target: str | list[str], letters: str, label: str = "target") -> None:
    """With one column per choice (MMLU's question,A,B,C,D,answer), the target names the right column by its
    letter; lower case and surrounding spaces are read as the choice scorer reads them."""
    for index, value in enumerate([target] if isinstance(target, str) else target):
        letter = value.strip().upper()
        if len(letter) != 1 or letter not in letters:
            where = label if isinstance(target, str) else f"{label}[{index}]"
            raise _FieldProblem(where, f"expected one of the choice letters {', '.join(letters)}, got {value!r}")


_OPTION_LABEL = re.compile(
    r"[ \t]*(?:[-*•·][ \t]+)?[*_]*(?:(?:option|choice)[ \t]+)?[(\[]?"
    r"(?:[A-Za-z]|\d{1,2}|(?:i{1,3}|iv|vi{0,3}|ix|x)(?=[).]))[*_]*"
    r"[ \t]*(?:[).:\]][*_]*(?=\s|$)|[．、]|[ \t][-–](?=\s|$))",
    re.IGNORECASE,
)
"""How a line opens that reads as an option of its own ("A) a marsh", "(b) ...", "3. ...", "**B.** ...", "- B. ...",
"B - ...", "Option B: ...", "ii) ..."): a label, then a separator and a space. A header ("Options:", "Q: pick one"),
a wrapped option's next line or one opening with "a.m." / "e.g." / "U.S." does not."""


def _options(text: str, pattern: str) -> list[str]:
    """The options ``pattern`` finds in ``text`` (group 1 of each match). A line that opens like an option (a
    label: 'A) a marsh') but which no match covers is a problem: left out, the options after it would take the
    letters before them, and the target's letter would name another option ('A) a marsh' among 'B. ...' lines
    made 'B. a tundra' option A). Other lines no match covers (a header, a wrapped option's rest) are left out."""
    compiled = _compiled(pattern, CHOICES_PATTERN_FLAGS)
    options: list[str] = []
    covered: set[int] = set()
    for match in compiled.finditer(text):
        if (option := match.group(1)) is not None:  # a group 1 that took no part is no match
            options.append(option.strip())
            # from the match's own first line (a label on a line of its own: 'A.' then the text), not the line
            # whose line break a pattern opens with ('(?:\A|\n)A\) ...')
            start = match.start() + (text[match.start() : match.start() + 1] == "\n")
            first, last = text.count("\n", 0, start), text.count("\n", 0, max(match.end(1) - 1, 0))
            covered.update(range(first, last + 1))
    if not options:
        raise _FieldProblem("choices", f"does not match choices_pattern {as_written(pattern)}")
    for number, line in enumerate(text.split("\n")):
        if number not in covered and _OPTION_LABEL.match(line):
            raise _FieldProblem(
                "choices",
                f"line {number + 1} of the options, {shortened(line.strip(), 60)!r}, reads as an option but does not "
                f"match choices_pattern {as_written(pattern)} (left out, the options after it would take other "
                "letters)",
            )
    return options


def _check_letter_has_an_option(target: str | list[str], choices: list[str], label: str = "target") -> None:
    """A target that is a letter (not an option's own text) must name one of the line's options: one past them
    makes every answer to the sample a scoring error, after it was paid for."""
    letters = string.ascii_uppercase[: len(choices)]
    for index, value in enumerate([target] if isinstance(target, str) else target):
        if value.strip() in choices:  # the option's own text
            continue
        letter = value.strip().strip("()[].:,;*_\"'“”‘’` ").upper()  # as the choice scorer reads 'd', '(D)', '**D**'"
        if len(letter) == 1 and "A" <= letter <= "Z" and letter not in letters:
            where = label if isinstance(target, str) else f"{label}[{index}]"
            raise _FieldProblem(
                where,
                f"{value.strip()!r} names no option: the line has {len(choices)} ({', '.join(letters)})",
            )


def _value_end(text: str) -> str:
    """The end of a value a pattern missed, where an answer's marker usually is: GSM8K's '#### 1,000' against
    '(\\d+)' shows why at a glance."""
    shown = text if len(text) <= _VALUE_END_CHARS else "…" + text[-_VALUE_END_CHARS:]
    return f" (the value {'is' if shown is text else 'ends'} {shown!r})"


_VALUE_END_CHARS = 40


def _apply_pattern(text: str, label: str, pattern: str | None) -> str:
    if pattern is None:
        return text
    found = _compiled(pattern).search(text)
    if found is None:
        raise _FieldProblem(label, f"does not match target_pattern {as_written(pattern)}{_value_end(text)}")
    if not found.re.groups:
        return found.group(0).strip()
    group = found.group(1)
    if group is None:  # an optional group that took no part: '(zzz)?\d+'
        raise _FieldProblem(label, f"does not match target_pattern {as_written(pattern)}: its group 1 took no part")
    return group.strip()


def _check_axis(value: Any, spec: DatasetSpec, path: Path, label: str = "axis") -> str:
    if (
        type(value) is str
        and value.strip()
        and value != RESERVED_AXIS
        and spec.axis is None
        and spec.axis_pattern is None
    ):
        return value
    if spec.axis is not None:
        stem = Path(path.name.removesuffix(".gz")).stem  # anatomy_test.csv.gz: anatomy_test
        return _unreserved(spec.axis.replace("{stem}", stem), f"from the task's axis {spec.axis!r}")
    if spec.axis_pattern is not None:
        axis = _axis_from_name(spec.axis_pattern, path)
        if axis is not None:
            return _unreserved(axis, f"from axis_pattern {as_written(spec.axis_pattern)} on the file name")
    if value is None:
        if spec.axis_pattern is not None and _source(spec, "axis") != "axis":
            # the mapped column is the pattern's fallback, and here the fallback is all there is
            missed = f"axis_pattern {as_written(spec.axis_pattern)} does not match the file name {path.name!r}"
            raise _FieldProblem(label, f"missing (mapped to axis; {missed})")
        return "default"
    if isinstance(value, str) and not value.strip():
        raise _FieldProblem(label, "is empty")
    if not isinstance(value, str):
        raise _FieldProblem(label, f"expected a string, got {json_type_name(value)}")
    if value == RESERVED_AXIS:
        raise _FieldProblem(label, RESERVED_AXIS_MESSAGE)
    return value


def _axis_from_name(pattern: str, path: Path) -> str | None:
    """The axis ``axis_pattern`` takes from the file's name; None where it does not match, or its group takes no
    part or matches only blanks (then the line's own axis is used)."""
    found = _compiled(pattern).search(path.name)
    axis = found.group(1) if found is not None else None
    return axis if axis is not None and axis.strip() else None


def _unreserved(axis: str, source: str) -> str:
    """An axis the task derives from the file name, unless it is the reserved one (then ``source`` says why
    the lines of this file have it)."""
    if axis == RESERVED_AXIS:
        raise _FieldProblem("axis", f"{RESERVED_AXIS_MESSAGE} ({source})", labelled=True)
    return axis


def _check_str_list(value: Any, label: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _FieldProblem(label, f"expected a list of strings, got {json_type_name(value)}")
    items = [_scalar_text(v) for v in value]
    if any(item is None for item in items):
        raise _FieldProblem(label, "expected a list of strings")
    return [item for item in items if item is not None]


_PATTERNS: dict[tuple[str, int], re.Pattern[str]] = {}


def _compiled(pattern: str, flags: int = TARGET_PATTERN_FLAGS) -> re.Pattern[str]:
    key = (pattern, flags)
    if key not in _PATTERNS:
        _PATTERNS[key] = re.compile(pattern, flags)
    return _PATTERNS[key]


__all__ = []
