"""Private memory (USS) per live session, next to a cold server.

Measured as a difference: the USS of every sandboxed process with the warm pools full and no session,
then again with `count` sessions live (each initialized and having called a tool) and the pools full
again, divided by `count`. Pool instances are not sessions; picking the largest instances could count
one of them.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from bench.cold import ColdServer
from bench.stats import sandbox_total, uss_bytes
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient

MIB = 1024 * 1024
SETTLE_TIMEOUT_S = 60.0


async def pools_full(app: AppProcess, live: int | None = None) -> None:
    """Wait (with a deadline) until every warm pool holds what it is keeping (its size, or more after
    a burst grew it), and its instances serving; with `live`, also until that many sessions are live
    (0: the last ones have ended)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    async with httpx.AsyncClient(base_url=app.base, timeout=10) as http:
        while True:
            health = (await http.get("/healthz")).json()
            full = health["warm_pool"] == health["warm_pool_target"]
            if full and live in (None, health["sessions"]["live"]):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the warm pools did not refill, or the sessions did not end")
            await asyncio.sleep(0.05)
    # A refilled instance is in the pool once it has reported, before it has started serving (which
    # copies most of the pages it will hold): let it finish.
    await asyncio.sleep(0.5)


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    count = 10 if quick else 20
    await pools_full(app)
    before = sandbox_total(app.uid_base, uss_bytes)
    clients = []
    for _ in range(count):
        client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
        await client.initialize()
        await client.tool(2, "get_order_status", order_id="123456")  # a session that has done some work
        clients.append(client)
    await pools_full(app)
    ours = (sandbox_total(app.uid_base, uss_bytes) - before) / count
    await asyncio.gather(*(c.close() for c in clients))

    cold = ColdServer()
    await cold.start()
    await cold.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "get_order_status", "arguments": {"order_id": "123456"}}})  # fmt: skip
    cold_uss = uss_bytes(cold.proc.pid)
    await cold.stop()
    figures = {"session_uss_mib": ours / MIB, "cold_uss_mib": cold_uss / MIB, "sessions_measured": count}
    table = [
        (
            "private memory per live session (USS)",
            f"{ours / MIB:.1f} MiB",
            f"{cold_uss / MIB:.1f} MiB cold",
            "<= 6 MiB",
        )
    ]
    return figures, table
