"""Fault injection: servers killed, stalled or flooding; clients vanishing mid-request."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.support.appserver import AppProcess
from tests.support.procs import processes_in_uid_range, wait_until
from tests.support.wsclient import McpClient

PROBE = {"extra_demo_modules": ["tests.fixtures.probe_server"], "warm_pool_size": 1}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    settings = {**PROBE, "reconnect_grace_s": 0.5, "server_max_line_bytes": 64 * 1024}
    with AppProcess(tmp_path_factory.mktemp("faults"), **settings) as app:
        yield app


def server_pid(app: AppProcess, uid: int) -> int:
    return next(p.pid for p in processes_in_uid_range(app.uid_base, app.uid_base + 1000)
                if p.uids[0] == uid and len(p.nspids) == 2)  # fmt: skip


def instance_uids(app: AppProcess) -> set[int]:
    return {p.uids[0] for p in processes_in_uid_range(app.uid_base, app.uid_base + 1000)}


async def test_kill_9_mid_request_answers_the_request_and_reports_the_signal(app: AppProcess) -> None:
    client = await McpClient.connect(app.ws_base + "/ws/test-probe")
    await client.initialize()
    uid = json.loads(await client.tool(2, "whoami"))["uid"]
    await client.start_tool(3, "spin", seconds=30)
    import os

    os.kill(server_pid(app, uid), signal.SIGKILL)
    orphan = await client.recv()
    assert orphan["id"] == 3 and orphan["error"]["code"] == -32002
    assert "killed by SIGKILL" in orphan["error"]["data"]["reason"]
    code, reason = await client.closed()
    assert code == 1011 and "killed by SIGKILL" in reason
    fresh = await McpClient.connect(app.ws_base + "/ws/test-probe")
    try:
        assert (await fresh.initialize())["result"]["serverInfo"]["name"] == "test-probe"
    finally:
        await fresh.close()


async def test_closing_the_websocket_mid_request_ends_the_instance_after_the_grace(app: AppProcess) -> None:
    client = await McpClient.connect(app.ws_base + "/ws/test-probe")
    await client.initialize()
    uid = json.loads(await client.tool(2, "whoami"))["uid"]
    await client.start_tool(3, "spin", seconds=30)
    await client.close()
    assert wait_until(lambda: uid not in instance_uids(app), 30)


async def test_a_line_over_the_cap_ends_the_session(app: AppProcess) -> None:
    client = await McpClient.connect(app.ws_base + "/ws/test-probe")
    await client.initialize()
    await client.start_tool(2, "shout", size=100_000)
    orphan = await client.recv()
    assert orphan["id"] == 2 and orphan["error"]["code"] == -32002
    code, reason = await client.closed()
    assert code == 1011 and "longer than 65536 bytes" in reason


def test_a_server_over_its_total_output_cap_is_ended(tmp_path: Path) -> None:
    import asyncio

    with AppProcess(tmp_path, **PROBE, server_max_output_bytes=150_000) as small:

        async def flood() -> tuple[int | None, str]:
            client = await McpClient.connect(small.ws_base + "/ws/test-probe")
            await client.initialize()
            # The reply line carries the text twice (content and structuredContent): ~60 kB, then ~120 kB.
            assert len(await client.tool(2, "shout", size=30_000)) == 30_000  # under the cap so far
            await client.start_tool(3, "shout", size=60_000)
            orphan = await client.recv()
            assert orphan["id"] == 3 and orphan["error"]["code"] == -32002
            return await client.closed()

        code, reason = asyncio.run(flood())
    assert code == 1011 and "more than 150000 bytes in this session" in reason
