"""Time to first reply, and 50 sessions opened at once; next to cold spawns."""

from __future__ import annotations

import asyncio
import time

from bench.cold import ColdServer
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient, init_request


async def first_reply(app: AppProcess) -> float:
    began = time.perf_counter()
    client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
    await client.send(init_request())
    await client.recv()
    elapsed = time.perf_counter() - began
    await client.close()
    return elapsed


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    samples = 20 if quick else 60
    ours = []
    for _ in range(samples):
        ours.append(await first_reply(app))
        await asyncio.sleep(0.05)  # let the warm pool refill, as between two learners arriving
    cold = []
    for _ in range(5 if quick else 10):
        server = ColdServer()
        cold.append(await server.start())
        await server.stop()
    ours_s, cold_s = summary(ours), summary(cold)

    burst = 50
    began = time.perf_counter()
    clients = await asyncio.gather(
        *(McpClient.connect(app.ws_base + "/ws/demo-orders") for _ in range(burst))
    )
    await asyncio.gather(*(c.send(init_request()) for c in clients))
    await asyncio.gather(*(c.recv(120) for c in clients))
    burst_s = time.perf_counter() - began
    await asyncio.gather(*(c.close() for c in clients))

    began = time.perf_counter()
    colds = [ColdServer() for _ in range(burst)]
    await asyncio.gather(*(c.start() for c in colds))
    cold_burst_s = time.perf_counter() - began
    await asyncio.gather(*(c.stop() for c in colds))

    figures = {
        "first_reply_ms": {k: v * 1000 if k != "n" else v for k, v in ours_s.items()},
        "cold_first_reply_ms": {k: v * 1000 if k != "n" else v for k, v in cold_s.items()},
        "burst_50_s": burst_s,
        "cold_burst_50_s": cold_burst_s,
    }
    table = [
        (
            "first reply p50 (open+initialize)",
            f"{ours_s['p50'] * 1000:.1f} ms",
            f"{cold_s['p50'] * 1000:.0f} ms cold",
            "<= 5 ms",
        ),
        ("first reply p99", f"{ours_s['p99'] * 1000:.1f} ms", f"{cold_s['p99'] * 1000:.0f} ms cold", ""),
        (
            "50 sessions at once, all initialized",
            f"{burst_s:.2f} s",
            f"{cold_burst_s:.1f} s cold",
            "<= 0.35 s",
        ),
    ]
    return figures, table
