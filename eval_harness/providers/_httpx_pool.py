"""``PooledTransport``: the lean pool of ``_transport`` behind httpx's transport interface.

Used by ``--model-arg http_transport=httpx-pooled`` (an ``httpx.AsyncClient`` on the lean pool), which the
throughput benchmark sets beside the default wire to measure what httpx's client machinery costs.
Its own module so that nothing else pays for importing httpx (~90 ms: it imports its command line, rich
and pygments).

A body over the pool's ``max_body`` raises ``_transport.ResponseTooLarge`` through the client unchanged (httpx
wraps only its own errors), so the wire fails it as too large, not as a dropped connection it would retry.
"""

from __future__ import annotations

import httpx

from eval_harness.providers._transport import (
    MAX_RESPONSE_BYTES,
    ConnectFailed,
    ConnectionDropped,
    ConnectionPool,
    ConnectTimedOut,
    MalformedResponse,
    ReadTimedOut,
    TLSRefused,
    origin_of,
)


class PooledTransport(httpx.AsyncBaseTransport):
    """``ConnectionPool`` behind httpx's transport interface; pool failures become the httpx exceptions."""

    def __init__(
        self,
        max_connections: int,
        connect_timeout: float | None,
        read_timeout: float | None,
        max_body: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.pool = ConnectionPool(max_connections, connect_timeout, read_timeout, max_body)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = origin_of(url.scheme, url.host, url.port)
        body = await request.aread()
        head = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), url.raw_path)]
        head.extend(b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw)
        if "content-length" not in request.headers and body:
            head.append(b"content-length: %d\r\n" % len(body))
        head.append(b"\r\n")
        data = b"".join(head)
        # httpx checks no header value: a line break would end the header, or inject another (h11 refuses one
        # with the value's repr in its message; here the value, which may be a key, is never shown)
        if data.count(b"\n") != len(head) or data.count(b"\r") != len(head) or b"\0" in data:
            raise httpx.LocalProtocolError("a request header holds a line break or NUL character", request=request)
        try:
            raw = await self.pool.exchange(origin, data + body)
        except ConnectTimedOut as exc:
            raise httpx.ConnectTimeout(str(exc), request=request) from None
        except ReadTimedOut as exc:  # chained: the wire finds a response head the failure came after
            raise httpx.ReadTimeout(str(exc), request=request) from exc
        except ConnectFailed as exc:
            raise httpx.ConnectError(str(exc), request=request) from None
        except TLSRefused as exc:  # chained: the wire tells it from a refused connection by its cause
            raise httpx.ConnectError(str(exc), request=request) from exc
        except ConnectionDropped as exc:
            raise httpx.ReadError(str(exc), request=request) from exc
        except MalformedResponse as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        # stream=, not content=: httpx decodes a content= body at once, with no bound (a gzip bomb inflated whole)
        stream = httpx.ByteStream(raw.body)
        return httpx.Response(raw.status, headers=raw.headers.pairs(), stream=stream, request=request)

    async def aclose(self) -> None:
        await self.pool.aclose()


__all__ = ["PooledTransport"]
