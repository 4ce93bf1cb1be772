"""The `mcp` wire's direct way, from the attacker's side: a client message taken in the socket's
callback and a server line written from the pipe's callback must keep every rule of the queued way
(order, the rate limit, the line and output limits, backpressure both ways).

The servers here are learners' own files that echo stdin to stdout, so the client sees, in order,
exactly the lines the server was given.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets

from app.protocol.jsonrpc import to_line
from app.web.learner import COOKIE
from tests.support.appserver import AppProcess
from tests.support.wsclient import RECV_TIMEOUT_S, McpClient

RATE = 600
TIGHT_LINE = 8 * 1024
TIGHT_OUTPUT = 64 * 1024

ECHO = """
import sys
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
"""

# Reads one line, then lets the relay fill its stdin pipe before echoing anything: the relay's writes
# find the pipe full and must queue, in order.
SLOW_READER = """
import fcntl, struct, sys, termios, time
first = sys.stdin.readline()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    waiting = struct.unpack("i", fcntl.ioctl(0, termios.FIONREAD, b"\\0\\0\\0\\0"))[0]
    if waiting >= 32768:
        break
    time.sleep(0.01)
sys.stdout.write(first)
sys.stdout.flush()
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
"""

# Told how many lines of what size to write, writes them as fast as the pipe takes them, or one at a
# time with a pause between them (`gap_s`), so that each reaches the relay on its own.
FLOODER = """
import json, sys, time
for line in sys.stdin:
    ask = json.loads(line)
    n, size, gap = ask["params"]["lines"], ask["params"]["size"], ask["params"].get("gap_s", 0)
    for i in range(n):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "flood", "params": {"i": i, "pad": "x" * size}}) + "\\n")
        if gap:
            sys.stdout.flush()
            time.sleep(gap)
    sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> AppProcess:
    with AppProcess(tmp_path_factory.mktemp("direct"), warm_pool_size=1, max_messages_per_10s=RATE,
                    max_sessions_per_learner=4) as app:  # fmt: skip
        yield app


def save(app: AppProcess, learner: str, source: str) -> None:
    with app.client(cookies={COOKIE: app.learner_cookie(learner)}) as page:
        reply = page.put("/api/workspace/server.py", content=source)
    assert reply.status_code == 200, reply.text


async def connect(app: AppProcess, learner: str, **kwargs: Any) -> McpClient:
    headers = {"Cookie": f"{COOKIE}={app.learner_cookie(learner)}"}
    return await McpClient.connect(app.ws_base + "/ws/my-server", origin=app.base, additional_headers=headers,
                                   **kwargs)  # fmt: skip


def request(id_: int, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "echo/this", "params": params}


async def frames(client: McpClient, count: int) -> AsyncIterator[dict[str, Any]]:
    for _ in range(count):
        yield await client.recv(timeout=RECV_TIMEOUT_S)


async def until_closed(client: McpClient) -> tuple[list[dict[str, Any]], tuple[int | None, str]]:
    """Every frame until the relay closes the connection, and the close's code and reason."""
    got: list[dict[str, Any]] = []
    try:
        while True:
            got.append(await client.recv(timeout=RECV_TIMEOUT_S))
    except websockets.ConnectionClosed as exc:
        return got, ((exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, ""))


async def test_valid_and_refused_frames_keep_their_order(app: AppProcess) -> None:
    # A refused frame takes the queued way; the valid frames pipelined behind it must wait for it.
    save(app, "orderly", ECHO)
    client = await connect(app, "orderly")
    sent: list[int] = []
    refused: list[int] = []
    try:
        for i in range(1, 301):
            if i % 7 == 0:
                await client.send({"jsonrpc": "2.0", "id": i})  # no method: refused by the relay
                refused.append(i)
            elif i % 11 == 0:
                await client.send(json.dumps(request(i, pretty=True), indent=2))  # compacted, then sent
                sent.append(i)
            else:
                await client.send(request(i, text="é ☃ \u2028"))
                sent.append(i)
        echoed: list[int] = []
        errors: list[int] = []
        async for frame in frames(client, len(sent) + len(refused)):
            if "method" in frame:
                echoed.append(frame["id"])
            else:
                assert frame["error"]["code"] == -32600, frame
                errors.append(frame["id"])
    finally:
        await client.close()
    assert echoed == sent
    assert errors == refused


