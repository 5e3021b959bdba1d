"""LLM judges: a rubric judge (per-criterion JSON verdicts) and a pairwise judge (both orders asked).

The rubric is a Jinja template under ``templates/`` rendered through ``eval_harness.templates`` (sandboxed,
strict undefined) with the variables of a prompt template plus ``output`` (the answer under review),
``references`` (every acceptable reference), ``criteria`` (a list of ``{name, description}``),
``scale_min``/``scale_max``, and for pairwise judging ``response_a``/``response_b``. The reply format is
not the rubric author's business: the judge appends the exact JSON shape it will accept.

A reply that is prose around exactly one JSON object that parses is read as that object (the strict checks of
the verdict still apply). A verdict that is not that JSON gets one repair request (the judge is shown its reply
and the problem); a second failure is a scoring error. Tokens and cost of every judge call — repairs and failed ones
included — are returned in ``Score.usage``/``Score.cost_usd`` so they are counted apart from the model's.
Self-consistency (``samples = n``) asks n times with distinct seeds and records the mean and the spread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from eval_harness.errors import AuthenticationError, EvalHarnessError, ProviderError
from eval_harness.scorers.base import (
    Scorer,
    SkipScore,
    SpentScoringError,
    add_spend,
    keep_when_cut_short,
    register_scorer,
)
from eval_harness.tasks import find_task, search_roots
from eval_harness.templates import PromptTemplate, load_template
from eval_harness.types import (
    ChatMessage,
    Completion,
    CompletionClient,
    GenerateConfig,
    GenerateRequest,
    Sample,
    Score,
    Usage,
    first_problem,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a strict, fair evaluator. Judge only by the rubric, ignore the length and the position of a "
    "response, and reply with the JSON object requested and nothing else."
)
_REPAIR = (
    "Your previous reply could not be used: {problem}. Reply again with only the JSON object in the form "
    "described above, with no other text before or after it."
)
_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL | re.IGNORECASE)
_REASON_CHARS = 200
_T = TypeVar("_T")


PLACEHOLDER_OUTPUT = "(the model's answer)"
"""What stands for the answer when a rubric is rendered before the run, to check it."""


class VerdictError(ValueError):
    """A judge reply that is not the requested JSON verdict; the message says what is wrong."""


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen and seen[key] != value:
            raise VerdictError(f"{key!r} is given twice with different values")
        seen[key] = value
    return seen


_TOO_DEEP = "JSON nested too deeply to read"


def _json_object(text: str) -> dict[str, Any]:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    if not body:
        raise VerdictError("the reply is empty")
    try:
        value = json.loads(body, object_pairs_hook=_reject_duplicates)
    except RecursionError:
        raise VerdictError(_TOO_DEEP) from None
    except json.JSONDecodeError as exc:
        try:
            embedded = _objects_in(body)
        except RecursionError:  # prose, then an object nested too deeply to read
            raise VerdictError(_TOO_DEEP) from None
        if len(embedded) != 1:  # none, or several (an example and the verdict?): the repair request decides
            found = f"; it holds {len(embedded)} JSON objects" if embedded else ""
            raise VerdictError(
                f"not a single JSON object ({exc.msg} at line {exc.lineno} column {exc.colno}{found})"
            ) from None
        value = embedded[0]
    if not isinstance(value, dict):
        raise VerdictError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _objects_in(text: str) -> list[dict[str, Any]]:
    """The JSON objects that parse in ``text`` outside one another, for a reply with prose around its verdict
    ("Here is my verdict: {...}"): small judge models often add some, and a repair call costs as much again."""
    decoder = json.JSONDecoder(object_pairs_hook=_reject_duplicates)
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        found.append(value)
        start = text.find("{", end)
    return found


def parse_rubric_verdict(
    text: str, criteria: Sequence[str], scale_min: float, scale_max: float
) -> dict[str, tuple[float, str]]:
    """``{criterion: (score, reason)}`` from a reply ``{"<criterion>": {"reason": ..., "score": N}, ...}``.

    Raises ``VerdictError`` when the reply is not exactly that: every criterion present, no other key,
    a numeric score within the scale, no key given twice with different values.

    Parsed by hand, not as a pydantic model: the judge is asked again with a short message naming what was
    wrong (a pydantic error is long and names its own paths), and a key given twice must be caught, which
    ``json.loads`` hides (``_reject_duplicates``).
    """
    verdict = _json_object(text)
    unknown = [k for k in verdict if k not in criteria]
    if unknown:
        raise VerdictError(f"unknown criterion {unknown[0]!r} (expected {', '.join(criteria)})")
    parsed: dict[str, tuple[float, str]] = {}
    for name in criteria:
        entry = verdict.get(name)
        if not isinstance(entry, dict):
            raise VerdictError(f"criterion {name!r} is missing or not an object with 'score' and 'reason'")
        score = entry.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise VerdictError(f"{name}.score must be a number, got {score!r}")
        if not scale_min <= score <= scale_max:
            raise VerdictError(f"{name}.score {score} is outside the scale {scale_min:g}-{scale_max:g}")
        reason = entry.get("reason", "")
        if not isinstance(reason, str):
            raise VerdictError(f"{name}.reason must be a string")
        parsed[name] = (float(score), reason.strip())
    return parsed


def parse_pairwise_verdict(text: str) -> tuple[str, str]:
    """``(winner, reason)`` from a reply ``{"reason": ..., "winner": "A" | "B" | "tie"}``."""
    verdict = _json_object(text)
    unknown = sorted(set(verdict) - {"reason", "winner"})
    if unknown:
        raise VerdictError(f"unexpected key {unknown[0]!r} (expected reason and winner)")
    winner = verdict.get("winner")
    if not isinstance(winner, str) or winner.strip().upper() not in ("A", "B", "TIE"):
        raise VerdictError(f'winner must be "A", "B" or "tie", got {winner!r}')
    reason = verdict.get("reason", "")
    if not isinstance(reason, str):
        raise VerdictError("reason must be a string")
    normalised = winner.strip().upper()
    return ("tie" if normalised == "TIE" else normalised), reason.strip()


@dataclasses.dataclass
class _Spend:
    """Judge calls of one scoring, including repairs and failures."""

    usage: Usage | None = None
    cost_usd: float | None = None
    cost_known: bool = True
    calls: int = 0
    repairs: int = 0
    model: str | None = None

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.model = self.model or completion.model
        self.usage, self.cost_usd, self.cost_known = add_spend(
            self.usage, self.cost_usd, self.cost_known, completion.usage, completion.cost_usd
        )

    def error(self, message: str) -> SpentScoringError:
        return SpentScoringError(message, self.usage, self.cost_usd)

    def score(self, value: float, explanation: str, kind: str, **details: Any) -> Score:
        """The verdict with this spend attached and the judge's details in the metadata."""
        metadata = {"judge": kind, "model": self.model, **details, "calls": self.calls, "repairs": self.repairs}
        return Score(value=value, explanation=explanation, usage=self.usage, cost_usd=self.cost_usd, metadata=metadata)


