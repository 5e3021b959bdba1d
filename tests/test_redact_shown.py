"""Redact the whole text, then cut it (``config.redact_shown``): at every place a text that may hold a key is cut
to a limit before it reaches a record or a message, a key straddling the cut leaves no part of itself behind."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from conftest import provider_request
from fake_llm_server import FakeLLMServer, bad_request
from pydantic import SecretStr

import eval_harness.scorers.code  # noqa: F401  registers code_execution before its entry point is installed
from eval_harness.config import Settings, redact_shown
from eval_harness.errors import ProviderError
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions, create_provider
from eval_harness.providers.embeddings import OpenAIEmbeddingsClient
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.scorers import Scorer, build_scorer
from eval_harness.scorers.code import ALLOW_VARIABLE, MAX_CAPTURED_BYTES, RECORDED_CHARS
from eval_harness.types import Completion, GenerateRequest, Sample, ScorerSpec

KEY = "sk-canary-F1-0123456789abcdefXYZ"
PIECE = 5
"""The shortest part of the key that counts as shown."""


def pieces_of_key(text: str) -> list[str]:
    """The parts of ``KEY`` (``PIECE`` characters or more) that ``text`` holds."""
    return [KEY[i : i + PIECE] for i in range(len(KEY) - PIECE + 1) if KEY[i : i + PIECE] in text]


async def paddings_across_the_cut(shown: Callable[[str], Awaitable[str]]) -> list[int]:
    """Paddings that put the key across the cut of the message that ``shown(text)`` returns for a text: where the
    text starts in it comes from a marker, where the message is cut from a text longer than any limit; the key
    then starts from 1 to ``len(KEY)`` characters before the cut."""
    start = (await shown("PROBE")).index("PROBE")
    limit = len(await shown("w" * 5_000))
    assert limit < start + 5_000, "the message was not cut"
    return [limit - start - inside for inside in range(1, len(KEY) + 1)]


# the helper ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("start", range(90, 101))
def test_a_key_straddling_the_end_of_a_kept_head_leaves_nothing_of_itself(start: int) -> None:
    shown = redact_shown("x" * start + KEY + "y" * 50, [KEY], 100)
    assert len(shown) == 100 and shown.endswith("…")
    assert pieces_of_key(shown) == []


@pytest.mark.parametrize("end", range(0, len(KEY) + 1))
def test_a_key_straddling_the_start_of_a_kept_tail_leaves_nothing_of_itself(end: int) -> None:
    # the key ends ``end`` characters into the last 100
    shown = redact_shown("x" * 50 + KEY + "y" * (100 - end), [KEY], 100, keep="tail")
    assert len(shown) == 100 and shown.startswith("…")
    assert pieces_of_key(shown) == []


def test_a_text_within_the_limit_is_only_redacted() -> None:
    assert redact_shown(f"a {KEY}\n b", [KEY], 100) == "a [REDACTED]\n b"
    assert redact_shown(f"a {KEY}\n b", [KEY], 100, one_line=True) == "a [REDACTED] b"


def test_whitespace_is_collapsed_before_the_cut() -> None:
    # 30 "a  " become 30 "a " (60 characters): within the limit once collapsed
    assert redact_shown("a  " * 30, [], 60, one_line=True) == ("a " * 30).strip()


# code_execution: stderr and the explanation ---------------------------------------------------------------
@pytest.fixture
def code_scorer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Scorer:
    monkeypatch.setenv(ALLOW_VARIABLE, "1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)  # no .env here
    return build_scorer(ScorerSpec(name="code_execution", args={"timeout_s": 10}))


def program_writing(stderr_text: str) -> str:
    """A program that writes ``stderr_text`` (``{key}`` in it: the key) to stderr and exits 1. The key is
    spelled backwards in the program, so the answer recorded beside the verdict does not hold it."""
    before, _, after = stderr_text.partition("{key}")
    return (
        "import os, sys\n"
        f"sys.stderr.write({before!r} + {KEY[::-1]!r}[::-1] + {after!r})\n"
        "sys.stderr.flush()\n"
        "os._exit(1)\n"
    )


SAMPLE = Sample(
    id="p0", input="# the prompt\n", target="", metadata={"test": "def check(f):\n    pass\n", "entry_point": "f"}
)


async def test_a_key_straddling_the_start_of_the_recorded_stderr_leaves_nothing_of_itself(code_scorer: Scorer) -> None:
    # the recorded end of stderr starts 6 characters before the key's end
    score = await code_scorer.score(program_writing("{key}" + "y" * (RECORDED_CHARS - 6)), SAMPLE)
    assert score.value == 0.0 and "yyyy" in score.metadata["stderr"]
    assert pieces_of_key(score.metadata["stderr"]) == []


async def test_a_key_straddling_the_cut_of_the_explanation_leaves_nothing_of_itself(code_scorer: Scorer) -> None:
    # the explanation keeps 299 characters of stderr's last line: the key starts 10 characters before the cut
    score = await code_scorer.score(program_writing("z" * 289 + "{key}\n"), SAMPLE)
    assert score.explanation is not None and score.explanation.startswith("exit status 1: zzz")
    assert pieces_of_key(score.explanation) == []
    assert pieces_of_key(score.metadata["stderr"]) == []


async def test_a_key_straddling_the_start_of_the_captured_stderr_leaves_nothing_of_itself(
    code_scorer: Scorer,
) -> None:
    # one line longer than the captured window, whose first 10 characters are the end of the key
    score = await code_scorer.score(program_writing("{key}" + "y" * (MAX_CAPTURED_BYTES - 10)), SAMPLE)
    assert score.explanation is not None and score.explanation.startswith("exit status 1: yyy")
    assert pieces_of_key(score.explanation) == []
    assert pieces_of_key(score.metadata["stderr"]) == []


# the gateway: a provider's own exception -----------------------------------------------------------------
class RaisingProvider(Provider):
    """Raises a vendor's own exception whose message is ``message``."""

    message = ""

    async def generate(self, request: GenerateRequest) -> Completion:
        raise RuntimeError(self.message)


