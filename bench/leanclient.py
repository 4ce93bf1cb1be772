"""A WebSocket client as lean as the direct baseline's pipe client: the round trip's measuring client.

The direct round trip (bench/cold.py) writes a line to a pipe on asyncio's streams, drains, and reads
a line back under `wait_for`. This client does the same on a TCP stream, with only what RFC 6455 asks
of a client in between: the upgrade, a frame header, each frame masked with a fresh random key, a
pong for each ping. So the two clients differ in framing alone, and what the `websockets` library
spends on each message (0.03-0.08 ms of a round trip in round 12's runs, bench/README.md) is no
longer charged to the forwarder being measured. The tests' client (`tests/support/wsclient.py`, on
`websockets`) stays a figure of its own in `roundtrip.py`.

It speaks as much WebSocket as the benchmark needs, and no more: a measuring stick, not a client for
anything else.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from typing import Any
from urllib.parse import urlsplit

from bench.wsframe import (
    CLOSE,
    CONTINUATION,
    PING,
    PONG,
    TEXT,
    HandshakeRefused,
    frame,
    upgrade_refusal,
    upgrade_request,
)

TIMEOUT_S = 60.0  # as the direct baseline's read


class LeanClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, url: str) -> LeanClient:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16))  # section 4.1
        writer.write(upgrade_request(host, port, parts.path, key))
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT_S)
        except asyncio.IncompleteReadError as closed:
            writer.close()
            raise HandshakeRefused(f"{url}: closed during the upgrade: {closed.partial[:200]!r}") from None
        if why := upgrade_refusal(head[:-4], key):
            writer.close()
            raise HandshakeRefused(f"{url}: {why}")
        return cls(reader, writer)

    def _send(self, opcode: int, payload: bytes) -> None:
        self.writer.write(frame(opcode, payload, mask=os.urandom(4)))

    async def _message(self) -> bytes:
        """The next text message, answering pings on the way (as `websockets` does for its caller)."""
        parts: list[bytes] = []
        while True:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", await self.reader.readexactly(8))
            if second & 0x80:
                raise ConnectionError("the server sent a masked frame (RFC 6455, section 5.1)")
            payload = await self.reader.readexactly(size)
            opcode = first & 0x0F
            if opcode in (TEXT, CONTINUATION):
                parts.append(payload)
                if first & 0x80:
                    return b"".join(parts)
            elif opcode == PING:
                self._send(PONG, payload)
            elif opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                reason = payload[2:].decode(errors="replace")
                raise ConnectionError(f"closed by the server: {code} {reason!r}")
            elif opcode != PONG:
                raise ConnectionError(f"unexpected frame, opcode {opcode:#x}")

    async def send(self, message: dict[str, Any]) -> None:
        self._send(TEXT, json.dumps(message).encode())
        await self.writer.drain()

    async def recv(self) -> dict[str, Any]:
        return json.loads(await asyncio.wait_for(self._message(), TIMEOUT_S))

    async def call(self, id_: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": id_, "method": method}
        await self.send(request if params is None else {**request, "params": params})
        return await self.recv()

    async def initialize(self) -> dict[str, Any]:
        reply = await self.call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                  "clientInfo": {"name": "bench", "version": "1"}})  # fmt: skip
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    async def close(self) -> None:
        """Close as section 7.1.2 says: send a close frame, wait for the server's, then end the stream."""
        try:
            self._send(CLOSE, struct.pack("!H", 1000))
            await self.writer.drain()
            async with asyncio.timeout(TIMEOUT_S):
                while await self._message():
                    pass  # replies still on their way
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the server's close, or it went away: either way the stream ends here
        finally:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except ConnectionError:
                pass
