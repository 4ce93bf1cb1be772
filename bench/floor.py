"""The capacity benchmark's floor: a bare forwarder on the same stack.

uvicorn's WebSocket (the same implementation and options as the app) to the pipes of the same
sandboxed demo server from the same fork server, copying text both ways: no validation, no
transcript, no findings, no checks, no admission. What the machine carries through it at the relay's
last step says whether the machine or the relay stopped the step-up (bench/capacity.py).

Run as `python -m bench.floor PORT UID_BASE CAPACITY`; serves `/ws/demo-orders` (subprotocol `mcp`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn

from app.config import Settings
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool
from app.web.wsprotocol import HttpProtocol, WebSocketProtocol
from tests.support.appserver import ROOT, free_port
from tests.support.wsclient import McpClient

SERVER = "demo-orders"
# Sessions at once the floor's pool has room for, unless `serving` is given another figure.
CAPACITY = 64
# As many started ahead as the app keeps by default, so a burst spawns as many in both.
WARM = Settings.model_fields["warm_pool_size"].default


def command_line() -> tuple[int, int, int]:
    """A floor's arguments, as `serving` passes them: its port, its first uid, its capacity."""
    port, uid_base, capacity = sys.argv[1:4]
    return int(port), int(uid_base), int(capacity)


def make_pool(uid_base: int, capacity: int = CAPACITY) -> InstancePool:
    """The sandboxed servers a floor forwards to: the app's pool, its defaults, one server."""
    return InstancePool(servers=[SERVER], limits=Limits(), sandbox=True, extra_modules=[], capacity=capacity,
                        pool_sizes={SERVER: WARM}, uid_base=uid_base, max_line_bytes=4 << 20,
                        max_output_bytes=1 << 30)  # fmt: skip


def make_app(uid_base: int, capacity: int = CAPACITY):  # noqa: ANN201 - a bare ASGI callable
    pool = make_pool(uid_base, capacity)

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await pool.start()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await pool.stop()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "websocket":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await receive()  # websocket.connect
        instance = await pool.acquire(SERVER)
        await send({"type": "websocket.accept", "subprotocol": "mcp"})

        async def pump() -> None:
            while (line := await instance.read_line()) is not None:
                await send({"type": "websocket.send", "text": line})

        pumping = asyncio.create_task(pump())
        try:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    break
                await instance.write_line(message.get("text") or "")
        finally:
            pumping.cancel()
            await pool.release(instance)

    return app


@asynccontextmanager
async def serving(uid_base: int, capacity: int = CAPACITY) -> AsyncIterator[str]:
    """Run the floor in its own process on a free port, its pool sized for `capacity` sessions at once (as the app's is for its cap) on uids from
    `uid_base`; yield its WebSocket URL once it answers an initialize, and end the process on the way
    out."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench.floor", str(port), str(uid_base), str(capacity)],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    url = f"ws://127.0.0.1:{port}/ws/{SERVER}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                probe = await McpClient.connect(url)
                await probe.initialize()
                await probe.close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                await asyncio.sleep(0.1)  # its fork server is still starting: poll with a deadline
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    port, uid_base, capacity = command_line()
    # The app's own protocol classes (app/__main__.py), so the floor's stack stays the app's.
    uvicorn.run(make_app(uid_base, capacity), host="127.0.0.1", port=port, http=HttpProtocol, ws=WebSocketProtocol,
                ws_per_message_deflate=False, log_level="warning", lifespan="on")  # fmt: skip


if __name__ == "__main__":
    main()
