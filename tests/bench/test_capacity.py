"""The capacity benchmark's learners keep their own phase, so a slow moment cannot line them up,
a step measures enough calls for its p99 to mean the same at every step, and the floor carries the
relay's last step on as many servers as it needs."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.sandbox.pool import UID_SLACK
from bench import capacity
from bench import floor as bare
from bench.capacity import measure, table_row
from bench.learners import Learner, next_due
from bench.wsframe import HandshakeRefused

UID_BASE = 3_490_000


def test_the_next_call_is_one_interval_after_the_last_one_was_due_not_after_its_reply() -> None:
    assert next_due(10.0, 10.4, 3.0) == 13.0
    assert next_due(10.0, 12.9, 3.0) == 13.0  # a reply late in its slot: the next call still at 13


@pytest.mark.parametrize(("now", "expected"), [(13.0, 16.0), (14.2, 16.0), (20.5, 22.0), (22.0, 25.0)])
def test_a_call_that_overran_its_slot_moves_to_the_next_slot_of_the_same_phase(
    now: float, expected: float
) -> None:
    # Not "now": every learner a stall held up would otherwise call at the same moment.
    assert next_due(10.0, now, 3.0) == pytest.approx(expected)


def test_two_learners_held_up_together_stay_apart() -> None:
    # Due at 10.0 and 11.0, both replies arrive at 18.3 after a stall: they keep their 1 s apart.
    assert next_due(11.0, 18.3, 3.0) - next_due(10.0, 18.3, 3.0) == pytest.approx(1.0)


def test_a_step_measures_until_it_has_enough_calls() -> None:
    times: list[float] = []

    async def calls_arrive() -> tuple[int, float]:
        async def arrive() -> None:
            for _ in range(5):
                await asyncio.sleep(0.05)
                times.append(1.0)

        began = time.monotonic()
        arriving = asyncio.create_task(arrive())
        await measure(times, at_least_s=0.01, min_calls=5, at_most_s=60.0)
        seen = len(times)
        await arriving
        return seen, time.monotonic() - began

    seen, elapsed = asyncio.run(calls_arrive())
    assert seen == 5  # not ended by its 0.01 s
    assert elapsed < 30  # ended by the calls, not by the minute


def test_a_step_with_too_few_calls_still_ends_at_its_bound() -> None:
    began = time.monotonic()
    asyncio.run(measure([], at_least_s=0.01, min_calls=1000, at_most_s=0.3))
    assert 0.3 <= time.monotonic() - began < 30


def step(
    sessions: int, p99_ms: float, ok: bool, errors: int = 0, kdamond: float = 0.36, pid1: float = 0.2
) -> dict:
    return {"sessions": sessions, "p50_ms": 1.5, "p99_ms": p99_ms, "calls": 2000, "errors": errors, "ok": ok,
            "kdamond_core_share": kdamond, "pid1_core_share": pid1}  # fmt: skip


def test_the_row_shows_the_margin_on_both_sides_of_the_last_step_that_held() -> None:
    row = table_row([step(1000, 12.1, True), step(1250, 47.8, True), step(1500, 116.6, False)])
    assert row[1] == "1250 (p99 47.8 ms); 1500: p99 116.6 ms"
    assert row[2] == "at 1500, kdamond 36%, PID 1 20% of a core"


def test_a_step_that_failed_on_errors_says_so_rather_than_its_p99() -> None:
    row = table_row([step(100, 2.6, True), step(250, 3.1, False, errors=4)])
    assert row[1] == "100 (p99 2.6 ms); 250: 4 errors"


def test_every_step_held() -> None:
    assert table_row([step(1750, 86.4, True), step(2000, 99.6, True)])[1] == "2000 (p99 99.6 ms)"


def test_nothing_held() -> None:
    assert table_row([step(100, 240.0, False)])[1] == "0; 100: p99 240.0 ms"
    assert table_row([])[1:3] == ("0", "-")


def test_the_row_puts_the_floor_at_the_last_step_beside_the_relay() -> None:
    steps = [step(1250, 23.2, True), step(1500, 254.7, False, kdamond=0.37, pid1=0.15)]
    row = table_row(steps, floor=step(1500, 188.0, False, kdamond=0.38, pid1=0.16))
    assert row[1] == "1250 (p99 23.2 ms); 1500: p99 254.7 ms"
    assert row[2] == "floor at 1500: p99 188.0 ms; kdamond 37% (38% floor), PID 1 15% (16% floor) of a core"
    held = table_row([step(2000, 61.0, True)], floor=step(2000, 40.5, True, errors=0, kdamond=0.3, pid1=0.34))
    assert held[2] == "floor at 2000: p99 40.5 ms; kdamond 36% (30% floor), PID 1 20% (34% floor) of a core"
    assert table_row(steps, floor=step(1500, 0, False, errors=3))[2].startswith("floor at 1500: 3 errors;")


async def test_the_floor_carries_a_step_through_its_own_sandboxed_servers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A short step: calls every 0.5 s, a 1.5 s window; the real floor, servers and sandbox.
    monkeypatch.setattr(capacity, "INTERVAL_S", 0.5)
    monkeypatch.setattr(capacity, "MEASURE_S", 1.5)
    result = await capacity.floor_step(UID_BASE, 4, quick=True)
    assert result["sessions"] == 4 and result["errors"] == 0, result
    assert result["calls"] >= 8, result  # 4 learners, about 3 calls each in the window
    # Its verdict follows its p99; how fast a busy test machine is, is not this test's question.
    assert result["ok"] == (result["p99_ms"] <= capacity.TARGET_P99_MS), result
    assert 0 <= result["kdamond_core_share"] < 2 and 0 <= result["pid1_core_share"] < 2


async def test_a_floor_hands_out_as_many_servers_as_it_is_given_room_for() -> None:
    """The floor's pool is sized by its `capacity` (for the capacity benchmark, the relay's last step):
    with room for one session, its uids (the session's, the warm servers', the slack) run out."""
    room = 1 + bare.WARM + UID_SLACK
    learners: list[Learner] = []
    async with bare.serving(UID_BASE + 1000, capacity=1) as url:
        try:
            with pytest.raises((HandshakeRefused, ConnectionError)):
                for _ in range(room + 1):
                    learners.append(await Learner.open(url))
            assert len(learners) <= room
        finally:
            await capacity.close_learners(learners)


async def test_servers_that_do_not_end_by_the_deadline_are_said_and_the_benchmark_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    running = [object()] * (4 + capacity.SERVERS_LEFT + 3)
    monkeypatch.setattr(capacity, "servers", lambda uid_base: running)
    monkeypatch.setattr(capacity, "SERVERS_END_S", 0.2)
    assert await capacity.servers_ended(UID_BASE, warm=4) is False
    assert f"{len(running)} servers still running after 0.2 s; going on" in capsys.readouterr().out
    del running[4 + capacity.SERVERS_LEFT :]  # down to the warm pool and a few on their way out
    assert await capacity.servers_ended(UID_BASE, warm=4) is True
    assert capsys.readouterr().out == ""
