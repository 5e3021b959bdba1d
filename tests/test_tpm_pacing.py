"""``--tpm`` with samples in flight: a call that reports less usage than it booked gives the difference back at
once, to a caller already waiting as well (accept-i3-s26 B1), and the budget still holds.

Before, a waiter slept out the wait computed from the estimates (prompt plus max_tokens) of the calls in flight,
so a run at ``--concurrency`` 2 or more was paced at its estimates: 823 tokens a minute under ``--tpm 6000``
where ``--concurrency 1`` reached 5,969.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any

from fake_llm_server import FakeLLMServer, Reply

from eval_harness.config import Settings
from eval_harness.providers._admission import WINDOW_S, Booking, RateLimiter
from eval_harness.providers.base import ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.types import ChatMessage, GenerateConfig, GenerateRequest, Sample


def request(number: int, max_tokens: int) -> GenerateRequest:
    text = f"Question {number}: [[answer: {number}]]"  # estimated at ceil(25 / 4) + 4 = 11 tokens, plus max_tokens
    return GenerateRequest(
        messages=[ChatMessage(role="user", content=text)],
        config=GenerateConfig(max_tokens=max_tokens),
        sample=Sample(id=f"s{number}", input=text, target=str(number)),
    )


class BookingLog(RateLimiter):
    """A real-clock limiter that keeps each booking it made, as corrected since."""

    def __init__(self, per_minute: float) -> None:
        super().__init__(per_minute)
        self.bookings: list[Booking] = []

    def take(self, cost: float = 1.0) -> Booking:
        booking = super().take(cost)
        self.bookings.append(booking)
        return booking


def gateway(server: FakeLLMServer, tpm: BookingLog, concurrency: int = 4) -> Gateway:
    provider = create_provider(
        "openai-compatible/fake",
        {"base_url": server.base_url},
        ProviderContext(settings=Settings(), concurrency=concurrency),
    )
    gw = Gateway(provider, RetryPolicy(max_retries=0), concurrency=concurrency)
    gw.tpm = tpm
    return gw


async def paced_until(limiter: RateLimiter, cost: float) -> Booking:
    """A caller as the gateway paces one: ask, sleep (a refund may cut it short), ask again, book."""
    while (wait := limiter.delay(cost)) > 0:
        await limiter.sleep(wait)
    return limiter.take(cost)


async def cancel(task: asyncio.Future[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


# the gateway, over a real server -----------------------------------------------------------------------------
async def test_tpm_with_samples_in_flight_is_paced_by_the_reported_usage_not_the_estimate(
    server: FakeLLMServer,
) -> None:
    # 1,000 tokens a second; each call estimated at 11 + 1,000 tokens (1.01 s) and reporting ~15: paced at the
    # estimates, 16 calls take 15 s (the bug); at the usage, a fraction of a second, whatever the load
    server.latency_s = 0.02
    gw = gateway(server, tpm := BookingLog(60_000))
    run = asyncio.ensure_future(asyncio.gather(*(gw.generate(request(i, max_tokens=1000)) for i in range(16))))
    done, _ = await asyncio.wait({run}, timeout=3.0)
    if not done:
        await cancel(run)
    await gw.aclose()
    assert done, f"{len(server.requests)} of 16 calls in 3 s: paced at the estimates"
    assert all(outcome.completion is not None for outcome in run.result())
    assert all(booking.cost < 100 for booking in tpm.bookings)  # each corrected to its usage


async def test_tpm_still_holds_back_calls_whose_usage_is_above_the_estimate(server: FakeLLMServer) -> None:
    # estimated at 11 + 8 tokens, each call reports 200: a correction upwards wakes nobody, and the calls that
    # follow wait for it. At a start, at most 3 others are in flight (concurrency 4) and may still be booked at
    # their estimate, so the 12th starts at least (8 x 200 + 3 x 19) tokens, at 1 ms each, after the first
    # (paced at the estimates, 11 x 19 ms: 0.2 s)
    body = {
        "id": "c",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 190, "completion_tokens": 10},
    }
    server.rule = lambda _request: Reply(body=body)
    server.latency_s = 0.02
    gw = gateway(server, tpm := BookingLog(60_000))
    outcomes = await asyncio.gather(*(gw.generate(request(i, max_tokens=8)) for i in range(12)))
    await gw.aclose()
    assert all(outcome.completion is not None for outcome in outcomes)
    starts = [booking.started for booking in tpm.bookings]
    assert starts[-1] - starts[0] >= (8 * 200 + 3 * 19) * tpm.seconds_per_unit - 1e-9


# the limiter, on the real clock ------------------------------------------------------------------------------
async def test_a_refund_wakes_a_waiter_that_would_have_slept_out_the_estimate() -> None:
    limiter = RateLimiter(6000)  # 100 tokens a second
    booking = limiter.take(3000)  # 30 s before the next call, at the estimate
    waiter = asyncio.ensure_future(paced_until(limiter, 10))
    await asyncio.sleep(0.1)
    assert not waiter.done()
    started = time.monotonic()
    limiter.adjust(booking, 5)  # it used 5: the next may go 0.05 s after it started, long past
    await asyncio.wait_for(waiter, 10)  # a hang guard: the refund wakes it
    assert time.monotonic() - started < 5.0


async def test_a_waiter_woken_by_a_refund_still_waits_for_room_in_the_window() -> None:
    limiter = RateLimiter(6000)  # 100 tokens a second
    booking = limiter.take(200)
    waiter = asyncio.ensure_future(paced_until(limiter, 5900))  # 200 + 5,900 > 6,000: waits for the window
    await asyncio.sleep(0.1)
    limiter.adjust(booking, 150)  # 150 + 5,900 is still over: woken, it must sleep again (~60 s)
    await asyncio.sleep(0.3)
    assert not waiter.done()
    limiter.adjust(booking, 50)  # 50 + 5,900 fits: it goes once the pacing (0.5 s from the first call) allows
    await asyncio.wait_for(waiter, 10)
    assert limiter.delay(0) > 0  # the waiter booked its 5,900 tokens


async def test_a_correction_upwards_does_not_wake_a_waiter() -> None:
    limiter = RateLimiter(6000)
    booking = limiter.take(300)  # 3 s
    waiter = asyncio.ensure_future(paced_until(limiter, 10))
    await asyncio.sleep(0.05)
    limiter.adjust(booking, 400)
    await asyncio.sleep(0.3)
    assert not waiter.done() and limiter.delay(0) > 3.0
    await cancel(waiter)
    assert limiter.delay(5600) < 10.0  # 400 + 5,600 fits the window: the cancelled waiter booked nothing


# the windows, on a fake clock --------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tpm_windows_hold_at_most_the_budget_when_refunds_let_waiters_go_early() -> None:
    """Calls estimated above their usage (reported a latency after they start), one caller after another asking
    again at every refund as well as when its wait ends: the usage in any minute stays within the budget."""
    rng = random.Random(7)
    clock = Clock()
    budget = 1000.0
    limiter = RateLimiter(budget, clock=clock)
    starts: list[float] = []
    used: list[float] = []
    pending: list[tuple[float, Booking, float]] = []  # (when its usage comes in, booking, usage)
    for _ in range(400):
        estimate = rng.choice([20.0, 60.0, 200.0, 600.0])
        usage = estimate * rng.uniform(0.05, 1.0)
        while True:
            for due in [item for item in pending if item[0] <= clock.now]:
                pending.remove(due)
                limiter.adjust(due[1], due[2])
            wait = limiter.delay(estimate)
            if wait <= 0:
                break
            # woken by the first refund to come in, or at the end of its wait
            clock.now = min([clock.now + wait, *(item[0] for item in pending)])
        starts.append(clock.now)
        used.append(usage)
        pending.append((clock.now + rng.uniform(0.05, 8.0), limiter.take(estimate), usage))
    assert clock.now - starts[0] > 3 * WINDOW_S  # the budget binds over many windows
    most = max(sum(u for s, u in zip(starts, used, strict=True) if t <= s < t + 60) for t in starts)
    assert most <= budget
