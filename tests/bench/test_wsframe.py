"""The benchmark's hand-written WebSocket parts read frames whole or not at all, and the capacity
learners judge an upgrade as RFC 6455 section 4 asks."""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable
from http import HTTPStatus

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from bench.learners import Learner
from bench.wsframe import (
    CLOSE,
    PING,
    TEXT,
    HandshakeRefused,
    accept_for,
    frame,
    parse,
    upgrade_refusal,
    upgrade_request,
)
from tests.support.wsserver import server


@pytest.mark.parametrize("size", [0, 125, 126, 65_535, 65_536])
@pytest.mark.parametrize("mask", [None, b"\x9a\x01\xff\x40"])
def test_a_frame_reads_back_whole_and_not_one_byte_sooner(size: int, mask: bytes | None) -> None:
    payload = bytes(i % 251 for i in range(size))
    whole = frame(TEXT, payload, mask=mask)
    assert parse(whole) == (0x80 | TEXT, mask is not None, payload, len(whole))
    for cut in {0, 1, 2, 3, 9, 10, len(whole) - 1}:
        if 0 <= cut < len(whole):
            assert parse(whole[:cut]) is None, cut  # the rest is still on its way
    assert parse(bytearray(whole) + b"\x81") == (0x80 | TEXT, mask is not None, payload, len(whole))


def test_frames_back_to_back_are_read_one_after_another() -> None:
    buffer = frame(PING, b"hi") + frame(TEXT, b"{}", mask=os.urandom(4)) + frame(CLOSE, b"\x03\xe8")[:3]
    first = parse(buffer)
    assert first is not None and first[:3] == (0x80 | PING, False, b"hi")
    second = parse(buffer, first[3])
    assert second is not None and second[:3] == (0x80 | TEXT, True, b"{}")
    assert parse(buffer, second[3]) is None  # a close cut short


def upgrade_reply(head: bytes) -> bytes:
    """A server's 101 to the upgrade `head`, with the `mcp` subprotocol, as RFC 6455 section 4.2.2 has it."""
    key = next(
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key:")
    )
    return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept_for(key) + b"\r\nSec-WebSocket-Protocol: mcp\r\n\r\n")  # fmt: skip


def test_an_upgrade_answered_with_its_accept_and_mcp_is_accepted() -> None:
    key = base64.b64encode(os.urandom(16))
    request = upgrade_request("127.0.0.1", 8000, "/ws/demo-orders", key)
    assert request.startswith(b"GET /ws/demo-orders HTTP/1.1\r\n") and request.endswith(b"\r\n\r\n")
    answer = upgrade_reply(request[:-4])
    assert upgrade_refusal(answer[:-4], key) is None


def test_an_upgrade_answered_for_another_key_without_mcp_or_not_with_101_is_refused() -> None:
    key, other = base64.b64encode(os.urandom(16)), base64.b64encode(os.urandom(16))
    answer = upgrade_reply(upgrade_request("127.0.0.1", 8000, "/", key)[:-4])[:-4]
    assert upgrade_refusal(answer, key) is None
    assert "Switching Protocols" in (upgrade_refusal(answer, other) or "")  # accepts another key
    assert upgrade_refusal(answer.replace(b"\r\nSec-WebSocket-Protocol: mcp", b""), key) is not None
    assert "429" in (upgrade_refusal(b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 5", key) or "")


CONNECTS = pytest.mark.parametrize("connect", [Learner.open], ids=["learner"])


async def answer(ws: ServerConnection) -> None:
    await ws.wait_closed()


@CONNECTS
async def test_a_refused_upgrade_is_a_clear_error(connect: Callable[[str], Awaitable[object]]) -> None:
    def refuse(ws: ServerConnection, request: Request) -> Response:
        return Response(HTTPStatus.TOO_MANY_REQUESTS, "Too Many Requests", Headers(), b"full\n")

    async with server(answer, process_request=refuse) as url:
        with pytest.raises(HandshakeRefused, match="429"):
            await connect(url)


@CONNECTS
async def test_an_upgrade_without_the_mcp_subprotocol_is_refused(
    connect: Callable[[str], Awaitable[object]],
) -> None:
    async with server(answer, subprotocols=["other"], select_subprotocol=lambda ws, offered: None) as url:
        with pytest.raises(HandshakeRefused, match="101"):
            await connect(url)
