"""A fake LLM server for tests and benchmarks: OpenAI and Anthropic wire formats on 127.0.0.1.

Speaks ``POST /v1/chat/completions`` (also streamed), ``/v1/responses``, ``/v1/completions``,
``/v1/embeddings``, ``GET /v1/models`` (OpenAI schemas) and ``POST /v1/messages`` (Anthropic, also streamed),
validates the requests the way the real APIs do (required fields and headers, the key when one is set) and
records every request. What it answers is decided per request, first match wins:

1. a scripted queue (``server.script(reply, reply, ...)``): FIFO, shared by every generation endpoint;
   judge tests queue JSON verdicts with ``answer('{"score": 1}')``;
2. a rule (``server.rule = fn``): ``fn(recorded_request) -> Reply | None``, e.g. ``chaos(...)``;
3. the default: a deterministic *correct* answer. The text after ``[[answer: ...]]`` in the prompt, else
   the target of the dataset item whose input appears in the prompt (``answers=answers_from_jsonl(path)``),
   else ``"ok"``.

Faults (``Reply`` helpers): ``rate_limited`` (429 + Retry-After), ``server_error`` (500), ``overloaded``
(529), ``unauthorized`` (401), ``bad_request`` (400), ``hang``, ``cut_connection`` (the body stops short and
the socket closes), ``truncated_json``, ``not_json``, ``html_page``; ``Reply(body=...)`` sends an exact
documented body and ``Reply(events=[...])`` an exact event stream. ``{key}`` in an error message or a raw
body is replaced by the key the client presented (to test redaction). ``max_in_flight`` counts the most requests
ever handled at once.

In-process: ``with FakeLLMServer(latency_s=0.05) as server: ... server.base_url``. As a separate process
(benchmarks): ``python tests/fake_llm_server.py --latency 0.2`` prints ``PORT <n>``; configure it with
``POST /_control`` (``{"latency_s", "script": [reply...], "reset": true}``) and read ``GET /_stats``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import json
import math
import re
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

ANSWER_MARK = re.compile(r"\[\[answer:\s*(.*?)\]\]", re.DOTALL)
ANTHROPIC_PATHS = ("/v1/messages",)


@dataclass
class Reply:
    """What the server does with one request."""

    kind: str = "answer"  # answer | error | hang | cut | truncated_json | not_json | html
    status: int = 200
    text: str | None = None  # the answer (None: the default answer rule)
    thinking: str | None = None  # reasoning / thinking text, where the schema has a place for it
    finish_reason: str | None = None
    message: str = ""  # error message; "{key}" becomes the presented key, "{query}" the query as it arrived
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float | None = None  # overrides the server's latency for this reply
    body: Any = None  # a JSON body sent as-is, or bytes sent verbatim (status and headers apply; "{key}": the key)
    events: list[Any] | None = None  # a raw event stream: each item (a JSON value, or "[DONE]") as a data: line
    usage: bool = True  # include usage in the answer
    gzip: bool = False  # compress the answer's body (Content-Encoding: gzip)
    completion_tokens: int | None = None  # the answer's count as reported (None: counted from the text; an answer
    # told to stop at a length limit counts the limit sent, as a real model that wrote up to it does)


def answer(text: str, **kwargs: Any) -> Reply:
    """A successful answer with ``text``."""
    return Reply(text=text, **kwargs)


def rate_limited(retry_after: str | None = "1", *, headers: dict[str, str] | None = None, message: str = "") -> Reply:
    """HTTP 429 with ``retry-after`` (seconds or an HTTP date) and any extra headers."""
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = retry_after
    return Reply(kind="error", status=429, headers=all_headers, message=message or "Rate limit reached; slow down.")


def server_error(status: int = 500, message: str = "The server had an error while processing your request.") -> Reply:
    """A 5xx error."""
    return Reply(kind="error", status=status, message=message)


def overloaded() -> Reply:
    """Anthropic's 529 overloaded_error."""
    return Reply(kind="error", status=529, message="Overloaded", error_type="overloaded_error")


def unauthorized(message: str = "Incorrect API key provided: {key}.") -> Reply:
    """HTTP 401."""
    return Reply(kind="error", status=401, message=message)


def bad_request(message: str, error_type: str = "invalid_request_error", code: str | None = None) -> Reply:
    """HTTP 400 with the provider's message."""
    return Reply(kind="error", status=400, message=message, error_type=error_type, error_code=code)


