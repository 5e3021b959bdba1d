"""The wrapper every provider call goes through: cache, rate limits, adaptive concurrency and retries.

Providers stay pure wire translation; this module decides when a call may start and how often and how long
to try again. For one call, in order:

1. ``--cache``: a stored answer for the same (provider, server, model, request body, epoch) is returned at
   once with ``cached=True`` and no call is made.
2. Admission: the adaptive concurrency limit (halved on a 429 for the whole run, then climbing back by one
   slot per window of successes), a run-wide pause after a 429 that named a wait, and the ``--rpm`` /
   ``--tpm`` budgets (shared by all in-flight samples; tokens are estimated from the request before the
   call and corrected with the reported usage after it).
3. The call. A transient failure is retried with tenacity: exponential backoff with jitter, or the
   server's ``Retry-After`` / reset time when it gave one; ``--max-retries`` bounds the retries.

Time a sample spends waiting in 2 or 3 is its ``backoff_s``. The happy path calls the provider directly:
tenacity costs ~70 µs a call, more than a whole zero-latency sample, so it takes over only after a first
transient failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eval_harness.cache import Origin, ResponseCache, cache_key, default_cache_dir
from eval_harness.config import RunConfig, redact
from eval_harness.errors import AuthenticationError, ProviderError
from eval_harness.providers.base import Provider, estimate_tokens
from eval_harness.types import Completion, GenerateRequest

if TYPE_CHECKING:
    from tenacity import RetryCallState


@dataclass
class GenerationOutcome:
    """A completion or the error that ended the attempts, with what the attempts cost."""

    completion: Completion | None
    error: ProviderError | None
    attempts: int
    retries: dict[str, int] = field(default_factory=dict)
    backoff_s: float = 0.0


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed call is tried again."""

    max_retries: int = 5
    initial_wait_s: float = 0.5
    max_wait_s: float = 60.0


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and not isinstance(exc, AuthenticationError) and (exc.retry_cause is not None)


