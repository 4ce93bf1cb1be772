"""The relay's round trip for tools/call over the WebSocket, and over a Streamable HTTP endpoint,
next to baselines interleaved in one run: a direct stdio round trip to an unsandboxed server; the
floor (bench/floor.py: the same WebSocket stack and sandboxed server, bytes copied, nothing else);
and the thin floor (bench/thinfloor.py: the thinnest forwarder in Python to the same sandboxed
server, no uvicorn, no ASGI), which says how far below the relay any relay in Python could go; and
the hop in C (bench/cfloor.py: the same sandboxed server, the messages copied by a C program), which
says what the hop itself costs on this host when no Python is on the data path.

Every WebSocket path is measured with the lean client (bench/leanclient.py), which is built as the
direct baseline's pipe client is and differs from it in framing alone; the relay is also measured with
the `websockets` client the tests use, as a figure beside the targets."""

from __future__ import annotations

import random
import time

import httpx

from bench import floor as bare
from bench.cold import ColdServer
from bench.leanclient import LeanClient
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient

CALL = {"name": "get_order_status", "arguments": {"order_id": "481516"}}


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    samples = 200 if quick else 600
    relay_url = app.ws_base + "/ws/demo-orders"
    client = await LeanClient.connect(relay_url)
    await client.initialize()
    library = await McpClient.connect(relay_url)
    await library.initialize()
    direct = ColdServer()
    await direct.start()
    async with (
        bare.serving(app.uid_base + 5000) as floor_url,
        bare.serving(app.uid_base + 6000, module="bench.thinfloor") as thin_url,
        bare.serving(app.uid_base + 7000, module="bench.cfloor") as c_url,
    ):
        forwarders = [await LeanClient.connect(url) for url in (floor_url, thin_url, c_url)]
        for forwarder in forwarders:
            await forwarder.initialize()
        figures, table = await _measure(app, samples, client, library, direct, *forwarders)
        for forwarder in forwarders:
            await forwarder.close()
    return figures, table


async def _measure(app: AppProcess, samples: int, client: LeanClient, library: McpClient, direct: ColdServer,
                   floor: LeanClient, thin: LeanClient, hop_in_c: LeanClient) -> tuple[dict, list]:  # fmt: skip
    http, url, session = await _endpoint_session(app)

    async def over_http(id_: int) -> dict:
        answer = await http.post(url, json={"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": CALL},
                                 headers={"Mcp-Session-Id": session})  # fmt: skip
        return answer.json()

    paths = {
        "hop_in_c": lambda id_: hop_in_c.call(id_, "tools/call", CALL),
        "thin": lambda id_: thin.call(id_, "tools/call", CALL),
        "relay": lambda id_: client.call(id_, "tools/call", CALL),
        "floor": lambda id_: floor.call(id_, "tools/call", CALL),
        "library": lambda id_: library.call(id_, "tools/call", CALL),
        "direct": lambda id_: direct.request(
            {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": CALL}
        ),
        "http": over_http,
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    order, shuffler = list(paths), random.Random(19)
    for i in range(samples):
        # Interleaved, so that all see the same machine, and in a new order each time, since the path
        # before a call moves its time: in a fixed order the hop in C read 1.17-1.28x direct, shuffled
        # 1.03-1.07x (bench/README.md, round 12).
        shuffler.shuffle(order)
        for name in order:
            call = paths[name]
            began = time.perf_counter()
            reply = await call(10 + i)
            assert "result" in reply, (name, reply)
            times[name].append((time.perf_counter() - began) * 1000)
    await client.close()
    await library.close()
    await direct.stop()
    await http.delete(url, headers={"Mcp-Session-Id": session})
    await http.aclose()
    relay_s, direct_s, http_s = summary(times["relay"]), summary(times["direct"]), summary(times["http"])
    floor_s, thin_s, c_s = summary(times["floor"]), summary(times["thin"]), summary(times["hop_in_c"])
    library_s = summary(times["library"])
    p50_ratio, p99_ratio = relay_s["p50"] / direct_s["p50"], relay_s["p99"] / direct_s["p99"]
    floor_ratio = relay_s["p50"] / floor_s["p50"]
    thin_ratio, c_ratio = thin_s["p50"] / direct_s["p50"], c_s["p50"] / direct_s["p50"]
    figures = {"relay_ms": relay_s, "direct_ms": direct_s, "http_ms": http_s, "floor_ms": floor_s,
               "thin_floor_ms": thin_s, "p50_ratio": p50_ratio, "p99_ratio": p99_ratio,
               "floor_p50_ratio": floor_ratio, "thin_floor_direct_p50_ratio": thin_ratio,
               "hop_in_c_ms": c_s, "hop_in_c_direct_p50_ratio": c_ratio, "relay_websockets_client_ms": library_s,
               "relay_websockets_client_direct_p50_ratio": library_s["p50"] / direct_s["p50"]}  # fmt: skip
    table = [
        (
            "tools/call round trip p50, relay/floor",
            f"{relay_s['p50']:.2f} ms ({floor_ratio:.2f}x)",
            f"{floor_s['p50']:.2f} ms floor (bench/floor.py)",
            "<= 1.10x",
        ),
        (
            "tools/call round trip p50, relay/direct",
            f"{relay_s['p50']:.2f} ms ({p50_ratio:.2f}x)",
            f"{direct_s['p50']:.2f} ms direct",
            "<= 1.3x",
        ),
        (
            "  the thinnest Python forwarder/direct",
            f"{thin_s['p50']:.2f} ms ({thin_ratio:.2f}x)",
            f"floor {floor_s['p50'] / direct_s['p50']:.2f}x direct (bench/thinfloor.py)",
            "",
        ),
        (
            "  the hop in C, no Python on the data path/direct",
            f"{c_s['p50']:.2f} ms ({c_ratio:.2f}x)",
            "bench/cfloor.py",
            "",
        ),
        (
            "  the relay/direct with the `websockets` client",
            f"{library_s['p50']:.2f} ms ({library_s['p50'] / direct_s['p50']:.2f}x)",
            "the tests' client; the rows above use bench/leanclient.py",
            "",
        ),
        (
            "tools/call round trip p99, relay/direct",
            f"{relay_s['p99']:.2f} ms ({p99_ratio:.2f}x)",
            # The tail moves with the host: the forwarders' own tails say whether a miss is the relay's.
            f"{direct_s['p99']:.2f} ms direct; thin floor {thin_s['p99'] / direct_s['p99']:.2f}x,"
            f" hop in C {c_s['p99'] / direct_s['p99']:.2f}x",
            "<= 1.6x",
        ),
        (
            "tools/call round trip p50 over an HTTP endpoint",
            f"{http_s['p50']:.2f} ms ({http_s['p50'] / direct_s['p50']:.2f}x)",
            f"{relay_s['p50']:.2f} ms relay, {direct_s['p50']:.2f} ms direct",
            "",
        ),
    ]
    return figures, table


async def _endpoint_session(app: AppProcess) -> tuple[httpx.AsyncClient, str, str]:
    """An endpoint of demo-orders and an initialized MCP session on it, over a keep-alive client."""
    with app.client() as browser:
        browser.get("/")
        url = browser.post("/api/endpoints", json={"server": "demo-orders"}).json()["url"]
    http = httpx.AsyncClient(timeout=30, headers={"Accept": "application/json"})
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
    reply = await http.post(url, json=init)
    session = reply.headers["Mcp-Session-Id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=initialized, headers={"Mcp-Session-Id": session})
    return http, url, session
