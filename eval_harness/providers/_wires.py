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

Every wire refuses the same headers before anything is built or sent (``checked_headers``), and bounds a
response body the same way (``max_body``, also once a gzip/deflate body is inflated), so a hostile server
cannot fill the memory through any of them.
"""

from __future__ import annotations

import os
import re
import ssl
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from eval_harness.errors import (
    ConfigError,
    ProviderConnectionError,
    ProviderResponseError,
    ProviderTimeoutError,
    ServerUntrustedError,
)
from eval_harness.providers._transport import (
    MAX_RESPONSE_BYTES,
    ConnectFailed,
    ConnectionPool,
    ConnectTimedOut,
    ReadTimedOut,
    ResponseTooLarge,
    TLSRefused,
    TransportError,
    origin_of,
    tls_refusal,
    too_large,
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
    kind: WireKind,
    base_url: str,
    headers: dict[str, str],
    size: int,
    timeout: dict[str, float | None],
    max_body: int | None = None,
    request_id_headers: tuple[str, ...] = (),
) -> Wire:
    """The wire of one provider: a pool of at most ``size`` connections, with connect/read timeouts, reading
    response bodies of at most ``max_body`` bytes once decoded (None: ``MAX_RESPONSE_BYTES``). A response cut off
    after its head fails with the request id of the first of ``request_id_headers`` the head holds."""
    # Checked here, for every kind, before a client exists: httpx sent a line break as is (httpx-pooled) or
    # refused it per request with the value's repr in the message, where redaction does not find the key.
    raw_headers = checked_headers(headers)
    if base_url[:6].lower() == "https:":
        check_ca_bundle()
    limit = MAX_RESPONSE_BYTES if max_body is None else max_body
    if kind == "pooled":
        return PooledWire(base_url, raw_headers, size, timeout, limit, request_id_headers)
    lean_pool = kind == "httpx-pooled"
    return HttpxWire(base_url, raw_headers, size, timeout, limit, request_id_headers, lean_pool=lean_pool)


def request_id_in(head: Mapping[str, str] | None, names: tuple[str, ...]) -> str | None:
    """The request id of a response head, under the first of ``names`` it holds (a provider's
    ``request_id_headers``); None without a head."""
    if head is not None:
        for name in names:
            if value := head.get(name):
                return str(value)
    return None


def join_url(base_url: str, path: str) -> str:
    """``base_url`` with ``path`` appended to its path, its query kept: ``http://h/v1?v=1`` + ``/embeddings``
    is ``http://h/v1/embeddings?v=1``."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def check_ca_bundle() -> None:
    """A CA bundle named by SSL_CERT_FILE that cannot be loaded stops the run, naming the variable: each wire
    failed on it per request (FileNotFoundError, NO_CERTIFICATE_OR_CRL_FOUND), every sample an error."""
    cafile = os.environ.get("SSL_CERT_FILE")
    if cafile is None:
        return
    try:
        ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:  # missing, unreadable, or no certificate in it
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ServerUntrustedError(
            f"SSL_CERT_FILE={cafile}: cannot load it as a CA bundle ({reason}); fix or unset it"
        ) from None


ACCEPTED_ENCODINGS = "gzip, deflate"
"""The encodings a request asks for: the ones ``decoded_body`` inflates within the size bound (httpx would also
ask for br and zstd when their packages are installed, and inflate them unbounded)."""


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a tab may stand in a value (RFC 9110 5.5), nothing else


def checked_headers(headers: dict[str, str]) -> dict[bytes, bytes]:
    """``headers`` as the bytes a request carries (Latin-1, as HTTP/1.1 reads them), or a ``ConfigError`` naming
    the header, never its value (it may be a key): a line break would end the header (or inject another) and
    any other control character makes a server or httpx refuse the request."""
    raw = {}
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ConfigError(f"{name!r} is not a valid HTTP header name")
        if _CONTROL.search(value):
            raise ConfigError(f"the HTTP header {name!r} holds a line break or another control character")
        try:
            raw[name.encode("ascii")] = value.encode("latin-1")
        except UnicodeEncodeError:
            raise ConfigError(f"the HTTP header {name!r} holds characters HTTP/1.1 cannot carry") from None
    return raw


