"""The wrapper every provider call goes through: retries with backoff, honouring Retry-After.

Providers stay pure wire translation; this module decides how often and how long to try again. The
happy path calls the provider directly: tenacity costs ~70 µs a call, more than a whole zero-latency
sample, so it takes over only after a first transient failure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from eval_harness.config import RunConfig
from eval_harness.errors import AuthenticationError, ProviderError
from eval_harness.providers.base import Provider
from eval_harness.types import Completion, GenerateRequest


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


class Gateway:
    """Calls ``provider.generate`` with retries; ``AuthenticationError`` passes through to stop the run."""

    def __init__(self, provider: Provider, policy: RetryPolicy | None = None) -> None:
        self.provider = provider
        self.policy = policy or RetryPolicy()
        self.retries_by_cause: Counter[str] = Counter()
        self.backoff_s = 0.0
        self._exponential = wait_exponential_jitter(multiplier=self.policy.initial_wait_s, max=self.policy.max_wait_s)

    @classmethod
    def from_config(cls, provider: Provider, config: RunConfig) -> Gateway:
        """The gateway a run uses, from its flags."""
        return cls(provider, RetryPolicy(max_retries=config.max_retries))

    async def generate(self, request: GenerateRequest) -> GenerationOutcome:
        """One generation, retried on transient errors; never raises ``ProviderError``."""
        try:
            return GenerationOutcome(await self.provider.generate(request), None, 1)
        except ProviderError as exc:
            if not _is_transient(exc) or self.policy.max_retries == 0:
                return GenerationOutcome(None, exc, 1)
            return await self._retry(request, exc)

    async def _retry(self, request: GenerateRequest, first_failure: ProviderError) -> GenerationOutcome:
        retries: Counter[str] = Counter()
        waited = 0.0

        def before_sleep(state: RetryCallState) -> None:
            nonlocal waited
            error = state.outcome.exception() if state.outcome is not None else None
            if isinstance(error, ProviderError) and error.retry_cause is not None:
                retries[error.retry_cause] += 1
            waited += state.next_action.sleep if state.next_action is not None else 0.0

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        attempts = 0
        completion: Completion | None = None
        error: ProviderError | None = None
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    # The first attempt already failed outside tenacity; replay it so tenacity waits.
                    if attempts == 1:
                        raise first_failure
                    completion = await self.provider.generate(request)
        except AuthenticationError:
            raise
        except ProviderError as exc:
            error = exc
        outcome = GenerationOutcome(completion, error, attempts, dict(retries), waited)
        self.retries_by_cause.update(outcome.retries)
        self.backoff_s += waited
        return outcome

    async def complete(self, request: GenerateRequest) -> Completion:
        """``generate`` for callers that want a completion or an exception (judges implement ``Generator``)."""
        outcome = await self.generate(request)
        if outcome.completion is None:
            raise outcome.error or ProviderError("no completion")
        return outcome.completion

    def _wait(self, state: RetryCallState) -> float:
        """Retry-After from the server when it gave one, else exponential backoff with jitter."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, ProviderError) and error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.policy.max_wait_s)
        return float(self._exponential(state))

    async def aclose(self) -> None:
        """Close the provider's connections."""
        await self.provider.aclose()
