"""The baseline: a cold `python -m app.demos.orders` started per learner, seed 003's way."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from tests.support.appserver import ROOT

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip


class ColdServer:
    async def start(self) -> float:
        """Spawn and initialize; return seconds to the initialize reply."""
        began = time.perf_counter()
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app.demos.orders", cwd=ROOT, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=1 << 24,
        )  # fmt: skip
        await self.request(INIT)
        elapsed = time.perf_counter() - began
        await self.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return elapsed

    async def notify(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, message: dict) -> dict:
        await self.notify(message)
        assert self.proc.stdout is not None
        return json.loads(await asyncio.wait_for(self.proc.stdout.readline(), 60))

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
