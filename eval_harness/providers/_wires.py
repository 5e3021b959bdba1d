"""How a provider's requests reach the server: one shared connection pool per provider, sized to the run.

``PooledWire`` (the default) writes each request as bytes onto a keep-alive connection of
``_transport.ConnectionPool`` and reads the response back as bytes: the request head is built once per
path, and nothing per request is an object beyond the response tuple. ``HttpxWire`` sends through one
shared ``httpx.AsyncClient`` instead (``--model-arg http_transport=httpx``: httpx's own transport, which
honours HTTP(S)_PROXY; ``http_transport=httpx-pooled``: the same client on the lean pool).

Why the default bypasses ``httpx.AsyncClient``: its per-request machinery (request building, header
merging, the cookie jar, response decoding) costs ~0.25-0.6 ms of CPU per call, measured side by side with
the same pool underneath (bench/throughput.py, rows "httpx-pooled" and "pooled") — as much as the rest of
the runner spends on a sample. LLM APIs need none of it: a fixed set of headers, a JSON body, no cookies and
no redirects.
"""

from __future__ import annotations

import ssl
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import urlsplit

from eval_harness.errors import (
    ConfigError,
    ProviderConnectionError,
    ProviderResponseError,
    ProviderTimeoutError,
    ServerUntrustedError,
)
from eval_harness.providers._transport import (
    ConnectFailed,
    ConnectionPool,
    ConnectTimedOut,
    ReadTimedOut,
    TLSRefused,
    TransportError,
    origin_of,
    tls_refusal,
)

if TYPE_CHECKING:
    import httpx

WireKind = Literal["pooled", "httpx", "httpx-pooled"]

Exchange = tuple[int, Mapping[str, str], bytes]
"""What a wire returns: status, headers (lower-case names; repeated ones joined by ", "), decoded body."""


class Wire(Protocol):
    """Sends one JSON POST and returns the whole response; failures below HTTP raise ``ProviderError``s."""

    async def post(self, path: str, payload: bytes) -> Exchange: ...

    async def aclose(self) -> None: ...


def open_wire(
    kind: WireKind, base_url: str, headers: dict[str, str], size: int, timeout: dict[str, float | None]
) -> Wire:
    """The wire of one provider: a pool of at most ``size`` connections, with connect/read timeouts."""
    if kind == "pooled":
        return PooledWire(base_url, headers, size, timeout)
    return HttpxWire(base_url, headers, size, timeout, lean_pool=kind == "httpx-pooled")


def _header_lines(headers: dict[str, str]) -> bytes:
    lines = []
    for name, value in headers.items():
        if any(c in name + value for c in "\r\n\0"):
            # never echo the value: it may be a key
            raise ConfigError(f"the HTTP header {name!r} holds a line break or NUL character")
        try:
            lines.append(f"{name}: {value}\r\n".encode("latin-1"))
        except UnicodeEncodeError:
            raise ConfigError(f"the HTTP header {name!r} holds characters HTTP/1.1 cannot carry") from None
    return b"".join(lines)


def _decoded(body: bytes, encoding: str | None) -> bytes:
    """The body without its Content-Encoding (we only ever ask for gzip or deflate)."""
    if not encoding or encoding == "identity" or not body:
        return body
    try:
        if encoding == "gzip":
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:  # some servers send a raw deflate stream without the zlib header
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise ProviderResponseError(f"the body cannot be decoded ({encoding}): {exc}") from None
    raise ProviderResponseError(f"the body has an encoding this client did not ask for: {encoding}")


