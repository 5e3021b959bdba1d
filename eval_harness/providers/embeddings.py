"""Embeddings over HTTP: the ``/embeddings`` endpoint of OpenAI or any OpenAI-compatible server.

Used by the embedding-similarity scorer; it lives here because only ``providers/`` talks HTTP. No gateway wraps
this client, so it retries as the gateway does (``_retry.Retrier``): a 429, 408, 409, 5xx or 529, a dropped
connection or a timeout is tried again, after the server's ``Retry-After`` when it sent one. An error status
means what it means for a provider (``_http.error_for_status``): a refused key (401/403), an unknown model or
endpoint (404) or a used-up quota stops the run, since every sample would fail the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from pydantic import SecretStr

from eval_harness.config import shown_url
from eval_harness.errors import ProviderConnectionError, ProviderResponseError, ProviderTimeoutError
from eval_harness.providers._http import (
    TRANSIENT_4XX,
    check_base_url,
    checked_proxy,
    error_for_status,
    redirected,
    retry_cause_of_status,
)
from eval_harness.providers._retry import Retrier, RetryPolicy
from eval_harness.providers._transport import MAX_RESPONSE_BYTES, ResponseTooLarge, too_large
from eval_harness.providers._wires import ACCEPTED_ENCODINGS, check_ca_bundle, checked_headers, join_url, raw_body
from eval_harness.providers.openai import quota_used_up, rate_limit_reset

if TYPE_CHECKING:
    import httpx

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
    ``transport`` lets tests inject ``httpx.MockTransport``; ``policy`` bounds the retries of each request.
    Errors are ``ProviderError`` subclasses (or, for a refused key, ``AuthenticationError``) whose messages
    never contain a key, and name the URL without its user info or query.
    """

    def __init__(
        self,
        model: str = DEFAULT_API_MODEL,
        base_url: str = "https://api.openai.com/v1",
        api_key: SecretStr | None = None,
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        secrets: Sequence[str] = (),
        base_url_name: str = "base_url",
        policy: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.name = f"api:{model}"
        self._api_key = api_key
        values = [*secrets, *([api_key.get_secret_value()] if api_key is not None else [])]
        # each once, longest first, as Provider.secrets() lists them
        self._secret_values = sorted(dict.fromkeys(value for value in values if value), key=len, reverse=True)
        self.base_url = check_base_url(
            base_url, self._secret_values, "embeddings", name=base_url_name, key_hint="OPENAI_API_KEY"
        )
        self.url = join_url(self.base_url, "/embeddings")
        self.timeout_s = timeout_s
        self._transport = transport
        self._retrier = Retrier(policy or RetryPolicy())
        self._checked = False  # the headers, CA bundle and proxy variable, checked on the first request

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import httpx

        headers = {"Content-Type": "application/json", "Accept-Encoding": ACCEPTED_ENCODINGS}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        if not self._checked:  # once per client, not per scored sample (a CA bundle is loaded to be checked)
            checked_headers(headers)  # a key holding a line break: one line naming the header, never its value
            if self.url[:6].lower() == "https:":
                check_ca_bundle()
            checked_proxy(self.url)  # httpx's client reads the proxy variables
            self._checked = True
        vectors: list[list[float]] = []
        async with httpx.AsyncClient(timeout=self.timeout_s, transport=self._transport, headers=headers) as client:
            for start in range(0, len(texts), _BATCH):
                batch = list(texts[start : start + _BATCH])
                vectors.extend(await self._retrier.call(functools.partial(self._post, client, batch)))
        return vectors

    async def _post(self, client: httpx.AsyncClient, batch: list[str]) -> list[list[float]]:
        """One request for the vectors of ``batch``."""
        import httpx

        shown = shown_url(self.url)
        try:
            async with client.stream("POST", self.url, json={"model": self.model, "input": batch}) as response:
                # decoded by httpx, not by decoded_body: a test's MockTransport hands over a response already
                # read, which only the decoded stream yields again; asked for gzip and deflate only, a 64 KiB
                # chunk inflates to at most ~64 MiB before the count sees it
                content = await raw_body(response, MAX_RESPONSE_BYTES, decoded=True)
        except ResponseTooLarge as exc:  # not retried: the server would send it again; no model arg raises it
            raise ProviderResponseError(
                f"embeddings {shown}: {too_large(exc.limit, exc.status, exc.how, settable=False)}"
            ) from None
        except httpx.TimeoutException:
            raise ProviderTimeoutError(f"embeddings {shown}: timed out", retry_cause="timeout") from None
        except httpx.TransportError as exc:
            raise ProviderConnectionError(
                f"embeddings {shown}: {type(exc).__name__}", retry_cause="connection"
            ) from None
        status = response.status_code
        if 300 <= status < 400:
            raise redirected(f"embeddings {shown}", status, response.headers, self._secret_values)
        if status >= 400:
            raise error_for_status(
                status,
                response.headers,
                content,
                label=f"embeddings {shown}",
                key_hint="OPENAI_API_KEY",
                secrets=self._secret_values,
                cause=retry_cause_of_status(status, response.headers, TRANSIENT_4XX.get(status)),
                quota_exhausted=quota_used_up(status, content),
                reset_after=rate_limit_reset,
                request_id=response.headers.get("x-request-id"),
            )
        return self._vectors(content, len(batch), shown)

    @staticmethod
    def _vectors(content: bytes, expected: int, url: str) -> list[list[float]]:
        import json

        try:
            # Python's json, not orjson: it reads a NaN, which the scorer then refuses by name
            data = json.loads(content)["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (ValueError, KeyError, TypeError):
            raise ProviderResponseError(f"embeddings {url}: the body is not an embeddings response") from None
        if len(vectors) != expected:
            raise ProviderResponseError(f"embeddings {url}: asked for {expected} vectors, got {len(vectors)}")
        return vectors


__all__ = ["DEFAULT_API_MODEL", "EmbeddingsClient", "OpenAIEmbeddingsClient"]
