"""Resilience over a real HTTP server: capped 429 pauses, pacing outside the timeout, budgets kept on resume.

Each test pins one defect of the resilience audit (notes/audit-resil.md): the run-wide pause after a 429,
the per-sample timeout and the ``--rpm``/``--tpm`` queue, the settings a resume keeps, a server that
reports no usage, ``Retry-After: 0``, what ``backoff_s`` counts, the 60 s windows, and retries never sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot, adder_run_config, read_records, run_to_end
from fake_llm_server import FakeLLMServer, Reply, rate_limited

from eval_harness.artifacts import read_manifest
from eval_harness.config import RunConfig, Settings
from eval_harness.errors import ProviderTimeoutError, QuotaExhaustedError
from eval_harness.gates import gates_from_flags
from eval_harness.planning import SessionOverrides, plan_resume, plan_run
from eval_harness.providers._admission import WINDOW_S, AdaptiveConcurrency, RateLimiter
from eval_harness.providers.base import ProviderContext, create_provider
from eval_harness.providers.gateway import SCORING_CALLS, CallTally, Gateway, RetryPolicy, ScoringCalls
from eval_harness.runner import Runner, _Deadlines
from eval_harness.types import ChatMessage, GenerateConfig, GenerateRequest, RunManifest, Sample


def request(number: int = 0, max_tokens: int | None = None) -> GenerateRequest:
    text = f"Question {number}: [[answer: {number}]]"
    return GenerateRequest(
        messages=[ChatMessage(role="user", content=text)],
        config=GenerateConfig(max_tokens=max_tokens),
        sample=Sample(id=f"s{number}", input=text, target=str(number)),
    )


def gateway(
    server: FakeLLMServer,
    *,
    max_wait_s: float = 5.0,
    initial_wait_s: float = 0.01,
    rpm: float | None = None,
    tpm: float | None = None,
    concurrency: int = 4,
) -> Gateway:
    provider = create_provider(
        "openai-compatible/fake",
        {"base_url": server.base_url},
        ProviderContext(settings=Settings(), concurrency=concurrency),
    )
    policy = RetryPolicy(max_retries=3, initial_wait_s=initial_wait_s, max_wait_s=max_wait_s)
    return Gateway(provider, policy, concurrency=concurrency, rpm=rpm, tpm=tpm)


async def cancelled_after(gw: Gateway, req: GenerateRequest, seconds: float) -> tuple[CallTally, Any]:
    """Start a generation, cancel it after ``seconds`` as the per-sample timeout does; the outcome it records."""
    tally = CallTally()
    job = asyncio.ensure_future(gw.generate(req, tally))
    await asyncio.sleep(seconds)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    return tally, gw.cancelled(tally, ProviderTimeoutError("timeout"))


async def until(condition: Callable[[], bool]) -> None:
    """Return once ``condition()`` holds (the caller bounds the wait)."""
    while not condition():
        await asyncio.sleep(0.001)


# 1. the run-wide pause after a 429 -----------------------------------------------------------------------
async def test_a_retry_after_longer_than_the_cap_fails_the_sample_at_once_with_the_servers_wait(
    server: FakeLLMServer,
) -> None:
    server.script(rate_limited("300"))
    gw = gateway(server, max_wait_s=2)
    outcome = await asyncio.wait_for(gw.generate(request()), 10)
    await gw.aclose()
    assert len(server.requests) == 1
    assert outcome.completion is None and outcome.error is not None
    assert "rate limited: the server asks to wait 300 s, longer than the 2 s a retry may wait" in str(outcome.error)


@pytest.mark.parametrize(
    "reply",
    [
        rate_limited("1000000000"),
        Reply(kind="error", status=503, message="maintenance", headers={"retry-after": "3600"}),
    ],
)
async def test_a_server_asking_every_caller_to_wait_past_ten_minutes_stops_the_run(
    server: FakeLLMServer, reply: Reply
) -> None:
    # audit-s21-hostile 3, 4: a 429 asking for 1e9 s failed each sample after a 60 s run-wide pause (20 samples
    # took 902 s); a 503 asking for an hour was retried every 60 s until each sample's timeout, recorded "timeout"
    server.script(reply)
    gw = gateway(server)
    with pytest.raises(QuotaExhaustedError, match=r"the server asks to wait .*, so the run stops; resume it after"):
        await asyncio.wait_for(gw.generate(request()), 10)
    await gw.aclose()
    assert len(server.requests) == 1


def test_a_server_asking_every_caller_to_wait_two_minutes_stops_the_run_after_three_samples(
    task_root: TaskRoot, server: FakeLLMServer
) -> None:
    # resil-s31 F2: a 429 asking for 120 s (past the 60 s a retry may wait, short of the 600 s that stop a run)
    # failed each sample at once without pausing the run: 240 samples recorded as errors in 0.8 s, "complete"
    server.rule = lambda r: rate_limited("120")
    result = run(served_task(task_root, server, concurrency=1, limit=10))
    records = read_records(task_root.root / "results" / "r1")
    assert result.status == "failed" and len(records) == 2 and len(server.generation_requests()) == 3
    assert result.fatal is not None and result.fatal.startswith(
        "the server asked 3 requests in a row to wait 2 minutes, longer than a retry may wait, so the run stops; "
        "resume it after that (rate limited: the server asks to wait 120 s"
    ), result.fatal


async def test_an_answer_between_long_waits_keeps_the_run_going(server: FakeLLMServer) -> None:
    gw = gateway(server)
    for number in range(6):  # two long waits, an answer, two long waits...
        server.script(*([rate_limited("120")] if number % 3 != 2 else []))
        await asyncio.wait_for(gw.generate(request(number)), 10)
    await gw.aclose()
    assert len(server.requests) == 6


async def test_a_wait_for_ever_asks_for_a_resume_when_the_server_allows_it(server: FakeLLMServer) -> None:
    # resil-s31 6: "the server asks to wait for ever, so the run stops; resume it after that"
    server.script(rate_limited("1e308"))
    gw = gateway(server)
    with pytest.raises(QuotaExhaustedError) as stop:
        await asyncio.wait_for(gw.generate(request()), 10)
    await gw.aclose()
    assert str(stop.value).startswith(
        "the server asks to wait for ever, so the run stops; resume it when the server allows it ("
    ), str(stop.value)


async def test_a_503_asking_for_longer_than_a_retry_may_wait_fails_its_sample_at_once_saying_so(
    server: FakeLLMServer,
) -> None:
    server.script(Reply(kind="error", status=503, message="maintenance", headers={"retry-after": "300"}))
    gw = gateway(server, max_wait_s=2)
    outcome = await asyncio.wait_for(gw.generate(request()), 10)
    await gw.aclose()
    assert len(server.requests) == 1 and outcome.error is not None
    assert "not retried: the server asks to wait 300 s, longer than the 2 s a retry may wait" in str(outcome.error)


async def test_a_reset_time_alone_is_a_capped_wait_for_a_retry_not_a_reason_to_give_up(server: FakeLLMServer) -> None:
    # OpenAI's x-ratelimit-reset-requests says when the whole budget is back, not when one request may go
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}
    server.script(rate_limited(None, headers=headers))
    gw = gateway(server, max_wait_s=0.2)
    outcome = await asyncio.wait_for(gw.generate(request()), 10)
    await gw.aclose()
    assert outcome.completion is not None and len(server.requests) == 2


async def test_the_run_wide_pause_after_a_429_lasts_no_longer_than_a_retry_may_wait(server: FakeLLMServer) -> None:
    # a wait derived from reset headers (6 minutes) pauses the run, retried; a stated one that long fails its
    # sample without pausing anything (review-s22 7: the test read a stated wait, which no longer pauses)
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}
    server.script(rate_limited(None, headers=headers))
    gw = gateway(server, max_wait_s=0.5)
    first = await asyncio.wait_for(gw.generate(request(1)), 10)  # retried after the pause, capped
    outcome = await asyncio.wait_for(gw.generate(request(2)), 10)
    await gw.aclose()
    assert first.completion is not None and outcome.completion is not None and outcome.completion.text == "2"


async def test_a_retry_cancelled_while_the_run_is_paused_counts_the_pause_it_waited(server: FakeLLMServer) -> None:
    # Told to retry after 0.1 s, the retry then waits in the run-wide pause of the same 429, which on a clock that
    # stands still never ends: the retry is still waiting when the timeout cuts it.
    server.script(rate_limited("0.1"))
    gw = gateway(server)
    gw.concurrency = AdaptiveConcurrency(4, clock=Clock(), max_pause_s=5.0)
    tally = CallTally()
    job = asyncio.ensure_future(gw.generate(request(1), tally))
    await asyncio.wait_for(until(lambda: gw.concurrency.reduced), 10)
    # the 429 cut the limit and began the wait in one step of the loop: the wait began before this instant
    seen_failed = time.monotonic()
    await asyncio.sleep(0.5)
    cut = time.monotonic()
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    outcome = gw.cancelled(tally, ProviderTimeoutError("timeout"))
    await gw.aclose()
    assert len(server.requests) == 1 and outcome.retries == {}
    assert outcome.backoff_s >= cut - seen_failed  # before: the 0.1 s of its own wait only


# 2. the per-sample timeout and the --rpm/--tpm queue -----------------------------------------------------
def served_task(task_root: TaskRoot, server: FakeLLMServer, **overrides: Any) -> RunConfig:
    served = {"model": "openai-compatible/fake", "model_args": {"base_url": server.base_url}}
    return adder_run_config(task_root, **{**served, **overrides})


run = run_to_end


def test_waiting_for_an_rpm_slot_does_not_count_against_the_timeout(task_root: TaskRoot, server: FakeLLMServer) -> None:
    # one request every 0.1 s: the sixth may be sent 0.5 s after the start, after a 0.4 s timeout
    result = run(served_task(task_root, server, rpm=600, concurrency=6, limit=6, timeout_s=0.4))
    records = read_records(task_root.root / "results" / "r1")
    assert result.status == "complete" and len(server.requests) == 6
    assert [r["error"] for r in records] == [None] * 6


def test_a_retrys_wait_for_an_rpm_slot_does_not_count_against_the_timeout(
    task_root: TaskRoot, server: FakeLLMServer
) -> None:
    # resil-s31 F1: a first request's queueing was not counted, its retry's was: each sample's first attempt gets a
    # 500 (retry after 0.01 s); the four retries then queue behind each other for --rpm slots 0.1 s apart, the last
    # sent 0.7 s after the start, past a 0.3 s timeout: four timeouts, none of the retries ever sent
    server.rule = lambda r: Reply(kind="error", status=500, headers={"retry-after": "0.01"}) if r.attempt == 1 else None
    result = run(served_task(task_root, server, rpm=600, concurrency=4, limit=4, timeout_s=0.3))
    records = read_records(task_root.root / "results" / "r1")
    assert result.status == "complete" and len(server.generation_requests()) == 8
    assert [r["error"] for r in records] == [None] * 4 and [r["attempts"] for r in records] == [2] * 4
    # the queue for the slot is no backoff either: each sample waited out the server's 0.01 s, not its queue
    assert all(r["backoff_s"] < 0.1 for r in records), [r["backoff_s"] for r in records]


async def test_a_timeout_that_cuts_a_retrys_wait_names_the_failure_it_was_retrying(server: FakeLLMServer) -> None:
    # resil-s31 F3: a 429's wait cut short by --timeout read as a plain timeout, the 429 lost
    server.script(rate_limited("5"))
    gw = gateway(server)
    _, outcome = await cancelled_after(gw, request(1), 0.3)
    await gw.aclose()
    assert str(outcome.error) == (
        "timeout (retrying after: openai-compatible/fake: HTTP 429: requests (rate_limit_exceeded): Rate limit "
        "reached; slow down.)"
    )


async def test_a_sample_cancelled_while_waiting_for_an_rpm_slot_gives_the_slot_back(server: FakeLLMServer) -> None:
    gw = gateway(server, rpm=300, concurrency=8)  # one request every 0.2 s (and 0.1% to spare)
    first = await gw.generate(request(0))
    waiting = [asyncio.ensure_future(gw.generate(request(i))) for i in (1, 2, 3)]
    await asyncio.sleep(0.02)
    for job in waiting:
        job.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    assert gw.rpm is not None and gw.rpm.delay() <= WINDOW_S / 300  # the next free slot, not the one after three
    later = await gw.generate(request(4))
    await gw.aclose()
    assert first.completion is not None and later.completion is not None
    assert [r.prompt.split(":")[0] for r in server.requests] == ["Question 0", "Question 4"]


# 3. a resume keeps the run's pacing and retry settings ---------------------------------------------------
def test_a_resume_keeps_the_recorded_rpm_tpm_retries_and_cache(task_root: TaskRoot, tmp_path: Path) -> None:
    cfg = RunConfig(
        task=str(task_root.root / "tasks" / "adder.toml"), model="mock/m", output_dir=task_root.root / "results",
        run_id="r1", rpm=6000, tpm=900000, max_retries=2, cache=True, cache_dir=tmp_path / "cache", limit=2,
    )  # fmt: skip
    run(cfg)
    resumed = plan_resume(task_root.root / "results" / "r1", settings=Settings(cache_dir=tmp_path / "cache"))
    config = resumed.config
    assert (config.rpm, config.tpm, config.max_retries, config.cache) == (6000, 900000, 2, True)


def test_a_resume_override_of_the_rpm_is_recorded_for_the_next_resume(task_root: TaskRoot) -> None:
    run_dir = task_root.root / "results" / "r1"
    run(RunConfig(task=str(task_root.root / "tasks" / "adder.toml"), model="mock/m", output_dir=run_dir.parent,
                  run_id="r1", rpm=6000, max_retries=0, limit=2))  # fmt: skip
    asyncio.run(Runner(plan_resume(run_dir, SessionOverrides(rpm=9000.0))).run())
    again = plan_resume(run_dir)
    assert (again.config.rpm, again.config.max_retries) == (9000, 0)


def test_a_manifest_written_before_the_settings_were_recorded_still_resumes(task_root: TaskRoot) -> None:
    run_dir = task_root.root / "results" / "r1"
    run(RunConfig(task=str(task_root.root / "tasks" / "adder.toml"), model="mock/m", output_dir=run_dir.parent,
                  run_id="r1", limit=2))  # fmt: skip
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for name in ("rpm", "tpm", "max_retries", "cache"):
        manifest.pop(name, None)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert RunManifest.model_validate(manifest).max_retries == 5
    config = plan_resume(run_dir).config
    assert (config.rpm, config.tpm, config.max_retries, config.cache) == (None, None, 5, False)


def test_resume_says_on_stderr_which_recorded_setting_it_replaces(
    task_root: TaskRoot, cli: Callable[..., CliResult]
) -> None:
    run_dir = task_root.root / "results" / "r1"
    run(RunConfig(task=str(task_root.root / "tasks" / "adder.toml"), model="mock/m", output_dir=run_dir.parent,
                  run_id="r1", rpm=6000, limit=2))  # fmt: skip
    result = cli("resume", run_dir, "--rpm", "9000", "--max-retries", "5", "-q")
    assert result.code == 0, result.err
    assert "--rpm 9000 replaces the run's recorded 6000" in result.err
    assert "--max-retries" not in result.err  # the recorded value again: nothing replaced
    assert read_manifest(run_dir).rpm == 9000


def test_resume_switches_off_a_recorded_rpm_tpm_and_cache_with_zero_and_no_cache(
    task_root: TaskRoot, cli: Callable[..., CliResult]
) -> None:
    run_dir = task_root.root / "results" / "r1"
    run(RunConfig(task=str(task_root.root / "tasks" / "adder.toml"), model="mock/m", output_dir=run_dir.parent,
                  run_id="r1", rpm=6000, tpm=90000, cache=True, limit=2))  # fmt: skip
    result = cli("resume", run_dir, "--rpm", "0", "--tpm", "0", "--no-cache", "-q")
    assert result.code == 0, result.err
    assert "--rpm 0 (no limit) replaces the run's recorded 6000" in result.err
    assert "--cache off replaces the run's recorded on" in result.err
    manifest = read_manifest(run_dir)
    assert (manifest.rpm, manifest.tpm, manifest.cache) == (None, None, False)
    again = cli("resume", run_dir, "-q")  # and later resumes keep them off
    assert again.code == 0 and "replaces" not in again.err
    assert (read_manifest(run_dir).rpm, read_manifest(run_dir).cache) == (None, False)


def test_run_resume_keeps_the_recorded_concurrency_and_timeout_when_not_given(
    task_root: TaskRoot, cli: Callable[..., CliResult]
) -> None:
    # before: `run --resume` passed its own defaults (16, 120 s) as overrides, replacing the recorded 3 and 7 s
    run_dir = task_root.root / "results" / "r1"
    run(RunConfig(task=str(task_root.root / "tasks" / "adder.toml"), model="mock/m", output_dir=run_dir.parent,
                  run_id="r1", concurrency=3, timeout_s=7.0, limit=2))  # fmt: skip
    result = cli("run", "--resume", run_dir, "-q")
    assert result.code == 0, result.err
    assert "replaces" not in result.err
    manifest = read_manifest(run_dir)
    assert (manifest.concurrency, manifest.timeout_s) == (3, 7.0)
    given = cli("run", "--resume", run_dir, "--concurrency", "5", "-q")
    assert given.code == 0 and "--concurrency 5 replaces the run's recorded 3" in given.err


# 4. --tpm against a server that reports no usage ---------------------------------------------------------
async def test_tpm_keeps_the_estimate_as_spent_when_the_server_reports_no_usage(server: FakeLLMServer) -> None:
    server.rule = lambda _request: Reply(usage=False)
    gw = gateway(server)
    gw.tpm = tpm = RateLimiter(6000, clock=Clock())  # 100 tokens a second (and 0.1% to spare), on a still clock
    outcome = await gw.generate(request(1, max_tokens=10))
    await gw.aclose()
    assert outcome.completion is not None and outcome.completion.usage.prompt_tokens == 0
    # estimated at 21 tokens: "Question 1: [[answer: 1]]" is 25 characters, ceil(25 / 4) + 4 = 11, plus max_tokens
    # 10; the next call waits until they are paid for (before: refunded, the next went at once)
    assert tpm.delay(0) == pytest.approx(21 * 60.06 / 6000)


# 5. Retry-After of 0 or less -----------------------------------------------------------------------------
@pytest.mark.parametrize("retry_after", ["0", "-5"])
async def test_a_retry_after_of_zero_or_less_falls_back_to_exponential_backoff(
    server: FakeLLMServer, retry_after: str
) -> None:
    server.script(rate_limited(retry_after))
    gw = gateway(server, initial_wait_s=0.3)
    outcome = await gw.generate(request())
    await gw.aclose()
    assert outcome.completion is not None and len(server.requests) == 2
    assert outcome.retries == {"rate_limit": 1}
    # backoff_s is measured, so at least the first exponential step, 0.3 s plus up to 0.3 s of jitter (tenacity's
    # wait_exponential_jitter); below the 5 s cap a wait of the server's value made positive (abs(-5)) would reach
    assert 0.3 <= outcome.backoff_s < 5.0


# 6. backoff_s counts the waits between retries only ------------------------------------------------------
async def test_rpm_pacing_is_not_counted_as_backoff(server: FakeLLMServer) -> None:
    gw = gateway(server, rpm=600, concurrency=6)  # one request every 0.1 s
    outcomes = await asyncio.gather(*(gw.generate(request(i)) for i in range(6)))
    await gw.aclose()
    assert [o.backoff_s for o in outcomes] == [0.0] * 6 and gw.backoff_s == 0.0


# 7. the 60 s windows hold at most the budget --------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def starts_of(limiter: RateLimiter, clock: Clock, costs: list[float], late_s: float = 0.0) -> list[float]:
    """When calls of ``costs`` start, each caller waking ``late_s`` after the limiter said it may go."""
    starts = []
    for cost in costs:
        clock.now += limiter.delay(cost) + late_s
        limiter.take(cost)
        starts.append(clock.now)
    return starts


def most_in_a_minute(starts: list[float], costs: list[float]) -> float:
    return max(sum(c for s, c in zip(starts, costs, strict=True) if t <= s < t + 60) for t in starts)


def test_rpm_windows_hold_at_most_n_requests_when_a_caller_wakes_late() -> None:
    clock = Clock()
    limiter = RateLimiter(120, clock=clock)
    costs = [1.0] * 300
    starts = starts_of(limiter, clock, costs[:1], late_s=0.004) + starts_of(limiter, clock, costs[1:])
    assert most_in_a_minute(starts, costs) <= 120


def test_tpm_windows_hold_at_most_the_budget_whatever_the_costs() -> None:
    clock = Clock()
    costs = [10.0] * 9 + [90.0] + [10.0] * 20  # small calls, then one large one at the end of the window
    starts = starts_of(RateLimiter(100, clock=clock), clock, costs)
    assert most_in_a_minute(starts, costs) <= 100


# 8. a retry cut off before it was sent -------------------------------------------------------------------
async def test_a_retry_cut_off_by_the_timeout_before_it_was_sent_is_not_counted(server: FakeLLMServer) -> None:
    server.script(rate_limited("3"))
    gw = gateway(server)
    _tally, outcome = await cancelled_after(gw, request(), 0.5)
    await gw.aclose()
    assert len(server.requests) == 1
    assert outcome.attempts == 1 and outcome.retries == {} and gw.retries_by_cause == {}


# 9. a resume keeps the run's gates (audit of eval-harness as a CI release gate) ----------------------------
def test_the_gates_of_a_run_are_recorded_and_a_resume_keeps_them(task_root: TaskRoot) -> None:
    run_dir = task_root.root / "results" / "r1"
    gates = gates_from_flags(0.9, ["alpha=0.5"], "ci-low", 0.1)
    asyncio.run(Runner(plan_run(adder_run_config(task_root, limit=2), gates=gates)).run())
    assert read_manifest(run_dir).gates == gates
    asyncio.run(Runner(plan_resume(run_dir, SessionOverrides(rpm=9000.0))).run())  # a session that gives no gate
    assert plan_resume(run_dir).gates == gates


def test_a_manifest_written_before_the_gates_were_recorded_resumes_without_gates(task_root: TaskRoot) -> None:
    run_dir = task_root.root / "results" / "r1"
    run(adder_run_config(task_root, limit=2))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["gates"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert plan_resume(run_dir).gates is None


def test_the_least_backoff_is_every_retry_s_wait_without_jitter_each_capped() -> None:
    """What a sample out of retries waited at least in all: the grace a refused server gets before a sample cut
    short by its timeout stops the run."""
    assert RetryPolicy().least_backoff_s() == 0.5 + 1 + 2 + 4 + 8
    assert RetryPolicy(max_retries=5, initial_wait_s=0.5, max_wait_s=3).least_backoff_s() == 0.5 + 1 + 2 + 3 + 3
    assert RetryPolicy(max_retries=0).least_backoff_s() == 0
    # doubling 2,000 times overflowed a float (OverflowError in the run) where every wait is capped at 60 s
    assert RetryPolicy(max_retries=2000).least_backoff_s() == 0.5 + 1 + 2 + 4 + 8 + 16 + 32 + 60 * 1993


async def test_a_judges_retry_queueing_stops_the_scoring_clock(server: FakeLLMServer) -> None:
    # review-s31 F6: a judge's calls (Gateway.complete, no tally of the runner's) queued with the clock running
    server.script(Reply(kind="error", status=500, headers={"retry-after": "0.01"}))
    gw = gateway(server)
    seen: list[bool] = []
    calls = ScoringCalls(seen.append)
    token = SCORING_CALLS.set(calls)
    try:
        completion = await asyncio.wait_for(gw.complete(request(1)), 10)
    finally:
        SCORING_CALLS.reset(token)
    await gw.aclose()
    # the first call and its retry each queued with the scoring clock stopped (review2-s31 F2: the first too)
    assert completion.text and seen == [True, False, True, False]
    assert calls.retries() == {"judge_server_error": 1}  # and the retry is the record's to count


async def test_a_tasks_clock_stays_stopped_while_any_of_its_calls_queues() -> None:
    deadlines = _Deadlines(10.0)
    task = asyncio.current_task()
    assert task is not None
    deadlines.start(task)
    deadlines.queued(task, True)
    deadlines.queued(task, True)  # a second self-consistency call
    deadlines.queued(task, False)
    assert task not in deadlines._due  # one call still queues
    deadlines.queued(task, False)
    assert task in deadlines._due
    deadlines.stop(task)