def decoded_body(body: bytes, encoding: str | None, status: int, max_body: int) -> bytes:
    """The body without its Content-Encoding (we only ever ask for gzip or deflate), inflated to at most
    ``max_body`` bytes: 1 MB of gzip inflates to 1 GiB."""
    if not encoding or encoding == "identity" or not body:
        return body
    try:
        if encoding == "gzip":
            return _inflated(body, 16 + zlib.MAX_WBITS, status, max_body, encoding)
        if encoding == "deflate":
            try:
                return _inflated(body, zlib.MAX_WBITS, status, max_body, encoding)
            except zlib.error:  # some servers send a raw deflate stream without the zlib header
                return _inflated(body, -zlib.MAX_WBITS, status, max_body, encoding)
    except zlib.error as exc:
        raise ProviderResponseError(f"the body cannot be decoded ({encoding}): {exc}") from None
    raise ProviderResponseError(f"the body has an encoding this client did not ask for: {encoding}")


def _inflated(body: bytes, wbits: int, status: int, max_body: int, encoding: str) -> bytes:
    inflater = zlib.decompressobj(wbits)
    data = inflater.decompress(body, max_body + 1)
    if len(data) > max_body:
        raise ProviderResponseError(too_large(max_body, status, f"once inflated from {encoding}"))
    if not inflater.eof:  # what zlib.decompress says of a cut stream; decompressobj says nothing
        raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
    return data


