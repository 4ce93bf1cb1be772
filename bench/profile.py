"""Where a relay round trip's time goes, so the next round of work starts from data.

tools/call messages are sent back to back through the relay while py-spy samples the web process
while it holds the GIL (`--gil`: py-spy's own test for a running process counts one waiting in epoll
as running on this project's machines, and three quarters of the samples were then waiting, filed
under the event loop). The process's CPU per call is split by what the sampled stack was doing
(framing, validation, transcript, checks, pipe, ...), and the server's CPU per call is read from
/proc for the sandboxed processes (only ours is busy meanwhile). What is left of the round trip is
the client, the kernel and waiting on one another.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import cpu_seconds, sandbox_total
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient

CALL = {"name": "get_order_status", "arguments": {"order_id": "481516"}}
RATE_HZ = 500
# What a sampled stack was doing: the first rule whose marker is in any frame's file wins, so the
# more specific come first (our validation runs inside the framing's callbacks, for instance).
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("checks", ("app/course/checks",)),
    ("transcript", ("app/protocol/transcript",)),
    ("validation", ("app/protocol/jsonrpc", "app/protocol/validate", "pydantic", "json/")),
    (
        "pipe (write and read the server's stdio)",
        # py-spy names app/sandbox's files without their folder ("Instance.read_line (instance.py:109)").
        (
            "app/sandbox/instance",
            "app/sandbox/process",
            "app/protocol/lines",
            "(instance.py:",
            "(process.py:",
            "(lines.py:",
            "unix_events",
        ),
    ),  # fmt: skip
    ("metrics and logs", ("prometheus_client", "logging/", "app/logs")),
    # Framing: uvicorn's WebSocket protocol (with ours, app/web/wsprotocol.py), websockets' frames, the
    # ASGI layers, and what runs in their callbacks.
    (
        "framing (WebSocket and ASGI)",
        ("websockets", "uvicorn/protocols", "starlette", "fastapi", "app/web/wsprotocol", "(wsprotocol.py:"),
    ),
    ("relay (sessions and wire)", ("app/relay", "app/web")),
]
# Stacks whose innermost Python frame is the loop's run: uvloop's own C code (callbacks, the system
# calls it makes itself) and what py-spy could not attribute further. A system call made from Python
# counts under the part that made it (the socket's under framing, the pipe's under pipe).
OTHER = "event loop (uvloop's C code)"


def categorize(raw: str) -> dict[str, int]:
    """Sample counts per category from py-spy's raw output (`frame;frame;... count` per line)."""
    counts: dict[str, int] = {}
    for line in raw.splitlines():
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        name = next((label for label, markers in CATEGORIES if any(m in stack for m in markers)), OTHER)
        counts[name] = counts.get(name, 0) + int(number)
    return counts


async def _drive(app: AppProcess, client: McpClient, calls: int) -> tuple[float, float, float]:
    """Seconds for `calls` calls back to back, and the web process's and the servers' CPU seconds."""
    assert app.proc is not None
    for i in range(50):  # warm the path first
        await client.call(10 + i, "tools/call", CALL)
    app_before, server_before = cpu_seconds(app.proc.pid), sandbox_total(app.uid_base, cpu_seconds)
    began = time.perf_counter()
    for i in range(calls):
        reply = await client.call(100 + i, "tools/call", CALL)
        assert "result" in reply, reply
    elapsed = time.perf_counter() - began
    # Read while the session's server still runs: an exited process's CPU is no longer in /proc.
    return (elapsed, cpu_seconds(app.proc.pid) - app_before,
            sandbox_total(app.uid_base, cpu_seconds) - server_before)  # fmt: skip


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    assert app.proc is not None
    calls = 1000 if quick else 3000
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.txt"
        sampler = subprocess.Popen(
            [spy, "record", "--pid", str(app.proc.pid), "--rate", str(RATE_HZ), "--format", "raw",
             "--output", str(out), "--nonblocking", "--gil"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
        await client.initialize()
        await asyncio.sleep(1.0)  # py-spy attaches; the pool refills after the instance we took
        elapsed, app_cpu, server_cpu = await _drive(app, client, calls)
        await client.close()
        sampler.send_signal(2)  # py-spy writes its output on SIGINT
        try:
            _, errors = sampler.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sampler.kill()
            _, errors = sampler.communicate()
        raw = out.read_text() if out.exists() else ""
    per_call_ms = elapsed / calls * 1000
    app_ms, server_ms = app_cpu / calls * 1000, server_cpu / calls * 1000
    counts = categorize(raw)
    total = sum(counts.values())
    parts = (
        {name: app_ms * n / total for name, n in sorted(counts.items(), key=lambda kv: -kv[1])}
        if total
        else {}
    )
    figures = {
        "round_trip_ms": per_call_ms,
        "web_process_cpu_ms": app_ms,
        "server_cpu_ms": server_ms,
        "web_process_parts_ms": parts,
        "samples": total,
        "sampler": "" if total else (errors.decode(errors="replace").strip()[-300:] or "no samples"),
    }
    table = [("profile: a relay round trip (back to back)", f"{per_call_ms:.2f} ms", "-", "")]
    table.append(("  web process CPU per call", f"{app_ms:.2f} ms", "-", ""))
    if total:
        for name, ms in parts.items():
            table.append(
                (f"    {name}", f"{ms:.3f} ms", f"{100 * ms / app_ms:.0f}% of it" if app_ms else "-", "")
            )
    else:
        table.append(("    (no py-spy samples)", figures["sampler"][:60], "-", ""))
    table.append(("  server CPU per call (sandboxed demo-orders)", f"{server_ms:.2f} ms", "-", ""))
    rest = max(per_call_ms - app_ms - server_ms, 0.0)
    table.append(("  client, kernel and waiting", f"{rest:.2f} ms", "-", ""))
    return figures, table
