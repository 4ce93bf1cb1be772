"""Private memory (USS) per live session, next to a cold server."""

from __future__ import annotations

import asyncio

from bench.cold import ColdServer
from bench.stats import uss_bytes
from tests.support.appserver import AppProcess
from tests.support.procs import processes_in_uid_range
from tests.support.wsclient import McpClient

MIB = 1024 * 1024


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    count = 10 if quick else 20
    clients = []
    uids = set()
    for _ in range(count):
        client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
        await client.initialize()
        await client.tool(2, "get_order_status", order_id="123456")  # a session that has done some work
        clients.append(client)
    await asyncio.sleep(0.2)  # let the pool refill settle, so it is not counted mid-fork
    live = []
    for proc in processes_in_uid_range(app.uid_base, app.uid_base + 100_000):
        uids.add(proc.uids[0])
        live.append(proc)
    # Per instance: keeper + server, summed by uid; the live sessions are the ones that did work,
    # so take the `count` largest instances (warm ones have touched fewer pages).
    per_uid: dict[int, int] = {}
    for proc in live:
        try:
            per_uid[proc.uids[0]] = per_uid.get(proc.uids[0], 0) + uss_bytes(proc.pid)
        except OSError:
            pass
    sessions = sorted(per_uid.values(), reverse=True)[:count]
    ours = sum(sessions) / len(sessions)
    await asyncio.gather(*(c.close() for c in clients))

    cold = ColdServer()
    await cold.start()
    await cold.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "get_order_status", "arguments": {"order_id": "123456"}}})  # fmt: skip
    cold_uss = uss_bytes(cold.proc.pid)
    await cold.stop()
    figures = {
        "session_uss_mib": ours / MIB,
        "cold_uss_mib": cold_uss / MIB,
        "sessions_measured": len(sessions),
    }
    table = [
        (
            "private memory per live session (USS)",
            f"{ours / MIB:.1f} MiB",
            f"{cold_uss / MIB:.1f} MiB cold",
            "<= 6 MiB",
        )
    ]
    return figures, table