def hang() -> Reply:
    """Accept the request and never answer (until the server stops)."""
    return Reply(kind="hang")


def cut_connection() -> Reply:
    """Send a 200 head promising more body than comes, then close the socket."""
    return Reply(kind="cut")


def truncated_json() -> Reply:
    """A complete HTTP response whose JSON body stops in the middle."""
    return Reply(kind="truncated_json")


def not_json() -> Reply:
    """HTTP 200 with a plain-text body."""
    return Reply(kind="not_json")


def html_page(status: int = 502) -> Reply:
    """An HTML error page, as proxies send."""
    return Reply(kind="html", status=status)


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float  # time.monotonic() at arrival
    wall_time: float  # time.time() at arrival
    prompt: str  # the prompt text, all turns joined
    attempt: int  # how many times this exact body arrived before, plus one
    query: dict[str, str] = field(default_factory=dict)
    size: int = 0  # bytes of the body as received


def answers_from_jsonl(path: Path | str, input_field: str = "input", target_field: str = "target") -> dict[str, str]:
    """``{input: target}`` of a JSONL dataset, for correct default answers."""
    mapping = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            target = obj[target_field]
            mapping[str(obj[input_field])] = str(target[0] if isinstance(target, list) else target)
    return mapping


def chaos(
    *,
    seed: int = 0,
    p_rate_limit: float = 0.0,
    p_server_error: float = 0.0,
    p_overloaded: float = 0.0,
    p_garbage: float = 0.0,
    p_bad_request: float = 0.0,
    retry_after: str = "0",
    heal_after: int = 2,
) -> Callable[[RecordedRequest], Reply | None]:
    """A rule failing requests deterministically by (prompt, attempt): the same run faults the same way.

    Transient faults (429, 500, 529) and garbage bodies stop after ``heal_after`` attempts of a prompt, so
    enough retries always succeed; ``p_bad_request`` fails a prompt on every attempt.
    """

    def decide(request: RecordedRequest) -> Reply | None:
        digest = hashlib.sha256(f"{seed}\x1f{request.prompt}".encode()).digest()
        fixed = int.from_bytes(digest[:4], "big") / 2**32
        if fixed < p_bad_request:
            return bad_request("This prompt is refused by the fake server.")
        if request.attempt > heal_after:
            return None
        roll = int.from_bytes(hashlib.sha256(digest + bytes([request.attempt])).digest()[:4], "big") / 2**32
        faults: list[tuple[float, Reply]] = [
            (p_rate_limit, rate_limited(retry_after)),
            (p_server_error, server_error()),
            (p_overloaded, overloaded()),
            (p_garbage, not_json()),
        ]
        for probability, fault in faults:
            if roll < probability:
                return fault
            roll -= probability
        return None

    return decide


_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_OPENAI_REASONING = re.compile(r"^(?:o\d|gpt-(?:[5-9]|[1-9]\d+))")
"""OpenAI's reasoning models (o-series, gpt-5 and later): Chat Completions refuses their max_tokens
(max_completion_tokens instead) and stop ("Unsupported parameter: 'max_tokens' is not supported with this model.
Use 'max_completion_tokens' instead."), and at any reasoning effort but none a temperature other than 1 and top_p
("When reasoning effort is not none, remove temperature, top_p", OpenAI's deployment checklist), on both APIs."""
_OPENAI_ALWAYS_REASONS = re.compile(r"^gpt-6\.2(?!\d)")
"""GPT-6.2: "The API rejects requests that set reasoning effort to none" (gpt-6.2-sol's page)."""


def _invalid_reasoning_options(body: dict[str, Any], effort: object, refused: tuple[str, ...]) -> Reply | None:
    """A reasoning model's refusals: effort none where it always reasons, then each of ``refused`` sent."""
    if not _OPENAI_REASONING.match(body["model"]):
        return None
    if effort == "none" and _OPENAI_ALWAYS_REASONS.match(body["model"]):
        return bad_request("Unsupported value: 'reasoning_effort' does not support 'none' with this model.")
    sampling_allowed = effort == "none"
    for name in refused:
        if name in body and not (name == "temperature" and body[name] == 1):
            if sampling_allowed and name in ("temperature", "top_p"):
                continue
            return bad_request(
                f"Unsupported parameter: '{name}' is not supported with this model.", code="unsupported_parameter"
            )
    return None


