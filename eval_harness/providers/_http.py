"""What every HTTP provider shares: the pooled client, error classification, retry hints, secrets, prices.

A provider subclass supplies the wire format (body in, ``Completion`` out) and its auth headers; this
module turns transport failures and HTTP error statuses into the ``ProviderError`` tree with the provider's
own message, a ``retry_cause`` when trying again can help, and ``retry_after`` from the response headers.

Each provider holds one wire (``_wires``), built on its first call: a connection pool sized to the run's
concurrency (``ProviderContext.concurrency``) with connect/read timeouts from the context or the model args.
By default it is the lean HTTP/1.1 pool of ``_transport``, used without httpx's per-request machinery;
``--model-arg http_transport=httpx`` selects one shared ``httpx.AsyncClient`` (which honours proxy
variables), and so does a proxy variable of the environment that applies to the base URL when no transport is
given. httpx is not imported unless it is selected.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, NoReturn
from urllib.parse import unquote, urlsplit

import orjson
from pydantic import Field, SecretStr, field_validator, model_validator

from eval_harness import __version__, pricing
from eval_harness.config import credential_parameter, redact_shown, shown_url
from eval_harness.errors import (
    AuthenticationError,
    ConfigError,
    EvalHarnessError,
    ModelNotFoundError,
    ProviderError,
    ProviderHTTPError,
    ProviderResponseError,
    QuotaExhaustedError,
    RetryCause,
    ServerUntrustedError,
    json_type_name,
)
from eval_harness.providers._transport import RAISE_THE_LIMIT
from eval_harness.providers._wires import (
    ACCEPTED_ENCODINGS,
    Wire,
    WireKind,
    check_ca_bundle,
    checked_headers,
    open_wire,
    request_id_in,
)
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions, option_secrets
from eval_harness.types import Completion, GenerateConfig, Usage

_MESSAGE_LIMIT = 400
_SHOWN_LIMIT = 600
"""Characters of an error message naming a provider's reply (after redaction)."""
_WHITESPACE = re.compile(r"\s+")
_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class HTTPOptions(ProviderOptions):
    """Options every HTTP provider accepts."""

    transport_only: ClassVar[frozenset[str]] = frozenset(
        {"connect_timeout_s", "read_timeout_s", "max_response_bytes", "http_transport"}
    )

    base_url: str | None = Field(default=None, description="API root, e.g. https://api.openai.com/v1.")
    connect_timeout_s: float | None = Field(default=None, gt=0, description="TCP/TLS connect timeout.")
    read_timeout_s: float | None = Field(
        default=None, gt=0, description="Longest silence while awaiting a response (default: the run's --timeout)."
    )
    # at most a million dollars per million tokens: a typo like 1e308 would make every cost infinite
    price_in: float | None = Field(default=None, ge=0, le=1e6, description="USD per million input tokens (override).")
    price_out: float | None = Field(default=None, ge=0, le=1e6, description="USD per million output tokens (override).")
    price_cached_in: float | None = Field(
        default=None, ge=0, le=1e6, description="USD per million cached input tokens (default: price_in)."
    )
    price_cache_write: float | None = Field(
        default=None, ge=0, le=1e6, description="USD per million input tokens written to the cache (default: price_in)."
    )
    max_response_bytes: int | None = Field(
        default=None,
        gt=0,
        le=2**32,
        description="Largest response body read, in bytes, once gzip/deflate is inflated (default 64 MiB); a longer "
        "one fails that sample, not retried.",
    )
    http_transport: WireKind | None = Field(
        default=None,
        description="'pooled' (lean HTTP/1.1 pool), 'httpx' (an httpx.AsyncClient: honours HTTP(S)_PROXY) or "
        "'httpx-pooled' (an httpx.AsyncClient on the lean pool); default: 'pooled', or 'httpx' when a proxy "
        "variable of the environment applies to base_url.",
    )

    @model_validator(mode="after")
    def _prices_come_in_pairs(self) -> HTTPOptions:
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("give both price_in and price_out (USD per million tokens)")
        for name in ("price_cached_in", "price_cache_write"):
            if getattr(self, name) is not None and self.price_in is None:
                raise ValueError(f"{name} needs price_in and price_out")
        return self


_PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy"})


def _default_wire(base_url: str) -> WireKind:
    """The lean pool, unless the environment sends ``base_url`` through a proxy: the pool speaks to servers
    directly, so behind a proxy httpx's own transport (which honours the variables and NO_PROXY) is used."""
    return "httpx" if checked_proxy(base_url) else "pooled"