class PooledWire:
    """Requests as bytes on the lean connection pool; see the module's docstring."""

    def __init__(self, base_url: str, headers: dict[str, str], size: int, timeout: dict[str, float | None]) -> None:
        parts = urlsplit(base_url)
        port = parts.port
        assert parts.hostname is not None
        self._origin = origin_of(parts.scheme, parts.hostname, port)
        host = parts.netloc.rpartition("@")[2]  # never send userinfo as the Host
        self._prefix = parts.path.rstrip("/")
        self._query = f"?{parts.query}" if parts.query else ""
        self._static = f"host: {host}\r\n".encode("latin-1") + _header_lines(headers)
        self._heads: dict[str, bytes] = {}
        self.pool = ConnectionPool(size, timeout["connect"], timeout["read"])

    def _head(self, path: str) -> bytes:
        head = self._heads.get(path)
        if head is None:
            target = f"{self._prefix}{path}{self._query}".encode("ascii", "strict")
            head = self._heads[path] = b"POST " + target + b" HTTP/1.1\r\n" + self._static
        return head

    async def post(self, path: str, payload: bytes) -> Exchange:
        data = b"%scontent-length: %d\r\n\r\n%s" % (self._head(path), len(payload), payload)
        try:
            status, headers, body = await self.pool.exchange(self._origin, data)
        except (ConnectTimedOut, ReadTimedOut) as exc:
            raise ProviderTimeoutError(
                f"{type(exc).__name__}: {exc}", retry_cause="timeout", unreachable=isinstance(exc, ConnectTimedOut)
            ) from None
        except TLSRefused as exc:
            raise ServerUntrustedError(str(exc)) from None
        except TransportError as exc:
            raise ProviderConnectionError(
                f"{type(exc).__name__}: {exc}", retry_cause="connection", unreachable=isinstance(exc, ConnectFailed)
            ) from None
        return status, headers, _decoded(body, headers.get("content-encoding"))

    async def aclose(self) -> None:
        await self.pool.aclose()


def _tls_refusal(error: BaseException, url: httpx.URL) -> str | None:
    """``tls_refusal`` of the handshake failure behind an httpx ``ConnectError``, found among its causes
    (httpx wraps httpcore's error, which wraps the ssl module's; the lean pool's own comes as ``TLSRefused``)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TLSRefused):
            return str(seen)
        if isinstance(seen, ssl.SSLError):
            return tls_refusal(seen, url.host, url.port or (443 if url.scheme == "https" else 80))
        seen = seen.__cause__ or seen.__context__
    return None


class HttpxWire:
    """The provider's one ``httpx.AsyncClient``, with a pool sized to the run's concurrency."""

    def __init__(
        self, base_url: str, headers: dict[str, str], size: int, timeout: dict[str, float | None], lean_pool: bool
    ) -> None:
        import httpx

        self.base_url = base_url
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        transport = None
        if lean_pool:
            from eval_harness.providers._httpx_pool import PooledTransport

            transport = PooledTransport(size, timeout["connect"], timeout["read"])
        # transport=None: httpx builds its own, which also honours HTTP(S)_PROXY from the environment
        self.client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(**timeout), limits=limits, transport=transport
        )
        # Parsed once per path: URL parsing is a tenth of httpx's cost per request.
        self._urls: dict[str, httpx.URL] = {}

    async def post(self, path: str, payload: bytes) -> Exchange:
        import httpx

        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx.URL(self.base_url + path)
        try:
            response = await self.client.post(url, content=payload)
        except httpx.TimeoutException as exc:
            raise ProviderTimeoutError(
                f"{type(exc).__name__}: {exc}", retry_cause="timeout", unreachable=isinstance(exc, httpx.ConnectTimeout)
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            refusal = _tls_refusal(exc, url) if isinstance(exc, httpx.ConnectError) else None
            if refusal is not None:
                raise ServerUntrustedError(refusal) from None
            raise ProviderConnectionError(
                f"{type(exc).__name__}: {exc}",
                retry_cause="connection",
                unreachable=isinstance(exc, httpx.ConnectError),
            ) from None
        except httpx.DecodingError as exc:
            raise ProviderResponseError(f"the body cannot be decoded: {exc}") from None
        except httpx.HTTPError as exc:
            raise ProviderConnectionError(f"{type(exc).__name__}: {exc}") from None
        return response.status_code, dict(response.headers.items()), response.content

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await self.client.aclose()


__all__ = ["Exchange", "HttpxWire", "PooledWire", "Wire", "WireKind", "open_wire"]