_CLAUDE_4_7_ON = re.compile(r"^claude-(?:(?:opus|sonnet|haiku)-(?:4-[7-9]|[5-9])(?!\d)|fable-|mythos-)")
"""Claude 4.7 and later, and the Fable and Mythos models (migration guides to Opus 4.7 and Fable 5): temperature,
top_p and top_k are refused ("`temperature` is deprecated for this model"), thinking is adaptive only, and the
thinking text is omitted unless ``display: "summarized"``."""
_CLAUDE_5_ON = re.compile(r"^claude-(?:(?:opus|sonnet|haiku)-[5-9](?!\d)|fable-|mythos-)")
"""Claude 5 and later, Fable and Mythos think when the request has no ``thinking`` field (migration guide to Opus
5: "requests without a thinking field ... run with adaptive thinking"); max_tokens bounds thinking and answer."""
_CLAUDE_ALWAYS_THINKS = re.compile(r"^claude-(?:(?:opus|sonnet)-(?:5-[5-9]|[6-9])(?!\d)|fable-|mythos-)")
"""Opus 5.5 and later, Sonnet 5.5 and later, Fable and Mythos refuse ``disabled`` thinking (what's new in Claude
Opus 5.5)."""
_CLAUDE_DISABLED_TO_HIGH = re.compile(r"^claude-(?:opus-(?:[5-9])|haiku-(?:5-[5-9]|[6-9]))(?!\d)")
"""Claude Opus 5 and Haiku 5.5 take ``disabled`` thinking at effort high or below only (what's new in each)."""
_NO_DISABLED = (
    '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and '
    '"output_config.effort" to control thinking behavior.'
)


def _openai_reasoning(body: dict[str, Any], thinking: str | None) -> int:
    """The tokens an OpenAI reasoning model reasons (the scripted thinking's) before it answers: none at effort
    none, nor for other models."""
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else body.get("reasoning_effort")
    if thinking is None or effort == "none" or not _OPENAI_REASONING.match(body["model"]):
        return 0
    return _tokens(thinking)