class PooledWire:
    """Requests as bytes on the lean connection pool; see the module's docstring."""

    def __init__(
        self,
        base_url: str,
        headers: dict[bytes, bytes],
        size: int,
        timeout: dict[str, float | None],
        max_body: int = MAX_RESPONSE_BYTES,
        request_id_headers: tuple[str, ...] = (),
    ) -> None:
        self._request_id_headers = request_id_headers
        parts = urlsplit(base_url)
        port = parts.port
        assert parts.hostname is not None
        self._origin = origin_of(parts.scheme, parts.hostname, port)
        host = parts.netloc.rpartition("@")[2]  # never send userinfo as the Host
        self._prefix = parts.path.rstrip("/")
        self._query = f"?{parts.query}" if parts.query else ""
        lines = b"".join(b"%s: %s\r\n" % pair for pair in headers.items())
        self._static = f"host: {host}\r\n".encode("latin-1") + lines
        self._heads: dict[str, bytes] = {}
        self.max_body = max_body
        self.pool = ConnectionPool(size, timeout["connect"], timeout["read"], max_body)

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
                f"{type(exc).__name__}: {exc}",
                retry_cause="timeout",
                unreachable=isinstance(exc, ConnectTimedOut),
                request_id=request_id_in(exc.head, self._request_id_headers),
            ) from None
        except TLSRefused as exc:
            raise ServerUntrustedError(str(exc)) from None
        except ResponseTooLarge as exc:  # not retried: the server would send it again
            raise ProviderResponseError(
                str(exc), request_id=request_id_in(exc.head, self._request_id_headers)
            ) from None
        except TransportError as exc:
            raise ProviderConnectionError(
                f"{type(exc).__name__}: {exc}",
                retry_cause="connection",
                unreachable=isinstance(exc, ConnectFailed),
                request_id=request_id_in(exc.head, self._request_id_headers),
            ) from None
        return status, headers, decoded_body(body, headers.get("content-encoding"), status, self.max_body)

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
        self,
        base_url: str,
        headers: dict[bytes, bytes],
        size: int,
        timeout: dict[str, float | None],
        max_body: int = MAX_RESPONSE_BYTES,
        request_id_headers: tuple[str, ...] = (),
        *,
        lean_pool: bool,
    ) -> None:
        import httpx

        self._request_id_headers = request_id_headers
        self.base_url = base_url
        self.max_body = max_body
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        transport = None
        if lean_pool:
            from eval_harness.providers._httpx_pool import PooledTransport

            transport = PooledTransport(size, timeout["connect"], timeout["read"], max_body)
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
            url = self._urls[path] = httpx.URL(join_url(self.base_url, path))
        client = self.client
        head: Mapping[str, str] | None = None  # once the response's head is in: a body cut off keeps its request id
        try:
            # streamed, so that the body is read within max_body: response.content would read it whole
            response = await client.send(client.build_request("POST", url, content=payload), stream=True)
            head = response.headers
            try:
                body = await raw_body(response, self.max_body)
            finally:
                await response.aclose()  # a body left unread closes its connection: it is never reused
        except ResponseTooLarge as exc:  # not retried: the server would send it again (the lean pool's: its head)
            head = head if head is not None else exc.head
            raise ProviderResponseError(str(exc), request_id=request_id_in(head, self._request_id_headers)) from None
        except httpx.TransportError as exc:
            cause = exc.__cause__  # the lean pool's failure after a response head, under httpx's (httpx-pooled)
            if head is None and isinstance(cause, TransportError) and cause.head is not None:
                head = cause.head
            raise self._failure(exc, url, head) from None
        except httpx.HTTPError as exc:
            raise ProviderConnectionError(
                f"{type(exc).__name__}: {exc}", request_id=request_id_in(head, self._request_id_headers)
            ) from None
        headers = dict(response.headers.items())
        status = response.status_code
        return status, headers, decoded_body(body, headers.get("content-encoding"), status, self.max_body)

    def _failure(self, exc: httpx.TransportError, url: httpx.URL, head: Mapping[str, str] | None) -> Exception:
        """The ``ProviderError`` (or, for a handshake no retry mends, ``ServerUntrustedError``) of a transport
        failure, with the request id of the response head it came after, if it came after one."""
        import httpx

        request_id = request_id_in(head, self._request_id_headers)
        if isinstance(exc, httpx.TimeoutException):
            return ProviderTimeoutError(
                f"{type(exc).__name__}: {exc}",
                retry_cause="timeout",
                unreachable=isinstance(exc, httpx.ConnectTimeout),
                request_id=request_id,
            )
        if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
            refusal = _tls_refusal(exc, url) if isinstance(exc, httpx.ConnectError) else None
            if refusal is not None:
                return ServerUntrustedError(refusal)
            return ProviderConnectionError(
                f"{type(exc).__name__}: {exc}",
                retry_cause="connection",
                unreachable=isinstance(exc, httpx.ConnectError),
                request_id=request_id,
            )
        return ProviderConnectionError(f"{type(exc).__name__}: {exc}", request_id=request_id)

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await self.client.aclose()


async def raw_body(response: httpx.Response, limit: int, *, decoded: bool = False) -> bytes:
    """The body as sent (still encoded; ``decoded_body`` inflates it within the bound), or, ``decoded``, as httpx
    decodes it; ``ResponseTooLarge`` as soon as it is announced or received past ``limit``."""
    declared = response.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(limit, response.status_code, f"Content-Length {declared}")
    chunks = []
    received = 0
    async for chunk in response.aiter_bytes() if decoded else response.aiter_raw():
        received += len(chunk)
        if received > limit:
            raise ResponseTooLarge(limit, response.status_code, "bytes received")
        chunks.append(chunk)
    return b"".join(chunks)


__all__ = [
    "ACCEPTED_ENCODINGS",
    "Exchange",
    "HttpxWire",
    "PooledWire",
    "Wire",
    "WireKind",
    "check_ca_bundle",
    "checked_headers",
    "decoded_body",
    "join_url",
    "open_wire",
    "raw_body",
    "request_id_in",
]