async def test_a_key_straddling_the_cut_of_a_providers_own_exception_leaves_nothing_of_itself() -> None:
    context = ProviderContext(settings=Settings(openai_api_key=SecretStr(KEY)))
    provider = RaisingProvider("m", ProviderOptions(), context)
    gateway = Gateway(provider, RetryPolicy(max_retries=0))

    async def shown(text: str) -> str:
        provider.message = text
        return str((await gateway.generate(provider_request())).error)

    for pad in await paddings_across_the_cut(shown):
        assert pieces_of_key(await shown("w" * pad + KEY)) == []


# HTTP providers: the server's error message --------------------------------------------------------------
async def error_of(call: Awaitable[object]) -> str:
    """The message of the ``ProviderError`` that ``call`` raises."""
    with pytest.raises(ProviderError) as caught:
        await call
    return str(caught.value)


async def test_a_key_straddling_the_cut_of_a_providers_error_message_leaves_nothing_of_itself() -> None:
    with FakeLLMServer() as server:
        context = ProviderContext(settings=Settings(openai_api_key=SecretStr(KEY)))
        provider = create_provider("openai/gpt-4o", {"base_url": server.base_url}, context)

        async def shown(text: str) -> str:
            server.script(bad_request(text))  # a 400: not retried
            return await error_of(provider.generate(provider_request()))

        try:
            for pad in await paddings_across_the_cut(shown):
                assert pieces_of_key(await shown("w" * pad + KEY)) == []
        finally:
            await provider.aclose()


# the embeddings client: the server's error message --------------------------------------------------------
async def test_a_key_straddling_the_cut_of_an_embeddings_error_message_leaves_nothing_of_itself() -> None:
    messages: list[str] = []

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": messages.pop()}})

    client = OpenAIEmbeddingsClient("emb", "http://embed.test/v1", SecretStr(KEY), transport=httpx.MockTransport(echo))

    async def shown(text: str) -> str:
        messages.append(text)
        return await error_of(client.embed(["text"]))

    for pad in await paddings_across_the_cut(shown):
        assert pieces_of_key(await shown("w" * pad + KEY)) == []


# the embedding scorer: a text whose embedding is not finite ----------------------------------------------
class _NaNEmbeddings(BaseHTTPRequestHandler):
    """``/v1/embeddings`` answering a NaN vector for every input (Python's json reads NaN)."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        data = [{"index": i, "embedding": [float("nan"), 0.0]} for i in range(len(body["input"]))]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def nan_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NaNEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_a_key_straddling_the_cut_of_a_non_finite_embedding_message_leaves_nothing_of_itself(
    nan_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)  # no .env here
    spec = ScorerSpec(name="embedding_similarity", args={"base_url": nan_server, "cache_path": str(tmp_path / "c.db")})
    scorer = build_scorer(spec)
    with pytest.raises(ValueError, match="non-finite") as caught:
        await scorer.score("a" * 30 + KEY, Sample(id="s", input="?", target="reference"))
    assert pieces_of_key(str(caught.value)) == []


def test_a_long_part_of_a_two_thousand_character_token_is_redacted() -> None:
    # review-s22 2: the pattern of nested groups overflowed re's parser from ~990 characters (Azure AD, IBM IAM
    # tokens are JWTs of 1-2.5k), exactly when a server echoed the key
    import hashlib

    from eval_harness.config import redact

    token = "eyJ" + "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(32))[:1997]
    text = f"401: bad token {token[:1200]}… and {token[-1100:].upper()} again"
    assert redact(text, [token]) == "401: bad token [REDACTED]… and [REDACTED] again"


def _encoded_forms(key: str) -> list[str]:
    from urllib.parse import quote, quote_plus

    # as openai-compatible's own_secrets lists a key it sends in the query
    return list(dict.fromkeys([key, quote_plus(key), quote(key, safe=""), quote(key), quote_plus(key, safe="/")]))


def test_every_encoding_of_a_query_key_is_redacted_whole_whichever_form_the_server_echoes() -> None:
    # readme-walk3 2: the longest form (%2F for /) matched the echo up to the first /, was cut there, and the
    # plain-slash form could no longer match what was left: "code=[REDACTED]/6LmdP8%2BzvPRWbKGCY2K%2BvWGA"
    import random
    from urllib.parse import quote

    from eval_harness.config import redact

    key = "SEAnhbMXYneS4bMCN6RFbzPOQMRASfk/6LmdP8+zvPRWbKGCY2K+vWGA"
    assert redact(f"bad request, query was code={quote(key)}", _encoded_forms(key)) == (
        "bad request, query was code=[REDACTED]"
    )
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
    draws = random.Random(7)
    shown = []
    for _ in range(500):
        key = "".join(draws.choice(alphabet) for _ in range(draws.randint(16, 56)))
        for echoed in _encoded_forms(key):
            text = redact(f"query was code={echoed}&x=1", _encoded_forms(key))
            if text != "query was code=[REDACTED]&x=1":
                shown.append((key, echoed, text))
    assert shown == []
