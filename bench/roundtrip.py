"""The relay's round trip for tools/call over the WebSocket, next to a direct stdio round trip."""

from __future__ import annotations

import time

from bench.cold import ColdServer
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient

CALL = {"name": "get_order_status", "arguments": {"order_id": "481516"}}


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    samples = 200 if quick else 600
    client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
    await client.initialize()
    direct = ColdServer()
    await direct.start()
    relay_times, direct_times = [], []
    for i in range(samples):  # interleaved, so both see the same machine
        began = time.perf_counter()
        reply = await client.call(10 + i, "tools/call", CALL)
        assert "result" in reply, reply
        relay_times.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        reply = await direct.request({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": CALL})
        assert "result" in reply, reply
        direct_times.append((time.perf_counter() - began) * 1000)
    await client.close()
    await direct.stop()
    relay_s, direct_s = summary(relay_times), summary(direct_times)
    p50_ratio, p99_ratio = relay_s["p50"] / direct_s["p50"], relay_s["p99"] / direct_s["p99"]
    figures = {"relay_ms": relay_s, "direct_ms": direct_s, "p50_ratio": p50_ratio, "p99_ratio": p99_ratio}
    table = [
        (
            "tools/call round trip p50, relay/direct",
            f"{relay_s['p50']:.2f} ms ({p50_ratio:.2f}x)",
            f"{direct_s['p50']:.2f} ms direct",
            "<= 1.3x",
        ),
        (
            "tools/call round trip p99, relay/direct",
            f"{relay_s['p99']:.2f} ms ({p99_ratio:.2f}x)",
            f"{direct_s['p99']:.2f} ms direct",
            "<= 2.0x",
        ),
    ]
    return figures, table
