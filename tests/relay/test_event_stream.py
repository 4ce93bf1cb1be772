"""An SSE response lets go of what it streams the moment it is over (app/relay/httptransport.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.relay.httptransport import EventStream, waiter_events
from app.relay.httpwire import Waiter

# Starlette watches for the client's going away beside the stream for ASGI before 2.4 (uvicorn: 2.3),
# and learns it from a failed send after.
SCOPES = [
    {"type": "http", "asgi": {"spec_version": "2.3"}},
    {"type": "http", "asgi": {"spec_version": "2.4"}},
]


def stuck_client(version: str) -> tuple[Any, Any]:
    """A client that reads nothing: its first body send never returns, and it leaves meanwhile."""
    sending = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sending.set()
            if version == "2.4":
                raise OSError("the client has gone")  # how an ASGI 2.4 server says so
            await asyncio.Event().wait()

    async def receive() -> dict[str, Any]:
        await sending.wait()
        return {"type": "http.disconnect"}

    return receive, send


@pytest.mark.parametrize("scope", SCOPES, ids=["asgi-2.3", "asgi-2.4"])
async def test_a_client_that_leaves_while_a_send_waits_lets_its_waiter_go_at_once(scope: dict) -> None:
    waiter = Waiter(sse=True)
    for n in range(3):
        waiter.events.put_nowait(f'{{"jsonrpc":"2.0","method":"n{n}"}}')
    response = waiter_events(waiter)  # held here: the stream's generator is not collected meanwhile
    receive, send = stuck_client(scope["asgi"]["spec_version"])
    try:
        await asyncio.wait_for(response(scope, receive, send), 10)
    except Exception:  # noqa: S110 - Starlette's ClientDisconnect for 2.4: the going is the point
        pass
    assert waiter.gone  # the session no longer counts it as heard
    assert waiter.events.empty()  # and keeps nothing more for it


async def test_a_stream_read_to_its_end_calls_ended_once() -> None:
    ended: list[bool] = []

    async def two() -> Any:
        yield b"event: message\ndata: {}\n\n"
        yield b"event: message\ndata: {}\n\n"

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {}

    await EventStream(two(), lambda: ended.append(True))(SCOPES[0], receive, send)
    assert ended == [True]
    assert [m.get("more_body") for m in sent[1:]] == [True, True, False]
    assert dict(sent[0]["headers"])[b"content-type"].startswith(b"text/event-stream")
