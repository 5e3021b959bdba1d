"""Instruction-following checks that need no model (in the spirit of IFEval).

A check is a table with a ``type`` and its parameters, given per sample in ``metadata.checks`` and/or for
every sample in the scorer's ``checks`` argument::

    {type = "word_count", min = 50, max = 100}      {type = "include", keywords = ["budget", "risk"]}
    {type = "sentence_count", max = 3}              {type = "exclude", keywords = ["very"]}
    {type = "paragraph_count", exactly = 2}         {type = "json", schema = {type = "object", ...}}
    {type = "bullet_count", min = 3}                {type = "lowercase"}
    {type = "ends_with", phrase = "Any questions?"}

Counting rules: words are runs of letters/digits (``don't`` and ``well-known`` count once); sentences
end at ``.``, ``!`` or ``?`` followed by a space, or at a line break, but not after a title ("Dr.", "St."),
"e.g."/"i.e."/"vs." or a single-letter initial ("J."), not after "No." before a digit ("No. 5"), and not
after another abbreviation ("etc.", "Jan.", "Inc.") or a dotted form ("U.S.", "p.m.") when what follows
cannot start a sentence (a digit or a lower-case word); paragraphs are blocks separated by blank lines;
bullets are lines starting with ``-``, ``*``, ``+`` or ``•`` (and ``1.`` / ``1)`` with ``numbered = true``).

``lowercase`` is IFEval's ``str.islower()``: every cased letter lower-case and at least one of them, so a
response without letters fails (IFEval also requires English; this check does not). ``ends_with`` ignores
trailing whitespace and quotes on the response and on the phrase. A ``json`` check's schema, nested schemas
included, is checked when the scorer is built (``check_schema``): an unsupported keyword or type name is a
configuration error naming its place (``$.properties.a.items.type``), never a failure on every sample.

Written here rather than taken from a library: the JSON Schema subset, because jsonschema is not among our
dependencies and a task needs only ``SCHEMA_KEYWORDS`` (types, properties, items, enum, bounds, lengths,
pattern; ``check_schema`` refuses the rest at build time); the sentence splitter, because NLTK's punkt, which
IFEval counts with, needs a data download at run time (none is possible offline), and IFEval's own regex
splitter is what this one follows.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Sample, Score, first_problem

_WORDS = re.compile(r"\w+(?:['’\-]\w+)*")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")
# Abbreviations written before what they qualify (a name, an example): they do not end a sentence.
_PREFIXES = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "vs", "e.g", "i.e"})
# Abbreviations that may also end a sentence ("... pears, etc. Then ..."): they join the next piece only
# when it cannot start a sentence, i.e. starts with a digit or a lower-case letter. "No." is an
# abbreviation only before a digit ("No. 5"); else it is the word.
_ABBREVIATIONS = frozenset({
    "etc", "fig", "approx", "dept", "est",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
})  # fmt: skip
# Name suffixes and dotted acronyms ("Jr.", "Inc.", "U.S.", "p.m.") usually sit inside a sentence, before a
# capitalised word too ("the U.S. Senate", "King Jr. Day"): as in IFEval's splitter, they end a sentence only
# before one of the words that start sentences there.
_SUFFIXES = frozenset({"inc", "ltd", "co", "jr", "sr"})
_DOTTED = re.compile(r"(?:[a-z]\.)+[a-z]")
_SENTENCE_STARTERS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "capt", "cpt", "lt",
    "he", "she", "it", "they", "their", "our", "we", "but", "however", "that", "this", "wherever",
})  # fmt: skip
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_OPENING = "\"'“‘([«"
_BULLET = re.compile(r"^\s*[-*+•]\s+\S")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+\S")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```$", re.DOTALL | re.IGNORECASE)

CheckResult = tuple[bool, str]


def count_words(text: str) -> int:
    """Words: runs of letters/digits, with inner apostrophes and hyphens."""
    return len(_WORDS.findall(text))


def count_sentences(text: str) -> int:
    """Sentences, ended by . ! ? and a space or by a line break; a piece ending in an abbreviation joins the
    next one by the rules of ``_joins``."""
    total = 0
    for line in text.splitlines():
        pieces = _SENTENCE_BREAK.split(line.strip())
        merged: list[str] = []
        for piece in pieces:
            if merged and _joins(merged[-1], piece):
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        total += sum(1 for piece in merged if _WORDS.search(piece))
    return total


def _joins(piece: str, following: str) -> bool:
    """True when ``piece`` ends in an abbreviation that does not end a sentence before ``following``.

    A title or example marker (Dr. Mr. St. e.g. vs.) or a single-letter initial ("J. R. R. Tolkien") always
    joins; "No." joins before a digit; a name suffix or dotted acronym (Jr. Inc. U.S. p.m.) joins unless a
    sentence starter follows (It, We, However ...: IFEval's list); other abbreviations (etc. Jan.) join
    before what cannot start a sentence: a digit or a lower-case letter.
    """
    words = piece.split()
    if not words or not words[-1].endswith("."):
        return False
    word = words[-1][:-1].lower().lstrip(_OPENING)
    start = following.lstrip(_OPENING)[:1]
    if word in _PREFIXES or (len(word) == 1 and word.isalpha()):
        return True
    if word == "no":
        return start.isdigit()
    if word in _SUFFIXES or _DOTTED.fullmatch(word):
        first = _FIRST_WORD.match(following.lstrip(_OPENING))
        return first is None or first.group().lower() not in _SENTENCE_STARTERS
    if word in _ABBREVIATIONS:
        return start.isdigit() or start.islower()
    return False


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
    """Every cased letter is lower-case and there is at least one: IFEval's rule (``str.islower()``), so a
    response with no letters ("123", "", "東京") fails, and so does a titlecase letter ("ǅ")."""
    if text.islower():
        return True, "all lower-case"
    upper = [ch for ch in text if ch.isupper() or ch.istitle()]
    if not upper:
        return False, "no lower-case letter (a response without cased letters fails, as in IFEval)"
    return False, f"{len(upper)} upper-case letter(s), first {upper[0]!r}"


_QUOTES = "\"'“”"


def ends_with(text: str, phrase: str, case_sensitive: bool = False) -> CheckResult:
    """The response ends with ``phrase``; trailing whitespace and quotes (" ' “ ”) are ignored on both."""
    tail = text.strip().rstrip(_QUOTES)
    wanted = phrase.strip().rstrip(_QUOTES)
    ok = tail.endswith(wanted) if case_sensitive else tail.lower().endswith(wanted.lower())
    shown = phrase.strip()
    return ok, f"ends with {shown!r}" if ok else f"does not end with {shown!r} (ends {tail[-30:]!r})"


class _NotJSONError(ValueError):
    """A value Python's json reads and JSON has not."""


def _not_json(constant: str) -> Any:
    """Python's json reads NaN, Infinity and -Infinity, which JSON (RFC 8259) has not."""
    raise _NotJSONError(f"{constant} is no JSON value")


def json_check(text: str, schema: dict[str, Any] | None = None, allow_fence: bool = True) -> CheckResult:
    """The response is one JSON value (optionally in a ```json fence) that matches ``schema``."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None and allow_fence:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        return False, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except _NotJSONError as exc:
        return False, f"not JSON: {exc}"
    except RecursionError:
        return False, "not JSON: nested too deeply to read"
    if schema is None:
        return True, "valid JSON"
    problems = schema_problems(value, schema)
    return not problems, "; ".join(problems[:3]) if problems else "valid JSON matching the schema"


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # JSON Schema (draft 6 on) counts 3.0 as an integer: the type is about the value, not its spelling
    "integer": lambda v: not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer())),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
SCHEMA_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum", "const",
    "minimum", "maximum", "minLength", "maxLength", "pattern", "description", "title"
})  # fmt: skip
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength")


def check_schema(schema: Any, path: str = "$") -> None:
    """Raise ``ValueError`` naming the place (``$.properties.a.items.type``) when ``schema``, or any schema
    nested in its ``properties`` and ``items``, is not one ``schema_problems`` can check: a keyword outside
    ``SCHEMA_KEYWORDS``, an unknown type name, or a keyword's value of the wrong kind."""
    if not isinstance(schema, Mapping):
        raise ValueError(f"a JSON Schema is a table, got {type(schema).__name__} at {path}")
    unknown = sorted(set(schema) - SCHEMA_KEYWORDS)
    if unknown:
        raise ValueError(f"unsupported JSON Schema keyword {unknown[0]!r} at {path}")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not names:
            raise ValueError(f"an empty type list at {path}.type")
        for name in names:
            if not isinstance(name, str) or name not in _TYPES:
                raise ValueError(
                    f"unknown JSON Schema type {name!r} at {path}.type (known: {', '.join(sorted(_TYPES))})"
                )
    if "properties" in schema:
        if not isinstance(schema["properties"], Mapping):
            raise ValueError(f"properties must be a table of schemas at {path}.properties")
        for name, nested in schema["properties"].items():
            check_schema(nested, f"{path}.properties.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}.items")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise ValueError(f"required must be a list of property names at {path}.required")
    if not isinstance(schema.get("additionalProperties", False), bool):
        raise ValueError(f"additionalProperties must be true or false (a schema there is not supported) at {path}")
    if not isinstance(schema.get("enum", []), list):
        raise ValueError(f"enum must be a list at {path}.enum")
    for keyword in _COUNTS:
        count = schema.get(keyword, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{keyword} must be a whole number >= 0 at {path}.{keyword}")
    for keyword in ("minimum", "maximum"):
        bound = schema.get(keyword, 0)
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
            raise ValueError(f"{keyword} must be a finite number at {path}.{keyword}")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except (re.error, TypeError) as exc:
            raise ValueError(f"pattern is not a regular expression ({exc}) at {path}.pattern") from None


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1 (Python's True == 1 is), 1 is 1.0, arrays and objects compare by content."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    return bool(a == b)


def schema_problems(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema``, for the JSON Schema subset in ``SCHEMA_KEYWORDS``.

    The schema is expected to have passed ``check_schema`` (the scorer checks every schema when it is built);
    an unsupported keyword or type name met here still raises ``ValueError``, never a ``KeyError``, so a
    schema is never silently checked less strictly than it reads.
    """
    unknown = sorted(set(schema) - SCHEMA_KEYWORDS)
    if unknown:
        raise ValueError(f"unsupported JSON Schema keyword {unknown[0]!r} at {path}")
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        for name in names:
            if not isinstance(name, str) or name not in _TYPES:
                raise ValueError(f"unknown JSON Schema type {name!r} at {path}.type")
        if not any(_TYPES[n](value) for n in names):
            return [f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"]
    problems: list[str] = []
    if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
        problems.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not _same_json(value, schema["const"]):
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


def _whole(value: Any) -> Any:
    """3.0 as 3: a column of counts with a gap is floats once pandas has written it (IFEval's kwargs are)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_Count = Annotated[int, BeforeValidator(_whole), Field(ge=0)]


class _CheckParams(BaseModel):
    """The values of a check's parameters (which names a check takes, its signature says): strict, so that
    ``min = "ten"``, ``exactly = "3"`` or ``min = true`` is refused when the scorer is built rather than
    failing (or wrongly scoring) every sample."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)

    min: _Count | None = None
    max: _Count | None = None
    exactly: _Count | None = None
    numbered: bool = False
    case_sensitive: bool = False
    allow_fence: bool = True
    phrase: str | None = None
    keywords: Any = None
    json_schema: Any = Field(default=None, alias="schema")


_COUNTS_OF_CHECKS = ("min", "max", "exactly")


def _params_problem(kind: str, params: dict[str, Any]) -> str | None:
    """What is wrong with the values of a ``kind`` check's ``params`` (named as its signature takes them)."""
    try:
        checked = _CheckParams.model_validate(params)
    except ValidationError as exc:
        place, message = first_problem(exc)
        return f"{place}: {message}, got {params.get(place)!r}" if place in params else message
    if kind.endswith("_count"):
        if checked.exactly is None and checked.min is None and checked.max is None:
            return "needs min, max or exactly"
        if checked.exactly is not None and (checked.min is not None or checked.max is not None):
            return "give exactly alone, or min and/or max"
        if checked.min is not None and checked.max is not None and checked.min > checked.max:
            return f"min {checked.min} is above max {checked.max}: no answer could pass"
    if checked.phrase is not None and not checked.phrase.strip():
        return "phrase: an empty phrase ends every answer"
    if kind in ("include", "exclude"):
        try:
            _keywords(checked.keywords)
        except ValueError as exc:
            return f"{exc}, got {checked.keywords!r}"
    return None


_SIGNATURES: dict[str, inspect.Signature] = {}


def _signature(kind: str) -> inspect.Signature:
    """The check's signature, built once: ``inspect.signature`` was ~45% of checking a sample's checks."""
    if kind not in _SIGNATURES:
        _SIGNATURES[kind] = inspect.signature(CHECKS[kind])
    return _SIGNATURES[kind]


def _validated(check: Any, where: str) -> tuple[Callable[..., CheckResult], str, dict[str, Any]]:
    if not isinstance(check, Mapping) or not isinstance(check.get("type"), str):
        raise ValueError(f"{where}: a check is a table with a 'type', got {check!r}")
    kind = check["type"]
    function = CHECKS.get(kind)
    if function is None:
        raise ValueError(f"{where}: unknown check type {kind!r} (known: {', '.join(sorted(CHECKS))})")
    params = {k: v for k, v in check.items() if k != "type"}
    try:
        _signature(kind).bind("", **params)
    except TypeError as exc:
        raise ValueError(f"{where}: check {kind!r}: {exc}") from None
    problem = _params_problem(kind, params)
    if problem is not None:
        raise ValueError(f"{where}: check {kind!r}: {problem}")
    params = {name: _whole(value) if name in _COUNTS_OF_CHECKS else value for name, value in params.items()}
    if kind == "json" and params.get("schema") is not None:
        try:
            check_schema(params["schema"])  # the whole schema, nested ones too, now rather than per sample
        except ValueError as exc:
            raise ValueError(f"{where}: check 'json': schema: {exc}") from None
    return function, kind, params


def _own_checks(sample: Sample, field: str) -> list[Any]:
    """The sample's own check tables: none when ``metadata[field]`` is absent or empty (null, [], {}, "")."""
    own = sample.metadata.get(field) or []
    if not isinstance(own, list):
        raise ValueError(f"metadata.{field} must be a list of check tables")
    return own


def _no_checks(field: str) -> str:
    return f"no checks: give the scorer 'checks' or the sample metadata.{field}"


def sample_check_problems(sample: Sample, field: str = "checks", common_checks: int = 0) -> list[tuple[str, str]]:
    """What is wrong with ``sample``'s own checks (``metadata[field]``) for a scorer with ``common_checks`` checks
    of its own, as ``(place, message)``: what scoring it would fail with, found before a run
    (``validate-dataset --task``)."""
    try:
        own = _own_checks(sample, field)
    except ValueError:
        return [(f"metadata.{field}", "must be a list of check tables")]
    if not own and not common_checks:
        return [(f"metadata.{field}", _no_checks(field))]
    problems = []
    for index, check in enumerate(own):
        try:
            _validated(check, f"metadata.{field}[{index}]")
        except ValueError as exc:
            place, _, message = str(exc).partition(": ")
            problems.append((place, message))
    return problems


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
        own = _own_checks(sample, field)
        all_checks = common + [_validated(c, f"metadata.{field}[{i}]") for i, c in enumerate(own)]
        if not all_checks:
            raise ValueError(_no_checks(field))
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


__all__ = [
    "CHECKS",
    "SCHEMA_KEYWORDS",
    "CheckResult",
    "bullet_count",
    "check_schema",
    "count_bullets",
    "count_paragraphs",
    "count_sentences",
    "count_words",
    "ends_with",
    "exclude",
    "include",
    "instructions_scorer",
    "json_check",
    "lowercase",
    "paragraph_count",
    "run_check",
    "sample_check_problems",
    "schema_problems",
    "sentence_count",
    "word_count",
]