def find_rubric(name: str, where: str) -> PromptTemplate:
    """Load rubric ``name`` from the task's own templates/ (when ``where`` is a spec path, with or without the
    scorer's line: ``tasks/x.toml:8``), else from the templates/ of the task search path."""
    directories: list[Path] = []
    spec, _, line = where.rpartition(":")
    spec = spec if line.isdigit() else where
    if spec.endswith(".toml") and Path(spec).is_file():
        directories.append(find_task(spec).templates_dir)
    directories.extend(root / "templates" for root in search_roots())
    for directory in directories:
        if (directory / name).is_file():
            return load_template(directory, name)
    looked = ", ".join(str(d) for d in dict.fromkeys(directories)) or "no templates directory"
    raise ValueError(f"rubric template {name!r} not found (looked in {looked})")


@dataclasses.dataclass(frozen=True)
class JudgeSettings:
    """How a judge is asked: the judge model (None: skip), the rubric and the sampling options."""

    judge: CompletionClient | None
    template: PromptTemplate
    system_prompt: str | None
    temperature: float
    max_tokens: int


class _Judge(Scorer):
    """What rubric and pairwise judges share: rendering, asking with one repair, spend accounting."""

    expensive = True

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self.fingerprint = settings.template.sha256

    def _messages(self, sample: Sample, variables: Mapping[str, Any], reply_format: str) -> list[ChatMessage]:
        template = self.settings.template
        # `input` is the last user turn; a chat sample's earlier turns are `history`, so a rubric can show the
        # judge the whole conversation the answer belongs to (the built-in rubrics do)
        earlier = sample.input[:-1] if isinstance(sample.input, list) else []
        history = [{"role": m.role, "content": m.content} for m in earlier if m.role != "system"]
        variables = {"history": history, **variables}
        prompt = dataclasses.replace(template, variables={**template.variables, **variables}).render(sample)[-1].content
        system = self.settings.system_prompt
        messages = [ChatMessage(role="system", content=system)] if system else []
        messages.append(ChatMessage(role="user", content=f"{prompt}\n\n{reply_format}"))
        return messages

    async def _ask(
        self,
        judge: CompletionClient,
        messages: list[ChatMessage],
        sample: Sample,
        index: int,
        seeded: bool,
        parse: Callable[[str], _T],
        spend: _Spend,
    ) -> _T:
        config = GenerateConfig(
            temperature=self.settings.temperature, max_tokens=self.settings.max_tokens, seed=index if seeded else None
        )
        completion = await self._complete(judge, messages, config, sample, index, spend)
        try:
            return parse(completion.text)
        except VerdictError as first:
            spend.repairs += 1
            repair = [
                *messages,
                ChatMessage(role="assistant", content=completion.text),
                ChatMessage(role="user", content=_REPAIR.format(problem=first)),
            ]
            completion = await self._complete(judge, repair, config, sample, index, spend)
            try:
                return parse(completion.text)
            except VerdictError as second:
                raise spend.error(f"judge verdict malformed after one repair: {second}") from None

    @staticmethod
    async def _complete(
        judge: CompletionClient,
        messages: list[ChatMessage],
        config: GenerateConfig,
        sample: Sample,
        index: int,
        spend: _Spend,
    ) -> Completion:
        try:
            completion = await judge.complete(
                GenerateRequest(messages=messages, config=config, sample=sample, epoch=index)
            )
        except ProviderError as exc:
            raise spend.error(f"judge call failed: {exc}") from None
        spend.add(completion)
        return completion

    @staticmethod
    async def _gather(calls: Sequence[Any], spend: _Spend) -> list[Any]:
        """Run the calls together; the first failure is raised only once all have finished, so no call is
        left running and every call's spend is counted: cut short by a scoring timeout too, for the calls that
        had finished (a call cut off in flight returned no usage to count)."""
        try:
            results = await asyncio.gather(*calls, return_exceptions=True)
        except asyncio.CancelledError as cancelled:  # raised once every call has ended: the spend is complete
            keep_when_cut_short(cancelled, usage=spend.usage, cost_usd=spend.cost_usd)
            raise
        for result in results:
            # one that stops the run goes first, whichever call met it: a refused key, a server asking every
            # caller to wait (an earlier call's scoring error raised first would hide it)
            if isinstance(result, AuthenticationError):
                raise result
        for result in results:
            if isinstance(result, BaseException):
                if isinstance(result, SpentScoringError):
                    raise spend.error(str(result))
                if isinstance(result, EvalHarnessError | ValueError):
                    raise spend.error(f"{type(result).__name__}: {result}")
                raise result
        return list(results)

    def notes(self, key: str) -> list[str]:
        if self.settings.judge is not None:
            return []
        # the report's note, said before the run too: its table's empty row is the run's only other sign
        return [
            f"note: {key}: will be skipped on every sample: no --judge-model was given (pass one to score with this "
            "judge)"
        ]

    def _available(self) -> CompletionClient:
        if self.settings.judge is None:
            raise SkipScore("no judge model configured (pass --judge-model to use this scorer)")
        return self.settings.judge


