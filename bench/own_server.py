"""The learner's own server, server.py and server.ts: save-to-first-reply and private memory, next to
a demo server's.

A learner's server cannot be started ahead (its file is the learner's latest save), so its first
reply includes a spawn (and for server.ts, esbuild and a cold Node with the SDK: docs/typescript.md);
the demo server's baseline is a console opened on demo-orders as a learner opens one (its warm pool
included), and its memory is measured the same way in the same run.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

from bench.stats import uss_bytes
from tests.support.appserver import ROOT, AppProcess
from tests.support.procs import processes_in_uid_range
from tests.support.wsclient import McpClient

MIB = 1024 * 1024
# How long ended sessions' servers may take to go before memory is measured.
SETTLE_S = 30.0
# The Build track's first solution, as a learner would have it (one tool), renamed per save below.
SERVER = (ROOT / "tests" / "fixtures" / "build_lessons" / "solutions" / "add.py").read_text()
# The same in TypeScript: the Build track's first solution.
SERVER_TS = (ROOT / "lessons" / "solutions" / "11-first-tool.ts").read_text()
# A cold Node with the SDK answers within this (the learner's session opened, to its first reply);
# past it, a warm pre-loaded Node would be worth its memory.
TS_COLD_START_TARGET_MS = 300


def _uids(app: AppProcess) -> dict[int, list[int]]:
    pids: dict[int, list[int]] = {}
    for proc in processes_in_uid_range(app.uid_base, app.uid_base + 100_000):
        pids.setdefault(proc.uids[0], []).append(proc.pid)
    return pids


def _uss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += uss_bytes(pid)
        except OSError:
            pass
    return total


async def _open(app: AppProcess, server: str, cookie: str) -> McpClient:
    client = await McpClient.connect(app.ws_base + f"/ws/{server}", origin=app.base,
                                     additional_headers={"Cookie": cookie})  # fmt: skip
    await client.initialize()
    return client


async def _settled(app: AppProcess, instances: int) -> None:
    """Wait until no more than `instances` instances are left (ended sessions' servers have gone)."""
    deadline = time.monotonic() + SETTLE_S
    while len(_uids(app)) > instances and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def _memory(app: AppProcess, server: str, cookie: str, count: int, call: tuple[str, dict],
                  idle: int) -> float:  # fmt: skip
    """Mean USS in MiB of `count` live sessions of `server` that each made one tool call.

    A demo session takes a warm instance and the pool refills, so the sessions are the `count`
    largest instances (they did work; warm ones did not); a learner's server is always new."""
    await _settled(app, idle)
    before = set(_uids(app))
    clients = []
    for n in range(count):
        client = await _open(app, server, cookie)
        await client.tool(2 + n, call[0], **call[1])
        clients.append(client)
    await asyncio.sleep(0.2)  # a warm-pool refill settles, so it is not counted mid-fork
    after = _uids(app)
    mine = after if server != "my-server" else {uid: pids for uid, pids in after.items() if uid not in before}
    sizes = sorted((_uss(pids) for pids in mine.values()), reverse=True)[:count]
    await asyncio.gather(*(c.close() for c in clients))
    return statistics.mean(sizes) / MIB if sizes else float("nan")


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    from app.web.learner import COOKIE

    samples = 15 if quick else 40
    idle = len(_uids(app))  # the warm pools alone
    cookie_value = app.learner_cookie("bench-own-server")
    cookie = f"{COOKIE}={cookie_value}"
    ts_value = app.learner_cookie("bench-own-server-ts")
    ts_cookie = f"{COOKIE}={ts_value}"
    own: list[float] = []
    own_ts: list[float] = []
    cold_ts: list[float] = []  # of own_ts, from the session's opening (the save left out)
    demo: list[float] = []
    with httpx.Client(base_url=app.base, headers={"Origin": app.base}, cookies={COOKIE: cookie_value},
                      timeout=30) as page, \
         httpx.Client(base_url=app.base, headers={"Origin": app.base}, cookies={COOKIE: ts_value},
                      timeout=30) as ts_page:  # fmt: skip
        ts_page.put("/api/workspace/settings", json={"language": "typescript"}).raise_for_status()
        for n in range(samples):  # interleaved, so all see the same machine
            began = time.perf_counter()
            reply = page.put(
                "/api/workspace/server.py", content=SERVER.replace('"my-server"', f'"bench-{n}"')
            )
            reply.raise_for_status()
            client = await _open(app, "my-server", cookie)
            own.append(time.perf_counter() - began)
            await client.close()
            began = time.perf_counter()
            reply = ts_page.put(
                "/api/workspace/server.ts", content=SERVER_TS.replace('"my-server"', f'"bench-{n}"')
            )
            reply.raise_for_status()
            opened = time.perf_counter()
            client = await _open(app, "my-server", ts_cookie)
            own_ts.append(time.perf_counter() - began)
            cold_ts.append(time.perf_counter() - opened)
            await client.close()
            began = time.perf_counter()
            client = await _open(app, "demo-orders", cookie)
            demo.append(time.perf_counter() - began)
            await client.close()
            await asyncio.sleep(0.05)  # the warm pool refills, as between two learners arriving
    count = 5 if quick else 10
    demo_mib = await _memory(
        app, "demo-orders", cookie, count, ("get_order_status", {"order_id": "123456"}), idle
    )
    own_mib = await _memory(app, "my-server", cookie, count, ("add", {"a": 2, "b": 3}), idle)
    ts_mib = await _memory(app, "my-server", ts_cookie, count, ("add", {"a": 2, "b": 3}), idle)
    figures = {
        "save_to_first_reply_ms_p50": statistics.median(own) * 1000,
        "ts_save_to_first_reply_ms_p50": statistics.median(own_ts) * 1000,
        "ts_cold_start_ms_p50": statistics.median(cold_ts) * 1000,
        "demo_first_reply_ms_p50": statistics.median(demo) * 1000,
        "own_server_uss_mib": own_mib,
        "ts_server_uss_mib": ts_mib,
        "demo_server_uss_mib": demo_mib,
    }
    table = [
        ("learner's server: save to first reply p50", f"{figures['save_to_first_reply_ms_p50']:.1f} ms",
         f"{figures['demo_first_reply_ms_p50']:.1f} ms demo-orders", ""),
        ("learner's server.ts: save to first reply p50", f"{figures['ts_save_to_first_reply_ms_p50']:.1f} ms",
         f"{figures['save_to_first_reply_ms_p50']:.1f} ms server.py", ""),
        ("learner's server.ts: Node's cold start to first reply p50", f"{figures['ts_cold_start_ms_p50']:.1f} ms",
         "", f"<= {TS_COLD_START_TARGET_MS} ms"),
        ("learner's server: private memory (USS)", f"{own_mib:.1f} MiB", f"{demo_mib:.1f} MiB demo-orders", ""),
        ("learner's server.ts: private memory (USS)", f"{ts_mib:.1f} MiB", f"{own_mib:.1f} MiB server.py", ""),
    ]  # fmt: skip
    return figures, table
