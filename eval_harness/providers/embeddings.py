"""Embeddings over HTTP: the ``/embeddings`` endpoint of OpenAI or any OpenAI-compatible server.

Used by the embedding-similarity scorer; it lives here because only ``providers/`` talks HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import SecretStr

from eval_harness.config import redact
from eval_harness.errors import (
    AuthenticationError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from eval_harness.providers._http import check_base_url, join_url, shown_url

DEFAULT_API_MODEL = "text-embedding-3-small"
_BATCH = 256


class EmbeddingsClient(Protocol):
    """Turns texts into vectors; ``name`` identifies the vector space in the cache (backend:model)."""

    name: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class OpenAIEmbeddingsClient:
    """``POST {base_url}/embeddings`` of an OpenAI-compatible server, over httpx.

    ``base_url`` is checked as a provider's is (``ConfigError`` for a bad URL, a port out of range, or
    credentials in it: ``api_key`` or any of ``secrets``); ``base_url_name`` is how messages name it.
    ``transport`` lets tests inject ``httpx.MockTransport``. Errors are ``ProviderError`` subclasses whose
    messages never contain the key, and name the URL without its user info or query.
    """

    def __init__(
        self,
        model: str = DEFAULT_API_MODEL,
        base_url: str = "https://api.openai.com/v1",
        api_key: SecretStr | None = None,
        timeout_s: float = 60.0,
        transport: Any = None,
        *,
        secrets: Sequence[str] = (),
        base_url_name: str = "base_url",
    ) -> None:
        self.model = model
        self.name = f"api:{model}"
        self._api_key = api_key
        self._secret_values = [*secrets, *([api_key.get_secret_value()] if api_key is not None else [])]
        self.base_url = check_base_url(
            base_url, self._secret_values, "embeddings", name=base_url_name, key_hint="OPENAI_API_KEY"
        )
        self.url = join_url(self.base_url, "/embeddings")
        self.timeout_s = timeout_s
        self._transport = transport

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import httpx

        headers = {"Content-Type": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        shown = shown_url(self.url)
        vectors: list[list[float]] = []
        async with httpx.AsyncClient(timeout=self.timeout_s, transport=self._transport) as client:
            for start in range(0, len(texts), _BATCH):
                batch = list(texts[start : start + _BATCH])
                try:
                    response = await client.post(self.url, json={"model": self.model, "input": batch}, headers=headers)
                except httpx.TimeoutException:
                    raise ProviderTimeoutError(f"embeddings {shown}: timed out", retry_cause="timeout") from None
                except httpx.TransportError as exc:
                    raise ProviderConnectionError(
                        f"embeddings {shown}: {type(exc).__name__}", retry_cause="connection"
                    ) from None
                vectors.extend(self._vectors(response, len(batch), shown))
        return vectors

    def _vectors(self, response: Any, expected: int, url: str) -> list[list[float]]:
        if response.status_code in (401, 403):
            raise AuthenticationError(f"embeddings {url}: HTTP {response.status_code} (check OPENAI_API_KEY)")
        if response.status_code >= 400:
            raise ProviderHTTPError(
                # redacted whole, then cut: a key cut in two would no longer be recognised
                redact(f"embeddings {url}: HTTP {response.status_code}: {response.text}", self._secret_values)[:300],
                status_code=response.status_code,
            )
        try:
            data = response.json()["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (ValueError, KeyError, TypeError):
            raise ProviderResponseError(f"embeddings {url}: the body is not an embeddings response") from None
        if len(vectors) != expected:
            raise ProviderResponseError(f"embeddings {url}: asked for {expected} vectors, got {len(vectors)}")
        return vectors