class RateLimiter:
    """A per-minute budget shared by every call of a run (requests, or tokens), paced without bursts.

    Virtual scheduling (GCRA): each call books ``cost`` units of the budget at the earliest free time and
    waits until then, so callers are served in arrival order and in any window of T seconds at most
    ``T × per_minute / 60`` units plus one call's cost start. A call whose real cost differs from its
    estimate corrects the schedule with ``adjust``.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.seconds_per_unit = 60.0 / per_minute
        self._clock = clock
        self._next_free = -float("inf")

    def reserve(self, cost: float = 1.0) -> float:
        """Book ``cost`` units; returns how many seconds the caller must wait before starting."""
        now = self._clock()
        start = max(now, self._next_free)
        self._next_free = start + cost * self.seconds_per_unit
        return start - now

    def adjust(self, delta: float) -> None:
        """Correct a booking by ``delta`` units (negative when the call used less than estimated)."""
        self._next_free += delta * self.seconds_per_unit


class AdaptiveConcurrency:
    """How many calls may be in flight: the run's ``--concurrency``, halved on a 429, regained slowly.

    A 429 cuts the limit in half (at most once per ``cooldown_s``, so one burst of 429s is one cut) and may
    pause every new call until the server's stated time. Each success then adds ``1 / limit`` slots: the
    limit climbs back by about one slot per window of ``limit`` successes (additive increase).
    """

    def __init__(self, maximum: int, cooldown_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.maximum = maximum
        self.limit = float(maximum)
        self.in_flight = 0
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._last_cut = -float("inf")
        self._pause_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.max_in_flight = 0

    @property
    def reduced(self) -> bool:
        """True while the limit is below the maximum or a pause is pending."""
        return self.limit < self.maximum or self._pause_until > self._clock()

    async def acquire(self) -> float:
        """Wait for a slot; returns the seconds spent waiting."""
        if (
            not self._waiters
            and self.in_flight < int(self.limit)
            and (not self._pause_until or self._pause_until <= self._clock())
        ):
            self._take()
            return 0.0
        started = self._clock()
        woken = False  # a woken caller keeps its place: it goes back to the front, not the end
        while True:
            pause = self._pause_until - self._clock()
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            if self.in_flight < int(self.limit) and (woken or not self._waiters):
                break
            waiter = asyncio.get_running_loop().create_future()
            if woken:
                self._waiters.appendleft(waiter)
            else:
                self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # pass on a wake-up this cancelled caller cannot use
                raise
            woken = True
        self._take()
        return self._clock() - started

    def _take(self) -> None:
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight

    def release(self) -> None:
        """Free a slot."""
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def on_success(self) -> None:
        """One call succeeded: climb back towards the maximum."""
        if self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
            self._wake()

    def on_rate_limit(self, retry_after: float | None) -> None:
        """A 429: fewer calls in flight for the whole run, and a pause when the server named a wait."""
        now = self._clock()
        if now - self._last_cut >= self.cooldown_s:
            self._last_cut = now
            self.limit = max(1.0, self.limit / 2)
        if retry_after is not None and retry_after > 0:
            self._pause_until = max(self._pause_until, now + retry_after)


@dataclass
class CallTally:
    """What one sample's calls cost: attempts, retries by cause, seconds waited (the caller may hold it, to
    know what was spent when it cancels the calls)."""

    attempts: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    waited: float = 0.0
    waiting_until: float = 0.0
    """When the wait counted last ends (``time.monotonic``): a cancellation before then did not spend it all."""

    def wait(self, seconds: float) -> None:
        """Count a wait about to begin."""
        self.waited += seconds
        self.waiting_until = time.monotonic() + seconds


class Gateway:
    """Calls ``provider.generate`` through cache, admission and retries; ``AuthenticationError`` passes through."""

    def __init__(
        self,
        provider: Provider,
        policy: RetryPolicy | None = None,
        *,
        concurrency: int | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.provider = provider
        self.policy = policy or RetryPolicy()
        self.retries_by_cause: Counter[str] = Counter()
        self.backoff_s = 0.0
        self.concurrency = AdaptiveConcurrency(concurrency or provider.context.concurrency)
        self.rpm = RateLimiter(rpm) if rpm else None
        self.tpm = RateLimiter(tpm) if tpm else None
        self.cache = cache
        self._cache_scope = str(getattr(provider, "cache_scope", type(provider).provider_name))
        self._secrets = provider.secrets()
        self.origin: Origin | None = None
        """The run session calling (set by the runner): stored with each answer it caches."""
        self._exponential: Any = None  # tenacity is imported on the first retry, not at start-up

    @classmethod
    def from_config(cls, provider: Provider, config: RunConfig) -> Gateway:
        """The gateway a run uses, from its flags."""
        cache = None
        if config.cache:
            directory = config.cache_dir or provider.context.settings.cache_dir or default_cache_dir()
            cache = ResponseCache(directory)
            cache.check_writable()
        return cls(
            provider,
            RetryPolicy(max_retries=config.max_retries),
            concurrency=config.concurrency,
            rpm=config.rpm,
            tpm=config.tpm,
            cache=cache,
        )

    async def generate(self, request: GenerateRequest, tally: CallTally | None = None) -> GenerationOutcome:
        """One generation: from the cache, or called with admission and retries; never raises ``ProviderError``.

        ``tally`` (new and empty) receives the attempts, retries and waits as they happen: a caller that
        cancels the generation (a per-sample timeout) still knows what it cost (see ``cancelled``)."""
        key = None
        if self.cache is not None:
            body = self.provider.request_body(request)
            if body is not None:
                stop = self.provider.stop_applied_after(request)
                key = cache_key(self._cache_scope, self.provider.model, body, request.epoch, stop)
                entry = self.cache.entry(key)
                if entry is not None:
                    hit, paid_by = entry
                    if paid_by is not None and self.origin is not None and paid_by.earlier_session_of(self.origin):
                        # paid by an earlier session of this run that was killed before recording it: the answer
                        # and its cost are this run's, not a free cache hit
                        return GenerationOutcome(hit.model_copy(update={"cached": False}), None, 0)
                    # an answer served from disk costs nothing, whoever asked (the model or a judge)
                    return GenerationOutcome(hit.model_copy(update={"cached": True, "cost_usd": 0.0}), None, 0)
        tally = tally if tally is not None else CallTally()
        try:
            completion = await self._attempt(request, tally)
        except ProviderError as exc:
            if not _is_transient(exc) or self.policy.max_retries == 0:
                return self._outcome(None, exc, tally)
            retried, error = await self._retry(request, exc, tally)
            if retried is None:
                return self._outcome(None, error, tally)
            completion = retried
        completion = self._without_secrets(completion)
        if key is not None and self.cache is not None:
            await self._store(key, completion)
        return self._outcome(completion, None, tally)

    def _without_secrets(self, completion: Completion) -> Completion:
        """The answer without the provider's keys: a server or gateway that reflects the request's headers into
        its answer must not have the key stored (records, cache) or shown."""
        secrets = self._secrets
        if not secrets:
            return completion
        text, thinking = redact(completion.text, secrets), completion.thinking
        thinking = redact(thinking, secrets) if thinking else thinking
        if text == completion.text and thinking == completion.thinking:
            return completion
        return completion.model_copy(update={"text": text, "thinking": thinking})

    def cancelled(self, tally: CallTally, error: ProviderError) -> GenerationOutcome:
        """The outcome of a generation cancelled from outside (``tally`` as it was when cancelled; a wait the
        cancellation cut short counts for the time it lasted)."""
        tally.waited = max(0.0, tally.waited - max(0.0, tally.waiting_until - time.monotonic()))
        return self._outcome(None, error, tally)

    def _outcome(
        self, completion: Completion | None, error: ProviderError | None, tally: CallTally
    ) -> GenerationOutcome:
        if tally.retries:
            self.retries_by_cause.update(tally.retries)
        self.backoff_s += tally.waited
        return GenerationOutcome(completion, error, tally.attempts, tally.retries, tally.waited)

    async def _attempt(self, request: GenerateRequest, tally: CallTally) -> Completion:
        """One call: admission, then the provider; feeds the adaptive limit and the token budget."""
        concurrency = self.concurrency
        tally.waited += await concurrency.acquire()
        estimate = 0
        try:
            if self.rpm is not None or self.tpm is not None:
                wait = self.rpm.reserve() if self.rpm is not None else 0.0
                if self.tpm is not None:
                    estimate = estimate_tokens(request.messages) + (request.config.max_tokens or 0)
                    wait = max(wait, self.tpm.reserve(estimate))
                if wait > 0:
                    tally.wait(wait)  # counted before: a timeout may cancel the wait (see ``cancelled``)
                    await asyncio.sleep(wait)
            tally.attempts += 1
            completion = await self.provider.generate(request)
        except ProviderError as exc:
            if exc.retry_cause == "rate_limit":
                concurrency.on_rate_limit(exc.retry_after)
            raise
        finally:
            concurrency.release()
        if self.tpm is not None:
            usage = completion.usage
            self.tpm.adjust(usage.prompt_tokens + usage.completion_tokens - estimate)
        concurrency.on_success()
        return completion

    async def _retry(
        self, request: GenerateRequest, first_failure: ProviderError, tally: CallTally
    ) -> tuple[Completion | None, ProviderError | None]:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        if self._exponential is None:
            initial = self.policy.initial_wait_s
            self._exponential = wait_exponential_jitter(multiplier=initial, jitter=initial, max=self.policy.max_wait_s)

        def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            if isinstance(error, ProviderError) and error.retry_cause is not None:
                tally.retries[error.retry_cause] = tally.retries.get(error.retry_cause, 0) + 1
            tally.wait(state.next_action.sleep if state.next_action is not None else 0.0)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        replayed = False
        try:
            async for attempt in retrying:
                with attempt:
                    # The first attempt already failed outside tenacity; replay it so tenacity waits.
                    if not replayed:
                        replayed = True
                        raise first_failure
                    return await self._attempt(request, tally), None
        except AuthenticationError:
            raise
        except ProviderError as exc:
            return None, exc
        return None, first_failure  # pragma: no cover - tenacity either returns or raises

    async def _store(self, key: str, completion: Completion) -> None:
        assert self.cache is not None
        with contextlib.suppress(OSError):  # a full or read-only disk loses a cache entry, not the sample
            await asyncio.to_thread(self.cache.put, key, completion, self.origin)

    async def complete(self, request: GenerateRequest) -> Completion:
        """``generate`` for callers that want a completion or an exception (judges)."""
        outcome = await self.generate(request)
        if outcome.completion is None:
            raise outcome.error or ProviderError("no completion")
        return outcome.completion

    def _wait(self, state: RetryCallState) -> float:
        """The server's Retry-After / reset time (plus up to 10% jitter) when given, else exponential backoff."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, ProviderError) and error.retry_after is not None:
            wait = max(error.retry_after, 0.0)
            return min(wait + random.uniform(0, 0.1 * wait), self.policy.max_wait_s)
        return float(self._exponential(state))

    async def aclose(self) -> None:
        """Close the provider's connections."""
        await self.provider.aclose()


__all__ = ["AdaptiveConcurrency", "CallTally", "Gateway", "GenerationOutcome", "RateLimiter", "RetryPolicy"]
