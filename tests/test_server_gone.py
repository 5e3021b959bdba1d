"""When is the server gone, rather than one request unlucky? (``Gateway._stop_if_server_down``)

The run stops (``ServerUnreachableError``, like a refused key) once two requests or more in a row found no
server — refused, no such host, a connect timeout — with no request sent after the first of them answered and
none of them still in flight; or when no request of the session ever got a connection. Each case is one the
review of the first rule (requests numbered by the sample's first try) found it got wrong.

The gateway cases use ``SwitchedServer``, a test double registered like any provider, whose "server" is a switch:
up, it answers after a latency; down, it refuses at once (or drops the requests in flight). The transport cases
use real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import socket
from collections.abc import Iterator
from typing import ClassVar

import pytest
from conftest import provider_request
from fake_llm_server import FakeLLMServer
from pydantic import Field

from eval_harness.config import Settings
from eval_harness.errors import ProviderConnectionError, ProviderTimeoutError, ServerUnreachableError
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions, create_provider, register_provider
from eval_harness.providers.gateway import CallTally, Gateway, GenerationOutcome, RetryPolicy
from eval_harness.types import Completion, GenerateRequest, Usage


class SwitchedOptions(ProviderOptions):
    latency_ms: float = Field(default=0.0)


@register_provider("switched-server")
class SwitchedServer(Provider):
    """Up: answers after ``latency_ms`` (per sample id, ``LATENCY_MS`` overrides it). Down: refuses at once,
    and a request in flight when it goes down is dropped. ``REFUSED`` ids are refused even while it is up."""

    Options = SwitchedOptions
    UP: ClassVar[asyncio.Event | None] = None
    REFUSED: ClassVar[set[str]] = set()
    LATENCY_MS: ClassVar[dict[str, float]] = {}

    async def generate(self, request: GenerateRequest) -> Completion:
        assert isinstance(self.options, SwitchedOptions) and self.UP is not None
        sample = request.sample.id
        if not self.UP.is_set() or sample in self.REFUSED:
            raise ProviderConnectionError("cannot connect: refused", retry_cause="connection", unreachable=True)
        went_down = asyncio.ensure_future(self._down())
        latency = self.LATENCY_MS.get(sample, self.options.latency_ms) / 1000
        done, _ = await asyncio.wait([went_down], timeout=latency)
        went_down.cancel()
        if done:
            raise ProviderConnectionError("server closed the connection", retry_cause="connection")
        return Completion(text="4", usage=Usage(prompt_tokens=3, completion_tokens=1), cost_usd=0.0)

    async def _down(self) -> None:
        assert self.UP is not None
        while self.UP.is_set():
            await asyncio.sleep(0.005)


@pytest.fixture
def switched() -> Iterator[type[SwitchedServer]]:
    SwitchedServer.REFUSED = set()
    SwitchedServer.LATENCY_MS = {}
    yield SwitchedServer
    SwitchedServer.UP = None


def gateway(latency_ms: float = 0.0, retries: int = 3, wait_s: float = 0.05, concurrency: int = 4) -> Gateway:
    SwitchedServer.UP = asyncio.Event()
    SwitchedServer.UP.set()
    context = ProviderContext(settings=Settings(), concurrency=concurrency)
    provider = create_provider("switched-server/m", {"latency_ms": str(latency_ms)}, context)
    return Gateway(provider, RetryPolicy(max_retries=retries, initial_wait_s=wait_s), concurrency=concurrency)


def sample(sample_id: str) -> GenerateRequest:
    request = provider_request()
    return dataclasses.replace(request, sample=request.sample.model_copy(update={"id": sample_id}))


async def test_one_sample_refused_while_slow_answers_are_in_flight_is_that_sample_s_error(
    switched: type[SwitchedServer],
) -> None:
    """Answers slower than the backoff (a reasoning model): the requests in flight got their connections, so
    the server is there and the refused sample (one dead backend behind a balancer) fails alone."""
    gw = gateway(latency_ms=1500, retries=3, wait_s=0.05)
    switched.REFUSED = {"s1"}
    switched.LATENCY_MS = {"s0": 0.0}
    assert (await gw.generate(sample("s0"))).completion is not None
    outcomes = await asyncio.gather(*(gw.generate(sample(f"s{n}")) for n in (1, 2, 3, 4)))
    await gw.aclose()
    refused, *answered = outcomes
    assert isinstance(refused.error, ProviderConnectionError) and refused.attempts == 4  # out of retries, alone
    assert all(o.completion is not None for o in answered)  # it used to stop the run here


async def test_a_sample_in_flight_when_the_server_died_stops_the_run_not_records_an_error(
    switched: type[SwitchedServer],
) -> None:
    """Sample a's request is dropped as the server dies; b's, sent after a's but quicker, was answered just
    before. That answer is to a request sent before the first refusal, so no sign the server is back: a, out of
    retries, stops the run (it used to be recorded as a's connection error, which plain resume keeps)."""
    gw = gateway(retries=2, wait_s=0.05)
    switched.LATENCY_MS = {"a": 1000.0, "b": 50.0}
    assert switched.UP is not None
    first = asyncio.ensure_future(gw.generate(sample("a")))
    await asyncio.sleep(0.01)
    quick = asyncio.ensure_future(gw.generate(sample("b")))
    assert (await quick).completion is not None
    switched.UP.clear()  # the server dies: a's request is dropped, every later one refused
    with pytest.raises(ServerUnreachableError, match="no request sent after this sample's first refusal"):
        await first  # its 2 retries refused; its first request, dropped, found a server
    await gw.aclose()


async def cut_short(gw: Gateway, sample_id: str, after_s: float) -> GenerationOutcome:
    """``sample_id``'s generation, cancelled after ``after_s`` as the runner's per-sample timeout does."""
    tally = CallTally()
    pending = asyncio.ensure_future(gw.generate(sample(sample_id), tally))
    await asyncio.sleep(after_s)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    return gw.cancelled(tally, ProviderTimeoutError(f"no answer within the per-sample timeout of {after_s:g}s"))


async def test_samples_cut_short_by_their_timeout_while_retrying_refusals_stop_the_run_after_the_backoff(
    switched: type[SwitchedServer],
) -> None:
    """A --timeout shorter than the backoff: each sample is cancelled between its retries and recorded as a
    timeout, so the refusals were never looked at and the run went on, every sample a timeout. Now a sample cut
    short once the refusals have lasted the whole backoff (0.05 + 0.1 + 0.2 s here) stops the run, naming the
    server's refusal rather than the timeout."""
    gw = gateway(retries=3, wait_s=0.05)
    assert (await gw.generate(sample("s0"))).completion is not None
    assert switched.UP is not None
    switched.UP.clear()
    early = await cut_short(gw, "s1", 0.2)  # refused for 0.2 s: within the backoff, its timeout
    assert isinstance(early.error, ProviderTimeoutError)
    assert str(early.error) == (  # the record says why no answer came
        "no answer within the per-sample timeout of 0.2s (retrying a server that refused it: cannot connect: refused)"
    )
    with pytest.raises(ServerUnreachableError) as stopped:
        await cut_short(gw, "s2", 0.25)  # refused for 0.45 s
    message = str(stopped.value)
    assert message.startswith("cannot connect: refused (cut short by the per-sample timeout before its next try:")
    assert "the server stopped answering: no request sent after this sample's first refusal got an answer" in message
    # a plain resume would keep the timeout recorded in the grace: the one line says what to do
    assert message.endswith(
        "1 sample cut short by its timeout while the server refused was recorded as a timeout: resume with "
        "--retry-errors once the server answers)"
    )
    await gw.aclose()


async def test_a_slow_server_s_restart_shorter_than_the_backoff_does_not_stop_the_run(
    switched: type[SwitchedServer],
) -> None:
    """The grace is how long refusals were seen, not the time since the first one: after a 1 s restart, a request
    sent to the server that is back waits 1 s for its answer, so 'no answer since the first refusal' held past
    the 1.55 s backoff, and a sample cut short in its last backoff (its last try refused before the restart)
    stopped a run whose server was back."""
    gw = gateway(latency_ms=1000, retries=5, wait_s=0.05, concurrency=8)  # 0.05 + 0.1 + 0.2 + 0.4 + 0.8 s
    switched.LATENCY_MS = {"s0": 0.0}
    assert (await gw.generate(sample("s0"))).completion is not None
    assert switched.UP is not None
    switched.UP.clear()
    loop = asyncio.get_running_loop()
    loop.call_later(1.0, switched.UP.set)  # its tries: refused at 0 and by 0.95 s; the last one 1.55-1.8 s

    async def sent_after_the_restart() -> GenerationOutcome:
        await asyncio.sleep(1.05)
        return await gw.generate(sample("s2"))  # connected; answered at ~2.05 s

    back = asyncio.ensure_future(sent_after_the_restart())
    outcome = await cut_short(gw, "s1", 1.56)
    assert isinstance(outcome.error, ProviderTimeoutError)  # it used to stop the run here
    assert (await back).completion is not None
    await gw.aclose()


async def test_a_sample_cut_short_by_refusals_of_a_server_never_reached_stops_the_run_at_once(
    switched: type[SwitchedServer],
) -> None:
    """No request of the session got a connection (not started, wrong port): there is no outage to ride out, so
    the first sample cut short stops the run rather than record a timeout for each sample of the grace."""
    gw = gateway(retries=3, wait_s=0.05)
    assert switched.UP is not None
    switched.UP.clear()
    with pytest.raises(ServerUnreachableError, match="no request of this session reached the server"):
        await cut_short(gw, "s1", 0.2)  # refused for 0.2 s of a 0.35 s backoff
    await gw.aclose()


async def test_a_sample_cut_short_inside_an_outage_shorter_than_the_backoff_is_its_timeout_and_the_run_goes_on(
    switched: type[SwitchedServer],
) -> None:
    """A server restarted in 0.3 s, which a sample out of retries (0.1 + 0.2 + 0.4 + 0.8 + 1.6 s of backoff)
    would have ridden out: a sample whose --timeout fell inside it used to stop the run."""
    gw = gateway(retries=5, wait_s=0.1)
    assert (await gw.generate(sample("s0"))).completion is not None
    assert switched.UP is not None
    switched.UP.clear()
    asyncio.get_running_loop().call_later(0.3, switched.UP.set)
    outcome = await cut_short(gw, "s1", 0.25)  # refused, then cut in its backoff
    assert isinstance(outcome.error, ProviderTimeoutError) and outcome.attempts >= 1
    await asyncio.sleep(0.1)
    assert (await gw.generate(sample("s2"))).completion is not None  # the server is back, the run goes on
    await gw.aclose()


async def test_a_sample_cut_short_after_an_answer_or_a_drop_is_a_timeout(switched: type[SwitchedServer]) -> None:
    gw = gateway(latency_ms=2000)
    pending = asyncio.ensure_future(gw.generate(sample("s1"), tally := CallTally()))
    await asyncio.sleep(0.05)  # in flight, connected
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    outcome = gw.cancelled(tally, ProviderTimeoutError("no answer within the per-sample timeout of 0.05s"))
    assert isinstance(outcome, GenerationOutcome) and isinstance(outcome.error, ProviderTimeoutError)
    await gw.aclose()


def blackhole(port: int = 0) -> list[socket.socket]:
    """A listening socket (on ``port``, or any) whose accept queue is full, so that the kernel drops every
    further SYN: a connect there times out (a host that is down, a firewall), as nothing ever refuses it. The
    sockets to close after; the port is the first one's."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(0)
    held = [listener]
    for _ in range(4):  # the backlog of listen(0) holds one or two; the rest wait in SYN_SENT
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(listener.getsockname())
        held.append(filler)
    return held


@pytest.mark.parametrize("wire", ["pooled", "httpx"])
async def test_a_server_whose_connects_time_out_is_no_server_at_all(wire: str) -> None:
    """A connect timeout used to count as the server's answer: a host gone (SYNs dropped) never stopped the run."""
    held = blackhole()
    port = held[0].getsockname()[1]
    context = ProviderContext(settings=Settings(), concurrency=1)
    args = {"base_url": f"http://127.0.0.1:{port}/v1", "connect_timeout_s": "0.3", "http_transport": wire}
    provider = create_provider("openai-compatible/local", args, context)
    gw = Gateway(provider, RetryPolicy(max_retries=2, initial_wait_s=0.01))
    try:
        with pytest.raises(ServerUnreachableError, match="no request of this session reached the server") as stop:
            await gw.generate(provider_request())
        # resil-s31 5: "3 attempts over 0 s", the backoff alone, of three connects of 0.3 s each
        assert re.search(r"\(3 attempts over [1-3] s", str(stop.value)), str(stop.value)
    finally:
        await gw.aclose()
        for sock in held:
            sock.close()


async def test_a_connect_timeout_after_answers_starts_a_streak_like_a_refusal() -> None:
    with FakeLLMServer() as server:
        context = ProviderContext(settings=Settings(), concurrency=1)
        args = {"base_url": server.base_url, "connect_timeout_s": "0.3"}
        gw = Gateway(
            create_provider("openai-compatible/local", args, context), RetryPolicy(max_retries=2, initial_wait_s=0.01)
        )
        assert (await gw.generate(provider_request())).completion is not None
    held = blackhole(server.port)  # the server's port, now a host gone
    try:
        with pytest.raises(ServerUnreachableError, match="no request sent after this sample's first refusal"):
            await gw.generate(provider_request())
    finally:
        await gw.aclose()
        for sock in held:
            sock.close()


async def test_a_sample_cut_short_on_a_connected_retry_is_a_timeout(switched: type[SwitchedServer]) -> None:
    """Refused, then the server came back and the retry got a connection; the timeout cut that slow answer. The
    last attempt found a server: a timeout, not a server gone (the first refusal's flag used to linger)."""
    gw = gateway(latency_ms=2000, retries=3, wait_s=0.05)
    assert switched.UP is not None
    switched.UP.clear()
    pending = asyncio.ensure_future(gw.generate(sample("s1"), tally := CallTally()))
    await asyncio.sleep(0.02)  # refused once
    switched.UP.set()  # back: the retry connects and waits for its slow answer
    await asyncio.sleep(0.3)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    outcome = gw.cancelled(tally, ProviderTimeoutError("no answer within the per-sample timeout of 0.32s"))
    assert isinstance(outcome.error, ProviderTimeoutError) and tally.attempts == 2
    await gw.aclose()


async def test_a_refused_sample_at_the_start_while_slow_answers_are_in_flight_is_that_sample_s_error(
    switched: type[SwitchedServer],
) -> None:
    """Before any answer has come: the requests in flight outlived the refused sample's retries, so they got
    connections, and 'no request of this session reached the server' would be false."""
    gw = gateway(latency_ms=1500, retries=3, wait_s=0.05)
    switched.REFUSED = {"s1"}
    outcomes = await asyncio.gather(*(gw.generate(sample(f"s{n}")) for n in (1, 2, 3, 4)))
    await gw.aclose()
    refused, *answered = outcomes
    assert isinstance(refused.error, ProviderConnectionError) and all(o.completion for o in answered)


async def test_half_the_connections_refused_with_fast_answers_fails_those_samples_alone(
    switched: type[SwitchedServer],
) -> None:
    """A balancer with one dead backend of two: refusals of two samples can come a few ms apart with no answer
    between them, but each refused sample's retries see answers to requests sent after its first refusal.

    Half of the first 24 samples are refused, and 24 answered ones follow: with refused samples only at the end,
    the last ones' retries would see no request sent after their first refusal answered (there is none left to
    send), which is what a server gone looks like (CI once caught 4 of 4 slots so, at concurrency 4)."""
    gw = gateway(latency_ms=20, retries=2, wait_s=0.05, concurrency=8)
    switched.REFUSED = {f"s{n}" for n in range(0, 24, 2)}
    semaphore = asyncio.Semaphore(8)

    async def one(n: int) -> GenerationOutcome:
        async with semaphore:
            return await gw.generate(sample(f"s{n}"))

    outcomes = await asyncio.gather(*(one(n) for n in range(48)))
    await gw.aclose()
    assert [o.completion is None for o in outcomes] == [n < 24 and n % 2 == 0 for n in range(48)]


async def test_a_server_gone_near_the_end_of_a_run_stops_it_when_no_sample_is_left(
    switched: type[SwitchedServer],
) -> None:
    """The samples ran out before the grace did: the run ended 'complete', its last samples timeouts scored
    wrong, where the same outage without --timeout stops it."""
    gw = gateway(retries=3, wait_s=0.2)  # 0.2 + 0.4 + 0.8 s of backoff
    assert (await gw.generate(sample("s0"))).completion is not None
    assert switched.UP is not None
    switched.UP.clear()
    assert isinstance((await cut_short(gw, "s1", 0.3)).error, ProviderTimeoutError)  # within the grace
    stopped = gw.server_gone_at_end()
    said = "cannot connect: refused (the server stopped answering: refused for 0 s until the run's "
    assert stopped is not None and str(stopped).startswith(said)
    assert str(stopped).endswith("1 sample cut short by its timeout while the server refused was recorded as a "
                                 "timeout: resume with --retry-errors once the server answers)")  # fmt: skip
    switched.UP.set()
    assert (await gw.generate(sample("s2"))).completion is not None  # answered: the server is back
    assert gw.server_gone_at_end() is None
    await gw.aclose()
