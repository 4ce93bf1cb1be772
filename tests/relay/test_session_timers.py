"""A session's timers on the real clock, over a real uvicorn: one silent both ways is ended, however its
server stalls; one that is never silent still ends at the longest session time. Each limit's one
real-time test; the relay's own tests run the same timers on an injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets

from tests.support.inprocess import ServedApp
from tests.support.wsclient import McpClient


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    with ServedApp(tmp_path_factory.mktemp("idle"), idle_timeout_s=1.0) as app:
        yield app


@pytest.mark.slow  # the idle timer, on the real clock
@pytest.mark.parametrize("stalled", [False, True], ids=["idle", "server-stalled"])
async def test_a_session_silent_both_ways_is_ended(quiet: ServedApp, stalled: bool) -> None:
    # A server that never answers a tool call keeps the session no more alive than an idle client.
    server = "demo-flaky" if stalled else "demo-orders"
    client = await McpClient.connect(f"{quiet.ws_base}/ws/{server}")
    await client.initialize()
    if stalled:
        await client.start_tool(2, "slow_reply", seconds=10)
    code, reason = await client.closed(timeout=60)
    assert code == 1000 and "without a message" in reason


@pytest.mark.slow  # the longest-session timer, on the real clock
def test_a_busy_session_still_ends_at_the_longest_session_time(tmp_path: Path) -> None:
    with ServedApp(tmp_path, max_session_s=1.5, idle_timeout_s=600, max_messages_per_10s=100_000) as app:

        async def busy() -> tuple[int | None, str]:
            client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
            await client.initialize()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            n = 10
            try:
                while loop.time() < deadline:  # never idle: a ping after every reply
                    n += 1
                    await client.call(n, "ping")
            except websockets.ConnectionClosed as exc:
                return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")
            return None, "still open after 60 s"

        code, reason = asyncio.run(busy())
    assert code == 1000
    assert "longest session time" in reason
