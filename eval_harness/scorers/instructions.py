"""Instruction-following checks that need no model (in the spirit of IFEval).

A check is a table with a ``type`` and its parameters, given per sample in ``metadata.checks`` and/or for
every sample in the scorer's ``checks`` argument::

    {type = "word_count", min = 50, max = 100}      {type = "include", keywords = ["budget", "risk"]}
    {type = "sentence_count", max = 3}              {type = "exclude", keywords = ["very"]}
    {type = "paragraph_count", exactly = 2}         {type = "json", schema = {type = "object", ...}}
    {type = "bullet_count", min = 3}                {type = "lowercase"}
    {type = "ends_with", phrase = "Any questions?"}

Counting rules: words are runs of letters/digits (``don't`` and ``well-known`` count once); sentences
end at ``.``, ``!`` or ``?`` followed by a space (not after common abbreviations such as "Dr." or
dotted initials such as "p.m.") or at a line break;
paragraphs are blocks separated by blank lines; bullets are lines starting with ``-``, ``*``, ``+`` or
``•`` (and ``1.`` / ``1)`` with ``numbered = true``).
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Sample, Score

_WORDS = re.compile(r"\w+(?:['’\-]\w+)*")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "fig", "approx", "dept",
    "est", "inc", "ltd", "co", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"
})  # fmt: skip
_BULLET = re.compile(r"^\s*[-*+•]\s+\S")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+\S")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```$", re.DOTALL | re.IGNORECASE)

CheckResult = tuple[bool, str]


def count_words(text: str) -> int:
    """Words: runs of letters/digits, with inner apostrophes and hyphens."""
    return len(_WORDS.findall(text))


def count_sentences(text: str) -> int:
    """Sentences, ended by . ! ? and a space (not after an abbreviation such as 'Dr.') or by a line break."""
    total = 0
    for line in text.splitlines():
        pieces = _SENTENCE_BREAK.split(line.strip())
        merged: list[str] = []
        for piece in pieces:
            if merged and _ends_with_abbreviation(merged[-1]):
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        total += sum(1 for piece in merged if _WORDS.search(piece))
    return total


def _ends_with_abbreviation(text: str) -> bool:
    last = text.rstrip().rsplit(maxsplit=1)[-1] if text.strip() else ""
    return last.endswith(".") and (
        last[:-1].lower() in _ABBREVIATIONS or re.fullmatch(r"(?:[A-Za-z]\.)+", last) is not None
    )


def count_paragraphs(text: str) -> int:
    """Blocks of text separated by one or more blank lines."""
    return sum(1 for block in re.split(r"\n\s*\n", text.strip()) if block.strip())


def count_bullets(text: str, numbered: bool = False) -> int:
    """Lines that start with a bullet marker (and, with ``numbered``, '1.' or '1)')."""
    return sum(1 for line in text.splitlines() if _BULLET.match(line) or (numbered and _NUMBERED.match(line)))


def _bounds(count: int, what: str, min: int | None, max: int | None, exactly: int | None) -> CheckResult:
    if exactly is not None:
        return count == exactly, f"{count} {what}, expected exactly {exactly}"
    if min is None and max is None:
        raise ValueError(f"a {what} check needs min, max or exactly")
    ok = (min is None or count >= min) and (max is None or count <= max)
    wanted = [f"at least {min}"] if min is not None else []
    wanted += [f"at most {max}"] if max is not None else []
    return ok, f"{count} {what}, expected {' and '.join(wanted)}"


def _count_check(what: str, counter: Callable[[str], int]) -> Callable[..., CheckResult]:
    def check(text: str, min: int | None = None, max: int | None = None, exactly: int | None = None) -> CheckResult:
        return _bounds(counter(text), what, min, max, exactly)

    check.__doc__ = f"Number of {what} within bounds."
    return check


word_count = _count_check("words", count_words)
sentence_count = _count_check("sentences", count_sentences)
paragraph_count = _count_check("paragraphs", count_paragraphs)


def bullet_count(
    text: str,
    min: int | None = None,
    max: int | None = None,
    exactly: int | None = None,
    numbered: bool = False,
) -> CheckResult:
    """Number of bullet lines within bounds."""
    return _bounds(count_bullets(text, numbered), "bullets", min, max, exactly)


def _keyword_found(text: str, keyword: str, case_sensitive: bool) -> bool:
    pattern = r"(?<!\w)" + re.escape(keyword.strip()) + r"(?!\w)"
    return re.search(pattern, text, 0 if case_sensitive else re.IGNORECASE) is not None


def _keywords(keywords: Any) -> list[str]:
    if isinstance(keywords, str):
        keywords = [keywords]
    if not isinstance(keywords, list) or not keywords or not all(isinstance(k, str) and k.strip() for k in keywords):
        raise ValueError("keywords must be a non-empty list of non-empty strings")
    return keywords


def include(text: str, keywords: list[str], case_sensitive: bool = False) -> CheckResult:
    """Every keyword (a word or phrase, matched whole) appears."""
    missing = [k for k in _keywords(keywords) if not _keyword_found(text, k, case_sensitive)]
    return not missing, f"missing {', '.join(map(repr, missing))}" if missing else "all keywords present"


def exclude(text: str, keywords: list[str], case_sensitive: bool = False) -> CheckResult:
    """No keyword appears."""
    present = [k for k in _keywords(keywords) if _keyword_found(text, k, case_sensitive)]
    return not present, f"contains {', '.join(map(repr, present))}" if present else "no forbidden keyword"


def lowercase(text: str) -> CheckResult:
    """No upper-case letter anywhere."""
    upper = [ch for ch in text if ch.isupper()]
    return not upper, f"{len(upper)} upper-case letter(s), first {upper[0]!r}" if upper else "all lower-case"


def ends_with(text: str, phrase: str, case_sensitive: bool = False) -> CheckResult:
    """The response ends with ``phrase`` (trailing whitespace and quotes ignored)."""
    tail = text.strip().strip("\"'“”")
    wanted = phrase.strip()
    ok = tail.endswith(wanted) if case_sensitive else tail.lower().endswith(wanted.lower())
    return ok, f"ends with {wanted!r}" if ok else f"does not end with {wanted!r} (ends {tail[-30:]!r})"


def json_check(text: str, schema: dict[str, Any] | None = None, allow_fence: bool = True) -> CheckResult:
    """The response is one JSON value (optionally in a ```json fence) that matches ``schema``."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None and allow_fence:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return False, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if schema is None:
        return True, "valid JSON"
    problems = schema_problems(value, schema)
    return not problems, "; ".join(problems[:3]) if problems else "valid JSON matching the schema"


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
SCHEMA_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum", "const",
    "minimum", "maximum", "minLength", "maxLength", "pattern", "description", "title"
})  # fmt: skip


def schema_problems(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema``, for the JSON Schema subset in ``SCHEMA_KEYWORDS``.

    An unsupported keyword raises ``ValueError`` rather than being ignored, so a schema is never
    silently checked less strictly than it reads.
    """
    unknown = sorted(set(schema) - SCHEMA_KEYWORDS)
    if unknown:
        raise ValueError(f"unsupported JSON Schema keyword {unknown[0]!r} at {path}")
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_TYPES[n](value) for n in names):
            return [f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {schema['const']!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: longer than {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            problems.append(f"{path}: does not match {schema['pattern']!r}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                problems.extend(schema_problems(item, schema["items"], f"{path}[{index}]"))
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}: missing required property {name!r}")
        for name, item in value.items():
            if name in properties:
                problems.extend(schema_problems(item, properties[name], f"{path}.{name}"))
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}: unexpected property {name!r}")
    return problems


CHECKS: dict[str, Callable[..., CheckResult]] = {
    "word_count": word_count,
    "sentence_count": sentence_count,
    "paragraph_count": paragraph_count,
    "bullet_count": bullet_count,
    "include": include,
    "exclude": exclude,
    "lowercase": lowercase,
    "ends_with": ends_with,
    "json": json_check,
}


def _validated(check: Any, where: str) -> tuple[Callable[..., CheckResult], str, dict[str, Any]]:
    if not isinstance(check, Mapping) or not isinstance(check.get("type"), str):
        raise ValueError(f"{where}: a check is a table with a 'type', got {check!r}")
    kind = check["type"]
    function = CHECKS.get(kind)
    if function is None:
        raise ValueError(f"{where}: unknown check type {kind!r} (known: {', '.join(sorted(CHECKS))})")
    params = {k: v for k, v in check.items() if k != "type"}
    try:
        inspect.signature(function).bind("", **params)
    except TypeError as exc:
        raise ValueError(f"{where}: check {kind!r}: {exc}") from None
    if kind == "json" and params.get("schema") is not None:
        schema_problems(None, params["schema"])  # raises on unsupported keywords now, not per sample
    return function, kind, params


def run_check(text: str, check: Mapping[str, Any]) -> CheckResult:
    """Apply one check table to ``text``: (passed, why)."""
    function, _, params = _validated(check, "check")
    return function(text, **params)


@register_scorer("instructions")
def instructions_scorer(
    checks: list[dict[str, Any]] | None = None, field: str = "checks", mode: str = "fraction"
) -> Scorer:
    """The share of checks passed (``mode = "all"``: 1 only when every check passes).

    Checks come from ``checks`` (every sample) and from the sample's ``metadata[field]``.
    """
    if mode not in ("fraction", "all"):
        raise ValueError(f"mode must be 'fraction' or 'all', got {mode!r}")
    common = [_validated(c, f"checks[{i}]") for i, c in enumerate(checks or [])]

    def score(output: str, sample: Sample) -> Score:
        own = sample.metadata.get(field) or []
        if not isinstance(own, list):
            raise ValueError(f"metadata.{field} must be a list of check tables")
        all_checks = common + [_validated(c, f"metadata.{field}[{i}]") for i, c in enumerate(own)]
        if not all_checks:
            raise ValueError(f"no checks: give the scorer 'checks' or the sample metadata.{field}")
        breakdown: dict[str, float] = {}
        failures: list[str] = []
        seen: Counter[str] = Counter()
        for function, kind, params in all_checks:
            passed, why = function(output, **params)
            seen[kind] += 1
            name = kind if seen[kind] == 1 else f"{kind}_{seen[kind]}"
            breakdown[name] = float(passed)
            if not passed:
                failures.append(f"{name}: {why}")
        passed_count = int(sum(breakdown.values()))
        value = passed_count / len(breakdown) if mode == "fraction" else float(passed_count == len(breakdown))
        detail = f"; failed: {'; '.join(failures)}" if failures else ""
        return Score(
            value=value,
            explanation=f"{passed_count}/{len(breakdown)} checks passed{detail}",
            metadata={"breakdown": breakdown},
        )

    return FunctionScorer(score)
