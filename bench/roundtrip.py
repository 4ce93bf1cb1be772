"""The relay's round trip for tools/call, over both WebSocket subprotocols (`mcp` and the console's
`playground.v1`) and over a Streamable HTTP endpoint, next to a baseline interleaved in the same run:
a direct stdio round trip to an unsandboxed server (bench/cold.py). The WebSocket paths are measured
with the tests' client (`tests/support/wsclient.py`, on `websockets`), whose own cost is in the ratio."""

from __future__ import annotations

import json
import random
import time

import httpx

from bench.cold import ColdServer
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import EnvelopeClient, McpClient

CALL = {"name": "get_order_status", "arguments": {"order_id": "481516"}}
TARGET = 1.4  # relay/direct p50, on each subprotocol


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    samples = 200 if quick else 600
    relay_url = app.ws_base + "/ws/demo-orders"
    mcp = await McpClient.connect(relay_url)
    await mcp.initialize()
    console = await EnvelopeClient.connect(relay_url)
    await console.recv_type("state")
    for id_, message in ((1, _request(1, "initialize", _INIT)), (None, _notification())):
        await console.send_text(json.dumps(message))
        if id_ is not None:
            await console.recv_type("received")
    direct = ColdServer()
    await direct.start()
    http, url, session = await _endpoint_session(app)

    async def over_envelope(id_: int) -> dict:
        await console.send_text(json.dumps(_request(id_, "tools/call", CALL)))
        return (await console.recv_type("received"))["message"]

    async def over_http(id_: int) -> dict:
        answer = await http.post(
            url, json=_request(id_, "tools/call", CALL), headers={"Mcp-Session-Id": session}
        )
        return answer.json()

    paths = {
        "mcp": lambda id_: mcp.call(id_, "tools/call", CALL),
        "envelope": over_envelope,
        "direct": lambda id_: direct.request(_request(id_, "tools/call", CALL)),
        "http": over_http,
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    order, shuffler = list(paths), random.Random(19)
    for i in range(samples):
        # Interleaved, so that all see the same machine, and in a new order each time, since the path
        # before a call moves its time.
        shuffler.shuffle(order)
        for name in order:
            began = time.perf_counter()
            reply = await paths[name](10 + i)
            assert "result" in reply, (name, reply)
            times[name].append((time.perf_counter() - began) * 1000)
    await mcp.close()
    await console.close()
    await direct.stop()
    await http.delete(url, headers={"Mcp-Session-Id": session})
    await http.aclose()
    stats = {name: summary(values) for name, values in times.items()}
    direct_s = stats["direct"]
    figures: dict = {f"{name}_ms": value for name, value in stats.items()}
    table = []
    for name, label in (("mcp", "`mcp`"), ("envelope", "`playground.v1`"), ("http", "an HTTP endpoint")):
        ratio = stats[name]["p50"] / direct_s["p50"]
        figures[f"{name}_p50_ratio"] = ratio
        figures[f"{name}_p99_ratio"] = stats[name]["p99"] / direct_s["p99"]
        table.append((f"tools/call round trip p50 over {label}, relay/direct",
                      f"{stats[name]['p50']:.2f} ms ({ratio:.2f}x)", f"{direct_s['p50']:.2f} ms direct",
                      f"<= {TARGET}x" if name != "http" else ""))  # fmt: skip
    table.append(("tools/call round trip p99 over `mcp`, relay/direct",
                  f"{stats['mcp']['p99']:.2f} ms ({figures['mcp_p99_ratio']:.2f}x)",
                  f"{direct_s['p99']:.2f} ms direct", ""))  # fmt: skip
    return figures, table


_INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def _request(id_: int, method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def _notification() -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def _endpoint_session(app: AppProcess) -> tuple[httpx.AsyncClient, str, str]:
    """An endpoint of demo-orders and an initialized MCP session on it, over a keep-alive client."""
    with app.client() as browser:
        browser.get("/")
        url = browser.post("/api/endpoints", json={"server": "demo-orders"}).json()["url"]
    http = httpx.AsyncClient(timeout=30, headers={"Accept": "application/json"})
    reply = await http.post(url, json=_request(1, "initialize", _INIT))
    session = reply.headers["Mcp-Session-Id"]
    await http.post(url, json=_notification(), headers={"Mcp-Session-Id": session})
    return http, url, session
