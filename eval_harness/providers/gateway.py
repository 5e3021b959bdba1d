"""The wrapper every provider call goes through: cache, rate limits, adaptive concurrency and retries.

Providers stay pure wire translation; this module decides when a call may start and how often and how long
to try again. For one call, in order:

1. ``--cache``: a stored answer for the same (provider, server, model, request body, epoch) is returned at
   once with ``cached=True`` and no call is made.
2. Admission: the adaptive concurrency limit (halved on a 429 for the whole run, then climbing back by one
   slot per window of successes), a run-wide pause after a 429 that named a wait, and the ``--rpm`` /
   ``--tpm`` budgets (shared by all in-flight samples; tokens are estimated from the request before the
   call and corrected with the reported usage after it).
3. The call. A transient failure is retried with tenacity (``_retry.Retrier``, which the embeddings client
   shares): exponential backoff with jitter, or the server's ``Retry-After`` / reset time when it gave one;
   ``--max-retries`` bounds the retries. A provider that raises an exception of its own (not an
   ``EvalHarnessError``: a vendor SDK's error, a bug) or returns something other than a ``Completion`` fails
   that sample only (``ProviderContractError``), not retried.

A sample's ``backoff_s`` is the time between its attempts: from a failure to the next attempt's admission
(the tenacity wait, then any run-wide pause after a 429). Queueing for a slot and ``--rpm``/``--tpm``
pacing are not backoff and are not counted. The happy path calls the provider directly:
tenacity costs ~70 µs a call, more than a whole zero-latency sample, so it takes over only after a first
transient failure.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from eval_harness.cache import SCORED_EPOCH, Origin, ResponseCache, cache_key, default_cache_dir
from eval_harness.config import RunConfig, redact, redact_shown
from eval_harness.errors import (
    EvalHarnessError,
    ProviderConnectionError,
    ProviderContractError,
    ProviderError,
    QuotaExhaustedError,
    ServerUnreachableError,
    spoken_duration,
)
from eval_harness.providers._admission import AdaptiveConcurrency, Booking, RateLimiter
from eval_harness.providers._retry import Retrier, RetryPolicy
from eval_harness.providers.base import Provider, estimate_tokens
from eval_harness.types import Completion, GenerateRequest

_CONTRACT_MESSAGE_LIMIT = 600
"""Characters of a foreign exception's text kept in a record (a vendor SDK may put a whole response in it)."""


@dataclass
class GenerationOutcome:
    """A completion or the error that ended the attempts, with what the attempts cost."""

    completion: Completion | None
    error: ProviderError | None
    attempts: int
    retries: dict[str, int] = field(default_factory=dict)
    backoff_s: float = 0.0


@dataclass
class _KeyStores:
    """The puts of one cache key under way: their lock, and how many hold or wait for it."""

    lock: asyncio.Lock
    users: int = 0


@dataclass
class ScoringCalls:
    """The calls one sample's scorers make (a judge's), set in ``SCORING_CALLS`` by the runner while it scores.

    Each call's tally is kept here as it is made, so the record counts the judge's retries beside the model's, a
    call cut off by the scoring timeout included; and a judge's retry queueing for a slot stops the sample's
    scoring clock (``on_queue``) as a generation's retry stops its own."""

    on_queue: Callable[[bool], None]
    tallies: list[CallTally] = field(default_factory=list)

    def retries(self) -> dict[str, int]:
        """The retries of the calls by cause, each cause named ``judge_<cause>`` (``JUDGE_RETRY``)."""
        retries: dict[str, int] = {}
        for tally in self.tallies:
            for cause, count in tally.retries.items():
                retries[JUDGE_RETRY + cause] = retries.get(JUDGE_RETRY + cause, 0) + count
        return retries


JUDGE_RETRY = "judge_"
"""How a record's retries name a judge's causes (``judge_rate_limit``), apart from the model's."""


SCORING_CALLS: ContextVar[ScoringCalls | None] = ContextVar("eval_harness_scoring_calls", default=None)
"""The calls of the sample being scored (see ``ScoringCalls``); None outside scoring."""

TOO_LONG_IN_A_ROW = 3
"""Calls given up in a row on a wait longer than a retry may wait that stop the run (see ``Gateway``)."""