async def test_the_rate_limit_holds_for_pipelined_frames(app: AppProcess) -> None:
    save(app, "hasty", ECHO)
    client = await connect(app, "hasty")
    extra = 40
    try:
        for i in range(1, RATE + extra + 1):
            await client.send(request(i))
        echoed, limited = 0, 0
        async for frame in frames(client, RATE + extra):
            if "method" in frame:
                echoed += 1
            else:
                assert frame["error"]["code"] == -32001, frame
                limited += 1
        assert (echoed, limited) == (RATE, extra)
        await client.send(request(0))  # still open: refused frames past the limit are answered, not fatal
        assert (await client.recv())["error"]["code"] == -32001
    finally:
        await client.close()


async def test_a_full_stdin_pipe_queues_in_order(app: AppProcess) -> None:
    save(app, "patient", SLOW_READER)
    client = await connect(app, "patient")
    count = 150
    pad = "p" * 3000
    try:
        for i in range(1, count + 1):
            await client.send(request(i, pad=pad))
        echoed = [frame["id"] async for frame in frames(client, count)]
    finally:
        await client.close()
    assert echoed == list(range(1, count + 1))


def server_lines_relayed(app: AppProcess) -> int:
    text = httpx.get(app.base + "/metrics", timeout=RECV_TIMEOUT_S).text
    found = re.search(r'^playground_relay_messages_total\{direction="server"\} (\S+)$', text, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


async def settled(app: AppProcess, before: int, most: int) -> int:
    """Lines relayed since `before`, once the count stops moving for a while or reaches `most`."""
    deadline = asyncio.get_running_loop().time() + 60
    last, still = -1, 0
    while asyncio.get_running_loop().time() < deadline:
        seen = await asyncio.to_thread(server_lines_relayed, app) - before
        if seen >= most:
            return seen
        still = still + 1 if seen == last else 0
        if still >= 5 and seen > 0:
            return seen
        last = seen
        await asyncio.sleep(0.1)
    return last


@pytest.mark.parametrize("gap_s", [0, 0.0005], ids=["in-bursts", "line-by-line"])
async def test_a_client_that_stops_reading_stops_the_server(app: AppProcess, gap_s: float) -> None:
    # The client reads nothing for a while: once the socket is full, the relay must stop taking the
    # server's lines (and the server's writes block), not write past the socket or drop lines. A small
    # receive buffer makes the socket fill sooner.
    save(app, f"sluggish-{gap_s}", FLOODER)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", app.port))
    client = await connect(app, f"sluggish-{gap_s}", sock=sock)
    lines, size = 4000, 3000  # 12 MB: more than every buffer on the way can hold
    try:
        before = await asyncio.to_thread(server_lines_relayed, app)
        await client.send(request(1, lines=lines, size=size, gap_s=gap_s))
        relayed_while_stalled = await settled(app, before, lines)
        got = [frame["params"]["i"] async for frame in frames(client, lines)]
    finally:
        await client.close()
    assert 0 < relayed_while_stalled < lines
    assert got == list(range(lines))


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> AppProcess:
    with AppProcess(tmp_path_factory.mktemp("direct-tight"), warm_pool_size=0, server_max_line_bytes=TIGHT_LINE,
                    server_max_output_bytes=TIGHT_OUTPUT) as app:  # fmt: skip
        yield app


async def test_a_line_over_the_limit_is_never_forwarded(tight: AppProcess) -> None:
    save(tight, "verbose", ECHO)
    client = await connect(tight, "verbose")
    try:
        await client.send(request(1))
        assert (await client.recv())["id"] == 1
        await client.send(request(2, pad="q" * TIGHT_LINE))  # under the client limit, over the server's
        await client.send(request(3))
        got, (code, reason) = await until_closed(client)
    finally:
        await client.close()
    # Only the relay's own answers to the requests left open when it ended the session; no echo.
    assert [frame["error"]["code"] for frame in got if "method" not in frame] == [-32002] * len(got)
    assert code == 1011
    assert "longer than" in reason


async def test_a_line_of_exactly_the_limit_passes_and_one_more_byte_ends_it(tight: AppProcess) -> None:
    # The limit is the line's bytes without its newline, judged alike by both ways (the direct one in
    # the pipe's callback, the queued one in `read_line`).
    save(tight, "exact", ECHO)
    client = await connect(tight, "exact")

    def padded(id_: int, size: int) -> dict[str, Any]:
        message = request(id_, pad="")
        message["params"]["pad"] = "p" * (size - len(to_line(message).encode()))
        assert len(to_line(message).encode()) == size
        return message

    try:
        await client.send(padded(1, TIGHT_LINE))
        assert (await client.recv())["id"] == 1
        await client.send(padded(2, TIGHT_LINE + 1))
        got, (code, reason) = await until_closed(client)
    finally:
        await client.close()
    # No echo of the long line; only the relay's own answers to the requests left open (the echo of
    # request 1 was a request of the server's, so request 1 never got its answer).
    assert sorted((frame["id"], frame["error"]["code"]) for frame in got) == [(1, -32002), (2, -32002)]
    assert code == 1011
    assert f"longer than {TIGHT_LINE} bytes" in reason


async def test_output_past_the_cap_is_never_forwarded(tight: AppProcess) -> None:
    # One line at a time, each echoed before the next is sent: every line reaches the relay on its own,
    # and the one that crosses the cap must not be forwarded.
    save(tight, "prolific", ECHO)
    client = await connect(tight, "prolific")
    pad = "z" * 3000
    echoed: list[int] = []
    written = 0
    try:
        for i in range(1, 100):
            await client.send(request(i, pad=pad))
            frame = await client.recv()
            if "error" in frame:  # the relay's answer to the request left open at the end
                assert frame["error"]["code"] == -32002
                rest, (code, reason) = await until_closed(client)
                break
            echoed.append(frame["id"])
            written += len(json.dumps(frame, separators=(",", ":"), ensure_ascii=False)) + 1
    finally:
        await client.close()
    # After the cap, only the relay's answers to requests it saw no response to (an echo is a request).
    assert {frame["error"]["code"] for frame in rest} <= {-32002}
    assert code == 1011
    assert "more than" in reason
    assert echoed == list(range(1, len(echoed) + 1))
    assert written <= TIGHT_OUTPUT < written + 3100


async def test_a_second_connection_to_the_session_takes_over_cleanly(app: AppProcess) -> None:
    # A dropped connection's session is reattached by the next: lines go to the new connection only.
    save(app, "roaming", ECHO)
    first = await connect(app, "roaming")
    await first.send(request(1))
    assert (await first.recv())["id"] == 1
    session = first.ws.response.headers["x-playground-session"]
    first.ws.transport.abort()  # a drop, not a goodbye: the session waits for its learner
    await asyncio.wait_for(first.ws.wait_closed(), RECV_TIMEOUT_S)
    headers = {"Cookie": f"{COOKIE}={app.learner_cookie('roaming')}"}
    second = await McpClient.connect(app.ws_base + f"/ws/my-server?session={session}", origin=app.base,
                                     additional_headers=headers)  # fmt: skip
    try:
        assert second.ws.response.headers["x-playground-session"] == session
        for i in range(2, 50):
            await second.send(request(i))
        assert [frame["id"] async for frame in frames(second, 48)] == list(range(2, 50))
    finally:
        await second.close()