def _invalid_messages_options(body: dict[str, Any]) -> Reply | None:
    """The Messages API's checks of ``thinking`` and ``output_config``: ``enabled`` takes a ``budget_tokens`` of
    at least 1024 below ``max_tokens`` (not on 4.7 and later), ``adaptive`` takes a ``display`` only,
    ``disabled`` is refused where thinking is always on and above effort high where it is on by default,
    ``output_config.effort`` is one of five levels, and thinking of either kind refuses a temperature."""
    thinking = body.get("thinking")
    late_model = bool(_CLAUDE_4_7_ON.match(body["model"]))
    if late_model:
        for name in ("temperature", "top_p", "top_k"):
            if name in body:
                return bad_request(f"`{name}` is deprecated for this model.")
    output_config = body.get("output_config")
    if output_config is not None and (
        not isinstance(output_config, dict) or output_config.get("effort", "high") not in _EFFORTS
    ):
        return bad_request("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if thinking.get("display", "summarized") not in ("summarized", "omitted"):
            return bad_request("thinking.display: Input should be 'summarized' or 'omitted'")
        if kind == "enabled":
            if late_model and body["model"] != "claude-mythos-preview":  # the preview takes a budget too
                return bad_request("thinking.type.enabled is not supported for this model. Use thinking.type.adaptive")
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return bad_request("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if body["max_tokens"] <= budget:
                return bad_request("max_tokens must be greater than thinking.budget_tokens")
        elif kind == "adaptive":
            if not set(thinking) <= {"type", "display"}:
                return bad_request("thinking.adaptive: Extra inputs are not permitted")
        elif kind == "disabled":
            if _CLAUDE_ALWAYS_THINKS.match(body["model"]):
                return bad_request(_NO_DISABLED)
            effort = (output_config or {}).get("effort", "high")
            if _CLAUDE_DISABLED_TO_HIGH.match(body["model"]) and effort in ("xhigh", "max"):
                return bad_request(f"output_config.effort '{effort}' is not supported when thinking is disabled")
        else:
            return bad_request("thinking: Input tag does not match any of the expected tags")
        if kind != "disabled" and "temperature" in body:
            return bad_request("temperature may only be set to 1 when thinking is enabled")
    stops = body.get("stop_sequences")
    if isinstance(stops, list) and any(not isinstance(x, str) or not x.strip() for x in stops):
        return bad_request("stop_sequences: each stop sequence must contain non-whitespace")
    return None


def _thinks(body: dict[str, Any]) -> bool:
    """Whether the model thinks on this request: asked to, or by default (Claude 5 and later, Fable, Mythos)."""
    config = body.get("thinking")
    if isinstance(config, dict):
        return config.get("type") in ("enabled", "adaptive")
    return bool(_CLAUDE_5_ON.match(body["model"]))


def _thinking_shown(body: dict[str, Any], thinking: str) -> str:
    """The thinking text as sent back: "" where ``display`` is omitted (the default from Claude 4.7 on)."""
    config = body.get("thinking")
    default = "omitted" if _CLAUDE_4_7_ON.match(body["model"]) else "summarized"
    display = config.get("display", default) if isinstance(config, dict) else default
    return thinking if display == "summarized" else ""


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _prompt_of(path: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        prompt = body.get("prompt")
        return prompt if isinstance(prompt, str) else json.dumps(prompt)
    if path.endswith("/responses"):
        parts = [str(body.get("instructions") or "")]
        items = body.get("input")
        if isinstance(items, str):
            parts.append(items)
        elif isinstance(items, list):
            parts += [_content_text(i.get("content")) for i in items if isinstance(i, dict)]
        return "\n\n".join(p for p in parts if p)
    parts = []
    system = body.get("system")
    if system:
        parts.append(_content_text(system))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            parts.append(_content_text(message.get("content")))
    return "\n\n".join(parts)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _json_response(payload: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(payload), status=status, headers=headers, content_type="application/json")


class FakeLLMServer:
    """The server; use as a context manager (in a background thread) or ``serve_forever`` (own process)."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        api_key: str | None = None,
        answers: dict[str, str] | None = None,
        model_name: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        hang_s: float = 60.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.ssl_context = ssl_context  # serve https with this context (a test's self-signed certificate)
        self.api_key = api_key
        self.key_from: str | None = None
        """Where the key is read: None (``Authorization: Bearer``, Anthropic's ``x-api-key``), ``header:NAME``
        (as it is, as Azure's ``api-key``) or ``query:NAME`` (as Azure Functions' ``code``)."""
        self.answers = dict(answers or {})
        self.model_name = model_name
        self.host = host
        self.port = port
        self.hang_s = hang_s
        self.rule: Callable[[RecordedRequest], Reply | None] | None = None
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[Reply] = deque()
        self._seen: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None

    # control -------------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://`` with an ``ssl_context``)."""
        return f"{'https' if self.ssl_context else 'http'}://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The API root clients use: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies, used in order by the next generation requests."""
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests, the script and the in-flight maximum."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self._seen.clear()
            self.max_in_flight = self.in_flight

    def generation_requests(self) -> list[RecordedRequest]:
        """Recorded requests to generation endpoints (not models, control or stats)."""
        return [r for r in self.requests if r.method == "POST" and not r.path.startswith("/_")]

    # lifecycle -----------------------------------------------------------------------------------------
    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._generate)
        app.router.add_post("/v1/responses", self._generate)
        app.router.add_post("/v1/completions", self._generate)
        app.router.add_post("/v1/messages", self._generate)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_post("/_control", self._control)
        app.router.add_get("/_stats", self._stats)
        return app

    async def _start(self, sock: socket.socket) -> None:
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self._app(), handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock, ssl_context=self.ssl_context).start()

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(1024)
        self.port = sock.getsockname()[1]
        return sock

    def start(self) -> FakeLLMServer:
        """Serve in a background thread with its own event loop."""
        sock = self._bind()
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start(sock))
            started.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        started.wait(10)
        return self

    def stop(self) -> None:
        """Stop serving: hanging requests are released, the thread joins."""
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def shutdown() -> None:
            assert self._stopping is not None and self._runner is not None
            self._stopping.set()
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(15)
        self._loop = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def serve_forever(self) -> None:
        """Serve in the current loop until cancelled (the separate-process mode)."""
        await self._start(self._bind())
        print(f"PORT {self.port}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            assert self._runner is not None
            await self._runner.cleanup()

    # handlers ------------------------------------------------------------------------------------------
    async def _health(self, request: web.Request) -> web.Response:
        return _json_response({"status": "ok"})

    async def _models(self, request: web.Request) -> web.Response:
        if (denied := self._check_key(request)) is not None:
            return denied
        name = self.model_name or "fake-model"
        return _json_response(
            {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "fake"}]}
        )

    async def _embeddings(self, request: web.Request) -> web.Response:
        if (denied := self._check_key(request)) is not None:
            return denied
        body = await request.json()
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = []
        for index, text in enumerate(texts):
            digest = hashlib.sha256(str(text).encode()).digest()
            vector = [(b - 128) / 128 for b in digest[:8]]
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(_tokens(str(t)) for t in texts)
        return _json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _control(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("reset"):
            self.reset()
        if "latency_s" in body:
            self.latency_s = float(body["latency_s"])
        if body.get("script"):
            self.script(*(Reply(**r) for r in body["script"]))
        return _json_response({"ok": True})

    async def _stats(self, request: web.Request) -> web.Response:
        generation = self.generation_requests()
        return _json_response(
            {
                "requests": len(generation),
                "max_in_flight": self.max_in_flight,
                "first_request_at": generation[0].wall_time if generation else None,
                "last_request_at": generation[-1].wall_time if generation else None,
            }
        )

    def _presented_key(self, request: web.Request) -> str:
        place, _, name = (self.key_from or "").partition(":")
        if place == "header":
            return request.headers.get(name, "")
        if place == "query":
            return request.query.get(name, "")
        if request.path in ANTHROPIC_PATHS:
            return request.headers.get("x-api-key", "")
        auth = request.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else auth

    def _check_key(self, request: web.Request) -> web.Response | None:
        if self.api_key is None or self._presented_key(request) == self.api_key:
            return None
        return self._error(request, unauthorized())

    def _record(self, request: web.Request, raw: bytes, body: Any) -> RecordedRequest:
        prompt = _prompt_of(request.path, body)
        fingerprint = f"{request.path}\x1f".encode() + raw  # a retry sends the same bytes
        with self._lock:
            attempt = self._seen.get(fingerprint, 0) + 1
            self._seen[fingerprint] = attempt
            recorded = RecordedRequest(
                method=request.method,
                path=request.path,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
                time=time.monotonic(),
                wall_time=time.time(),
                prompt=prompt,
                attempt=attempt,
                query=dict(request.query),
                size=len(raw),
            )
            self.requests.append(recorded)
        return recorded

    def _choose(self, recorded: RecordedRequest) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.rule is not None:
            chosen = self.rule(recorded)
            if chosen is not None:
                return chosen
        return Reply()

    def _default_answer(self, prompt: str) -> str:
        marked = ANSWER_MARK.search(prompt)
        if marked:
            return marked.group(1).strip()
        for question, target in self.answers.items():
            if question in prompt:
                return target
        return "ok"

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._handle(request)
        finally:
            self.in_flight -= 1

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        recorded = self._record(request, raw, body)
        if (denied := self._check_key(request)) is not None:
            return denied
        if (invalid := self._validate(request, body)) is not None:
            return self._error(request, invalid)
        reply = self._choose(recorded)
        delay = self.latency_s if reply.delay_s is None else reply.delay_s
        if reply.kind == "hang":
            assert self._stopping is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.hang_s)
            return web.Response(status=504, text="hung")
        if delay > 0:
            await asyncio.sleep(delay)
        if reply.kind == "error":
            return self._error(request, reply)
        if reply.kind == "html":
            page = (
                f"<html><head><title>{reply.status} Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
            )
            return web.Response(status=reply.status, text=page, content_type="text/html", headers=reply.headers)
        if reply.kind == "not_json":
            return web.Response(status=200, text="this is not json at all", content_type="text/plain")
        if reply.kind == "truncated_json":
            return web.Response(
                status=200, body=b'{"id": "chatcmpl-cut", "object": "chat.comp', content_type="application/json"
            )
        if reply.kind == "cut":
            response = web.StreamResponse(
                status=200, headers={"Content-Type": "application/json", "Content-Length": "4096", **reply.headers}
            )
            await response.prepare(request)
            await response.write(b'{"id": "chatcmpl-cut", "choices": [')
            assert request.transport is not None
            request.transport.close()
            return response
        if reply.body is not None:
            # bytes: sent exactly as given (JSON no serialiser writes: 1e400, a 77-bit integer, a stray byte)
            raw = reply.body if isinstance(reply.body, bytes) else orjson.dumps(reply.body)
            payload = raw.replace(b"{key}", self._presented_key(request).encode())
            headers = {"content-type": "application/json", **reply.headers}
            return web.Response(body=payload, status=reply.status, headers=headers)
        if reply.events is not None:
            # Anthropic names each event on an "event:" line before its data, as the type its payload holds
            named = request.path in ANTHROPIC_PATHS
            lines = [
                (f"event: {e['type']}\n" if named and isinstance(e, dict) and "type" in e else "")
                + f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n"
                for e in reply.events
            ]
            lines = [line.replace("{key}", self._presented_key(request)) for line in lines]
            headers = {"content-type": "text/event-stream", **reply.headers}
            return web.Response(status=reply.status, body="".join(lines).encode(), headers=headers)
        text = reply.text if reply.text is not None else self._default_answer(recorded.prompt)
        return await self._answer(request, body, recorded, reply, text)

    def _validate(self, request: web.Request, body: Any) -> Reply | None:
        path = request.path
        if not isinstance(body, dict):
            return bad_request("We could not parse the JSON body of your request.")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return bad_request("you must provide a model parameter")
        if path == "/v1/messages":
            if not request.headers.get("anthropic-version"):
                return bad_request("anthropic-version: header is required")
            if not isinstance(body.get("max_tokens"), int):
                return bad_request("max_tokens: Field required")
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                return bad_request("messages: Field required")
            if any(m.get("role") not in ("user", "assistant") for m in messages if isinstance(m, dict)):
                return bad_request("messages: roles must be 'user' or 'assistant'; use the top-level system field")
            if (invalid := _invalid_messages_options(body)) is not None:
                return invalid
            if isinstance(body.get("temperature"), int | float) and not 0 <= body["temperature"] <= 1:
                return bad_request("temperature: Input should be less than or equal to 1")
        elif path == "/v1/chat/completions":
            if not isinstance(body.get("messages"), list) or not body["messages"]:
                return bad_request("'messages' is a required property")
            if isinstance(body.get("stop"), list) and len(body["stop"]) > 4:
                return bad_request(f"{body['stop']} is too long - 'stop'", code="invalid_value")
            refused = ("max_tokens", "temperature", "top_p", "stop")
            if (invalid := _invalid_reasoning_options(body, body.get("reasoning_effort"), refused)) is not None:
                return invalid
        elif path == "/v1/responses":
            if "input" not in body:
                return bad_request("Missing required parameter: 'input'.")
            if "stop" in body or "seed" in body:
                return bad_request("Unknown parameter: 'stop' / 'seed'.")
            reasoning = body.get("reasoning")
            effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
            if (invalid := _invalid_reasoning_options(body, effort, ("temperature", "top_p"))) is not None:
                return invalid
            if isinstance(body.get("max_output_tokens"), int) and body["max_output_tokens"] < 16:
                return bad_request(
                    "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got "
                    f"{body['max_output_tokens']} instead.",
                    code="integer_below_min_value",
                )
        elif path == "/v1/completions" and not isinstance(body.get("prompt"), str | list):
            return bad_request("'prompt' is a required property")
        return None

    def _error(self, request: web.Request, reply: Reply) -> web.Response:
        message = reply.message.replace("{key}", self._presented_key(request)).replace("{query}", request.query_string)
        status = reply.status
        if request.path in ANTHROPIC_PATHS:
            kind = reply.error_type or {
                400: "invalid_request_error",
                401: "authentication_error",
                403: "permission_error",
                404: "not_found_error",
                429: "rate_limit_error",
                529: "overloaded_error",
            }.get(status, "api_error")
            request_id = f"req_err_{next(self._ids)}"
            payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
            # Anthropic names its request id "request-id", and repeats it in the body
            payload["request_id"] = request_id
            return _json_response(payload, status=status, headers={"request-id": request_id, **reply.headers})
        kind = reply.error_type or {
            400: "invalid_request_error",
            401: "invalid_request_error",
            429: "requests",
        }.get(status, "server_error")
        code = reply.error_code or {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        payload = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        headers = {"x-request-id": f"req_err_{next(self._ids)}", **reply.headers}
        return _json_response(payload, status=status, headers=headers)

    async def _answer(
        self, request: web.Request, body: dict[str, Any], recorded: RecordedRequest, reply: Reply, text: str
    ) -> web.StreamResponse:
        number = next(self._ids)
        model = self.model_name or body["model"]
        prompt_tokens = _tokens(recorded.prompt)
        completion_tokens = _tokens(text) + 1
        path = request.path
        sent = body.get("max_output_tokens" if path == "/v1/responses" else "max_tokens")
        sent = body.get("max_completion_tokens", sent) if path == "/v1/chat/completions" else sent
        if reply.completion_tokens is not None:
            completion_tokens = reply.completion_tokens
        elif reply.finish_reason in ("length", "max_tokens", "max_output_tokens") and isinstance(sent, int):
            completion_tokens = max(completion_tokens, sent)
        headers = {**reply.headers}
        if path == "/v1/messages":
            headers.setdefault("request-id", f"req_{number:08d}")
            content: list[dict[str, Any]] = []
            thought = reply.thinking if reply.thinking is not None and _thinks(body) else None
            thinking_tokens = _tokens(thought or "")
            stop_reason = reply.finish_reason or "end_turn"
            if thought is not None:
                shown = _thinking_shown(body, thought)
                content.append({"type": "thinking", "thinking": shown, "signature": "c2lnbmF0dXJl"})
            if thinking_tokens + completion_tokens > body["max_tokens"]:
                # max_tokens bounds thinking and answer together: thinking that fills it leaves no answer
                thinking_tokens = min(thinking_tokens, body["max_tokens"])
                text = text[: 4 * (body["max_tokens"] - thinking_tokens)]
                completion_tokens, stop_reason = body["max_tokens"] - thinking_tokens, "max_tokens"
            if text:
                content.append({"type": "text", "text": text})
            payload: dict[str, Any] = {
                "id": f"msg_{number:08d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
            }
            if reply.usage:
                payload["usage"] = {
                    "input_tokens": prompt_tokens,
                    "output_tokens": completion_tokens + thinking_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                }
            if body.get("stream"):
                return await self._stream_message(request, payload, headers)
            return self._send_answer(payload, headers, reply)
        headers.setdefault("x-request-id", f"req_{number:08d}")
        reasoned = _openai_reasoning(body, reply.thinking) if path != "/v1/messages" else 0
        limit = body.get("max_output_tokens" if path == "/v1/responses" else "max_completion_tokens")
        cut = isinstance(limit, int) and reasoned + completion_tokens > limit
        if cut:
            # the limit bounds reasoning and answer together: reasoning that fills it leaves no answer
            reasoned = min(reasoned, limit)
            text = text[: 4 * (limit - reasoned)]
            completion_tokens = limit - reasoned
        if path == "/v1/responses":
            output: list[dict[str, Any]] = []
            if reply.thinking is not None:
                # the summary comes only when the request asks for one (reasoning.summary); else "summary": []
                asked = isinstance(body.get("reasoning"), dict) and body["reasoning"].get("summary") is not None
                summary = [{"type": "summary_text", "text": reply.thinking}] if asked else []
                output.append({"type": "reasoning", "id": f"rs_{number}", "summary": summary})
            if text or not cut:
                output.append(
                    {
                        "type": "message",
                        "id": f"msg_{number}",
                        "status": "incomplete" if cut else "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                )
            incomplete = "max_output_tokens" if cut else reply.finish_reason
            payload = {
                "id": f"resp_{number:08d}",
                "object": "response",
                "created_at": int(time.time()),
                "status": "completed" if incomplete is None else "incomplete",
                "incomplete_details": None if incomplete is None else {"reason": incomplete},
                "model": model,
                "output": output,
            }
            if reply.usage:
                reasoning = reasoned or _tokens(reply.thinking or "")
                payload["usage"] = {
                    "input_tokens": prompt_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": completion_tokens + reasoning,
                    "output_tokens_details": {"reasoning_tokens": reasoning},
                    "total_tokens": prompt_tokens + completion_tokens + reasoning,
                }
            return self._send_answer(payload, headers, reply)
        chat = path == "/v1/chat/completions"
        finish = "length" if cut else reply.finish_reason or "stop"
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens + reasoned,
            "total_tokens": prompt_tokens + completion_tokens + reasoned,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoned},
        }
        ident = f"{'chatcmpl' if chat else 'cmpl'}-{number:08d}"
        if body.get("stream"):
            return await self._stream(request, body, ident, model, text, finish, usage if reply.usage else None, chat)
        if chat:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if reply.thinking is not None:
                message["reasoning_content"] = reply.thinking
            choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        payload = {
            "id": ident,
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
            "system_fingerprint": "fp_fake",
        }
        if reply.usage:
            payload["usage"] = usage
        return self._send_answer(payload, headers, reply)

    @staticmethod
    def _send_answer(payload: dict[str, Any], headers: dict[str, str], reply: Reply) -> web.Response:
        response = _json_response(payload, headers=headers)
        if reply.gzip:
            response.enable_compression(web.ContentCoding.gzip)
        return response

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        ident: str,
        model: str,
        text: str,
        finish: str,
        usage: dict[str, Any] | None,
        chat: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        kind = "chat.completion.chunk" if chat else "text_completion"

        async def send(event: dict[str, Any]) -> None:
            await response.write(f"data: {json.dumps(event)}\n\n".encode())

        options = body.get("stream_options") or {}

        def chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
            event = {"id": ident, "object": kind, "created": int(time.time()), "model": model, "choices": choices}
            # with include_usage every chunk carries "usage": null, the last (choices: []) the counts
            return {**event, "usage": None} if options.get("include_usage") else event

        if chat:
            await send(chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]))
        pieces = [text[i : i + 3] for i in range(0, len(text), 3)] or [""]
        for piece in pieces:
            delta: dict[str, Any] = {"delta": {"content": piece}} if chat else {"text": piece}
            await send(chunk([{"index": 0, **delta, "finish_reason": None}]))
        final: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
        await send(chunk([{"index": 0, **final, "finish_reason": finish}]))
        if usage is not None and options.get("include_usage"):
            await send({**chunk([]), "usage": usage})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    @staticmethod
    async def _stream_message(
        request: web.Request, message: dict[str, Any], headers: dict[str, str]
    ) -> web.StreamResponse:
        """A Messages answer as Anthropic streams it: message_start (empty content, the input usage and a
        placeholder output count), a ping, each block's start, deltas and stop (a thinking block ends with its
        signature_delta), message_delta (stop reason, the cumulative usage), message_stop. Text is sent as
        UTF-8, unescaped, as the API sends it."""
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", **headers})
        await response.prepare(request)

        async def send(event: dict[str, Any]) -> None:
            data = json.dumps(event, ensure_ascii=False)
            await response.write(f"event: {event['type']}\ndata: {data}\n\n".encode())

        usage = message.get("usage")
        start_usage = None if usage is None else {**usage, "output_tokens": 1}
        opening = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}
        await send({"type": "message_start", "message": opening})
        await send({"type": "ping"})
        for index, block in enumerate(message["content"]):
            field, delta_type = (
                ("thinking", "thinking_delta") if block["type"] == "thinking" else ("text", "text_delta")
            )
            start = {"type": block["type"], field: ""}
            if block["type"] == "thinking":
                start["signature"] = ""
            await send({"type": "content_block_start", "index": index, "content_block": start})
            text = block[field]
            for piece in [text[i : i + 3] for i in range(0, len(text), 3)]:
                await send({"type": "content_block_delta", "index": index, "delta": {"type": delta_type, field: piece}})
            if block["type"] == "thinking":
                signature = {"type": "signature_delta", "signature": block["signature"]}
                await send({"type": "content_block_delta", "index": index, "delta": signature})
            await send({"type": "content_block_stop", "index": index})
        closing: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        }
        if usage is not None:
            closing["usage"] = {"output_tokens": usage["output_tokens"]}
        await send(closing)
        await send({"type": "message_stop"})
        await response.write_eof()
        return response


def main() -> None:
    """Run the server in this process (for benchmarks): prints ``PORT <n>``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="Seconds before each answer.")
    parser.add_argument("--api-key", default=None)
    args = parser.parse_args()
    server = FakeLLMServer(latency_s=args.latency, api_key=args.api_key, port=args.port)
    try:
        asyncio.run(server.serve_forever())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()


__all__ = [
    "FakeLLMServer",
    "RecordedRequest",
    "Reply",
    "answer",
    "answers_from_jsonl",
    "bad_request",
    "chaos",
    "cut_connection",
    "hang",
    "html_page",
    "not_json",
    "overloaded",
    "rate_limited",
    "server_error",
    "truncated_json",
    "unauthorized",
]
