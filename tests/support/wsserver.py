"""A real `websockets` server for the benchmark's hand-written clients to be judged by."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from websockets.asyncio.server import ServerConnection, serve

Handler = Callable[[ServerConnection], Awaitable[None]]


@asynccontextmanager
async def server(handler: Handler, **options) -> AsyncIterator[str]:  # noqa: ANN003
    """A `websockets` server on a free loopback port, offering the `mcp` subprotocol; yields its URL."""
    options.setdefault("subprotocols", ["mcp"])
    async with serve(handler, "127.0.0.1", 0, max_size=None, **options) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws/demo-orders"
