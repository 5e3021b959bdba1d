"""The scorer contract and the registry; how per-scorer values combine into the final score.

A scorer is built by a factory registered with ``@register_scorer("name")`` from the arguments a task
spec gives it. Two parameter names are reserved and injected by ``build_scorer`` rather than read from the
spec: ``judge`` (the judge model's ``CompletionClient``; a factory whose ``judge`` has a default of None
gets None when no ``--judge-model`` was given) and ``where`` (the task spec's path, to find rubric files).

Every other argument is checked against the factory's annotation before the factory runs. A value the task
spec already types (a TOML number, boolean, array or table) must be of the parameter's type (an integer
passes for a float); text, as ``--scorer NAME:key=value`` gives it, is converted the way pydantic's lax mode
does ("false"/"0"/"no" → False, "0.5" → 0.5). Non-finite numbers are refused. A parameter without an
annotation, or with one pydantic cannot check, gets its value as given.

Staged scoring: a spec whose ``args`` hold ``skip_when = { KEY = CONDITION }`` runs after every scorer
without one, and is skipped when any condition holds on an earlier scorer's value — for example a judge
with ``skip_when = { exact_match = 1.0 }`` is never called on answers exact match already settled. A
condition is a number (equality) or a string such as ``">= 0.9"``. A skipped scorer has no value; its
explanation says why, and the final score is the weighted mean of the scorers that ran.

The contract a scorer keeps, checked on every verdict (a few comparisons, no validation): ``score`` (an
``async def``, or a method that returns a ``Score`` or an awaitable of one: a delegating or decorated method
works too) gives a ``Score`` whose value, and each part of ``metadata["breakdown"]``, is a number in [0, 1], with
``usage``/``cost_usd`` non-negative when given. A verdict that breaks it, however it was made (a ``Score``
changed after it was built, ``Score.model_construct``, a bare float), is that sample's ``ScoringError``
naming the scorer and what it returned, like a scorer that raises: nothing a reader would refuse reaches
samples.jsonl.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import numbers
import operator
import re
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import ConfigDict, PydanticUserError, TypeAdapter, ValidationError

from eval_harness.errors import (
    AuthenticationError,
    ConfigError,
    EvalHarnessError,
    NotAvailableHereError,
    ScoringError,
    UnknownNameError,
    shortened,
)
from eval_harness.registry import Registry
from eval_harness.types import (
    WEIGHT_0_FAILED,
    Completion,
    CompletionClient,
    ErrorInfo,
    ErrorPlace,
    Sample,
    Score,
    ScorerSpec,
    Usage,
    error_places,
    problem_message,
)

INJECTED = ("judge", "where")
"""Factory parameters filled by ``build_scorer``, never from a task spec."""

STAGE_ARG = "skip_when"
"""The ``args`` key that makes a scorer staged; ``build_scorer`` removes it before calling the factory."""


class Scorer(ABC):
    """Scores one output of one sample into ``Score`` with a value in [0, 1] (see the module's contract)."""

    expensive: bool = False
    """True for scorers that call a model: the pipeline runs them after the cheap ones."""

    fingerprint: str | None = None
    """Identity of material the scorer reads besides its args (a rubric template's sha256), for resume checks."""

    @abstractmethod
    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        """Score ``output`` (``async def``, returning a ``Score``); raise ``SkipScore`` to abstain, anything
        else to record a scoring error."""

    def preflight(self, sample: Sample) -> None:
        """Raise, before the run, what would fail on every sample (a judge's rubric that renders nothing or
        names a variable no sample has), found here on ``sample`` instead of after every answer was paid for."""
        return None

    def notes(self, key: str) -> list[str]:
        """What a run's start says of this scorer, whose key in its task is ``key`` (on stderr): a limit it cannot
        hold on this machine, a judge it will skip for want of a judge model."""
        return []


class FunctionScorer(Scorer):
    """A scorer from a plain synchronous function (most deterministic scorers)."""

    def __init__(self, function: Callable[[str, Sample], Score]) -> None:
        self.function = function

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        return self.function(output, sample)


class SkipScore(Exception):
    """Raised by a scorer that abstains on this sample (an optional judge without a judge model).

    The pipeline records ``"skipped: <reason>"`` as the explanation and leaves the scorer out of the
    final score.
    """


class SpentScoringError(ScoringError):
    """A model-based scorer failed after spending tokens; the spend is still counted as judge usage."""

    def __init__(self, message: str, usage: Usage | None = None, cost_usd: float | None = None) -> None:
        super().__init__(message)
        self.usage = usage
        self.cost_usd = cost_usd


ScorerFactory = Callable[..., Scorer]
SCORERS: Registry[ScorerFactory] = Registry("scorer")


def register_scorer(name: str) -> Callable[[ScorerFactory], ScorerFactory]:
    """Decorator for a scorer factory: ``@register_scorer("exact_match")``."""
    return SCORERS.register(name)


_CHECKING: ContextVar[list[str] | None] = ContextVar("scorers_checking", default=None)


@contextmanager
def checking_only() -> Iterator[list[str]]:
    """Scorers built here are built to check a task's arguments, and score nothing: one this machine cannot run
    (code execution not enabled, an extra not installed) is built all the same, what it lacks added to the list
    given (see ``unavailable_here``), and none touches the disk (the embeddings cache). ``validate-dataset``
    checks a task for a machine that may not be this one."""
    lacking: list[str] = []
    token = _CHECKING.set(lacking)
    try:
        yield lacking
    finally:
        _CHECKING.reset(token)


def checking() -> bool:
    """Whether scorers are being built under ``checking_only``."""
    return _CHECKING.get() is not None


def require_text(function: str, **values: object) -> None:
    """Raise ``TypeError`` naming ``function`` and the argument when one of ``values`` is not a string: the public
    scorer functions take text, and None or a number failed deep inside them ('NoneType' has no attribute)."""
    for name, value in values.items():
        if not isinstance(value, str):
            raise TypeError(f"{function}: {name} must be a string, got {type(value).__name__}")


def unavailable_here(message: str) -> None:
    """A scorer factory's refusal of what this machine lacks to run it: ``NotAvailableHereError``, or, under
    ``checking_only``, ``message`` noted for the check, the scorer built on."""
    lacking = _CHECKING.get()
    if lacking is None:
        raise NotAvailableHereError(message)
    lacking.append(message)


def build_scorer(
    spec: ScorerSpec, judge: CompletionClient | None = None, where: str = "task", *, text_args: bool = False
) -> Scorer:
    """Build the scorer a spec names; a bad argument is a ``ConfigError`` naming ``where``. With ``text_args``
    (the arguments are text, as ``--scorer NAME:key=value`` gives them) text is converted to the parameter's type;
    else (a task spec's typed values) an argument must already have it."""
    try:
        factory = SCORERS.get(spec.name)
    except UnknownNameError as exc:
        raise UnknownNameError(f"{where}: {exc}") from None
    signature = inspect.signature(factory)
    parameters = signature.parameters
    kwargs = {k: v for k, v in spec.args.items() if k != STAGE_ARG}
    for reserved in INJECTED:
        if reserved in kwargs:
            raise ConfigError(f"{where}: scorer {spec.name!r}: {reserved!r} cannot be set in args")
    for name, adapter in _argument_types(factory).items():
        if name in kwargs:
            try:
                kwargs[name] = _coerce(adapter, kwargs[name], text_args)
            except ValidationError as exc:
                raise ConfigError(f"{where}: scorer {spec.name!r}: {_problems(name, exc)}") from None
    if "judge" in parameters:
        if judge is not None:
            kwargs["judge"] = judge
        elif parameters["judge"].default is inspect.Parameter.empty:
            raise ConfigError(f"{where}: scorer {spec.name!r} needs a judge model; pass --judge-model")
    if "where" in parameters:
        kwargs["where"] = where
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    settable = [name for name, p in parameters.items() if name not in INJECTED and p.kind is not p.VAR_KEYWORD]
    unknown = [name for name in kwargs if name not in parameters and name not in INJECTED]
    if unknown and not takes_any:  # Python's "got an unexpected keyword argument" named none it takes
        problem = UnknownNameError.among("argument", unknown[0], settable)
        raise ConfigError(f"{where}: scorer {spec.name!r}: {problem}") from None
    try:
        signature.bind(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where}: scorer {spec.name!r}: {exc}") from None
    try:
        scorer = factory(**kwargs)
    except EvalHarnessError:
        raise  # says what is wrong itself: a refused judge key (AuthenticationError), a rubric file's place ...
    except ValidationError as exc:
        raise ConfigError(f"{where}: scorer {spec.name!r}: {_problems(exc.title, exc)}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: scorer {spec.name!r}: {exc}") from None
    except Exception as exc:
        # a missing lexicon file, a plugin's own bug: one line naming the spec's place and the scorer
        raise ConfigError(f"{where}: scorer {spec.name!r}: {type(exc).__name__}: {exc}") from None
    if not isinstance(scorer, Scorer):
        raise ConfigError(
            f"{where}: scorer {spec.name!r}: its factory returned {_type_name(scorer)}, expected a Scorer "
            "(a subclass of eval_harness.scorers.Scorer, or FunctionScorer(function))"
        )
    return scorer


_ARGUMENTS = ConfigDict(allow_inf_nan=False, arbitrary_types_allowed=True)


@functools.cache
def _argument_types(factory: ScorerFactory) -> dict[str, TypeAdapter[Any]]:
    """A validator for each annotated parameter of ``factory`` that a spec may set (built once per factory)."""
    try:
        # resolves the strings ``from __future__ import annotations`` leaves; a class is checked by its __init__
        hints = typing.get_type_hints(factory.__init__ if inspect.isclass(factory) else factory)
    except NameError:  # an annotation names what only a type checker imports: the values go to it as given
        return {}
    adapters: dict[str, TypeAdapter[Any]] = {}
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    for name, parameter in inspect.signature(factory).parameters.items():
        if name in INJECTED or name not in hints or parameter.kind not in by_name:
            continue
        try:
            adapters[name] = TypeAdapter(hints[name], config=_ARGUMENTS)
        except PydanticUserError:  # a type with its own pydantic config, or one pydantic cannot check
            continue
    return adapters


def _coerce(adapter: TypeAdapter[Any], value: Any, text_args: bool) -> Any:
    """``value`` as the parameter's type: strictly, unless it is text given as text (``text_args``), which is
    converted (``"false"`` for a bool, ``"0.5"`` for a number, JSON for a list or a table: ``["a","b"]``)."""
    try:
        return adapter.validate_python(value, strict=True)
    except ValidationError:
        if not (text_args and isinstance(value, str)):
            raise
    if value.lstrip().startswith(("[", "{")):
        return adapter.validate_json(value)
    return adapter.validate_python(value)


_SHOWN_PROBLEMS = 3


def _problems(name: str, error: ValidationError) -> str:
    """``name[.location]: message (got value)`` for the first problems of a validation error, on one line.

    Locations leave out the union members pydantic tried. The members' problems are alternatives, so "or" joins
    them: once at one place (``criteria: Input should be a valid dictionary or a valid list (got 5)``), with a
    comma between places (``criteria.accuracy: Input should be a valid string (got 3), or criteria: Input should
    be a valid list``); other problems are joined by a semicolon, all of them to be fixed.
    """
    shown: list[tuple[str, str, list[str], str]] = []  # the joint before, location, messages, value
    previous: tuple[tuple[int | str, ...], ErrorPlace] | None = None
    places = error_places(error, 4 * _SHOWN_PROBLEMS)  # enough for three places with their alternatives
    for problem, place in zip(error.errors(include_url=False), places, strict=False):
        location = ".".join(map(str, [name, *place.loc] if name else place.loc))
        either = previous is not None and _alternatives(*previous, problem["loc"], place)
        previous = (problem["loc"], place)
        message = problem_message(problem)
        if either and shown[-1][1] == location:
            if message not in shown[-1][2]:
                shown[-1][2].append(message)
            continue
        if len(shown) == _SHOWN_PROBLEMS:
            break
        value = problem["input"]
        got = f" (got {shortened(repr(value), 60)})" if isinstance(value, str | int | float) else ""
        shown.append((", or " if either else "; ", location, [message], got))
    return "".join(
        f"{joint if number else ''}{location}: {_either(messages)}{got}"
        for number, (joint, location, messages, got) in enumerate(shown)
    )


def _alternatives(
    loc_a: tuple[int | str, ...], place_a: ErrorPlace, loc_b: tuple[int | str, ...], place_b: ErrorPlace
) -> bool:
    """Whether two errors come from different members of one union: pydantic's locations part at a member."""
    parting = next((i for i, (a, b) in enumerate(zip(loc_a, loc_b, strict=False)) if a != b), None)
    return parting is not None and parting in place_a.tags and parting in place_b.tags


def _either(messages: list[str]) -> str:
    """The members' messages about one value as one: ``Input should be a valid dictionary or a valid list``."""
    lead = "Input should be "
    if all(message.startswith(lead) for message in messages):
        return lead + " or ".join(message.removeprefix(lead) for message in messages)
    return " or ".join(messages)


_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": lambda a, b: math.isclose(a, b, abs_tol=1e-12),
    "!=": lambda a, b: not math.isclose(a, b, abs_tol=1e-12),
}
_CONDITION = re.compile(r"^\s*(>=|<=|==|!=|>|<)?\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*$")


