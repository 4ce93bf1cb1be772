"""Output flood: one learner's own server.py writes short lines as fast as it can, on stdout or on
stderr, in four consoles at once (a learner's cap), while another learner pings. The figure is that
learner's ping round trip during each flood, next to the same learner's without one: with the
flooder reading its WebSockets, and with the flooder reading nothing.

Runs its own app with the default limits (the main benchmark app lifts the rate limits). Run alone:
`python -m bench.output_flood [--quick]`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from pathlib import Path

import websockets

from bench.flood import PING_INTERVAL_S, TARGET_P99_MS
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.wsclient import EnvelopeClient, McpClient

CONSOLES = 4
FLOODERS = {
    "stdout": "import sys\nwhile True:\n    sys.stdout.write('x\\n')\n",
    "stderr": "import sys\nwhile True:\n    sys.stderr.write('e\\n')\n    sys.stderr.flush()\n",
}
# The flooder and the other learner come from different addresses (the app trusts X-Forwarded-For
# from loopback, as behind a reverse proxy on the same machine), each with its own identity.
FLOODER_ADDRESS = "198.51.100.66"
LEARNER_ADDRESS = "198.51.100.7"
# Pings during one flood: about 7 s of it at bench.flood's interval, before a flooder that reads is
# stopped for flooding (10 s of it).
FLOOD_PINGS = 60
# A stalled web process answers a ping late, not never: each is waited for this long, and the pings
# during one flood stop after FLOOD_PINGS or this, whichever comes first.
PING_WAIT_S = 120.0


async def pings(client: McpClient, count: int, budget_s: float = PING_WAIT_S) -> list[float]:
    """`count` pings' round trips in ms, one every PING_INTERVAL_S (fewer if `budget_s` runs out)."""
    times: list[float] = []
    began = time.perf_counter()
    for n in range(count):
        sent = time.perf_counter()
        await client.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}))
        while (await client.recv(PING_WAIT_S)).get("id") != n:
            pass  # a late answer to a ping that went before
        times.append((time.perf_counter() - sent) * 1000)
        if time.perf_counter() - began > budget_s:
            break
        await asyncio.sleep(PING_INTERVAL_S)
    return times


def headers(app: AppProcess, learner: str, address: str) -> dict[str, str]:
    from app.web.learner import COOKIE

    return {"Cookie": f"{COOKIE}={app.learner_cookie(learner)}", "X-Forwarded-For": address}


async def _drain(client: EnvelopeClient, frames: list[int]) -> None:
    with contextlib.suppress(websockets.ConnectionClosed):
        async for _ in client.ws:
            frames[0] += 1


async def flooded_pings(app: AppProcess, victim: McpClient, stream: str, reading: bool) -> tuple[list, int]:
    """The victim's pings while one learner's four consoles flood `stream`; and the frames they read."""
    learner = f"{stream}-{'reading' if reading else 'deaf'}"
    with app.client(cookies={"playground_learner": app.learner_cookie(learner)}) as page:
        page.put("/api/workspace/server.py", content=FLOODERS[stream]).raise_for_status()
    url, flooder = app.ws_base + "/ws/my-server", headers(app, learner, FLOODER_ADDRESS)
    consoles = [
        EnvelopeClient(
            await websockets.connect(
                url,
                subprotocols=["playground.v1"],
                origin=app.base,
                additional_headers=flooder,
                open_timeout=PING_WAIT_S,
                ping_interval=None,
            )
        )  # fmt: skip
        for _ in range(CONSOLES)
    ]
    frames = [0]
    drains = [asyncio.create_task(_drain(console, frames)) for console in consoles] if reading else []
    try:
        times = await pings(victim, FLOOD_PINGS)
    finally:
        for console in consoles:
            if reading:
                await console.close()
            else:  # a close would wait behind everything unread: the connection just goes
                console.ws.transport.abort()
        await asyncio.gather(*drains)
    return times, frames[0]


async def measure(app: AppProcess, quick: bool) -> tuple[dict, list]:
    # No keepalive pings of the client's own: a stalled relay answers them late, and they would close
    # the connection that is being measured.
    victim = await McpClient.connect(app.ws_base + "/ws/demo-orders", origin=app.base, ping_interval=None,
                                     additional_headers=headers(app, "victim", LEARNER_ADDRESS))  # fmt: skip
    await victim.initialize()
    quiet = summary(await pings(victim, 60 if quick else 120))
    figures: dict = {"ping_ms_quiet": quiet}
    table = []
    for stream in FLOODERS:
        for reading in (True, False):
            times, frames = await flooded_pings(app, victim, stream, reading)
            flood = summary(times)
            how = "reading" if reading else "reading nothing"
            figures[f"ping_ms_{stream}_{'reading' if reading else 'deaf'}"] = {**flood, "frames_read": frames}
            table.append((
                f"another learner's ping p99 during a {stream} flood ({CONSOLES} consoles, {how})",
                f"{flood['p99']:.2f} ms" + (f" ({frames} frames read)" if reading else ""),
                f"{quiet['p99']:.2f} ms without",
                f"<= {TARGET_P99_MS:g} ms",
            ))  # fmt: skip
            print("  ".join(table[-1]), flush=True)
    await victim.close()
    return figures, table


async def run(data: Path, quick: bool) -> tuple[dict, list]:
    with AppProcess(data, warm_pool_size=2) as app:
        return await measure(app, quick)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.output_flood")
    parser.add_argument("--quick", action="store_true", help="fewer pings without a flood")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp) / "output-flood", args.quick))  # each row printed as it is measured


if __name__ == "__main__":
    main()
