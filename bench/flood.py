"""Flood: one client sends frames as fast as it can (junk, pings, restarts) to a console on a step
with hands-on checks, reconnecting whenever it is closed, while another learner pings. The figure is
that learner's ping round trip during the flood, next to the same learner's without it.

Churn: one client opens and closes sessions as fast as it can (each would start a sandboxed server),
while other learners open theirs. The figure is their first reply during the churn, next to the same
without it, and how many sessions the churning client got.

Runs its own app with the default limits (the main benchmark app lifts the rate limits)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import websockets

from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import EnvelopeClient, McpClient

TARGET_P99_MS = 50.0
STEP = "initialize-handshake/versions"  # a step with hands-on checks
FLOOD_FRAMES = 6000
FLOOD_S = 8.0
# The learner stays under the default 100 frames in 10 s, as a learner does.
PING_INTERVAL_S = 0.11
# The attacker and the learner come from different addresses (the app trusts X-Forwarded-For from
# loopback, as behind a reverse proxy on the same machine).
ATTACKER = {"X-Forwarded-For": "198.51.100.66"}
LEARNER = {"X-Forwarded-For": "198.51.100.7"}


def junk(n: int) -> str:
    kind = n % 4
    if kind == 0:
        return json.dumps({"type": "send", "text": json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"})})
    if kind == 1:
        return json.dumps({"type": "send", "text": "{not json " + "x" * 200})
    if kind == 2:
        return json.dumps({"type": "restart"})
    return "junk that is not even a frame"


async def flood(app: AppProcess, stop: asyncio.Event, sent: list[int]) -> None:
    """Send FLOOD_FRAMES in FLOOD_S, opening a new connection whenever one is closed."""
    n = 0
    began = time.perf_counter()
    while not stop.is_set() and n < FLOOD_FRAMES:
        try:
            client = await EnvelopeClient.connect(f"{app.ws_base}/ws/demo-orders?step={STEP}",
                                                  additional_headers=ATTACKER)  # fmt: skip
        except (OSError, websockets.InvalidStatus, websockets.InvalidHandshake):
            await asyncio.sleep(0.05)
            continue
        drain = asyncio.create_task(_drain(client))
        try:
            while n < FLOOD_FRAMES and not stop.is_set():
                await client.ws.send(junk(n))
                n += 1
                sent[0] = n
                # Keep to the rate asked for (6000 in 8 s), yielding so the loop is not ours alone.
                ahead = n * FLOOD_S / FLOOD_FRAMES - (time.perf_counter() - began)
                await asyncio.sleep(max(ahead, 0))
        except websockets.ConnectionClosed:
            pass
        finally:
            drain.cancel()
            await client.close()


async def _drain(client: EnvelopeClient) -> None:
    try:
        async for _ in client.ws:
            pass
    except websockets.ConnectionClosed:
        pass


async def pings(client: McpClient, count: int) -> list[float]:
    times = []
    for i in range(count):
        began = time.perf_counter()
        await client.send(json.dumps({"jsonrpc": "2.0", "id": 10_000 + i, "method": "ping"}))
        reply = await client.recv()
        assert reply.get("id") == 10_000 + i, reply
        times.append((time.perf_counter() - began) * 1000)
        await asyncio.sleep(PING_INTERVAL_S)
    return times


async def measure(app: AppProcess, quick: bool) -> tuple[dict, list]:
    count = 60 if quick else 120
    learner = await McpClient.connect(app.ws_base + "/ws/demo-orders", additional_headers=LEARNER)
    await learner.initialize()
    quiet = await pings(learner, count)
    stop, sent = asyncio.Event(), [0]
    attacker = asyncio.create_task(flood(app, stop, sent))
    began = time.perf_counter()
    flooded = await pings(learner, count)
    while sent[0] < FLOOD_FRAMES and not attacker.done() and time.perf_counter() - began < 4 * FLOOD_S:
        flooded.extend(await pings(learner, 10))  # keep measuring as long as the flood lasts
    stop.set()
    await attacker
    await learner.close()
    quiet_s, flood_s = summary(quiet), summary(flooded)
    figures = {"ping_ms_quiet": quiet_s, "ping_ms_flood": flood_s, "flood_frames": sent[0],
               "flood_seconds": round(time.perf_counter() - began, 2)}  # fmt: skip
    table = [
        (
            "another learner's ping p99 during a flood",
            f"{flood_s['p99']:.2f} ms ({sent[0]} frames flooded)",
            f"{quiet_s['p99']:.2f} ms without",
            f"<= {TARGET_P99_MS:g} ms",
        )
    ]
    return figures, table


CHURN_S = 6.0
CHURNER = {"X-Forwarded-For": "198.51.100.67"}
FIRST_REPLY_INTERVAL_S = 0.1


def newcomer(n: int) -> dict[str, str]:
    """The n-th other learner's address: each its own owner, as learners in a class are by cookie."""
    return {"X-Forwarded-For": f"203.0.113.{n % 250 + 1}"}


async def churn(app: AppProcess, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """Open a session and close it, again and again, until `stop`."""
    url = app.ws_base + "/ws/demo-orders"
    while not stop.is_set():
        try:
            client = await McpClient.connect(url, additional_headers=CHURNER)
        except websockets.InvalidStatus:
            counts["refused"] += 1
            continue
        counts["opened"] += 1
        await client.close()


async def first_replies(app: AppProcess, first: int, count: int) -> list[float]:
    times = []
    for n in range(first, first + count):
        began = time.perf_counter()
        client = await McpClient.connect(app.ws_base + "/ws/demo-orders", additional_headers=newcomer(n))
        await client.initialize()
        times.append((time.perf_counter() - began) * 1000)
        await client.close()
        await asyncio.sleep(FIRST_REPLY_INTERVAL_S)
    return times


async def measure_churn(app: AppProcess, quick: bool) -> tuple[dict, list]:
    count = 20 if quick else 40
    quiet = await first_replies(app, 0, count)
    stop, counts = asyncio.Event(), {"opened": 0, "refused": 0}
    attacker = asyncio.create_task(churn(app, stop, counts))
    began = time.perf_counter()
    churned = await first_replies(app, count, count)
    while time.perf_counter() - began < CHURN_S:
        churned.extend(await first_replies(app, len(churned) + count, 5))
    stop.set()
    await attacker
    quiet_s, churn_s = summary(quiet), summary(churned)
    figures = {"first_reply_ms_quiet": quiet_s, "first_reply_ms_churn": churn_s, **counts,
               "churn_seconds": round(time.perf_counter() - began, 2)}  # fmt: skip
    table = [
        (
            "others' first reply p50 while one client churns sessions",
            f"{churn_s['p50']:.1f} ms ({churn_s['p50'] / quiet_s['p50']:.2f}x; p99 {churn_s['p99']:.1f} ms)",
            f"{quiet_s['p50']:.1f} ms without (p99 {quiet_s['p99']:.1f} ms)",
            "",
        ),
        (
            "  sessions the churning client got",
            f"{counts['opened']} in {figures['churn_seconds']:g} s, {counts['refused']} refused (429)",
            "-",
            "",
        ),
    ]
    return figures, table


async def run(data: Path, quick: bool) -> tuple[dict, list]:
    with AppProcess(data, warm_pool_size=4) as app:
        figures, table = await measure(app, quick)
        churn_figures, churn_table = await measure_churn(app, quick)
        return {**figures, "churn": churn_figures}, table + churn_table
