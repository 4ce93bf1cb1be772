"""Time to first reply (open a session, initialize, the reply), and 50 sessions opened at once, each
against its baseline: a cold `python -m app.demos.orders` per learner (bench/cold.py), one at a time
and 50 at once. The client is the tests' (`websockets`), as a learner's browser opens a WebSocket."""

from __future__ import annotations

import asyncio
import statistics
import time

from bench.cold import ColdServer
from bench.memory import pools_full
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient, init_request

BURST = 50
# Bursts, each after the pools have refilled; the median is the figure, as one burst is one sample
# of a noisy host. The first finds demo-orders' pool at its size and grows it (PLAYGROUND_WARM_POOL_GROWTH);
# the others find it grown, as a class's next burst does: the first is shown on a line of its own.
BURSTS = 3


async def first_reply(url: str) -> float:
    began = time.perf_counter()
    client = await McpClient.connect(url)
    await client.send(init_request())
    await client.recv()
    elapsed = time.perf_counter() - began
    await client.close()
    return elapsed


async def burst(url: str) -> float:
    """BURST sessions opened at once; seconds until every one has its initialize reply."""
    began = time.perf_counter()
    clients = await asyncio.gather(*(McpClient.connect(url) for _ in range(BURST)))
    await asyncio.gather(*(c.send(init_request()) for c in clients))
    await asyncio.gather(*(c.recv() for c in clients))
    elapsed = time.perf_counter() - began
    await asyncio.gather(*(c.close() for c in clients))
    return elapsed


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    url = app.ws_base + "/ws/demo-orders"
    ours = []
    for _ in range(20 if quick else 60):
        ours.append(await first_reply(url))
        await asyncio.sleep(0.05)  # let the warm pool refill, as between two learners arriving
    bursts = []
    for _ in range(1 if quick else BURSTS):
        await pools_full(app, live=0)  # the last burst's sessions ended, its refills done
        bursts.append(await burst(url))
    burst_s = statistics.median(bursts)
    cold = []
    for _ in range(5 if quick else 10):
        server = ColdServer()
        cold.append(await server.start())
        await server.stop()
    ours_s, cold_s = summary(ours), summary(cold)

    began = time.perf_counter()
    colds = [ColdServer() for _ in range(BURST)]
    await asyncio.gather(*(c.start() for c in colds))
    cold_burst_s = time.perf_counter() - began
    await asyncio.gather(*(c.stop() for c in colds))

    def ms(s: dict) -> dict:
        return {k: v * 1000 if k != "n" else v for k, v in s.items()}

    figures = {
        "first_reply_ms": ms(ours_s),
        "cold_first_reply_ms": ms(cold_s),
        "burst_50_s": burst_s,
        "bursts_50_s": bursts,
        "first_burst_50_s": bursts[0],
        "cold_burst_50_s": cold_burst_s,
    }
    table = [
        (
            "first reply p50 (open+initialize)",
            f"{ours_s['p50'] * 1000:.1f} ms",
            f"{cold_s['p50'] * 1000:.0f} ms cold",
            "<= 6 ms",
        ),
        ("first reply p99", f"{ours_s['p99'] * 1000:.1f} ms", f"{cold_s['p99'] * 1000:.0f} ms cold", ""),
        (
            f"{BURST} sessions at once, all initialized (median of {len(bursts)})",
            f"{burst_s:.2f} s",
            f"{cold_burst_s:.1f} s cold",
            "<= 0.35 s",
        ),
        ("the first of them, pools at their sizes", f"{bursts[0]:.2f} s", "", ""),
    ]
    return figures, table