@dataclass(frozen=True)
class Condition:
    """``key OP threshold``: when it holds on an earlier scorer's value, a staged scorer is skipped."""

    key: str
    op: str
    threshold: float

    def holds(self, values: Mapping[str, float]) -> bool:
        """True when the earlier scorer ran and its value meets the condition."""
        value = values.get(self.key)
        return value is not None and _OPERATORS[self.op](value, self.threshold)

    def __str__(self) -> str:
        return f"{self.key} {self.op} {self.threshold:g}"


def parse_conditions(raw: Any, where: str) -> list[Condition]:
    """Parse a ``skip_when`` table: ``{ exact_match = 1.0, rougeL = ">= 0.9" }``."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(f"{where}: {STAGE_ARG} must be a table such as {{ exact_match = 1.0 }}")
    conditions = []
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ConfigError(f"{where}: {STAGE_ARG}.{key}: expected a number or a string like '>= 0.9'")
        if isinstance(value, str):
            match = _CONDITION.match(value)
            if match is None:
                raise ConfigError(f"{where}: {STAGE_ARG}.{key}: cannot read {value!r}; write e.g. '>= 0.9'")
            conditions.append(Condition(str(key), match.group(1) or "==", float(match.group(2))))
        else:
            conditions.append(Condition(str(key), "==", float(value)))
    return conditions


def combine(values: Mapping[str, float], specs: Sequence[ScorerSpec]) -> float:
    """The final score from the values of the scorers that ran.

    A scorer absent from ``values`` (skipped) takes no part, exactly as if the spec did not name it; that
    holds for a skipped gate too, which is then not enforced. Of the present scorers:

    - a gate below 1.0 makes the final score 0;
    - else the final score is the weighted mean of the non-gate scorers with weight > 0 (a met gate and a
      weight-0 scorer are reported, not averaged);
    - when no non-gate scorer with weight > 0 is present, it is the mean of the gates (all met: 1.0);
    - when there is no gate either, every present scorer has weight 0, and zero weights mean equal
      weights: the plain mean of what is present (a staged judge skipped next to a weight-0 cheap scorer
      leaves the cheap scorer's value).
    """
    if len(specs) == 1 and not specs[0].gate and specs[0].key in values:
        return values[specs[0].key]  # one scorer: its value (the common case, once per sample)
    present = [s for s in specs if s.key in values]
    for spec in present:
        if spec.gate and values[spec.key] < 1.0:
            return 0.0
    weighted = [(values[s.key], s.weight) for s in present if s.weight > 0 and not s.gate]
    if not weighted:
        weighted = [(values[s.key], 1.0) for s in present if s.gate]
    if not weighted:
        weighted = [(values[s.key], 1.0) for s in present]
    total = sum(w for _, w in weighted)
    return sum(v * w for v, w in weighted) / total if total else 0.0


def add_spend(
    usage: Usage | None, cost: float | None, known: bool, more_usage: Usage | None, more_cost: float | None
) -> tuple[Usage | None, float | None, bool]:
    """Accumulate model spend; the cost becomes unknown (None) as soon as one part is unknown."""
    if more_usage is not None:
        usage = more_usage if usage is None else usage + more_usage
        if more_cost is None:
            known = False
    if more_cost is not None:
        cost = (cost or 0.0) + more_cost
    return usage, (cost if known else None), known


@dataclass
class ScoringResult:
    """Every scorer's verdict on one output, and the final score (None when a scorer failed).

    ``scores`` also holds each scorer's breakdown (``Score.metadata["breakdown"]``) under
    ``"<key>.<part>"``, e.g. a judge's per-criterion values; those parts take no part in ``final``.
    ``metadata`` holds each scorer's ``Score.metadata`` (judge samples, position-swap verdicts ...).
    """

    scores: dict[str, float] = field(default_factory=dict)
    explanations: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    judge_usage: Usage | None = None
    judge_cost_usd: float | None = None
    error: ErrorInfo | None = None
    final: float | None = None
    running: str | None = None
    """The scorer being awaited (as errors name it), None between scorers: what a timeout cut short. Inside a
    composite, the part of it that was running too: ``judge (rubric_judge) inside quality (composite)``."""


@dataclass
class _Step:
    key: str
    scorer: Scorer
    conditions: list[Condition]
    label: str
    """How errors name the scorer: its key, and its registry name when an alias differs."""


class _BrokenContract(ScoringError):
    """A scorer returned what no record may hold; the message follows ``scorer <label> ``."""


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _shown(value: object) -> str:
    """``value`` as an error message shows it: a number as Python writes it (numpy's too), else its repr."""
    if type(value) not in (int, float, bool) and isinstance(value, numbers.Real):
        value = float(value)
    return shortened(repr(value), 60)


def _unit(value: object, part: object = None) -> float:
    """``value`` (a verdict's value, or its breakdown ``part``) as a float in [0, 1]; ``_BrokenContract``
    otherwise (NaN fails both comparisons)."""
    number = float(value) if isinstance(value, numbers.Real) else math.nan
    if not 0.0 <= number <= 1.0:
        what = "" if part is None else f" for breakdown part {part!r}"
        must = "in [0, 1]" if isinstance(value, numbers.Real) else "a number in [0, 1]"
        raise _BrokenContract(f"returned {_shown(value)}{what}; a score must be {must}")
    return number


def _check_metadata(metadata: object) -> None:
    """``_BrokenContract`` when a verdict's metadata is not a mapping, or its ``breakdown`` holds a part outside
    [0, 1] (a record holds each part as a score)."""
    if metadata.__class__ is not dict and not isinstance(metadata, Mapping):
        raise _BrokenContract(f"returned metadata of type {_type_name(metadata)}; metadata must be a dict")
    breakdown = metadata.get("breakdown")
    if breakdown is not None and (breakdown.__class__ is dict or isinstance(breakdown, Mapping)):
        for part, part_value in breakdown.items():
            if part_value.__class__ is not float or not 0.0 <= part_value <= 1.0:
                _unit(part_value, part)


def _checked(verdict: object) -> float:
    """The value of a verdict that keeps the scorer contract (see the module docstring); ``_BrokenContract``
    naming what breaks it otherwise. Runs on every verdict: a few comparisons for a valid ``Score``."""
    if verdict.__class__ is not Score and not isinstance(verdict, Score):
        if inspect.iscoroutine(verdict):  # FunctionScorer(an async function): never awaited, so say it and close it
            verdict.close()
            raise _BrokenContract("returned coroutine, expected Score (FunctionScorer takes a plain function)")
        raise _BrokenContract(f"returned {_type_name(verdict)}, expected Score")
    value = verdict.value
    if value.__class__ is not float or not 0.0 <= value <= 1.0:  # changed after it was built, or never validated
        value = _unit(value)
    if verdict.metadata:
        _check_metadata(verdict.metadata)
    explanation, answer = verdict.explanation, verdict.answer
    if (explanation is not None and explanation.__class__ is not str) or (
        answer is not None and answer.__class__ is not str
    ):
        for name, text in (("explanation", explanation), ("answer", answer)):
            if text is not None and not isinstance(text, str):
                raise _BrokenContract(f"returned {name} of type {_type_name(text)}; it must be a string or None")
    if verdict.usage is not None or verdict.cost_usd is not None:
        _check_spend(verdict.usage, verdict.cost_usd)
    return value


def _check_spend(usage: object, cost: object) -> None:
    """A model-based scorer's spend as readers take it: token counts and a cost that are not negative."""
    if usage is not None:
        counts = [getattr(usage, name, None) for name in Usage.model_fields] if isinstance(usage, Usage) else []
        if not counts or not all(
            count is None or (isinstance(count, int) and not isinstance(count, bool) and count >= 0) for count in counts
        ):
            raise _BrokenContract(
                f"returned usage {_shown(usage)}; usage must be a Usage with non-negative token counts"
            )
    if cost is not None and not (
        isinstance(cost, numbers.Real) and not isinstance(cost, bool) and 0.0 <= float(cost) < math.inf
    ):
        raise _BrokenContract(f"returned cost_usd {_shown(cost)}; a cost must be a non-negative number or None")


@dataclass(frozen=True)
class _CutShort:
    """What a scorer cancelled mid-way had done (see ``keep_when_cut_short``)."""

    explanation: str | None
    metadata: Mapping[str, Any] | None
    usage: Usage | None
    cost_usd: float | None
    running: str | None


_CUT_SHORT = "_eval_harness_cut_short"
"""The attribute of a ``CancelledError`` that carries what the scorers it cut short had done, up to the pipeline
awaiting them: nothing is set up for it while no scoring is cancelled, so it costs the common path nothing."""


def keep_when_cut_short(
    cancelled: BaseException,
    *,
    explanation: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    usage: Usage | None = None,
    cost_usd: float | None = None,
    running: str | None = None,
) -> None:
    """For a scorer that runs other scorers (a composite) or pays per call (a judge), in an ``except
    CancelledError as cancelled`` that re-raises it: what it had done when a scoring timeout cut it short, for the
    record to keep. ``cancelled`` carries it to the pipeline awaiting the scorer, so call this in the scorer's own
    frame (after an ``asyncio.gather`` of calls, not inside one of them: gather raises a new error).

    The record keeps it as it keeps a verdict, without a value: ``explanation``, ``metadata`` (its
    ``"breakdown"`` parts under ``"<key>.<part>"``), the model spend already paid; ``running`` names the part
    of the scorer that was cut short, for the timeout's message. Not part of the scorer contract: a scorer that
    does not call it loses its own unfinished work only."""
    cancelled.__dict__.setdefault(_CUT_SHORT, []).append(_CutShort(explanation, metadata, usage, cost_usd, running))


@dataclass(frozen=True)
class _Failure:
    """A scorer's failure on one sample: the error type recorded, and its message."""

    kind: str
    message: str
    """The error's text, which names the scorer when ``named`` (else the record prefixes the scorer's key)."""
    named: bool = False


def _failure(step: _Step, exc: Exception) -> _Failure:
    """What a scorer's exception records: its class and message, on one line for a pydantic error."""
    if isinstance(exc, _BrokenContract):
        return _Failure("ScoringError", f"scorer {step.label} {exc}", named=True)
    if isinstance(exc, ValidationError):
        # the multi-line text, with a URL, of Score(value=1.5) or another model the scorer built
        if exc.title == Score.__name__:
            problem = exc.errors()[0]
            if problem["loc"] == ("value",) and isinstance(problem["input"], numbers.Real):
                with_range = f"returned {_shown(problem['input'])}; a score must be in [0, 1]"
                return _Failure("ScoringError", f"scorer {step.label} {with_range}", named=True)
            return _Failure(
                "ScoringError", f"scorer {step.label} made an invalid Score: {_problems('', exc)}", named=True
            )
        return _Failure(type(exc).__name__, f"invalid {exc.title}: {_problems('', exc)}")
    return _Failure(type(exc).__name__, str(exc))


class ScoringPipeline:
    """The task's scorers in stages: cheap ones, then model-based ones, then staged ones.

    A failing scorer becomes the record's scoring error and stops the later (more expensive) stages;
    only ``AuthenticationError`` propagates, so that a refused judge key stops the run.
    """

    def __init__(
        self,
        specs: Sequence[ScorerSpec],
        judge: CompletionClient | None = None,
        where: str = "task",
        lines: Sequence[int | None] = (),
        *,
        text_args: bool = False,
    ) -> None:
        """``where`` names the specs' source in errors; ``lines`` the line of each spec in it, where known;
        ``text_args``: the specs' arguments are text to convert (``--scorer``), not a task spec's typed values."""
        self.specs = list(specs)
        places = [f"{where}:{line}" if line else where for line in [*lines, *[None] * (len(specs) - len(lines))]]
        keys = [spec.key for spec in self.specs]
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        if duplicates:
            place = places[keys.index(duplicates[0], keys.index(duplicates[0]) + 1)]
            hint = " (NAME:...,alias=KEY)" if place == "--scorer" else ""
            raise ConfigError(f"{place}: scorer key {duplicates[0]!r} is used twice; give one an alias{hint}")
        steps = [
            _Step(
                spec.key,
                build_scorer(spec, judge, place, text_args=text_args),
                parse_conditions(spec.args.get(STAGE_ARG), place),
                spec.key if spec.key == spec.name else f"{spec.key} ({spec.name})",
            )
            for spec, place in zip(self.specs, places, strict=True)
        ]
        unstaged = {step.key for step in steps if not step.conditions}
        for step, place in zip(steps, places, strict=True):
            for condition in step.conditions:
                if condition.key not in unstaged:
                    raise ConfigError(
                        f"{place}: scorer {step.key!r}: {STAGE_ARG} names {condition.key!r}, which is not an "
                        f"unstaged scorer of this task (known: {', '.join(sorted(unstaged)) or 'none'})"
                    )
        self.steps = sorted(steps, key=lambda s: (bool(s.conditions), s.scorer.expensive))
        self.scorers = [(step.key, step.scorer) for step in self.steps]
        self._recorded_only = frozenset(spec.key for spec in self.specs if spec.weight == 0 and not spec.gate)

    def preflight(self, sample: Sample) -> None:
        """Each scorer's ``preflight`` on ``sample``."""
        for _key, scorer in self.scorers:
            scorer.preflight(sample)

    def notes(self, prefix: str = "") -> list[str]:
        """Each scorer's ``notes``, once each (two scorers of one kind may say the same); a composite's parts are
        named ``prefix`` + their key (``quality.rj``), as the records name them."""
        return list(dict.fromkeys(note for key, scorer in self.scorers for note in scorer.notes(prefix + key)))

    def fingerprints(self) -> dict[str, str]:
        """``{key: fingerprint}`` of the scorers that read outside material (e.g. a judge's rubric file), so a
        changed rubric can be detected on resume although the task spec is unchanged."""
        return {step.key: step.scorer.fingerprint for step in self.steps if step.scorer.fingerprint}

    async def score(
        self, output: str, sample: Sample, completion: Completion | None = None, *, into: ScoringResult | None = None
    ) -> ScoringResult:
        """Apply every scorer; raises only ``AuthenticationError`` and ``ConfigError``, any other failure
        becomes ``error``. A record needs a score, so every scorer skipped is an error here too. ``into`` is
        filled as the scorers finish, so a caller that cancels the scoring keeps what was done and who ran; a
        scorer cut short keeps what it had done through ``keep_when_cut_short`` (a composite: its finished parts)."""
        result = await self.run(output, sample, completion, into=into)
        if result.error is None and result.final is None:
            why = result.explanations
            failed = [f"{key} (weight 0) failed: {why[key].removeprefix(WEIGHT_0_FAILED)}" for key in result.skipped
                      if why[key].startswith(WEIGHT_0_FAILED)]  # fmt: skip
            message = f"no scorer counted: {'; '.join(failed)}" if failed else "every scorer was skipped"
            result.error = ErrorInfo(type="ScoringError", message=message, stage="score")
        return result

    async def run(
        self, output: str, sample: Sample, completion: Completion | None = None, *, into: ScoringResult | None = None
    ) -> ScoringResult:
        """``score`` except that every scorer skipped leaves ``final`` None with no error: a composite then
        abstains instead of failing the record."""
        result = ScoringResult() if into is None else into
        values: dict[str, float] = {}
        known = True
        for step in self.steps:
            decisive = next((c for c in step.conditions if c.holds(values)), None) if step.conditions else None
            if decisive is not None:
                result.skipped.append(step.key)
                result.explanations[step.key] = f"skipped: {decisive} is decisive"
                continue
            try:
                result.running = step.label
                given: object = step.scorer.score(output, sample, completion)
                if inspect.isawaitable(given):  # an async def, or a plain method handing on a coroutine
                    given = await given
                result.running = None
                # a value a reader would refuse (1.5, nan, a float instead of a Score) is this sample's error,
                # not a line that makes the whole run unreadable
                value = _checked(given)
                verdict = cast(Score, given)  # _checked passed: it is a Score
            except SkipScore as skip:
                result.skipped.append(step.key)
                result.explanations[step.key] = f"skipped: {skip}"
                continue
            except (AuthenticationError, ConfigError):
                # a judge or embeddings key is refused, a backend is not installed: no sample can be scored, so
                # the runner stops the run (as for the model's key) instead of recording the same error on each
                raise
            except asyncio.CancelledError as cancelled:  # a scoring timeout (or the run stopping)
                for cut in cancelled.__dict__.pop(_CUT_SHORT, ()):  # what the scorer had done: kept
                    known = self._record_cut(result, step, cut, known)
                raise
            except Exception as exc:  # a scorer's failure is data about one sample, not the end of the run
                if isinstance(exc, SpentScoringError):
                    result.judge_usage, result.judge_cost_usd, known = add_spend(
                        result.judge_usage, result.judge_cost_usd, known, exc.usage, exc.cost_usd
                    )
                failure = _failure(step, exc)
                if step.key in self._recorded_only:
                    # a weight-0 scorer is recorded beside the score, not part of it: its failure (a judge
                    # outage) must not turn a scored answer into an error counted as wrong
                    result.skipped.append(step.key)
                    result.explanations[step.key] = f"{WEIGHT_0_FAILED}{failure.kind}: {failure.message}"
                    continue
                message = failure.message if failure.named else f"{step.key}: {failure.message}"
                result.error = ErrorInfo(type=failure.kind, message=message, stage="score")
                return result
            values[step.key] = value
            self._record(result, step.key, value, verdict)
            if verdict.usage is not None or verdict.cost_usd is not None:
                result.judge_usage, result.judge_cost_usd, known = add_spend(
                    result.judge_usage, result.judge_cost_usd, known, verdict.usage, verdict.cost_usd
                )
        if values:
            result.final = combine(values, self.specs)
        return result

    @staticmethod
    def _record(result: ScoringResult, key: str, value: float, verdict: Score) -> None:
        result.scores[key] = value
        if verdict.answer is not None:
            result.answers[key] = verdict.answer
        _keep(result, key, verdict.explanation, verdict.metadata)

    @staticmethod
    def _record_cut(result: ScoringResult, step: _Step, cut: _CutShort, known: bool) -> bool:
        """Keep what a scorer cut short had done (``keep_when_cut_short``) as its finished verdict would be kept,
        but for a value, and name the part of it that was running; returns whether the cost is still known.
        What a reader would refuse (a part outside [0, 1], a negative count) is left out, not written: its
        breakdown with the explanation and metadata, its spend apart from them."""
        if cut.running is not None:
            result.running = f"{cut.running} inside {step.label}"
        try:
            if cut.metadata:
                _check_metadata(cut.metadata)
            _keep(result, step.key, cut.explanation, cut.metadata)
        except _BrokenContract:
            pass
        try:
            _check_spend(cut.usage, cut.cost_usd)
        except _BrokenContract:
            return known
        result.judge_usage, result.judge_cost_usd, known = add_spend(
            result.judge_usage, result.judge_cost_usd, known, cut.usage, cut.cost_usd
        )
        return known


def _keep(result: ScoringResult, key: str, explanation: str | None, metadata: Mapping[str, Any] | None) -> None:
    """A verdict's explanation and metadata into ``result`` under ``key``; its breakdown parts into ``scores``
    under ``"<key>.<part>"`` (a mapping whose parts are numbers in [0, 1]: checked by the caller)."""
    if explanation:
        result.explanations[key] = explanation
    if metadata:
        breakdown = metadata.get("breakdown")
        if isinstance(breakdown, Mapping):
            for part, part_value in breakdown.items():
                result.scores[f"{key}.{part}"] = float(part_value)
        result.metadata[key] = dict(metadata)


def best_reference(references: Sequence[str], measure: Callable[[str], float]) -> tuple[float, str]:
    """The best value of ``measure`` over ``references`` and the reference that gave it (first on ties)."""
    best_value, best = measure(references[0]), references[0]
    for reference in references[1:]:
        value = measure(reference)
        if value > best_value:
            best_value, best = value, reference
    return best_value, best


__all__ = [
    "INJECTED",
    "SCORERS",
    "STAGE_ARG",
    "Condition",
    "FunctionScorer",
    "Scorer",
    "ScorerFactory",
    "ScoringPipeline",
    "ScoringResult",
    "SkipScore",
    "SpentScoringError",
    "add_spend",
    "best_reference",
    "build_scorer",
    "checking",
    "checking_only",
    "combine",
    "keep_when_cut_short",
    "parse_conditions",
    "register_scorer",
    "require_text",
    "unavailable_here",
]
