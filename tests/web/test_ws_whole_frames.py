"""app/web/wsprotocol.py's short way for a read that is one whole text frame, from the attacker's side:
whatever the client's bytes and however the network cuts them, the messages handed on must be
exactly those `websockets` would have read, in order, and every frame it would refuse must still be
refused with its close code.

A real uvicorn on uvloop serves our protocol class, with an app that takes texts as the relay does
(`take_texts`). The test then hands bytes to the protocol's `data_received` itself, in pieces it
chooses: a read cut at an exact byte cannot be had from a real socket without waiting on timing.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
import uvloop
from websockets.frames import Frame, Opcode

from app.web.wsprotocol import DIRECT, WebSocketProtocol
from bench import wsframe
from bench.wsframe import CONTINUATION as CONT
from bench.wsframe import TEXT

MAX_SIZE = 256 * 1024
UPGRADE = (
    b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def frame(payload: bytes, opcode: int = TEXT, *, fin: bool = True, masked: bool = True, rsv: int = 0,
          mask: bytes | None = None) -> bytes:  # fmt: skip
    """A client's frame (bench/wsframe.py's), with any first byte an attacker may write."""
    data = wsframe.frame(opcode, payload, (os.urandom(4) if mask is None else mask) if masked else None)
    return bytes([(data[0] if fin else data[0] & 0x7F) | rsv << 4]) + data[1:]


@dataclass
class Connection:
    """One accepted connection: our protocol object, what its sink took, what reached the app's queue."""

    protocol: Any = None
    taken: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    handed: list[str] = field(default_factory=list)  # both, in the order they came
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    close_code: int | None = None
    short_way: int = 0  # reads that were one whole text frame
    reader: asyncio.StreamReader | None = None  # the client's end: what the server wrote

    def sink(self, text: str) -> bool:
        if text.startswith("decline"):
            return False
        self.taken.append(text)
        self.handed.append(text)
        return True

    def feed(self, *pieces: bytes) -> None:
        for piece in pieces:
            self.protocol.data_received(piece)

    async def until_handed(self, count: int) -> list[str]:
        deadline = time.monotonic() + 30
        while len(self.handed) < count:
            assert time.monotonic() < deadline, self.handed
            await asyncio.sleep(0.01)
        return self.handed

    async def until_closed(self) -> int | None:
        await asyncio.wait_for(self.closed.wait(), 30)
        return self.close_code


@asynccontextmanager
async def connection() -> AsyncIterator[Connection]:
    accepted: asyncio.Queue[Connection] = asyncio.Queue()

    async def app(scope: dict, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        conn = Connection(protocol=scope["extensions"][DIRECT])
        conn.protocol.take_texts(conn.sink)
        whole = conn.protocol._whole_text_frame

        def counted(data: bytes) -> bytes | None:
            payload = whole(data)
            conn.short_way += payload is not None
            return payload

        conn.protocol._whole_text_frame = counted
        accepted.put_nowait(conn)
        while (event := await receive())["type"] != "websocket.disconnect":
            conn.queued.append(event["text"])
            conn.handed.append(event["text"])
        conn.close_code = event.get("code")
        conn.closed.set()

    config = uvicorn.Config(app, host="127.0.0.1", port=0, ws=WebSocketProtocol, lifespan="off",
                            log_level="critical", ws_per_message_deflate=False, ws_max_size=MAX_SIZE)  # fmt: skip
    server = uvicorn.Server(config)
    sock = config.bind_socket()
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    writer = None
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        writer.write(UPGRADE)
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)).startswith(b"HTTP/1.1 101")
        conn = await asyncio.wait_for(accepted.get(), 30)
        conn.reader = reader
        yield conn
    finally:
        if writer is not None:
            writer.close()
        server.should_exit = True
        await serving
        sock.close()


def run(test: Any) -> None:
    uvloop.run(test())


