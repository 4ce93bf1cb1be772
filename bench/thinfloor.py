"""The thinnest forwarder we can write in Python: a lower bound for any relay written in Python.

No uvicorn, no ASGI, no `websockets` on the server side: an asyncio protocol on uvloop answers the
upgrade and frames text by hand (the mask undone by `websockets`' C `apply_mask`), and writes each
message straight to the pipe of the same sandboxed demo server from the same pool as the floor's
(bench/floor.py), copying its lines back. It speaks only as much WebSocket as the benchmark's client
uses (whole masked text frames, a close) and checks nothing: a measuring stick, never to be served.

Run as `python -m bench.thinfloor PORT UID_BASE CAPACITY`; serves any path (subprotocol `mcp`).
"""

from __future__ import annotations

import asyncio
import signal
from typing import cast

import uvloop

from app.sandbox.instance import Instance
from app.sandbox.pool import InstancePool
from bench.floor import SERVER, command_line, make_pool
from bench.wsframe import CLOSE, TEXT, accept_for, frame, parse


def upgrade_reply(head: bytes) -> bytes:
    """The 101 that accepts a client's upgrade request (`head`: its lines, up to the blank one)."""
    key = next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
               if line.lower().startswith(b"sec-websocket-key:"))  # fmt: skip
    return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept_for(key) + b"\r\nSec-WebSocket-Protocol: mcp\r\n\r\n")  # fmt: skip


class ThinForwarder(asyncio.Protocol):
    def __init__(self, pool: InstancePool) -> None:
        self.pool = pool
        self.buffer = b""
        self.upgraded = False
        self.instance: Instance | None = None
        self.pumping: asyncio.Task | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's, which does not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.instance is not None:
            self._frames()
        elif not self.upgraded and b"\r\n\r\n" in self.buffer:
            self.upgraded = True
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            asyncio.ensure_future(self._accept(head))

    async def _accept(self, head: bytes) -> None:
        reply = upgrade_reply(head)
        self.instance = await self.pool.acquire(SERVER)
        self.transport.write(reply)
        self.pumping = asyncio.ensure_future(self._pump(self.instance))
        self._frames()

    def _frames(self) -> None:
        assert self.instance is not None
        buffer, at = self.buffer, 0
        while parsed := parse(buffer, at):
            first, _, payload, at = parsed
            if first & 0x0F == TEXT:
                assert self.instance._stdin is not None
                self.instance._stdin.write(payload + b"\n")
            elif first & 0x0F == CLOSE:
                self.transport.write(frame(CLOSE, payload))
                self.transport.close()
                break
        self.buffer = buffer[at:]

    async def _pump(self, instance: Instance) -> None:
        assert instance._stdout is not None
        try:
            while True:
                line = await instance._stdout.readuntil(b"\n")
                self.transport.write(frame(TEXT, line[:-1]))
        except (asyncio.IncompleteReadError, ConnectionError):
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.pumping is not None:
            self.pumping.cancel()
        if self.instance is not None:
            asyncio.ensure_future(self.pool.release(self.instance))


async def serve(port: int, uid_base: int, capacity: int) -> None:
    """Serve until SIGTERM, then end the pool's instances (as uvicorn's shutdown does the floor's)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    pool = make_pool(uid_base, capacity)
    await pool.start()
    server = await loop.create_server(lambda: ThinForwarder(pool), "127.0.0.1", port)
    try:
        await stop.wait()
    finally:
        server.close()
        await pool.stop()


def main() -> None:
    uvloop.run(serve(*command_line()))


if __name__ == "__main__":
    main()