class RubricJudge(_Judge):
    """Per-criterion scores on a numeric scale, normalised to [0, 1], averaged over n samples."""

    def __init__(
        self,
        settings: JudgeSettings,
        criteria: dict[str, str],
        weights: dict[str, float],
        scale: tuple[float, float],
        samples: int,
    ) -> None:
        super().__init__(settings)
        self.criteria = criteria
        self.weights = weights
        self.scale = scale
        self.samples = samples

    def reply_format(self) -> str:
        """The exact reply shape the parser accepts, appended to every rubric."""
        low, high = self.scale
        example = ", ".join(
            f'"{name}": {{"reason": "<one or two sentences>", "score": <{low:g}-{high:g}>}}' for name in self.criteria
        )
        return (
            "Reply with only a JSON object, no other text, in exactly this form:\n"
            f"{{{example}}}\n"
            f"Each score is a number from {low:g} (worst) to {high:g} (best)."
        )

    def _normalised(self, verdict: dict[str, tuple[float, str]]) -> tuple[float, dict[str, float]]:
        low, high = self.scale
        per_criterion = {name: (score - low) / (high - low) for name, (score, _) in verdict.items()}
        total = sum(self.weights.values())
        return sum(per_criterion[n] * w for n, w in self.weights.items()) / total, per_criterion

    def _variables(self, output: str, sample: Sample) -> dict[str, Any]:
        return {
            "output": output,
            "references": sample.targets,
            "criteria": [{"name": n, "description": d} for n, d in self.criteria.items()],
            "scale_min": _plain(self.scale[0]),
            "scale_max": _plain(self.scale[1]),
        }

    def preflight(self, sample: Sample) -> None:
        self._messages(sample, self._variables(PLACEHOLDER_OUTPUT, sample), self.reply_format())

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        judge = self._available()
        messages = self._messages(sample, self._variables(output, sample), self.reply_format())
        names = list(self.criteria)
        spend = _Spend()

        def parse(text: str) -> dict[str, tuple[float, str]]:
            return parse_rubric_verdict(text, names, *self.scale)

        seeded = self.samples > 1
        calls = [self._ask(judge, messages, sample, i, seeded, parse, spend) for i in range(self.samples)]
        verdicts: list[dict[str, tuple[float, str]]] = await self._gather(calls, spend)
        values, parts = zip(*(self._normalised(v) for v in verdicts), strict=True)
        mean = statistics.fmean(values)
        breakdown = {name: statistics.fmean(p[name] for p in parts) for name in names}
        spread = max(values) - min(values)
        reasons = "; ".join(
            f"{name} {score:g}/{self.scale[1]:g}: {reason[:_REASON_CHARS]}"
            for name, (score, reason) in verdicts[0].items()
        )
        consistency = f" over {self.samples} samples (spread {spread:.2f})" if self.samples > 1 else ""
        return spend.score(
            min(1.0, max(0.0, mean)),
            f"judge {mean:.3f}{consistency}: {reasons}",
            "rubric",
            samples=list(values),
            raw=[{name: score for name, (score, _) in v.items()} for v in verdicts],
            mean=mean,
            spread=spread,
            stdev=statistics.pstdev(values),
            breakdown=breakdown,
        )


