"""Small WebSocket clients for the relay's two wire modes, over real connections."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from app.protocol import messages

# A busy 2-core machine can be slow; these only bound a broken test.
RECV_TIMEOUT_S = 30.0


def init_request(id_: int = 1, version: str = "2025-06-18", **extra: Any) -> dict[str, Any]:
    message = messages.initialize(id_, version, client_info={"name": "test", "version": "1"})
    message["params"].update(extra)
    return message


def tool_call(id_: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


class McpClient:
    """Subprotocol `mcp`: one JSON-RPC message per text frame."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def connect(cls, url: str, **kwargs: Any) -> McpClient:
        ws = await websockets.connect(url, subprotocols=["mcp"], open_timeout=RECV_TIMEOUT_S, **kwargs)
        return cls(ws)

    async def send(self, message: Any) -> None:
        await self.ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))

    async def recv(self, timeout: float = RECV_TIMEOUT_S) -> dict[str, Any]:
        return json.loads(await asyncio.wait_for(self.ws.recv(), timeout))

    async def call(self, id_: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )
        return await self.recv()

    async def initialize(self) -> dict[str, Any]:
        reply = await self.call(1, "initialize", init_request()["params"])
        await self.send(messages.initialized())
        return reply

    async def start_tool(self, id_: int, name: str, **arguments: Any) -> None:
        """Send a tools/call without waiting for its answer."""
        await self.send(tool_call(id_, name, arguments))

    async def tool(self, id_: int, name: str, **arguments: Any) -> str:
        reply = await self.call(id_, "tools/call", {"name": name, "arguments": arguments})
        return reply["result"]["content"][0]["text"]

    async def closed(self, timeout: float = RECV_TIMEOUT_S) -> tuple[int | None, str]:
        """Wait for the server to close; return (code, reason)."""
        try:
            while True:
                await asyncio.wait_for(self.ws.recv(), timeout)
        except websockets.ConnectionClosed as exc:
            return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")

    async def close(self) -> None:
        await self.ws.close()


class EnvelopeClient:
    """The console's envelope mode: typed frames."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []

    @classmethod
    async def connect(
        cls, url: str, subprotocol: str | None = "playground.v1", **kwargs: Any
    ) -> EnvelopeClient:
        subprotocols = [subprotocol] if subprotocol else None
        ws = await websockets.connect(url, subprotocols=subprotocols, open_timeout=RECV_TIMEOUT_S, **kwargs)
        return cls(ws)

    async def recv(self, timeout: float = RECV_TIMEOUT_S) -> dict[str, Any]:
        frame = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        self.frames.append(frame)
        return frame

    async def recv_type(self, *types: str, timeout: float = RECV_TIMEOUT_S) -> dict[str, Any]:
        """The next frame of one of `types`, skipping others (stderr, checks...)."""
        async with asyncio.timeout(timeout):  # one deadline for all the frames skipped on the way
            while True:
                frame = json.loads(await self.ws.recv())
                self.frames.append(frame)
                if frame["type"] in types:
                    return frame

    async def send_text(self, text: str) -> None:
        await self.ws.send(json.dumps({"type": "send", "text": text}))

    async def send(self, message: Any) -> None:
        await self.send_text(json.dumps(message, indent=2))

    async def start_tool(self, id_: int, name: str, **arguments: Any) -> None:
        await self.send(tool_call(id_, name, arguments))

    async def close(self) -> None:
        await self.ws.close()
