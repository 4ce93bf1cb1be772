"""The suite's own helpers, where a flaw shows up as some other test failing now and then."""

import asyncio
import logging
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.appserver import free_port
from tests.support.clocks import ManualClock, VirtualClock


def test_a_port_is_handed_out_once_in_a_run() -> None:
    # The kernel offers unbound ports at random: 2000 looks here gave about 140 repeats.
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)


async def test_a_virtual_clock_wakes_sleepers_in_deadline_order_and_overlapping_waits_overlap() -> None:
    clock = VirtualClock(start=0.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.now()))

    await asyncio.gather(sleeper("long", 3.0), sleeper("short", 1.0), sleeper("also short", 1.0))
    assert woke == [("short", 1.0), ("also short", 1.0), ("long", 3.0)]
    assert clock.now() == 3.0  # three waits side by side took the longest of them, not their sum
    await clock.sleep(0.5)
    assert clock.now() == 3.5 and clock.slept == [3.0, 1.0, 1.0, 0.5]


async def test_a_manual_clock_wakes_a_sleeper_only_once_advanced_past_its_deadline() -> None:
    clock = ManualClock(start=0.0)
    short, long = asyncio.create_task(clock.sleep(1.0)), asyncio.create_task(clock.sleep(5.0))
    for _ in range(10):  # however many turns the loop takes, time does not move by itself
        await asyncio.sleep(0)
    assert clock.sleepers == 2 and not short.done() and clock.now() == 0.0
    clock.advance(0.5)
    await asyncio.sleep(0)
    assert not short.done()
    clock.advance(0.5)
    await short
    assert not long.done() and clock.sleepers == 1
    long.cancel()
    await asyncio.gather(long, return_exceptions=True)
    assert clock.sleepers == 0


def test_a_served_app_logs_only_its_own_records_and_stops_its_thread(tmp_path: Path) -> None:
    from tests.support.inprocess import ServedApp

    with ServedApp(tmp_path) as app, httpx.Client(base_url=app.base, timeout=30) as client:
        assert client.get("/healthz").status_code == 200
        logging.getLogger("tests").warning("a line of the test's own")
        assert '"GET /healthz HTTP/1.1" 200' in app.log()  # uvicorn's access line, from the app's thread
        assert "a line of the test's own" not in app.log()
    assert not [t for t in threading.enumerate() if t.name == f"app-{app.port}"]
    with pytest.raises(httpx.ConnectError):
        httpx.get(app.base + "/healthz", timeout=5)