class PairwiseJudge(_Judge):
    """The output against a baseline, asked in both orders; disagreement between orders is position bias."""

    def __init__(self, settings: JudgeSettings, baseline: str) -> None:
        super().__init__(settings)
        self.baseline = baseline

    REPLY_FORMAT = (
        "Reply with only a JSON object, no other text, in exactly this form:\n"
        '{"reason": "<one or two sentences>", "winner": "A" or "B" or "tie"}'
    )

    def preflight(self, sample: Sample) -> None:
        shown = {"output": PLACEHOLDER_OUTPUT, "response_a": PLACEHOLDER_OUTPUT, "response_b": PLACEHOLDER_OUTPUT}
        self._messages(sample, shown, self.REPLY_FORMAT)

    def _baseline_text(self, sample: Sample) -> str:
        if self.baseline == "target":
            return sample.targets[0]
        value = sample.metadata.get(self.baseline.removeprefix("metadata."))
        if not isinstance(value, str):
            raise ValueError(f"sample {sample.id} has no text in {self.baseline}")
        return value

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        judge = self._available()
        baseline = self._baseline_text(sample)
        spend = _Spend()
        orders = (("A", output, baseline), ("B", baseline, output))
        calls = [
            self._ask(
                judge,
                self._messages(
                    sample, {"output": output, "response_a": first, "response_b": second}, self.REPLY_FORMAT
                ),
                sample,
                index,
                False,
                parse_pairwise_verdict,
                spend,
            )
            for index, (_, first, second) in enumerate(orders)
        ]
        verdicts: list[tuple[str, str]] = await self._gather(calls, spend)
        outcomes = [
            0.5 if winner == "tie" else float(winner == position)
            for (position, _, _), (winner, _) in zip(orders, verdicts, strict=True)
        ]
        flip = outcomes[0] != outcomes[1]
        preference = sum(1 if w == "A" else -1 if w == "B" else 0 for w, _ in verdicts)
        bias = None if not flip or preference == 0 else ("first" if preference > 0 else "second")
        value = statistics.fmean(outcomes)
        words = {1.0: "wins", 0.5: "ties", 0.0: "loses"}
        summary = f"output {words[outcomes[0]]} as A, {words[outcomes[1]]} as B"
        caveat = f"; the verdict flips under position swap (bias toward the {bias} position)" if bias else ""
        if flip and not bias:
            caveat = "; the verdict flips under position swap"
        return spend.score(
            value,
            f"{summary} → {value:.2f}{caveat}: {verdicts[0][1][:_REASON_CHARS]}",
            "pairwise",
            orders=[
                {"output_position": position, "winner": winner}
                for (position, _, _), (winner, _) in zip(orders, verdicts, strict=True)
            ],
            outcomes=outcomes,
            flip=flip,
            position_bias=bias,
        )


