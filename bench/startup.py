"""Time to first reply, and 50 sessions opened at once; next to the floor (bench/floor.py: the same
WebSocket stack and sandboxed server from the same kind of warm pool, nothing of the relay's) measured
interleaved, and cold spawns. The floor says what the host and the stack cost that day: on this
Firecracker guest, what the host charges for memory read after a pause (bench/host.py) moved the
first reply by milliseconds between days.

Both are driven by the lean client (bench/leanclient.py), as the round trip is: a learner's browser
opens its WebSocket in native code on another machine, while the `websockets` library's upgrade and
closing handshake cost 0.5-0.6 ms of these two cores per session (round 13). The relay's first
reply with the `websockets` client stays a row of its own."""

from __future__ import annotations

import asyncio
import statistics
import time

from bench import floor as bare
from bench.cold import ColdServer
from bench.leanclient import LeanClient
from bench.memory import full_pool_sizes, pools_full
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient, init_request

BURST = 50
# Bursts of each, interleaved; the median is the figure. One burst was one sample of a noisy host: in
# round 18 a run measured 0.53 s (floor 0.30) where five interleaved pairs right after gave 0.29-0.33 s
# (floor 0.29-0.35).
BURSTS = 3


async def first_reply(url: str, client_kind: type[LeanClient] | type[McpClient] = LeanClient) -> float:
    began = time.perf_counter()
    client = await client_kind.connect(url)
    await client.send(init_request())
    await client.recv()
    elapsed = time.perf_counter() - began
    await client.close()
    return elapsed


async def burst(url: str) -> float:
    """BURST sessions opened at once; seconds until every one has its initialize reply."""
    began = time.perf_counter()
    clients = await asyncio.gather(*(LeanClient.connect(url) for _ in range(BURST)))
    await asyncio.gather(*(c.send(init_request()) for c in clients))
    await asyncio.gather(*(c.recv() for c in clients))
    elapsed = time.perf_counter() - began
    await asyncio.gather(*(c.close() for c in clients))
    return elapsed


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    samples = 20 if quick else 60
    ours_url = app.ws_base + "/ws/demo-orders"
    ours, floor, ours_websockets = [], [], []
    full = full_pool_sizes(app)
    async with bare.serving(app.uid_base + 5000) as floor_url:
        for _ in range(samples):  # interleaved, so all three see the same machine
            ours.append(await first_reply(ours_url))
            await asyncio.sleep(0.05)  # let the warm pool refill, as between two learners arriving
            floor.append(await first_reply(floor_url))
            await asyncio.sleep(0.05)
            ours_websockets.append(await first_reply(ours_url, McpClient))
            await asyncio.sleep(0.05)
        ours_bursts, floor_bursts = [], []
        for _ in range(1 if quick else BURSTS):
            ours_bursts.append(await burst(ours_url))
            # Our burst's sessions ended and its refills done, before the floor's burst; and the floor's
            # ended before our next.
            await pools_full(app, full, live=0)
            floor_bursts.append(await burst(floor_url))
            await pools_full(app, full, live=0)
        burst_s, floor_burst_s = statistics.median(ours_bursts), statistics.median(floor_bursts)
    cold = []
    for _ in range(5 if quick else 10):
        server = ColdServer()
        cold.append(await server.start())
        await server.stop()
    ours_s, floor_s, cold_s = summary(ours), summary(floor), summary(cold)
    websockets_s = summary(ours_websockets)

    began = time.perf_counter()
    colds = [ColdServer() for _ in range(BURST)]
    await asyncio.gather(*(c.start() for c in colds))
    cold_burst_s = time.perf_counter() - began
    await asyncio.gather(*(c.stop() for c in colds))

    def ms(s: dict) -> dict:
        return {k: v * 1000 if k != "n" else v for k, v in s.items()}

    figures = {
        "first_reply_ms": ms(ours_s),
        "floor_first_reply_ms": ms(floor_s),
        "first_reply_websockets_client_ms": ms(websockets_s),
        "cold_first_reply_ms": ms(cold_s),
        "burst_50_s": burst_s,
        "floor_burst_50_s": floor_burst_s,
        "bursts_50_s": ours_bursts,
        "floor_bursts_50_s": floor_bursts,
        "cold_burst_50_s": cold_burst_s,
    }
    table = [
        (
            "first reply p50 (open+initialize)",
            f"{ours_s['p50'] * 1000:.1f} ms ({ours_s['p50'] / floor_s['p50']:.2f}x floor)",
            f"{floor_s['p50'] * 1000:.1f} ms floor, {cold_s['p50'] * 1000:.0f} ms cold",
            "<= 5 ms",
        ),
        (
            "first reply p99",
            f"{ours_s['p99'] * 1000:.1f} ms",
            f"{floor_s['p99'] * 1000:.1f} ms floor, {cold_s['p99'] * 1000:.0f} ms cold",
            "",
        ),
        (
            "  first reply p50 with the `websockets` client",
            f"{websockets_s['p50'] * 1000:.1f} ms ({websockets_s['p50'] / floor_s['p50']:.2f}x floor)",
            "the tests' client; the rows above use bench/leanclient.py",
            "",
        ),
        (
            f"{BURST} sessions at once, all initialized (median of {len(ours_bursts)})",
            f"{burst_s:.2f} s ({burst_s / floor_burst_s:.2f}x floor)",
            f"{floor_burst_s:.2f} s floor, {cold_burst_s:.1f} s cold",
            "<= 0.35 s",
        ),
    ]
    return figures, table