def test_every_cut_of_a_stream_of_frames_hands_on_the_same_messages_in_order() -> None:
    # Messages of each length form and at its edges (in bytes), ASCII and not, then the stream of their
    # frames cut at random: some reads are exactly one frame (the short way), others a part of one
    # (cut in the header, the mask or the payload) or the end of one and the next.
    rng = random.Random(24)
    sizes = [1, 2, 5, 125, 126, 127, 1000, 65535, 65536, 70000]
    messages = [str(i % 10) * size for i, size in enumerate(sizes)]
    messages += ["é" * (size // 2) + "x" * (size % 2) for size in sizes]
    messages += rng.sample(messages, len(messages))
    pieces: list[bytes] = []
    for message in messages:
        data = frame(message.encode())
        how = rng.random()
        if how < 0.4 or not pieces:
            pieces.append(data)
        elif how < 0.7:
            cut = rng.randrange(1, len(data))
            pieces += [data[:cut], data[cut:]]
        else:
            pieces[-1] += data

    async def test() -> None:
        async with connection() as conn:
            conn.feed(*pieces)
            assert conn.taken == messages
            assert conn.short_way > 0
            assert conn.queued == []

    run(test)


def test_bytes_that_are_a_whole_frame_alone_but_the_rest_of_a_begun_frame_are_read_as_its_rest() -> None:
    # The attack on a short way that looks at a read alone: a frame of the 16-bit length form whose
    # first two bytes come on their own, then bytes that read alone are a whole masked text frame
    # ("hello", 0x81 0x85 and a mask), but are the begun frame's length, mask and first bytes.
    mask = b"\x11\x22\x33\x44"
    payload = b"hello" + b" " * (0x8185 - 5)  # its length is written 0x81 0x85
    data = frame(payload, mask=mask)
    assert data[:4] == b"\x81\xfe\x81\x85"
    looks_whole = data[2:13]
    assert looks_whole == frame(b"hello", mask=mask)

    async def test() -> None:
        async with connection() as conn:
            conn.feed(data[:2], looks_whole, data[13:])
            assert conn.taken == [payload.decode()]
            conn.feed(frame(b"after"))  # and the parser is where it should be
            assert conn.taken == [payload.decode(), "after"]

    run(test)


def test_a_whole_text_frame_amid_a_fragmented_message_is_a_protocol_error() -> None:
    async def test() -> None:
        async with connection() as conn:
            conn.feed(frame(b"begun", fin=False))
            conn.feed(frame(b"a whole frame where a continuation must come"))
            assert await conn.until_closed() == 1002
            assert conn.taken == []

    run(test)


def test_a_fragmented_message_is_joined_and_handed_on() -> None:
    async def test() -> None:
        async with connection() as conn:
            conn.feed(frame(b"one ", fin=False), frame(b"two ", CONT, fin=False), frame(b"three", CONT))
            conn.feed(frame(b"four"))
            # uvicorn queues a message of several frames for the app, and what follows it waits behind.
            assert await conn.until_handed(2) == ["one two three", "four"]

    run(test)


def test_frames_the_short_way_must_not_take_are_refused_as_websockets_refuses_them() -> None:
    cases = [
        (frame("caf\u00e9".encode("latin-1")), 1007),  # not UTF-8
        # unmasked, with four bytes more in the same read: as long as a masked frame of that length
        (frame(b"unmasked", masked=False) + b"\x81\x80\x00\x00", 1002),
        (frame(b"reserved bit", rsv=4), 1002),
        (frame(b"x" * (MAX_SIZE + 1)), 1009),
    ]

    async def test() -> None:
        for data, code in cases:
            async with connection() as conn:
                conn.feed(data)
                assert await conn.until_closed() == code, data[:2]
                assert conn.taken == []

    run(test)


def test_a_text_the_sink_declines_reaches_the_app_in_order() -> None:
    async def test() -> None:
        async with connection() as conn:
            conn.feed(frame(b"first"), frame(b"decline me"), frame(b"third"))
            assert await conn.until_handed(3) == ["first", "decline me", "third"]
            assert conn.taken == ["first"]  # the sink is offered nothing while the app has one queued
            assert conn.short_way == 3

    run(test)


def test_a_servers_text_framed_here_is_framed_as_websockets_frames_it() -> None:
    # Every length form and its edges, then a frame of `websockets`' own (a ping) waiting to go out:
    # it goes first, and the text after it.
    sizes = [0, 1, 125, 126, 127, 65535, 65536, 70000]

    async def test() -> None:
        async with connection() as conn:
            assert conn.reader is not None
            for size in sizes:
                text = ("é" * size)[: size // 2] + "x" * (size % 2)
                assert conn.protocol.send_text_now(text)
                expected = Frame(Opcode.TEXT, text.encode()).serialize(mask=False, extensions=[])
                assert await asyncio.wait_for(conn.reader.readexactly(len(expected)), 30) == expected
            conn.protocol.conn.send_ping(b"waiting")
            assert conn.protocol.send_text_now("after the ping")
            ping = Frame(Opcode.PING, b"waiting").serialize(mask=False, extensions=[])
            text = Frame(Opcode.TEXT, b"after the ping").serialize(mask=False, extensions=[])
            assert await asyncio.wait_for(conn.reader.readexactly(len(ping + text)), 30) == ping + text

    run(test)