@dataclass
class CallTally:
    """What one sample's calls cost: attempts, retries by cause, seconds of backoff (the caller may hold it, to
    know what was spent when it cancels the calls)."""

    attempts: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    waited: float = 0.0
    """Seconds between attempts (backoff), the wait in progress not included (see ``end_wait``)."""
    on_first_send: Callable[[], None] | None = None
    """Called once, when the first request may be sent (admitted and paced): the per-sample clock starts."""
    on_queue: Callable[[bool], None] | None = None
    """Called with True when a retry starts queueing for admission (a slot, ``--rpm``, ``--tpm``) and with False
    when it is admitted: queueing is not the sample's time, so its clock stops meanwhile."""
    clock_running: bool = False
    """The caller's clock runs before the first request (a sample being scored, whose judge calls): the first
    attempt's queueing stops it too (a generation's clock starts only once its first request may be sent)."""
    unreachable: ProviderError | None = None
    """The last attempt's error when it found no server (refused, no such host, connect timeout), else None:
    what ``Gateway`` checks, when the sample ends so, for a server gone (and quotes, when it is)."""
    first_refusal: int | None = None
    """The number of this sample's first request that found no server (requests are numbered as sent)."""
    last_failure: ProviderError | None = None
    """The last attempt's error, if one failed: what a sample cut short by its timeout was retrying after."""
    first_sent_at: float | None = None
    """When the first request was sent (monotonic): how long its attempts took, waits and connect timeouts in."""
    _wait_started: float | None = None

    def begin_wait(self) -> None:
        """A wait between attempts begins."""
        if self._wait_started is None:
            self._wait_started = time.monotonic()

    def end_wait(self, excluding: float = 0.0) -> None:
        """The wait in progress (if any) ends: count the time it lasted, less ``excluding`` seconds of it (queued
        for a slot: not backoff)."""
        if self._wait_started is not None:
            self.waited += max(0.0, time.monotonic() - self._wait_started - excluding)
            self._wait_started = None

    def first_send(self) -> None:
        if self.first_sent_at is None:
            self.first_sent_at = time.monotonic()
        callback, self.on_first_send = self.on_first_send, None
        if callback is not None:
            callback()


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
        self.retrier = Retrier(self.policy)
        self.retries_by_cause: Counter[str] = Counter()
        self.backoff_s = 0.0
        self.concurrency = AdaptiveConcurrency(
            concurrency or provider.context.concurrency, max_pause_s=self.policy.max_wait_s
        )
        self.rpm = RateLimiter(rpm) if rpm else None
        self.tpm = RateLimiter(tpm) if tpm else None
        self._pacing = asyncio.Lock()  # callers wait for the budgets in arrival order; only the first books
        self.cache = cache
        self.cache_failures = 0
        """Answers that could not be stored in the cache (a full or read-only disk): said at the run's end."""
        self.cache_failure: str | None = None
        """The first such failure, as the OS said it."""
        self._storing: dict[str, _KeyStores] = {}
        self._cache_scope = str(getattr(provider, "cache_scope", type(provider).provider_name))
        self.secrets = list(dict.fromkeys(provider.secrets()))  # a subclass may add a key its options hold too
        """The provider's secrets, each once: taken out of its answers and of the errors it raises."""
        self.origin: Origin | None = None
        """The run session calling (set by the runner): stored with each answer it caches."""
        self._connected = False  # whether any call of this session got a connection to the server
        # Is the server gone (``_stop_if_server_down``)? Requests are numbered as they are sent, so that only an
        # answer to a request sent after a refusal (no connection: refused, no such host, connect timeout) says
        # the server is back: one sent before (a graceful shutdown drains them) is no sign of it.
        self._sent = 0
        # requests in flight -> whether one sent after it was refused meanwhile: a refusal comes back at once, so
        # a request that outlives a later one's refusal got a connection, and the server is there
        self._in_flight: dict[int, bool] = {}
        self._refusals = 0  # refusals in a row (no answer to a request sent since the first): --max-retries 0's rule
        self._first_refusal = -1  # the number of that streak's first refused request (-1: no streak)
        self._streak_since = 0.0  # when that request was refused (monotonic)
        self._last_refused_at = 0.0  # when the streak's latest refusal came: refusals seen for this long
        self._cut_while_refused = 0  # samples cut short by their timeout inside the grace, recorded as timeouts
        self._cut_in_streak = 0  # those of the refusals going on now
        self._streak_refusal: ProviderError | None = None  # the latest refusal such a sample saw
        self._last_answered = -1  # the highest number of a request the server answered
        self._too_long_in_a_row = 0  # samples given up on a wait longer than a retry may wait, with no answer since

    @classmethod
    def from_config(cls, provider: Provider, config: RunConfig) -> Gateway:
        """The gateway a run uses, from its flags."""
        cache = None
        if config.cache and provider.cacheable:  # no cache directory is made (or required) for the mock
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
        cancels the generation (a per-sample timeout) still knows what it cost (see ``cancelled``); its
        ``on_first_send`` is called when the first request may be sent."""
        key, origin = None, None
        if self.cache is not None:
            body = self.provider.request_body(request)
            if body is not None:
                stop = self.provider.stop_applied_after(request)
                key = cache_key(self._cache_scope, self.provider.model, body, request.epoch, stop, SCORED_EPOCH.get())
                origin = self._origin_of(request)
                entry = self.cache.entry(key)
                if entry is not None:
                    hit = entry.completion
                    if origin is not None and entry.paid_by(origin):
                        # paid by an earlier session of this run that was killed before recording it: the answer
                        # and its cost are this run's, not a free cache hit
                        return GenerationOutcome(hit.model_copy(update={"cached": False}), None, 0)
                    # an answer served from disk costs nothing, whoever asked (the model or a judge)
                    return GenerationOutcome(hit.model_copy(update={"cached": True, "cost_usd": 0.0}), None, 0)
        if tally is None:
            scoring = SCORING_CALLS.get()
            if scoring is None:
                tally = CallTally()
            else:
                tally = CallTally(on_queue=scoring.on_queue, clock_running=True)
                scoring.tallies.append(tally)
        try:
            completion = await self._attempt(request, tally)
        except ProviderError as exc:
            if self.retrier.gives_up_at_once(exc):
                return self._outcome(None, self.retrier.given_up(exc), tally)
            retried, error = await self._retry(request, exc, tally)
            if retried is None:
                return self._outcome(None, error, tally)
            completion = retried
        completion = self._without_secrets(completion)
        if key is not None and self.cache is not None:
            await self._store(key, completion, origin)
        return self._outcome(completion, None, tally)

    def _without_secrets(self, completion: Completion) -> Completion:
        """The answer without the provider's keys: a server or gateway that reflects the request's headers into
        its answer must not have the key stored (records, cache) or shown."""
        secrets = self.secrets
        if not secrets:
            return completion
        # the metadata too: a request id, model name or finish reason is the server's text as much as the answer
        fields = {
            name: value
            for name in ("text", "thinking", "request_id", "model", "finish_reason")
            if (value := getattr(completion, name))
        }
        # one pass over the fields joined (a key holds no NUL, so no match crosses one): a third of the CPU of
        # a pass per field, on every answer of a run with a key
        joined = "\0".join(fields.values())
        if joined.count("\0") == len(fields) - 1:  # else a field holds a NUL of its own: one pass each
            cleaned = redact(joined, secrets)
            if cleaned == joined:
                return completion
            return completion.model_copy(update=dict(zip(fields, cleaned.split("\0"), strict=True)))
        changed = {name: clean for name, value in fields.items() if (clean := redact(value, secrets)) != value}
        return completion.model_copy(update=changed) if changed else completion

    def cancelled(self, tally: CallTally, error: ProviderError) -> GenerationOutcome:
        """The outcome of a generation cancelled from outside (``tally`` as it was when cancelled; a wait the
        cancellation cut short counts for the time it lasted). A sample cut short by its timeout while it
        retried a server that refused it stops the run like one out of retries (``_stop_if_server_down``), once
        the server has refused for as long as a sample's retries wait in all: a --timeout shorter than the
        backoff would otherwise hide a dead server behind per-sample timeouts, and without that grace a restart
        the backoff rides out would stop the run whenever a sample's deadline fell inside it."""
        tally.end_wait()
        # the record says why it had no answer, not only that time ran out (a 429's wait, a 5xx, a refusal)
        if tally.unreachable is not None:
            error = error.with_message(f"{error} (retrying a server that refused it: {tally.unreachable})")
        elif tally.last_failure is not None:
            error = error.with_message(f"{error} (retrying after: {tally.last_failure})")
        return self._outcome(None, error, tally, cut_short=True)

    def _outcome(
        self, completion: Completion | None, error: ProviderError | None, tally: CallTally, *, cut_short: bool = False
    ) -> GenerationOutcome:
        if error is not None:
            self._stop_if_server_down(error, tally, cut_short=cut_short)
            self._stop_if_every_caller_waits(error)
        else:
            self._too_long_in_a_row = 0
        if tally.retries:
            self.retries_by_cause.update(tally.retries)
        self.backoff_s += tally.waited
        return GenerationOutcome(completion, error, tally.attempts, tally.retries, tally.waited)

    def _stop_if_every_caller_waits(self, error: ProviderError) -> None:
        """Raise ``QuotaExhaustedError`` when ``TOO_LONG_IN_A_ROW`` calls in a row (a sample's, or a judge's), with no
        answer between them, were given up on a stated wait longer than a retry may wait (a 429 asking for 2
        minutes): every call after them would fail the same way at once, a run of errors in a second; resume it
        after the wait."""
        if not self.retrier.too_long(error):
            return
        self._too_long_in_a_row += 1
        if self._too_long_in_a_row >= TOO_LONG_IN_A_ROW:
            wait = spoken_duration(error.retry_after or 0.0)
            raise QuotaExhaustedError(
                f"the server asked {TOO_LONG_IN_A_ROW} requests in a row to wait {wait}, longer than a retry may wait, "
                f"so the run stops; resume it after that ({error})"
            )

    def _stop_if_server_down(self, error: ProviderError, tally: CallTally, *, cut_short: bool = False) -> None:
        """Raise ``ServerUnreachableError`` when a sample whose last attempt found no server shows the server is
        gone, not that one request was unlucky: no request of the session ever got a connection (not started,
        wrong port); or, for a sample that retried, no request sent since its first refusal was answered; or,
        for one that did not (``--max-retries 0``), two requests or more were refused in a row with none sent
        since the first of them answered. Either way none may be in flight that outlived the refusal of one sent
        after it (such a request got a connection and waits for its answer: the server is there; one still
        connecting says nothing). Every sample to come would fail the same way, each after its backoff (a
        1,319-sample run took 24 minutes to record nothing but errors), so the run stops and resume picks it up.
        ``error``: how the sample ended; ``cut_short``: by its timeout, while it retried — which, once the server
        has answered, stops the run only when the refusals have lasted the least time a sample out of retries
        would have waited: a sample whose deadline falls inside a shorter outage (a restart) is its timeout."""
        refusal = tally.unreachable
        if refusal is None or not (cut_short or error.unreachable):
            return
        never_reached = not self._connected and not self._connected_since(-1)
        # the time since the first request, not the backoff alone: connect timeouts take time of their own
        took = time.monotonic() - tally.first_sent_at if tally.first_sent_at is not None else tally.waited
        tries = f"{tally.attempts} attempt{'s' if tally.attempts != 1 else ''} over {took:.0f} s"
        if cut_short:
            # how long refusals were seen, not the time since the first: a slow server's first answer after a
            # restart comes one model latency after it is back, and that wait is no outage
            outage_s = self._last_refused_at - self._streak_since if self._refusals else 0.0
            if not never_reached and outage_s < self.policy.least_backoff_s():
                self._cut_while_refused += 1
                self._cut_in_streak += 1
                self._streak_refusal = refusal
                return
            tries = f"cut short by the per-sample timeout before its next try: {tries}"
            error = refusal  # which server and why, not the timeout
        then = self._what_to_do()
        if never_reached:
            proxy = self.provider.proxy
            right = "is the base URL right" if proxy is None else f"are the base URL and the proxy of {proxy} right"
            raise ServerUnreachableError(
                f"{error} ({tries}, and no request of this session reached the server: is it running, and {right}? "
                f"The run stops; {then})"
            )
        first = tally.first_refusal
        if tally.attempts > 1 and first is not None:
            # it retried: judged over its own retries, whose backoff lets the answers of a live server come in
            # (refusals in a row across samples, a few ms apart, also happen behind a half-dead balancer)
            if self._last_answered < first and not self._connected_since(first):
                raise ServerUnreachableError(
                    f"{error} ({tries}; the server stopped answering: no request sent after this sample's first "
                    f"refusal got an answer. The run stops with what it recorded; {then})"
                )
        elif self._refusals >= 2 and not self._connected_since(self._first_refusal):
            raise ServerUnreachableError(
                f"{error} ({tries}; the server stopped answering: {self._refusals} requests in a row found no server, "
                f"and none sent after the first of them got an answer. The run stops with what it recorded; {then})"
            )

    def server_gone_at_end(self) -> ServerUnreachableError | None:
        """Called when no sample is left: the error that stops the run when samples were cut short by their
        timeout inside the grace of refusals that are still going on (no answer to a request sent since they
        began) — a server gone near the end of a run, which the grace would otherwise let end 'complete' with
        those timeouts for answers; None when the server answered since, or no sample was cut so."""
        refusal = self._streak_refusal
        if not self._refusals or not self._cut_in_streak or refusal is None:
            return None
        outage_s = self._last_refused_at - self._streak_since
        return ServerUnreachableError(
            f"{refusal} (the server stopped answering: refused for {outage_s:.0f} s until the run's last sample, "
            "and no request sent after the first refusal got an answer. The run stops with what it recorded; "
            f"{self._what_to_do()})"
        )

    def _what_to_do(self) -> str:
        """How to finish the run once the server is back: a plain resume, unless samples cut short by their
        timeout while it refused were recorded as timeouts (a plain resume keeps them)."""
        cut = self._cut_while_refused
        if not cut:
            return "resume it once the server answers"
        if cut == 1:
            recorded = "1 sample cut short by its timeout while the server refused was recorded as a timeout"
        else:
            recorded = f"{cut} samples cut short by their timeout while the server refused were recorded as timeouts"
        return f"{recorded}: resume with --retry-errors once the server answers"

    def _connected_since(self, first: int) -> bool:
        """Whether a request sent after number ``first`` is in flight with a connection (it outlived the refusal
        of one sent after it: refusals come back at once)."""
        return any(outlived and number > first for number, outlived in self._in_flight.items())

    async def _attempt(self, request: GenerateRequest, tally: CallTally, retrying: str | None = None) -> Completion:
        """One call: admission, then the provider; feeds the adaptive limit and the token budget.

        ``retrying``: the cause of the failure this call retries; the retry counts once it is sent, and the
        wait since that failure (begun by ``_retry``) lasts until the call is admitted, less the time it queued for
        a slot (a pause after a 429 met in admission is backoff, the queue is not; nor is it the sample's time)."""
        concurrency = self.concurrency
        queued = tally.on_queue if retrying is not None or tally.clock_running else None
        if queued is not None:
            queued(True)
        try:
            tally.end_wait(excluding=await concurrency.acquire(first=retrying is not None))
        except BaseException:
            if queued is not None:
                queued(False)
            raise
        booking = None
        sent = -1  # this request's number, once it is sent
        try:
            try:
                if self.rpm is not None or self.tpm is not None:
                    booking = await self._pace(request)
            finally:
                if queued is not None:
                    queued(False)
            tally.first_send()
            sent = self._sent
            self._sent += 1
            self._in_flight[sent] = False
            tally.unreachable = None  # until this request says otherwise (a timeout may cut it connected)
            tally.attempts += 1
            if retrying is not None:
                tally.retries[retrying] = tally.retries.get(retrying, 0) + 1
            try:
                answer: object = await self.provider.generate(request)
            except EvalHarnessError:
                raise  # ours, each with its meaning: ProviderError per sample, AuthenticationError stops the run
            except Exception as exc:
                raise self._foreign(exc) from exc
            if not isinstance(answer, Completion):
                raise self._not_a_completion(answer)
            completion = answer
        except ProviderError as exc:
            tally.last_failure = exc
            tally.unreachable = exc if exc.unreachable else None
            if exc.unreachable:
                if tally.first_refusal is None:
                    tally.first_refusal = sent
                self._refused(sent)
            else:
                self._connected = True
                if not isinstance(exc, ProviderConnectionError):  # a dropped connection is no answer
                    self._answered(sent)  # even an error status, or a read timeout: the server is there
            if exc.retry_cause == "rate_limit" and not self.retrier.too_long(exc):
                # a wait longer than a retry may wait fails its sample at once (or stops the run): pausing
                # every other call for it made a run crawl, each sample waiting out a pause to fail the same way
                concurrency.on_rate_limit(exc.retry_after)
            raise
        finally:
            concurrency.release()
            self._in_flight.pop(sent, None)
        self._connected = True
        self._answered(sent)
        usage = completion.usage
        spent = usage.prompt_tokens + usage.completion_tokens
        if booking is not None and spent > 0:  # no usage reported: the estimate stays spent
            assert self.tpm is not None
            self.tpm.adjust(booking, spent)
        concurrency.on_success()
        return completion

    def _refused(self, sent: int) -> None:
        now = time.monotonic()
        if self._refusals == 0:
            self._first_refusal = sent
            self._streak_since = now
        self._last_refused_at = now
        self._refusals += 1
        for number in self._in_flight:
            if number < sent:
                self._in_flight[number] = True

    def _answered(self, sent: int) -> None:
        self._last_answered = max(self._last_answered, sent)
        if sent > self._first_refusal:  # sent after the streak began: the server is back
            self._refusals = 0
            self._first_refusal = -1
            self._cut_in_streak = 0

    def _foreign(self, error: Exception) -> ProviderContractError:
        """``error``, raised by the provider and none of ours, as this sample's generation error: one line that
        names the provider, without its secrets."""
        try:
            text = str(error)
        except Exception:  # a broken __str__ must not turn one sample's failure into the run's
            text = ""
        text = redact_shown(text, self.secrets, _CONTRACT_MESSAGE_LIMIT, one_line=True)
        text = text or f"{type(error).__name__} with no message"
        return ProviderContractError(type(error).__name__, f"{self.provider.model_id}: {text}")

    def _not_a_completion(self, answer: object) -> ProviderContractError:
        what = "None" if answer is None else type(answer).__name__
        return ProviderContractError("TypeError", f"{self.provider.model_id} returned {what}, expected Completion")

    async def _pace(self, request: GenerateRequest) -> Booking | None:
        """Wait until ``--rpm`` and ``--tpm`` admit the call, then book it; returns its token booking.

        Not a wait between retries, so not backoff; nothing is booked before the call may start, so a caller
        cancelled meanwhile leaves the budgets as they were."""
        rpm, tpm = self.rpm, self.tpm
        estimate = estimate_tokens(request.messages) + (request.config.max_tokens or 0) if tpm is not None else 0
        async with self._pacing:
            while True:
                wait = max(rpm.delay() if rpm is not None else 0.0, tpm.delay(estimate) if tpm is not None else 0.0)
                if wait <= 0:
                    break
                # cut short when a call in flight reports less usage than it booked (--rpm never gives back)
                await (tpm.sleep(wait) if tpm is not None else asyncio.sleep(wait))
            if rpm is not None:
                rpm.take()
            return tpm.take(estimate) if tpm is not None else None

    async def _retry(
        self, request: GenerateRequest, first_failure: ProviderError, tally: CallTally
    ) -> tuple[Completion | None, ProviderError | None]:
        def attempt(cause: str | None) -> Awaitable[Completion]:
            return self._attempt(request, tally, cause)

        try:
            return await self.retrier.again(attempt, first_failure, tally.begin_wait), None
        except ProviderError as exc:
            return None, exc

    def _origin_of(self, request: GenerateRequest) -> Origin | None:
        """Who pays for this request's answer: the run's session and the record asking (a judge's call is the
        scored record's, whose epoch ``SCORED_EPOCH`` holds)."""
        if self.origin is None:
            return None
        scored = SCORED_EPOCH.get()
        epoch = request.epoch if scored is None else scored
        return self.origin._replace(record=f"{request.sample.id}#{epoch}")

    async def _store(self, key: str, completion: Completion, origin: Origin | None) -> None:
        assert self.cache is not None
        # one put of a key at a time: each adds its payer to the entry the last one wrote (two samples of one prompt
        # in flight together), where two threads reading the entry at once would keep one payer
        storing = self._storing.setdefault(key, _KeyStores(asyncio.Lock()))
        storing.users += 1
        try:
            async with storing.lock:
                await asyncio.to_thread(self.cache.put, key, completion, origin)
        except OSError as exc:  # a full or read-only disk loses a cache entry, not the sample: counted, said at the end
            self.cache_failures += 1
            if self.cache_failure is None:
                self.cache_failure = exc.strerror or str(exc)
        finally:
            storing.users -= 1
            if not storing.users:  # one lock per key being stored, not per key ever stored
                del self._storing[key]

    async def complete(self, request: GenerateRequest) -> Completion:
        """``generate`` for callers that want a completion or an exception (judges)."""
        outcome = await self.generate(request)
        if outcome.completion is None:
            raise outcome.error or ProviderError("no completion")
        return outcome.completion

    async def aclose(self) -> None:
        """Close the provider's connections."""
        await self.provider.aclose()


__all__ = [
    "JUDGE_RETRY",
    "AdaptiveConcurrency",
    "Booking",
    "CallTally",
    "Gateway",
    "GenerationOutcome",
    "RateLimiter",
    "RetryPolicy",
    "ScoringCalls",
]
