"""The thin floor frames as the WebSocket protocol says, and forwards whole messages both ways."""

from __future__ import annotations

import pytest
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from bench import floor as bare
from bench.roundtrip import CALL
from bench.wsframe import CLOSE, TEXT, frame
from tests.support.wsclient import McpClient

UID_BASE = 3_470_000


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 200_000])
def test_a_frame_of_any_length_parses_as_the_websockets_library_reads_it(size: int) -> None:
    payload = bytes(i % 251 for i in range(size))
    reader = StreamReader()
    reader.feed_data(frame(TEXT, payload))
    parser = Frame.parse(reader.read_exact, mask=False)
    with pytest.raises(StopIteration) as parsed:
        next(parser)
    assert parsed.value.value.opcode == Opcode.TEXT and parsed.value.value.fin
    assert parsed.value.value.data == payload
    assert frame(CLOSE, b"\x03\xe8")[0] == 0x88


async def test_messages_of_every_length_class_go_through_and_back() -> None:
    """Through the real sandboxed server: a short message, and one long enough that its frames use
    64-bit lengths and reach the thin floor in several reads."""
    async with bare.serving(UID_BASE, module="bench.thinfloor") as url:
        client = await McpClient.connect(url, max_size=None)
        try:
            assert "result" in await client.initialize()
            reply = await client.call(2, "ping")
            assert reply == {"jsonrpc": "2.0", "id": 2, "result": {}}
            long_id = "x" * 100_000  # a reply carries its request's id: long both ways
            reply = await client.call(long_id, "tools/call", CALL)
            assert reply["id"] == long_id and "result" in reply, str(reply)[:300]
        finally:
            await client.close()
