"""Admission: when a call may start. A per-minute budget shared by every call of a run (``RateLimiter``, for
``--rpm`` and ``--tpm``) and the adaptive limit on calls in flight (``AdaptiveConcurrency``).

Written here rather than taken from a library: anyio's ``CapacityLimiter`` (in our set) bounds calls in flight
but cannot halve its limit on a 429, pause every new call until a server's stated time, or keep a woken
waiter's place in line; and no library in our set paces a per-minute token budget corrected by the usage a
call reports after it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from eval_harness.providers._retry import RetryPolicy

WINDOW_S = 60.0 * 1.001
"""The window a per-minute budget is held over: a minute and 0.1% to spare, so that the network's jitter
cannot put N + 1 requests into a minute as the provider counts it."""


@dataclass
class Booking:
    """One call's share of a budget, as booked when it started."""

    started: float
    cost: float
    live: bool = True
    """False once the call has left the window (its cost no longer counts)."""


class RateLimiter:
    """A per-minute budget shared by every call of a run (requests, or tokens), paced without bursts.

    A call may start when both hold: the pacing (each call delays the next by its cost times
    ``WINDOW_S / per_minute``, counted from when it really started, so calls do not bunch up) and the window
    (the calls started in the last ``WINDOW_S`` plus this one cost at most ``per_minute``; a call larger than
    the whole budget goes alone). So no window of a minute holds more than the budget. A call is booked only
    when it starts (``take``): a caller cancelled while it waited holds nothing back. A call whose real cost
    differs from its estimate corrects its booking with ``adjust``; a caller waits with ``sleep``, which a
    correction downwards cuts short, so that it asks ``delay`` again.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute = per_minute
        self.seconds_per_unit = WINDOW_S / per_minute
        self._clock = clock
        self._next_free = -float("inf")
        self._window: deque[Booking] = deque()
        self._in_window = 0.0
        self._sleepers: list[asyncio.Future[None]] = []

    def _forget_old(self, now: float) -> None:
        window = self._window
        while window and window[0].started <= now - WINDOW_S:
            booking = window.popleft()
            booking.live = False
            self._in_window -= booking.cost

    def delay(self, cost: float = 1.0) -> float:
        """Seconds until a call of ``cost`` units may start (0: now)."""
        now = self._clock()
        self._forget_old(now)
        wait = self._next_free - now
        excess = self._in_window + cost - self.per_minute
        if self._window and excess > 1e-9:
            freed = 0.0
            leaves = self._window[-1].started  # a call larger than the budget waits until it is alone
            for booking in self._window:
                freed += booking.cost
                if freed >= excess - 1e-9:
                    leaves = booking.started
                    break
            wait = max(wait, leaves + WINDOW_S - now)
        return max(0.0, wait)

    def take(self, cost: float = 1.0) -> Booking:
        """Book ``cost`` units for a call starting now."""
        now = self._clock()
        self._forget_old(now)
        self._next_free = max(now, self._next_free) + cost * self.seconds_per_unit
        booking = Booking(now, cost)
        self._window.append(booking)
        self._in_window += cost
        return booking

    def adjust(self, booking: Booking, cost: float) -> None:
        """The call of ``booking`` really cost ``cost`` units (less or more than estimated); no call is booked
        above one window's budget, so no reported count, however wrong, holds the others back past a minute."""
        cost = min(cost, self.per_minute)
        delta = cost - booking.cost
        self._next_free += delta * self.seconds_per_unit
        if booking.live:
            self._in_window += delta
        booking.cost = cost
        if delta < 0 and self._sleepers:  # a correction upwards only lengthens a wait: the sleeper sees it anyway
            sleepers, self._sleepers = self._sleepers, []
            for woken in sleepers:
                _wake(woken)

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or until a call gives units back (``adjust`` below its booking), whichever comes
        first; the caller then asks ``delay`` again. A wait is computed from the bookings of the calls in flight,
        charged at their estimates; sleeping it out when their usage came in lower paced a ``--tpm`` run with
        samples in flight at its estimates (prompt plus max_tokens), 14% of the budget where real use was 33 of
        239 tokens. Only the wake-up is early: whether the call may start is still ``delay``'s to say."""
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        self._sleepers.append(woken)
        timer = loop.call_later(seconds, _wake, woken)
        try:
            await woken
        finally:
            timer.cancel()
            if woken in self._sleepers:  # not when a refund woke it (and took the list)
                self._sleepers.remove(woken)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class AdaptiveConcurrency:
    """How many calls may be in flight: the run's ``--concurrency``, halved on a 429, regained slowly.

    A 429 cuts the limit in half (at most once per ``cooldown_s``, so one burst of 429s is one cut) and may
    pause every new call until the server's stated time. Each success then adds ``1 / limit`` slots: the
    limit climbs back by about one slot per window of ``limit`` successes (additive increase).
    """

    def __init__(
        self,
        maximum: int,
        cooldown_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        max_pause_s: float = RetryPolicy.max_wait_s,
    ) -> None:
        self.maximum = maximum
        self.max_pause_s = max_pause_s
        self.limit = float(maximum)
        self.in_flight = 0
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._last_cut = -float("inf")
        self._pause_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.max_in_flight = 0

    @property
    def reduced(self) -> bool:
        """True while the limit is below the maximum or a pause is pending."""
        return self.limit < self.maximum or self._pause_until > self._clock()

    async def acquire(self, first: bool = False) -> float:
        """Wait for a slot; returns the seconds queued for one, a pause after a 429 not included (that is backoff,
        the queue is not). ``first``: a retry, whose sample's clock is running, goes ahead of the callers waiting
        (samples not yet started would otherwise take the slots of a limit halved by a 429 before it)."""
        if (
            not self._waiters
            and self.in_flight < int(self.limit)
            and (not self._pause_until or self._pause_until <= self._clock())
        ):
            self._take()
            return 0.0
        queued = 0.0
        woken = first  # a woken caller keeps its place: it goes back to the front, not the end
        while True:
            pause = self._pause_until - self._clock()
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            if self.in_flight < int(self.limit) and (woken or not self._waiters):
                break
            started = self._clock()
            waiter = asyncio.get_running_loop().create_future()
            if woken:
                self._waiters.appendleft(waiter)
            else:
                self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # pass on a wake-up this cancelled caller cannot use
                raise
            queued += self._clock() - started
            woken = True
        self._take()
        return queued

    def _take(self) -> None:
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight

    def release(self) -> None:
        """Free a slot."""
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def on_success(self) -> None:
        """One call succeeded: climb back towards the maximum."""
        if self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
            self._wake()

    def on_rate_limit(self, retry_after: float | None) -> None:
        """A 429: fewer calls in flight for the whole run, and a pause when the server named a wait (at most
        ``max_pause_s``, as a retry's own wait: one day-long Retry-After must not freeze the run)."""
        now = self._clock()
        if now - self._last_cut >= self.cooldown_s:
            self._last_cut = now
            self.limit = max(1.0, self.limit / 2)
        if retry_after is not None and retry_after > 0:
            self._pause_until = max(self._pause_until, now + min(retry_after, self.max_pause_s))


__all__ = ["WINDOW_S", "AdaptiveConcurrency", "Booking", "RateLimiter"]