def checked_proxy(base_url: str) -> bool:
    """Whether the environment sends ``base_url`` through a proxy; a ``ConfigError`` when the variable that
    would is no proxy URL."""
    return proxy_variable(base_url) is not None


def proxy_variable(base_url: str) -> str | None:
    """The environment variable that sends ``base_url`` through a proxy (``HTTPS_PROXY`` or ``https_proxy``, as
    set), or None; a ``ConfigError`` when it is no proxy URL."""
    if not any(name.lower() in _PROXY_VARIABLES for name in os.environ):  # the common case imports nothing
        return None
    import urllib.request  # the standard library's reading of the variables, as httpx itself uses

    parts = urlsplit(base_url)
    proxies = urllib.request.getproxies_environment()
    if parts.scheme not in proxies and "all" not in proxies:
        return None
    if urllib.request.proxy_bypass(parts.netloc):  # NO_PROXY
        return None
    scheme = parts.scheme if parts.scheme in proxies else "all"
    _check_proxy(proxies[scheme], f"{scheme}_proxy")
    lower = f"{scheme}_proxy"  # which of the twins is set, as the user wrote it (lower case wins, as in urllib)
    return lower if lower in os.environ else lower.upper()


def _check_proxy(url: str, variable: str) -> None:
    """A proxy variable that is no proxy URL stops the run before it starts: httpx refused it on every request,
    each sample an error, the variable never named. Its value is not shown: it may hold a password."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname or not port_ok:
        raise ConfigError(
            f"the {variable} (or {variable.upper()}) environment variable is not a proxy URL such as "
            "http://host:3128 (its value is not shown: it may hold a password); fix or unset it"
        )


def holds_secret(url: str, secrets: Iterable[str]) -> bool:
    """Whether ``url`` holds one of ``secrets`` (stripped), as written or percent-encoded (once or twice)."""
    forms = [url]
    for _ in range(2):  # "%2D" and "%252D" both hide a "-"
        decoded = unquote(forms[-1])
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    keys = [key for key in (secret.strip() for secret in secrets) if len(key) >= 4]
    return any(key in form for key in keys for form in forms)


def check_base_url(
    url: str,
    secrets: Iterable[str],
    label: str,
    *,
    key_hint: str,
    name: str = "base_url",
    query_option: str = "",
    recorded: bool = True,
) -> str:
    """``url`` without a trailing ``/``, once it is an http(s) URL with a host and a usable port that carries
    no credentials: no ``user:password@`` and none of ``secrets`` (the URL is recorded in the manifest and
    named in messages). Else a ``ConfigError`` as ``{label}: {name} ...`` that never echoes the URL, since a
    key pasted into the wrong argument would be shown; ``query_option`` names the option that sends a key in the
    query, when the provider has one. A URL that is not ``recorded`` (one from an environment variable) is
    refused as well, not told so."""
    url = url.rstrip("/")
    try:
        parts = urlsplit(url)
        has_host = bool(parts.hostname)
    except ValueError:  # e.g. an unbalanced "[" in the host
        has_host = False
    if not has_host or parts.scheme not in ("http", "https"):
        raise ConfigError(f"{label}: {name} is not an http:// or https:// URL")
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number
        port = 0
    if port == 0:  # port 0 would connect to the scheme's default port
        raise ConfigError(f"{label}: {name} is not a valid URL: its port must be a number from 1 to 65535")
    if parts.username is not None or parts.password is not None:
        # a query stays allowed: Azure's ?api-version=... is one
        raise ConfigError(f"{label}: {name} must not carry user:password@; give a key through {key_hint}")
    why = f", and the {name} is recorded in the manifest" if recorded else ""
    if holds_secret(url, secrets):
        raise ConfigError(f"{label}: {name} holds an API key{why}; give the key through {key_hint}")
    parameter = credential_parameter(url)
    if parameter is not None:
        # a key the tool was not told of cannot be found by its value: its parameter's name gives it away
        part = "query" if credential_parameter(url.partition("#")[0]) is not None else "fragment"
        raise ConfigError(
            f"{label}: {name} carries a credential in its {part} ({parameter}=...){why}; give the key through "
            f"{key_hint}{_query_key_hint(url, parameter, query_option)}"
        )
    return url


def _query_key_hint(url: str, parameter: str, query_option: str) -> str:
    """Where a key named like ``parameter`` goes instead, when the provider can send it so: ``api-key`` (Azure)
    is read as a header; another parameter of the query (not of the fragment, which is never sent, nor a signed
    URL's signature) as that parameter."""
    if not query_option or credential_parameter(urlsplit(url)._replace(fragment="").geturl()) != parameter:
        return ""
    if parameter.lower() == "api-key":
        header_option = query_option.replace("api_key_query", "api_key_header")
        return f", with {header_option}=api-key for a server that reads it from a header (Azure's)"
    if "signature" in parameter.lower() or parameter.lower() == "sig":
        return ""
    return f", with {query_option}={parameter} for a server that reads it from the query"


@dataclass(frozen=True)
class Reply:
    """A successful HTTP exchange: parsed JSON (or raw text for event streams), headers and timing."""

    data: Any
    headers: Mapping[str, str]
    latency_ms: float
    text: str | None = None


def one_line(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    text = _WHITESPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BEFORE_REDACTION = 4_000
"""How much of a body's text a description keeps before the secrets are taken out of it (``_clean``, which
then cuts at 600): cut any shorter first, and a key straddling the cut would lose the tail that lets
redaction recognise it, leaving its head in the message."""


def describe_body(body: bytes) -> str:
    """A description of a non-JSON body: an HTML page's title, or the start of the text (cut to its final
    length only after redaction, by the provider's ``_clean``)."""
    stripped = body.lstrip()
    if not stripped:
        return "an empty body"
    if stripped[:1] == b"<":
        title = _HTML_TITLE.search(body)
        name = one_line(title.group(1).decode("utf-8", "replace"), _BEFORE_REDACTION) if title else ""
        return f"an HTML page ({name})" if name else "an HTML page"
    return repr(one_line(body[:_BEFORE_REDACTION].decode("utf-8", "replace"), _BEFORE_REDACTION))


def error_detail(body: bytes) -> str:
    """The provider's own error message from any of the common error body shapes.

    OpenAI ``{"error": {"message", "type", "code"}}``, Anthropic ``{"type": "error", "error": {"type",
    "message"}}``, vLLM ``{"object": "error", "message", "type"}``, Ollama ``{"error": "..."}``, TGI/FastAPI
    ``{"detail": ...}``; anything else is described (HTML page, plain text).
    """
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return describe_body(body)
    if not isinstance(obj, dict):
        return describe_body(body)
    error = obj.get("error")
    kind: Any = None
    code: Any = None
    message: Any = None
    if isinstance(error, dict):
        message, kind, code = error.get("message"), error.get("type"), error.get("code")
    elif isinstance(error, str):
        message = error
    elif "message" in obj:
        message, kind, code = obj.get("message"), obj.get("type"), obj.get("code")
    elif "detail" in obj:
        message = obj["detail"] if isinstance(obj["detail"], str) else orjson.dumps(obj["detail"]).decode()
    if message is None:
        return describe_body(body)
    # only names label the message: a numeric code (OpenRouter's 502) or a malformed type is no name
    labels = [x for x in (kind, code) if isinstance(x, str) and x not in ("", "error")]
    prefix = f"{labels[0]}: " if labels else ""
    if len(labels) > 1 and labels[1] != labels[0]:
        prefix = f"{labels[0]} ({labels[1]}): "
    return prefix + (message if isinstance(message, str) else orjson.dumps(message).decode())


def _error_object(body: bytes) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = obj.get("error") if isinstance(obj, dict) else None
    return error if isinstance(error, dict) else None


def error_code(body: bytes) -> str | None:
    """``error.code`` or ``error.type`` of a JSON error body, when there is one."""
    error = _error_object(body)
    if error is not None:
        for key in ("code", "type"):
            if isinstance(error.get(key), str):
                return str(error[key])
    return None


def error_details_code(body: bytes) -> str | None:
    """``error.details.error_code`` of a JSON error body (Anthropic's finer reason, e.g. a spend cap)."""
    error = _error_object(body)
    details = error.get("details") if error is not None else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None


def _should_retry_header(headers: Mapping[str, str]) -> bool | None:
    """The server's own verdict, ``x-should-retry: true|false``, which the official SDKs obey before the status."""
    value = (headers.get("x-should-retry") or "").strip().lower()
    return True if value == "true" else False if value == "false" else None


TRANSIENT_4XX: dict[int, RetryCause] = {408: "timeout", 409: "conflict", 429: "rate_limit"}
"""The 4xx statuses worth trying again by default."""


def status_named(error: object) -> int | None:
    """An error object's numeric ``code`` as the HTTP status it names (a gateway's 502 sent at 200, a 429 inside a
    stream), or None when it names none."""
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600 else None


def retry_cause_of_status(
    status: int, headers: Mapping[str, str], transient_4xx: RetryCause | None
) -> RetryCause | None:
    """Why an error of ``status`` is worth trying again, or None: 529 and 503 are "overloaded", any other 5xx a
    "server_error", a 4xx ``transient_4xx`` (what the caller makes of it); ``x-should-retry`` overrides the
    status."""
    cause: RetryCause | None
    if status == 529 or status == 503:
        cause = "overloaded"
    elif status >= 500:
        cause = "server_error"
    elif status >= 400:
        cause = transient_4xx
    else:
        cause = None
    verdict = _should_retry_header(headers)
    if verdict is False:
        return None
    if verdict is True and cause is None:
        return "other"  # the server asked for it; the status names no cause (a 400 is no server error)
    return cause


def error_for_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    label: str,
    key_hint: str,
    secrets: Sequence[str],
    cause: RetryCause | None,
    quota_exhausted: bool = False,
    reset_after: Callable[[Mapping[str, str]], float | None] | None = None,
    request_id: str | None = None,
) -> EvalHarnessError:
    """The error an HTTP error status stands for, with the server's own message (redacted, on one line):
    ``AuthenticationError`` for 401/403, ``ModelNotFoundError`` for 404 and ``QuotaExhaustedError`` when
    ``quota_exhausted`` (each stops the run: every request would fail the same way), else ``ProviderHTTPError``
    carrying ``cause`` and, when it is worth a retry, the server's wait: ``Retry-After``, or for a 429 without
    one ``reset_after(headers)`` (the provider's own rate-limit headers). ``label`` names the caller
    (``openai/gpt-4o``), ``key_hint`` where its key comes from."""
    detail = error_detail(body)
    if status in (401, 403):
        message = f"{label}: authentication failed: HTTP {status} (check {key_hint}): {detail}"
        return AuthenticationError(redact_shown(message, secrets, _SHOWN_LIMIT, one_line=True))
    if status == 404:
        message = (
            f"{label}: HTTP 404: {detail} (no such model or endpoint, so every request would fail: check the model "
            "name and the base URL)"
        )
        return ModelNotFoundError(redact_shown(message, secrets, _SHOWN_LIMIT, one_line=True))
    if quota_exhausted:
        message = f"{label}: the account's quota is used up, so the run stops (HTTP {status}: {detail})"
        return QuotaExhaustedError(redact_shown(message, secrets, _SHOWN_LIMIT, one_line=True))
    retry_after, stated = None, True
    if cause is not None:
        retry_after = parse_retry_after(headers)
        if retry_after is None and status == 429 and reset_after is not None:
            # a reset time says when the whole budget is back, not when one more request may go: a wait for a
            # retry (capped as any), never a reason to give up as a stated Retry-After past the cap is
            retry_after = reset_after(headers)
            stated = False
    return ProviderHTTPError(
        redact_shown(f"{label}: HTTP {status}: {detail}", secrets, _SHOWN_LIMIT, one_line=True),
        retry_cause=cause,
        retry_after=retry_after,
        wait_stated=stated,
        status_code=status,
        request_id=request_id,
    )


def redirected(label: str, status: int, headers: Mapping[str, str], secrets: Sequence[str]) -> ModelNotFoundError:
    """A redirect stops the run: it is not followed (the key would go with it to wherever it points), and every
    request would meet it (http:// for https://, a base URL without /v1)."""
    location = headers.get("location")
    where = f"to {shown_url(location)}" if location else "elsewhere"
    message = (
        f"{label}: HTTP {status}: the server redirects {where}; redirects are not followed, so the key is never "
        "sent elsewhere: set the base URL to where it points"
    )
    return ModelNotFoundError(redact_shown(message, secrets, _SHOWN_LIMIT, one_line=True))


def lenient_json(content: bytes | str) -> Any:
    """The body parsed as JSON. orjson refuses some bodies whose answer is fine: an integer past 64 bits or a
    number past a double's range in the usage, an invalid UTF-8 byte in the text. The standard library reads
    those (the byte as U+FFFD; the usage's checks then drop the counts), at its own pace, only then."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        import json

        try:
            return json.loads(content.decode("utf-8", "replace") if isinstance(content, bytes) else content)
        except RecursionError:  # nested deeper than orjson's 1,024 levels: not an answer either
            raise ValueError("nested too deeply") from None


_SSE_LINE_END = re.compile(r"\r\n|\r|\n")
"""Where a line of an event stream ends: CR LF, CR or LF, and nothing else (``str.splitlines`` also splits at
U+2028, U+0085 and other characters JSON carries unescaped inside a string)."""
_SSE_DATA = re.compile(rb"(?:^|[\r\n])(?:\xef\xbb\xbf)?data:?")
"""A ``data`` field at the start of a line: what tells an event stream from a body that is not one."""


@dataclass(frozen=True)
class SSEvent:
    """One server-sent event: its name (``message`` when the stream gives none) and its data."""

    name: str
    data: str
    ended: bool = True
    """False for the last event of a body that ends without the blank line ending it: perhaps cut mid-event."""


def sse_events(text: str) -> Iterator[SSEvent]:
    """The events of a server-sent event stream, decoded as the WHATWG rules say (written here because no library
    of the design card decodes them): a leading BOM dropped, lines ending at CR LF, CR or LF, one space after the
    colon dropped, the ``data`` lines of an event joined with LF, an event dispatched at a blank line, comment lines
    (``:``) and other fields passed over. The rules drop an event the body ends inside; it is given here, marked not
    ``ended``, so that a last event a server sent whole but without its blank line is read (``event_json``)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    name, data = "", list[str]()
    lines = _SSE_LINE_END.split(text)
    if not lines[-1]:
        lines.pop()  # what follows the last line end: no line (a blank line takes two line ends)
    for line in lines:
        if not line:
            if data:
                yield SSEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if data:
        yield SSEvent(name or "message", "\n".join(data), ended=False)


def event_json(data: str, *, ended: bool = True) -> Any:
    """An event's data as JSON (as leniently as a whole body: a usage number orjson refuses is no failure).

    Data that is not JSON in an event the body ended inside (not ``ended``) is a stream cut mid-event — a proxy
    ending the response cleanly when its upstream stopped — and is retried as a dropped connection is."""
    try:
        return lenient_json(data)
    except ValueError:
        if not ended:
            # whole, as below: the provider's message cleaning redacts, then cuts (a key cut here would escape it)
            raise ProviderResponseError(
                f"the event stream ended in the middle of an event: {data[:4000]!r}", retry_cause="connection"
            ) from None
        # cut by the provider's message cleaning, after redaction (a key cut here would escape it)
        raise ProviderResponseError(f"an event of the stream is not JSON: {data[:4000]!r}") from None


def sse_payloads(text: str) -> Iterator[Any]:
    """The JSON payloads of a server-sent event stream, in order; ``None`` for a closing ``[DONE]`` (OpenAI's),
    after which nothing is read. An event whose data is blank or ``null`` carries nothing."""
    for event in sse_events(text):
        data = event.data.strip()
        if data == "[DONE]":
            yield None
            return
        if data:
            payload = event_json(data, ended=event.ended)
            if payload is not None:
                yield payload


def _is_json(headers: Mapping[str, str]) -> bool:
    return (headers.get("content-type") or "").strip().lower().startswith("application/json")


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (delta seconds or an HTTP date); a
    ``retry-after-ms`` of 0 or less gives way to ``retry-after`` (the gateway backs off exponentially when the
    wait named is not positive)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            if float(millis) > 0:
                return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(when.timestamp() - current, 0.0)


REFUSAL = "refusal"
"""The finish reason of an answer the model refused to give (OpenAI's ``refusal``, Anthropic's stop reason)."""


def apply_stop(text: str, stop: list[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the first stop sequence, for stops the API was not given (the Responses API has none)."""
    if not stop:
        return text, False
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def cut_at_stop(completion: Completion, stop: list[str] | None, reason: str) -> Completion:
    """The answer cut at the first stop sequence the server was not given (its finish reason then ``reason``,
    the API's own name for a stop); a refusal is kept whole, and stays marked as one."""
    if not stop or completion.finish_reason == REFUSAL:
        return completion
    text, stopped = apply_stop(completion.text, stop)
    return completion.model_copy(update={"text": text, "finish_reason": reason}) if stopped else completion


def sampling(config: GenerateConfig) -> dict[str, float]:
    """``temperature`` and ``top_p`` when the task sets them (the same field names in every API here)."""
    chosen = {"temperature": config.temperature, "top_p": config.top_p}
    return {name: value for name, value in chosen.items() if value is not None}


class HTTPProvider(Provider):
    """Base of providers that speak JSON over HTTP through one shared client with a pool sized to the run."""

    Options: ClassVar[type[ProviderOptions]] = HTTPOptions
    default_base_url: ClassVar[str | None] = None
    key_hint: ClassVar[str] = "the API key"
    """Where the key comes from, for messages; ``{flag}`` stands for the flag the options were given through."""
    base_url_variable: ClassVar[str | None] = None
    """The environment variable ``configured_base_url`` reads (messages name it when the URL came from it)."""
    key_query_option: ClassVar[str] = ""
    """The option that sends the key in the query, when the provider has one (``{flag}`` as in ``key_hint``)."""
    request_id_headers: ClassVar[tuple[str, ...]] = ("x-request-id", "request-id")

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        super().__init__(model, options, context)
        assert isinstance(options, HTTPOptions)
        self.http_options = options
        configured = None if options.base_url else self.configured_base_url()
        base_url = options.base_url or configured or self.default_base_url
        if not base_url:
            raise ConfigError(
                f"{self.provider_name}/{model}: set {context.options_flag} base_url=http://HOST:PORT/v1 (the server's "
                "API root)"
            )
        given = option_secrets(options)
        self.base_url = check_base_url(
            base_url,
            [*context.settings.secrets(), *given],
            f"{self.provider_name}/{model}",
            key_hint=self.key_source,
            name=(configured and self.base_url_variable) or "base_url",
            query_option=self.key_query_option.replace("{flag}", context.options_flag),
            recorded=not configured,
        )
        self.price = pricing.resolve(
            self.provider_name,
            model,
            options.price_in,
            options.price_out,
            options.price_cached_in,
            options.price_cache_write,
        )
        self._wire_state: Wire | None = None
        self._timeout: dict[str, float | None] = {
            "connect": options.connect_timeout_s or context.connect_timeout_s,
            "read": options.read_timeout_s or context.read_timeout_s,
            "write": options.read_timeout_s or context.read_timeout_s,
            "pool": None,
        }
        self.wire_kind: WireKind = options.http_transport or _default_wire(self.base_url)
        if options.http_transport == "httpx":  # chosen on purpose, it proxies too: the variable checked the same
            checked_proxy(self.base_url)
        if self.base_url[:6].lower() == "https:" and not context.offline and not context.cache:
            # before the run exists, as a bad proxy variable is: at the first request the run stopped "failed"
            check_ca_bundle()
        # Import the wire now, not inside the first call: that call's rate-limit slot and its latency should
        # not include the imports.
        if self.wire_kind != "pooled":
            import httpx  # noqa: F401

    @property
    def proxy(self) -> str | None:
        """The variable whose proxy the requests go through (only httpx's transport takes one), or None."""
        return proxy_variable(self.base_url) if self.wire_kind == "httpx" else None

    @property
    def key_source(self) -> str:
        """Where this provider's key comes from, as messages say it (``--judge-arg api_key_env=NAME`` ...)."""
        return self.key_hint.replace("{flag}", self.context.options_flag)

    @property
    def auth_failure_hint(self) -> str:
        """What a refused key (HTTP 401/403) says to check: where the key comes from, by default."""
        return self.key_source

    # hooks for subclasses ------------------------------------------------------------------------------
    def configured_base_url(self) -> str | None:
        """The base URL from the environment (e.g. OPENAI_BASE_URL), when the provider has one."""
        return None

    def auth_headers(self) -> dict[str, str]:
        """Headers that carry the credentials."""
        return {}

    def sent_base_url(self) -> str:
        """The base URL requests go to: ``base_url``, or, for a server that takes its key in the query, that
        with the key (never recorded or shown: ``base_url`` is)."""
        return self.base_url

    def reset_after(self, headers: Mapping[str, str]) -> float | None:
        """Seconds until the provider's rate-limit window resets, from its own headers."""
        return None

    def is_transient_4xx(self, status: int, body: bytes) -> RetryCause | None:
        """Whether a 4xx other than 401/403 is worth retrying (408, 409, 429 by default)."""
        return TRANSIENT_4XX.get(status)

    def quota_exhausted(self, status: int, body: bytes) -> bool:
        """Whether an error says the account's quota or spend limit is used up: no wait clears it before the
        run ends, so the run stops (``QuotaExhaustedError``) instead of failing every sample in turn."""
        return False

    def error_type_cause(self, error: object) -> RetryCause | None:
        """Why an error object of a 200's body without a numeric code is worth trying again, by its type (a
        provider's names: Anthropic's ``overloaded_error``), or None."""
        return None

    # shared machinery ----------------------------------------------------------------------------------
    @property
    def cache_scope(self) -> str:
        """What, besides model and body, identifies an answer: the provider and the server it came from."""
        return f"{self.provider_name}@{self.base_url}"

    def cost(self, usage: Usage) -> float | None:
        return None if self.price is None else self.price.cost(usage)

    def check_requests(self) -> None:
        if self.context.offline:  # a dry run sends nothing, and may have no key to check
            return
        try:
            checked_headers(self._static_headers())
        except ConfigError as exc:  # names the header, never its value: it may be a key
            raise ConfigError(f"{self.model_id}: {exc}; check the key's value (a line break copied with it?)") from None

    def _static_headers(self) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": "application/json",
            "accept-encoding": ACCEPTED_ENCODINGS,
            "user-agent": f"eval-harness/{__version__}",
            **self.auth_headers(),
        }

    def _wire(self) -> Wire:
        if self._wire_state is None:
            size = max(self.context.concurrency, 1)
            self._wire_state = open_wire(
                self.wire_kind, self.sent_base_url(), self._static_headers(), size, self._timeout,
                self.http_options.max_response_bytes, self.request_id_headers,
            )  # fmt: skip
        return self._wire_state

    async def post(self, path: str, body: dict[str, Any], *, raw_text: bool = False) -> Reply:
        """POST ``body`` as JSON; return the parsed reply or raise the matching ``ProviderError``.

        With ``raw_text`` (an event stream was asked for) the body comes back as text, unless the server
        answered with JSON instead (some ignore ``stream``, and errors come as JSON): that is parsed."""
        wire = self._wire()
        payload = orjson.dumps(body)
        started = time.perf_counter()
        try:
            status, headers, content = await wire.post(path, payload)
        except ProviderError as exc:  # transport failures arrive as ProviderErrors; name the provider in them
            raise self.labelled(exc) from None
        except ServerUntrustedError as exc:  # the run stops: the line names the provider too
            raise ServerUntrustedError(self._clean(f"{self.label}: {exc}")) from None
        latency_ms = (time.perf_counter() - started) * 1000
        if status >= 400:
            self._raise_for_status(status, headers, content)
        if 300 <= status < 400:
            raise redirected(self.label, status, headers, self.secrets())
        if raw_text and not _is_json(headers) and _SSE_DATA.search(content):
            return Reply(None, headers, latency_ms, content.decode("utf-8", "replace"))
        try:
            data = lenient_json(content)
        except ValueError:
            if raw_text and _SSE_DATA.search(content):  # an event stream after all, whatever its content-type said
                return Reply(None, headers, latency_ms, content.decode("utf-8", "replace"))
            # an HTML page, or a stream without one event: failed at once, described, as unstreamed
            what = describe_body(content)
            stream = " or an event stream" if raw_text else ""
            raise ProviderResponseError(
                self._clean(f"{self.label}: HTTP {status} but the body is not JSON{stream}: {what}"),
                request_id=self.header_request_id(headers),
            ) from None
        if not isinstance(data, dict):
            raise ProviderResponseError(
                f"{self.label}: the body is {json_type_name(data)}, not a JSON object",
                request_id=self.header_request_id(headers),
            )
        return Reply(data, headers, latency_ms)

    @property
    def label(self) -> str:
        """How messages name this provider: ``openai/gpt-4o``."""
        return self.model_id

    def _clean(self, text: str) -> str:
        return redact_shown(text, self.secrets(), _SHOWN_LIMIT, one_line=True)

    def _raise_for_status(self, status: int, headers: Mapping[str, str], body: bytes) -> NoReturn:
        raise error_for_status(
            status,
            headers,
            body,
            label=self.label,
            key_hint=self.auth_failure_hint,
            secrets=self.secrets(),
            cause=self.retry_cause_of(status, headers, body),
            quota_exhausted=self.quota_exhausted(status, body),
            reset_after=self.reset_after,
            request_id=self.header_request_id(headers),
        )

    def retry_cause_of(self, status: int, headers: Mapping[str, str], body: bytes) -> RetryCause | None:
        """Why an error of ``status`` is worth trying again, or None; ``x-should-retry`` overrides the status."""
        return retry_cause_of_status(
            status, headers, self.is_transient_4xx(status, body) if 400 <= status < 500 else None
        )

    def raise_for_error_body(self, reply: Reply, answer_field: str) -> None:
        """Raise ``ProviderHTTPError`` when a 200 carries an error object instead of ``answer_field``.

        Gateways such as OpenRouter send 200 before the upstream model runs, so its failure arrives in the
        body: ``{"error": {"message", "code": 502}}``. A numeric ``code`` is read as the HTTP status it names
        (429, 408 and 5xx are retried); anything else fails the sample with the server's message."""
        data = reply.data
        if answer_field in data or not data.get("error"):
            return
        body = orjson.dumps(data)
        status = status_named(data["error"])
        cause = self.retry_cause_of(status or 200, reply.headers, body)
        if cause is None and reply.headers.get("x-should-retry") is None:  # the server's "false" decides first
            cause = self.error_type_cause(data["error"])
        raise ProviderHTTPError(
            f"HTTP 200 with an error in the body: {error_detail(body)}",
            retry_cause=cause,
            retry_after=parse_retry_after(reply.headers) if cause is not None else None,
            status_code=status,
            request_id=self.request_id(reply),
        )

    def labelled(self, exc: ProviderError, request_id: str | None = None) -> ProviderError:
        """``exc`` with the provider named in its message (raised ``from None`` where it was caught), and
        ``request_id`` when it has none of its own.

        A try/except at each call site rather than a context manager: this runs once per request, and
        entering and leaving a generator-based context manager costs more than the rest of the check."""
        told = str(exc)
        if self.context.options_flag != "--model-arg":  # the wire knows no flag: a judge's is not the model's
            told = told.replace(RAISE_THE_LIMIT, f"; {self.context.options_flag} max_response_bytes=N raises the limit")
        labelled = exc.with_message(self._clean(f"{self.label}: {told}"))
        labelled.request_id = exc.request_id or request_id
        return labelled

    def header_request_id(self, headers: Mapping[str, str]) -> str | None:
        """The provider's request id from the response headers, when it sent one."""
        return request_id_in(headers, self.request_id_headers)

    def request_id(self, reply: Reply, body_id: Any = None) -> str | None:
        """The provider's request id from a response header, else the id in the body."""
        found = self.header_request_id(reply.headers)
        if found is not None:
            return found
        return str(body_id) if body_id is not None else None

    def priced(
        self, usage: Usage, reported: bool, cache_write_tokens: int = 0, hour_cache_write_tokens: int = 0
    ) -> float | None:
        """The cost of ``usage``; None when the price is unknown or the server reported no usage."""
        if self.price is None or not reported:
            return None
        return self.price.cost(usage, cache_write_tokens, hour_cache_write_tokens)

    async def aclose(self) -> None:
        if self._wire_state is not None:
            await self._wire_state.aclose()
            self._wire_state = None


class KeyOptions(HTTPOptions):
    """Options of providers whose key may come from a model arg or a named environment variable."""

    # the variable names where the key is read from, never what the answers are: a resume after a 401 may name
    # another for its session without --force (the key itself is never recorded either way)
    transport_only: ClassVar[frozenset[str]] = HTTPOptions.transport_only | {"api_key_env"}

    api_key: SecretStr | None = Field(
        default=None, description="API key (never recorded; prefer api_key_env so a resume finds it again)."
    )
    api_key_env: str | None = Field(default=None, description="Name of the environment variable holding the key.")

    @field_validator("api_key")
    @classmethod
    def _key_is_stripped(cls, value: SecretStr | None) -> SecretStr | None:
        # a header loses its outer whitespace on the wire, and servers echo the key as it arrived: a padded key
        # would be sent one way and redacted another
        if value is None:
            return None
        key = value.get_secret_value().strip()
        if not key:
            raise ValueError("the key is blank once spaces are removed")
        return SecretStr(key)

    def public(self) -> dict[str, Any]:
        """Without ``api_key`` even when unset, so that a resume without the key matches the manifest."""
        recorded = super().public()
        recorded.pop("api_key", None)
        return recorded


__all__ = [
    "REFUSAL",
    "TRANSIENT_4XX",
    "HTTPOptions",
    "HTTPProvider",
    "KeyOptions",
    "Reply",
    "SSEvent",
    "apply_stop",
    "check_base_url",
    "checked_proxy",
    "cut_at_stop",
    "describe_body",
    "error_code",
    "error_detail",
    "error_details_code",
    "error_for_status",
    "event_json",
    "holds_secret",
    "lenient_json",
    "one_line",
    "parse_retry_after",
    "proxy_variable",
    "redirected",
    "retry_cause_of_status",
    "sampling",
    "sse_events",
    "sse_payloads",
    "status_named",
]