def _plain(value: float) -> float | int:
    """3.0 → 3, so a rubric shows '1 to 5', not '1.0 to 5.0'."""
    return int(value) if value.is_integer() else value


def _criteria(criteria: Any) -> dict[str, str]:
    if isinstance(criteria, list) and all(isinstance(c, str) for c in criteria):
        criteria = {c: "" for c in criteria}
    if not isinstance(criteria, dict) or not criteria:
        raise ValueError("criteria must be a non-empty table name = description (or a list of names)")
    for name, description in criteria.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"criterion name {name!r} must be an identifier (letters, digits, _)")
        if not isinstance(description, str):
            raise ValueError(f"criterion {name!r}: description must be a string")
    return dict(criteria)


def _no_judge(optional: bool, judge: CompletionClient | None) -> None:
    if judge is None and not optional:
        raise ValueError("needs a judge model; pass --judge-model, or set optional = true to skip it without one")


def _sampling(temperature: float, max_tokens: int) -> None:
    """The judge's sampling options, checked as a task's [generation] is (temperature 0-2, max_tokens >= 1):
    out of range, every judge call would fail (a request the API refuses), sample after sample."""
    try:
        GenerateConfig(temperature=temperature, max_tokens=max_tokens)
    except ValidationError as exc:
        location, message = first_problem(exc)
        raise ValueError(f"{location}: {message}") from None


@register_scorer("rubric_judge")
def rubric_judge(
    rubric: str,
    criteria: dict[str, str] | list[str],
    scale: list[float] | None = None,
    weights: dict[str, float] | None = None,
    samples: int = 1,
    temperature: float | None = None,
    max_tokens: int = 512,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    optional: bool = False,
    judge: CompletionClient | None = None,
    where: str = "task",
) -> Scorer:
    """A rubric judge. ``scale`` [min, max] (default [1, 5]); ``samples`` n > 1 for self-consistency
    (temperature then defaults to 0.7, else 0); ``optional`` skips it, with a stated reason, when the run
    has no ``--judge-model``."""
    _no_judge(optional, judge)
    named = _criteria(criteria)
    bounds = [1.0, 5.0] if scale is None else [float(v) for v in scale]
    if len(bounds) != 2 or not bounds[0] < bounds[1]:
        raise ValueError(f"scale must be [min, max] with min < max, got {scale!r}")
    low, high = bounds
    if samples < 1:
        raise ValueError("samples must be at least 1")
    chosen = dict.fromkeys(named, 1.0) if weights is None else dict(weights)
    if set(chosen) != set(named) or any(w < 0 for w in chosen.values()) or not sum(chosen.values()):
        raise ValueError("weights must give a non-negative weight to every criterion, and not all zero")
    if temperature is None:
        temperature = 0.7 if samples > 1 else 0.0
    _sampling(temperature, max_tokens)
    settings = JudgeSettings(judge, find_rubric(rubric, where), system_prompt, temperature, max_tokens)
    return RubricJudge(settings, named, chosen, (low, high), samples)


@register_scorer("pairwise_judge")
def pairwise_judge(
    rubric: str = "judge_pairwise.jinja2",
    baseline: str = "target",
    temperature: float = 0.0,
    max_tokens: int = 512,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    optional: bool = False,
    judge: CompletionClient | None = None,
    where: str = "task",
) -> Scorer:
    """Output vs ``baseline`` (``target`` or ``metadata.<key>``) in both orders: 1 win, 0.5 tie, 0 loss,
    averaged over the two orders; flips and position bias are recorded in the metadata."""
    _no_judge(optional, judge)
    if baseline != "target" and not baseline.startswith("metadata."):
        raise ValueError(f"baseline must be 'target' or 'metadata.<key>', got {baseline!r}")
    _sampling(temperature, max_tokens)
    settings = JudgeSettings(judge, find_rubric(rubric, where), system_prompt, temperature, max_tokens)
    return PairwiseJudge(settings, baseline)


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "PLACEHOLDER_OUTPUT",
    "JudgeSettings",
    "PairwiseJudge",
    "RubricJudge",
    "VerdictError",
    "find_rubric",
    "pairwise_judge",
    "parse_pairwise_verdict",
    "parse_rubric_verdict",
    "rubric_judge",
]
