"""The embeddings client retries as a provider's calls are retried (the gateway's ``Retrier``): 429, 408, 409,
5xx and 529, dropped connections and timeouts are tried again, after the server's ``Retry-After`` when it sent
one; other errors are not. httpx.MockTransport answers with the real statuses and bodies."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from eval_harness.errors import AuthenticationError, ProviderHTTPError, QuotaExhaustedError
from eval_harness.providers.embeddings import OpenAIEmbeddingsClient
from eval_harness.providers.gateway import RetryPolicy
from eval_harness.scorers.embeddings import CachedEmbeddings, EmbeddingCache, EmbeddingSimilarity
from eval_harness.types import Sample

KEY = "sk-test-embeddings-0123456789"
Answer = Callable[[httpx.Request], httpx.Response]


def vectors(request: httpx.Request) -> httpx.Response:
    """The embeddings of a request's inputs: a unit vector each."""
    inputs = json.loads(request.content)["input"]
    return httpx.Response(200, json={"data": [{"index": i, "embedding": [1.0, 0.0]} for i in range(len(inputs))]})


def error(status: int, message: str = "try later", code: str | None = None, **headers: str) -> Answer:
    """An answer of ``status`` with an OpenAI error body and ``headers``."""
    body = {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error"}}
    if code is not None:
        body["error"]["code"] = code

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body, headers=headers)

    return answer


def failing(exception: type[httpx.TransportError]) -> Answer:
    """An answer that never comes: the transport raises ``exception``."""

    def answer(request: httpx.Request) -> httpx.Response:
        raise exception("no answer", request=request)

    return answer


class Endpoint:
    """``/embeddings`` answering with ``answers`` in turn (the last one again once they run out), recording the
    monotonic time of each request."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.times: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.times.append(time.monotonic())
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request)

    def client(self, policy: RetryPolicy | None = None) -> OpenAIEmbeddingsClient:
        """A client of this endpoint; without ``policy``, as a task spec builds it (the default policy)."""
        given = {"policy": policy} if policy is not None else {}
        return OpenAIEmbeddingsClient(
            "emb", "http://embed.test/v1", SecretStr(KEY), transport=httpx.MockTransport(self), **given
        )


async def test_a_429_is_retried_after_its_retry_after() -> None:
    endpoint = Endpoint(error(429, "Rate limit reached", **{"retry-after": "0.3"}), vectors)
    # the backoff starts at 2 s: a retry that ignored Retry-After, or added the backoff to it, would wait longer
    got = await endpoint.client(RetryPolicy(initial_wait_s=2.0)).embed(["a", "b"])
    assert got == [[1.0, 0.0], [1.0, 0.0]]
    assert len(endpoint.times) == 2
    # Retry-After plus up to 10% jitter; the upper bound leaves room for the event loop's lateness on a busy machine
    assert 0.3 <= endpoint.times[1] - endpoint.times[0] < 1.0


async def test_a_500_is_retried_with_backoff() -> None:
    # under the default policy, as the client a task spec builds
    endpoint = Endpoint(error(500), vectors)
    assert await endpoint.client().embed(["a"]) == [[1.0, 0.0]]
    assert len(endpoint.times) == 2


@pytest.mark.parametrize("status", [408, 409, 429, 502, 503, 504, 529])
async def test_each_transient_status_is_retried(status: int) -> None:
    endpoint = Endpoint(error(status, **{"retry-after": "0.01"}), vectors)
    assert await endpoint.client().embed(["a"]) == [[1.0, 0.0]]
    assert len(endpoint.times) == 2


@pytest.mark.parametrize("exception", [httpx.ConnectError, httpx.ReadError, httpx.ReadTimeout, httpx.ConnectTimeout])
async def test_a_dropped_connection_or_a_timeout_is_retried(exception: type[httpx.TransportError]) -> None:
    endpoint = Endpoint(failing(exception), vectors)
    assert await endpoint.client(RetryPolicy(initial_wait_s=0.01)).embed(["a"]) == [[1.0, 0.0]]
    assert len(endpoint.times) == 2


async def test_a_400_is_not_retried_and_shows_the_servers_message() -> None:
    endpoint = Endpoint(error(400, "'input' is too long"), vectors)
    with pytest.raises(ProviderHTTPError) as caught:
        await endpoint.client().embed(["a"])
    assert len(endpoint.times) == 1
    assert caught.value.status_code == 400 and caught.value.retry_cause is None
    # the error body is read as a provider's is: its message, not the raw JSON
    assert str(caught.value) == "embeddings http://embed.test/v1/embeddings: HTTP 400: invalid_request_error: " + (
        "'input' is too long"
    )


async def test_retries_stop_at_the_policys_bound_with_the_last_error() -> None:
    endpoint = Endpoint(error(503, "overloaded"))
    with pytest.raises(ProviderHTTPError, match="HTTP 503: server_error: overloaded") as caught:
        await endpoint.client(RetryPolicy(max_retries=2, initial_wait_s=0.01)).embed(["a"])
    assert len(endpoint.times) == 3 and caught.value.retry_cause == "overloaded"


async def test_a_retry_after_longer_than_a_retry_may_wait_fails_at_once_saying_so() -> None:
    endpoint = Endpoint(error(429, "Rate limit reached", **{"retry-after": "300"}), vectors)
    with pytest.raises(ProviderHTTPError, match="asks to wait 300 s, longer than the 60 s a retry may wait"):
        await endpoint.client().embed(["a"])
    assert len(endpoint.times) == 1


async def test_a_wait_past_ten_minutes_stops_the_run_as_the_gateway_does() -> None:
    endpoint = Endpoint(error(429, "Rate limit reached", **{"retry-after": "3600"}), vectors)
    with pytest.raises(QuotaExhaustedError, match="the server asks to wait 60 minutes, so the run stops"):
        await endpoint.client().embed(["a"])
    assert len(endpoint.times) == 1


async def test_a_used_up_quota_stops_the_run_without_a_retry() -> None:
    endpoint = Endpoint(error(429, "You exceeded your current quota", code="insufficient_quota"), vectors)
    with pytest.raises(QuotaExhaustedError, match="quota is used up"):
        await endpoint.client().embed(["a"])
    assert len(endpoint.times) == 1


async def test_a_refused_key_is_not_retried() -> None:
    endpoint = Endpoint(error(401, f"Incorrect API key provided: {KEY}"), vectors)
    with pytest.raises(AuthenticationError) as caught:
        await endpoint.client().embed(["a"])
    assert len(endpoint.times) == 1 and KEY not in str(caught.value)


async def test_a_503_does_not_fail_the_samples_embedding_similarity(tmp_path: Path) -> None:
    # before: one 503 made that sample's score a scoring error
    endpoint = Endpoint(error(503, "overloaded", **{"retry-after": "0.01"}), vectors)
    similarity = EmbeddingSimilarity(CachedEmbeddings(endpoint.client(), EmbeddingCache(tmp_path / "c.db")))
    score = await similarity.score("the answer", Sample(id="s", input="?", target="the reference"))
    assert score.value == pytest.approx(1.0)  # both unit vectors [1, 0]: cosine 1, by hand
    assert len(endpoint.times) == 2
