"""app/web/wsprotocol.py's protocol classes: the uvicorn they bend is the one pinned, with what they use;
and under a real uvicorn on uvloop, from a client that connects and goes in a loop, every connection it
ends is freed by reference counting alone. What only the collector can free piles up, and each young
collection then stops every session at once (a client reconnecting in a loop made one every 0.4-1 s,
of 15-55 ms)."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest
import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from app.web.wsprotocol import LOST, USED, HttpProtocol, WebSocketProtocol
from tests.support.pins import pinned

ROUNDS = 20  # of each way a connection ends
UPGRADE = (
    "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


async def relay_like(scope: dict, receive, send) -> None:  # noqa: ANN001
    """Accepts and closes (reading the lost event, as the relay's route does), or refuses with an
    HTTP response (as the relay's `deny` does), or answers plain HTTP."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    assert (await receive())["type"] == "websocket.connect"
    if scope["path"] == "/refuse":
        await send({"type": "websocket.http.response.start", "status": 429, "headers": []})
        await send({"type": "websocket.http.response.body", "body": b"too many"})
        return
    assert not scope["extensions"][LOST].is_set()
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": 1008})


async def one_connection(port: int, request: str, read_until: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request.encode())
    got = b""
    while read_until not in got:
        chunk = await asyncio.wait_for(reader.read(4096), 30)
        if not chunk:
            break
        got += chunk
    writer.close()  # a client that goes without a closing handshake, as a flooder does
    await writer.wait_closed()


async def connections_left_for_the_collector(http: type, ws: type) -> int:
    config = uvicorn.Config(relay_like, host="127.0.0.1", port=0, http=http, ws=ws, lifespan="off",
                            log_level="critical", ws_per_message_deflate=False)  # fmt: skip
    server = uvicorn.Server(config)
    sock = config.bind_socket()
    port = sock.getsockname()[1]
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            await asyncio.sleep(0.01)
        gc.collect()
        gc.disable()  # from here, whatever needs the collector stays for the count below
        for _ in range(ROUNDS):
            await one_connection(port, UPGRADE.format(path="/ws"), b"\x88")  # the server's close frame
            await one_connection(port, UPGRADE.format(path="/refuse"), b"too many")
            await one_connection(port, UPGRADE.format(path="/ws"), b"\r\n\r\n")  # gone right after the 101
            await one_connection(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"ok")
        while server.server_state.connections or server.server_state.tasks:
            assert time.monotonic() < deadline + 30, "connections still open"
            await asyncio.sleep(0.01)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return sum(isinstance(o, (HttpToolsProtocol, WebSocketsSansIOProtocol)) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
        server.should_exit = True
        await serving
        sock.close()


def test_ended_connections_leave_nothing_for_the_collector() -> None:
    assert uvloop.run(connections_left_for_the_collector(HttpProtocol, WebSocketProtocol)) == 0


def test_without_the_mend_upgraded_connections_are_left_for_the_collector() -> None:
    # uvicorn's own HTTP protocol leaves a cycle behind every upgrade (3 of the 4 ways above end upgraded).
    assert uvloop.run(connections_left_for_the_collector(HttpToolsProtocol, WebSocketProtocol)) >= 3 * ROUNDS


def test_the_uvicorn_bent_is_the_one_pinned_and_has_what_is_used() -> None:
    # An upgrade must come here first: app/web/wsprotocol.py reads and overrides these by name.
    assert uvicorn.__version__ == pinned("uvicorn"), (
        f"uvicorn {uvicorn.__version__} is installed, {pinned('uvicorn')} pinned: re-check app/web/wsprotocol.py"
    )
    missing = [
        f"{cls.__name__}.{name}" for cls, names in USED.items() for name in names if not hasattr(cls, name)
    ]
    assert not missing, f"uvicorn {uvicorn.__version__} lacks what app/web/wsprotocol.py uses: {missing}"


def test_the_check_finds_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The positive control: a protocol without a method this module overrides is named.
    monkeypatch.delattr(HttpToolsProtocol, "on_body")
    with pytest.raises(AssertionError, match="HttpToolsProtocol.on_body"):
        test_the_uvicorn_bent_is_the_one_pinned_and_has_what_is_used()
