"""Churn: 200 sessions opened and closed quickly leave no process, descriptor or memory behind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import pytest

from app.demos import MY_SERVER
from tests.support.appserver import AppProcess
from tests.support.procs import processes_in_uid_range, wait_until
from tests.support.wsclient import McpClient

POOL = 2
# Python's allocator keeps some freed memory; growth past this would be a leak per session.
RSS_GROWTH_LIMIT_MIB = 24
FD_GROWTH_LIMIT = 4


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def churn(app: AppProcess, count: int, batch: int = 10) -> None:
    async def one(i: int) -> None:
        client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
        if i % 3 == 0:
            await client.initialize()
        await client.close()

    for start in range(0, count, batch):
        await asyncio.gather(*(one(i) for i in range(start, min(start + batch, count))))


def settled(app: AppProcess) -> bool:
    """Only the full warm pools are left: each instance its server alone, no zombies."""
    pools = httpx.get(app.base + "/healthz", timeout=10).json()["warm_pool"]
    procs = processes_in_uid_range(app.uid_base, app.uid_base + 1000)
    demos = [name for name in pools if name != MY_SERVER]  # a learner's own server is never warm
    return len(procs) == sum(pools.values()) == POOL + len(demos) - 1 and not any(p.zombie for p in procs)


@pytest.mark.timeout(600)
def test_200_sessions_leave_nothing_behind(tmp_path: Path) -> None:
    # Ten anonymous clients at once from 127.0.0.1 are one owner by address, opening 230 sessions in
    # a minute or two: raise its cap and its rate of new sessions by name.
    # The pools keep their sizes (no growth after a burst finds them empty), so that whatever the app
    # holds more at the end is left behind, not warm.
    with AppProcess(tmp_path, warm_pool_size=POOL, warm_pool_growth=0, reconnect_grace_s=0.2,
                    max_sessions_per_learner=10, new_sessions_per_min=1000) as app:  # fmt: skip
        pid = app.proc.pid
        asyncio.run(churn(app, 30))  # load every code path once before measuring
        assert wait_until(lambda: settled(app), 60)
        fds_before, rss_before = fd_count(pid), rss_mib(pid)
        asyncio.run(churn(app, 200))
        assert wait_until(lambda: settled(app), 60), processes_in_uid_range(app.uid_base, app.uid_base + 1000)
        assert wait_until(lambda: fd_count(pid) <= fds_before + FD_GROWTH_LIMIT, 30), (
            fds_before,
            fd_count(pid),
        )
        assert rss_mib(pid) - rss_before < RSS_GROWTH_LIMIT_MIB, (rss_before, rss_mib(pid))
