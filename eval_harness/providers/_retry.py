"""Trying a failed call again: which failures, how long to wait between tries, and when to give up.

Used by the gateway around every provider call and by the embeddings client around each of its requests, so
that both retry alike: a ``ProviderError`` with a ``retry_cause`` (429, 408, 409, 5xx, 529, a dropped
connection, a timeout) is tried again up to ``RetryPolicy.max_retries`` times, after the server's
``Retry-After`` / reset time when it named a positive one (plus up to 10% jitter), else after exponential
backoff with jitter; a 429 whose wait is longer than a retry may wait is not retried, and says so. tenacity
runs the loop, imported on the first retry only: a call that succeeds at once never enters it.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from eval_harness.errors import AuthenticationError, ProviderError, QuotaExhaustedError, spoken_duration

if TYPE_CHECKING:
    from tenacity import RetryCallState
    from tenacity.wait import wait_exponential_jitter

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed call is tried again."""

    max_retries: int = 5
    initial_wait_s: float = 0.5
    max_wait_s: float = 60.0
    stop_wait_s: float = 600.0
    """A server that asks every caller to wait longer than this (a daily quota, a maintenance window) stops the
    run: the samples after it would each fail the same way (resume it later)."""

    def least_backoff_s(self) -> float:
        """The least time a call that uses up its retries waits between its tries in all (jitter only adds)."""
        total, wait = 0.0, self.initial_wait_s
        for retry in range(self.max_retries):
            if wait >= self.max_wait_s:  # capped from here on (and 2.0**1024 would overflow)
                return total + (self.max_retries - retry) * self.max_wait_s
            total += wait
            wait *= 2
        return total


def is_transient(error: BaseException) -> bool:
    """Whether trying again may help: a ``ProviderError`` carrying a ``retry_cause`` (never a refused key)."""
    return (
        isinstance(error, ProviderError)
        and not isinstance(error, AuthenticationError)
        and (error.retry_cause is not None)
    )


class Retrier:
    """Tries calls again under one ``RetryPolicy``."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self._exponential: wait_exponential_jitter | None = None  # built on the first retry, with tenacity

    def too_long(self, error: BaseException) -> bool:
        """A transient failure (429, 503, 529 ...) whose server asks for a longer wait than a retry may wait
        (retrying sooner would only be refused again, and the per-sample timeout would end it unexplained)."""
        return (
            is_transient(error)
            and isinstance(error, ProviderError)
            and error.retry_after is not None
            and error.retry_after > self.policy.max_wait_s
            and error.wait_stated  # a reset time alone is only a (capped) wait for the retry
        )

    def retryable(self, error: BaseException) -> bool:
        """Whether ``error`` is worth another try under this policy (the number of tries left aside)."""
        return is_transient(error) and not self.too_long(error)

    def gives_up_at_once(self, first_failure: ProviderError) -> bool:
        """Whether a call whose first try failed so is not tried again at all."""
        return self.policy.max_retries == 0 or not self.retryable(first_failure)

    def given_up(self, error: ProviderError) -> ProviderError:
        """The error a call tried no more ends with: ``error``, saying why it was not retried when the server's
        wait was too long. Past ``stop_wait_s`` it raises ``QuotaExhaustedError`` instead: the run stops, as the
        calls after this one would each meet the same wait (every caller of the policy, one place)."""
        if not self.too_long(error):
            return error
        wait, cap = error.retry_after, self.policy.max_wait_s
        assert wait is not None  # too_long
        if wait > self.policy.stop_wait_s:
            said = spoken_duration(wait)
            # "for ever" has no after: the server's figure is no time to wait (1e308, a 23-digit count)
            when = "when the server allows it" if said == "for ever" else "after that"
            raise QuotaExhaustedError(f"the server asks to wait {said}, so the run stops; resume it {when} ({error})")
        why = "rate limited" if error.retry_cause == "rate_limit" else "not retried"
        return error.with_message(
            f"{why}: the server asks to wait {wait:g} s, longer than the {cap:g} s a retry may wait ({error})"
        )

    async def call(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``, tried ``again`` when it fails with a retryable ``ProviderError``; raises the last
        failure (``given_up``)."""
        try:
            return await attempt()
        except ProviderError as exc:
            if self.gives_up_at_once(exc):
                raise self.given_up(exc) from None
            return await self.again(lambda _cause: attempt(), exc)

    async def again(
        self,
        attempt: Callable[[str | None], Awaitable[T]],
        first_failure: ProviderError,
        on_wait: Callable[[], None] | None = None,
    ) -> T:
        """Try ``attempt`` again after its first try failed with ``first_failure``, at most ``max_retries``
        times; return its result, or raise the last failure (``given_up``). ``attempt`` is given the cause of
        the failure it retries (``"other"`` when there was none); ``on_wait`` is called when a wait before a
        retry begins."""
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        if self._exponential is None:
            initial = self.policy.initial_wait_s
            self._exponential = wait_exponential_jitter(multiplier=initial, jitter=initial, max=self.policy.max_wait_s)

        cause: str | None = None

        def before_sleep(state: RetryCallState) -> None:
            nonlocal cause
            error = state.outcome.exception() if state.outcome is not None else None
            cause = error.retry_cause if isinstance(error, ProviderError) else None
            if on_wait is not None and state.next_action is not None and state.next_action.sleep > 0:
                on_wait()  # a retry at once waits for nothing

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(self.retryable),
            before_sleep=before_sleep,
            reraise=True,
        )
        replayed = False
        try:
            async for try_ in retrying:
                with try_:
                    # The first attempt already failed outside tenacity; replay it so tenacity waits.
                    if not replayed:
                        replayed = True
                        raise first_failure
                    return await attempt(cause or "other")
        except ProviderError as exc:
            raise self.given_up(exc) from None
        raise first_failure  # pragma: no cover - tenacity either returns or raises

    def _wait(self, state: RetryCallState) -> float:
        """The server's Retry-After / reset time (plus up to 10% jitter) when it named a positive wait, else
        exponential backoff (as the official SDKs do: a wait of 0 would spend every retry at once)."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, ProviderError) and error.retry_after is not None and error.retry_after > 0:
            wait = error.retry_after
            return min(wait + random.uniform(0, 0.1 * wait), self.policy.max_wait_s)
        assert self._exponential is not None
        return float(self._exponential(state))


__all__ = ["Retrier", "RetryPolicy", "is_transient"]
