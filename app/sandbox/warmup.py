"""Exercise each SDK server once inside the fork server, before any instance is forked.

The SDK builds much lazily (validators, schemas, caches) on a server's first requests. Done once
in the parent, that work is shared by every forked child instead of being repeated, and privately
paid for, by each: the first reply comes sooner and each instance dirties fewer pages.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from app.demos.stdio import lowlevel, untraced
from app.protocol import messages

DEFAULT_MESSAGES: list[dict[str, Any]] = [
    *messages.handshake(1, client_info=messages.WARM_UP_CLIENT_INFO),
    messages.request(2, "ping"),
    messages.request(3, "tools/list"),
    messages.request(4, "resources/list"),
    messages.request(5, "prompts/list"),
    messages.request(6, "no/such/method"),
]
# A wedged warm-up must not hold up start-up: the instance would just start colder.
WARM_UP_TIMEOUT_S = 10.0
# Worker threads notice their loop has closed within moments.
THREAD_EXIT_TIMEOUT_S = 5.0


class _Conversation:
    """Plays stdin and stdout for the SDK's stdio_server: each request waits for the previous answer."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages
        self.replies: list[str] = []
        self.answered = anyio.Event()

    async def lines(self) -> AsyncIterator[str]:
        for message in self.messages:
            if "id" in message:
                self.answered = anyio.Event()
                yield json.dumps(message) + "\n"
                await self.answered.wait()
            else:
                yield json.dumps(message) + "\n"

    async def write(self, text: str) -> None:
        self.replies.append(text)
        self.answered.set()

    async def flush(self) -> None:
        pass


async def _exercise(server: MCPServer, messages: list[dict[str, Any]]) -> list[str]:
    talk = _Conversation(messages)
    # Serving drops the tracing middleware (app/demos/stdio.py); the warm-up runs the same path.
    inner = lowlevel(untraced(server))  # as MCPServer.run_stdio_async, with real stdio
    with anyio.move_on_after(WARM_UP_TIMEOUT_S):
        async with stdio_server(stdin=talk.lines(), stdout=talk) as (read, write):  # type: ignore[arg-type]
            await inner.run(read, write, inner.create_initialization_options())
    return talk.replies


def warm_up(server: MCPServer, messages: list[dict[str, Any]] | None = None) -> list[str]:
    """Run one short session against `server` in this process; return the reply lines."""
    logging.disable(logging.CRITICAL)  # the warm-up's deliberate errors are nobody's business
    before = set(threading.enumerate())
    try:
        replies = anyio.run(_exercise, server, messages or DEFAULT_MESSAGES)
    finally:
        logging.disable(logging.NOTSET)
    # Sync tools ran in anyio's worker threads, which end once their loop is gone. Wait for them:
    # forking while another thread runs could copy a lock it holds.
    started = set(threading.enumerate()) - before
    for thread in started:
        thread.join(THREAD_EXIT_TIMEOUT_S)
    if any(thread.is_alive() for thread in started):
        raise RuntimeError("the warm-up left threads running")
    return replies
