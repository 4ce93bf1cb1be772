"""The relay's `mcp` wire mode over a real uvicorn and real WebSocket connections."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from app.protocol import messages
from tests.support import seed003
from tests.support.inprocess import ServedApp
from tests.support.wsclient import McpClient

NEST = 5_000  # past the parser's depth, within the values a message may hold (10,000)
# Each bad frame, and the error code the relay must answer it with.
BAD_FRAMES: list[tuple[str, str | bytes, int]] = [
    ("not json", "{bad", -32700),
    ("truncated", '{"jsonrpc":"2.0","id":1,"method":"ping"', -32700),
    ("empty", "", -32700),
    ("whitespace", "  \n\t ", -32700),
    ("junk", "hello there", -32700),
    ("single quotes", "{'jsonrpc':'2.0','id':1,'method':'ping'}", -32700),
    ("trailing comma", '{"jsonrpc":"2.0","id":1,"method":"ping",}', -32700),
    ("NaN", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', -32700),
    ("Infinity", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}', -32700),
    ("huge number", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e999}}', -32700),
    ("lone surrogate", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud800"}}', -32700),
    ("deep nesting", "[" * NEST + "]" * NEST, -32700),
    ("too many values", "[" * 100_000 + "]" * 100_000, -32600),
    (
        "two messages",
        '{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}',
        -32700,
    ),
    ("number", "42", -32600),
    ("string", '"ping"', -32600),
    ("null", "null", -32600),
    ("true", "true", -32600),
    ("empty array", "[]", -32600),
    ("batch", '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
    ("empty object", "{}", -32600),
    ("jsonrpc 1.0", '{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
    ("jsonrpc number", '{"jsonrpc":2.0,"id":1,"method":"ping"}', -32600),
    ("no jsonrpc", '{"id":1,"method":"ping"}', -32600),
    ("null id", '{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
    ("float id", '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600),
    ("bool id", '{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
    ("object id", '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600),
    ("array id", '{"jsonrpc":"2.0","id":[1],"method":"ping"}', -32600),
    ("method number", '{"jsonrpc":"2.0","id":1,"method":5}', -32600),
    ("params array", '{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}', -32600),
    ("params string", '{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}', -32600),
    ("id only", '{"jsonrpc":"2.0","id":98}', -32600),
    ("result and error", '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', -32600),
    ("bad error object", '{"jsonrpc":"2.0","id":1,"error":"nope"}', -32600),
    ("request with result", '{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}', -32600),
    ("binary", b"\x00\x01\x02", -32600),
    ("binary json", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', -32600),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    # Every raw client here comes from 127.0.0.1 without a learner cookie: one owner, by address,
    # whose cap the twenty-at-once test needs raised, as its rate of new sessions (this module opens
    # about a hundred in a minute or two).
    with ServedApp(tmp_path_factory.mktemp("relay-app"), max_sessions_per_learner=25,
                   new_sessions_per_min=1000) as app:  # fmt: skip
        yield app


async def connect(app: ServedApp, server: str = "demo-orders", **kwargs) -> McpClient:
    return await McpClient.connect(f"{app.ws_base}/ws/{server}", **kwargs)


async def test_seed_003_transcript_through_the_relay(app: ServedApp) -> None:
    client = await connect(app)
    try:
        assert client.ws.subprotocol == "mcp"
        replies = {}
        for step in seed003.SCRIPT:
            if step[0] == "send":
                await client.send(step[1])
            else:
                replies[step[1]] = await client.call(step[1], step[2], step[3])
        assert seed003.render(replies) == seed003.EXPECTED_LINES
    finally:
        await client.close()


@pytest.mark.parametrize("name,frame,code", BAD_FRAMES, ids=[b[0] for b in BAD_FRAMES])
async def test_bad_frame_gets_exactly_one_error_and_the_session_goes_on(
    app: ServedApp, name: str, frame: str | bytes, code: int
) -> None:
    client = await connect(app)
    try:
        await client.initialize()
        await client.send(frame)
        reply = await client.recv()
        assert reply["jsonrpc"] == "2.0"
        assert reply["error"]["code"] == code, reply
        assert reply["error"]["data"]["from"] == "relay"
        assert reply["error"]["data"]["reason"]
        # The next frame back answers the ping: there was no second reply to the bad frame.
        assert await client.call(77, "ping") == {"jsonrpc": "2.0", "id": 77, "result": {}}
    finally:
        await client.close()


async def test_parse_error_says_where(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.send('{\n  "jsonrpc": "2.0",\n  "id": 1\n  "method": "ping"\n}')
        data = (await client.recv())["error"]["data"]
        assert (data["line"], data["column"]) == (4, 3)
        assert data["position"] == 34  # characters before the offending quote
    finally:
        await client.close()


async def test_invalid_request_keeps_a_valid_id(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.send('{"jsonrpc":"2.0","id":"abc","method":"ping","params":[1]}')
        assert (await client.recv())["id"] == "abc"
        await client.send('{"jsonrpc":"2.0","id":1.5,"method":"ping"}')
        assert (await client.recv())["id"] is None
    finally:
        await client.close()


async def test_oversize_message_is_refused_and_the_session_goes_on(app: ServedApp) -> None:
    client = await connect(app, max_size=None)
    try:
        big = json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"pad": "x" * (2 * 1024 * 1024)}}
        )
        await client.send(big)
        reply = await client.recv()
        assert reply["error"]["code"] == -32600 and "limit" in reply["error"]["data"]["reason"]
        assert reply["id"] == 5  # read from where clients write it, without parsing 2 MiB for it
        assert (await client.call(6, "ping"))["result"] == {}
    finally:
        await client.close()


def test_a_frame_over_the_hard_cap_is_closed_1009(app: ServedApp) -> None:
    # Only the frame's header is sent, announcing 5 MiB: the server must refuse it from the header
    # alone. (Sending the 5 MiB races the server's close: a reset can swallow the close frame.)
    import base64
    import os
    import socket
    import struct

    with socket.create_connection(("127.0.0.1", app.port), timeout=30) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            f"GET /ws/demo-orders HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Protocol: mcp\r\n\r\n".encode()
        )
        response = b""
        while b"\r\n\r\n" not in response:
            response += sock.recv(4096)
        assert response.startswith(b"HTTP/1.1 101")
        sock.sendall(struct.pack("!BBQ", 0x81, 0x80 | 127, 5 * 1024 * 1024) + os.urandom(4))
        frame = b""
        while len(frame) < 4:
            chunk = sock.recv(4096)
            assert chunk, "closed without a close frame"
            frame += chunk
        assert frame[0] == 0x88  # a close frame
        assert struct.unpack("!H", frame[2:4])[0] == 1009


async def test_invalid_utf8_in_a_text_frame_is_closed_1007(app: ServedApp) -> None:
    client = await connect(app)
    await client.ws.send(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', text=True)
    code, _ = await client.closed()
    assert code == 1007


async def test_multiline_and_line_separator_messages_are_forwarded_intact(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.initialize()
        ticket = "line one\nline two \u2028 after a line separator \u2029 and a paragraph one"
        pretty = json.dumps(
            {"jsonrpc": "2.0", "id": 9, "method": "prompts/get", "params": {"name": "triage", "arguments": {"ticket": ticket}}},
            indent=4, ensure_ascii=False,
        )  # fmt: skip
        assert "\n" in pretty and "\u2028" in pretty
        await client.send(pretty)
        reply = await client.recv()
        assert reply["result"]["messages"][0]["content"]["text"].endswith(ticket)
    finally:
        await client.close()


async def test_notifications_get_no_reply_even_unknown_ones(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.initialize()
        await client.send({"jsonrpc": "2.0", "method": "notifications/no-such-thing"})
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert await client.call(3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}
    finally:
        await client.close()


async def test_a_foreign_origin_is_refused(app: ServedApp) -> None:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await connect(app, origin="http://evil.example")
    assert refused.value.response.status_code == 403
    client = await connect(app, origin=f"http://127.0.0.1:{app.port}")  # the site itself
    await client.close()


async def test_an_unknown_server_is_refused_with_404(app: ServedApp) -> None:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await connect(app, server="no-such-server")
    assert refused.value.response.status_code == 404


async def test_server_exit_closes_1011_with_the_status(app: ServedApp) -> None:
    client = await connect(app, server="demo-flaky")
    await client.initialize()
    await client.start_tool(2, "crash", status=7)
    code, reason = await client.closed()
    assert code == 1011
    assert "exited with status 7" in reason


async def test_server_initiated_requests_pass_both_ways(app: ServedApp) -> None:
    client = await connect(app, server="demo-assistant")
    try:
        opening, done = messages.handshake(
            1, capabilities={"sampling": {}}, client_info={"name": "t", "version": "1"}
        )
        await client.call(1, "initialize", opening["params"])
        await client.send(done)
        await client.start_tool(2, "suggest_trip", city="Pune")
        ask = await client.recv()
        assert ask["method"] == "sampling/createMessage"
        await client.send({"jsonrpc": "2.0", "id": ask["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "See the Aga Khan Palace."}, "model": "learner"}})  # fmt: skip
        result = await client.recv()
        assert result["id"] == 2
        assert "Aga Khan Palace" in json.dumps(result["result"])
    finally:
        await client.close()


async def test_twenty_sessions_at_once(app: ServedApp) -> None:
    async def one(i: int) -> str:
        client = await connect(app)  # no cookie: each connection is its own learner
        try:
            reply = await client.initialize()
            return reply["result"]["serverInfo"]["name"]
        finally:
            await client.close()

    names = await asyncio.gather(*(one(i) for i in range(20)))
    assert names == ["demo-orders"] * 20


async def test_rate_limit_answers_with_an_error_and_keeps_the_session(tmp_path) -> None:  # noqa: ANN001
    with ServedApp(tmp_path, max_messages_per_10s=5) as small:
        client = await McpClient.connect(small.ws_base + "/ws/demo-orders")
        try:
            for i in range(5):
                assert (await client.call(i, "ping"))["result"] == {}
            limited = await client.call(99, "ping")
            assert limited["error"]["code"] == -32001
            assert limited["error"]["data"]["reason"] == "more than 5 messages in 10 s"
            assert client.ws.state.name == "OPEN"
        finally:
            await client.close()


async def test_a_full_relay_refuses_the_handshake_with_503(tmp_path) -> None:  # noqa: ANN001
    with ServedApp(tmp_path, max_sessions=1, outside_class_share=1.0) as small:  # the global cap alone
        first = await McpClient.connect(small.ws_base + "/ws/demo-orders")
        try:
            with pytest.raises(websockets.InvalidStatus) as refused:
                await McpClient.connect(small.ws_base + "/ws/demo-orders")
            response = refused.value.response
            assert response.status_code == 503
            assert "full" in response.body.decode()
            assert response.headers["Retry-After"]
        finally:
            await first.close()
        health = httpx.get(small.base + "/healthz", timeout=10).json()
        assert health["sessions"]["max"] == 1
