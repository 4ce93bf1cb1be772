"""The capacity benchmark's learners speak WebSocket as a strict implementation (`websockets`' server)
reads it, keep to their step's pace, and count every failure against the step rather than hanging it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from websockets.asyncio.server import ServerConnection

from bench.capacity import CALL
from bench.learners import Learner, Step
from bench.wsframe import TEXT, accept_for, frame
from tests.support.wsserver import Handler, server

INTERVAL_S = 0.1


def reply_to(request: dict, **body: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], **(body or {"result": {"ok": True}})})


async def handshake(ws: ServerConnection) -> None:
    """Answer initialize and take the initialized notification, as a server does."""
    request = json.loads(await ws.recv())
    assert request["method"] == "initialize"
    await ws.send(reply_to(request, result={"protocolVersion": "2025-06-18"}))
    assert json.loads(await ws.recv())["method"] == "notifications/initialized"


async def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def run_step(learners: list[Learner], calls: int, interval_s: float = INTERVAL_S) -> Step:
    """A step whose window opens at once, run until it has `calls` replies, then stopped."""
    step = Step(CALL, interval_s)
    step.open_window()
    step.start(learners)
    await until(lambda: len(step.times_ms) + len(step.errors) >= calls)
    await step.stop()
    return step


async def step_against(
    handler: Handler, calls: int, before: Callable[[], bool] | None = None, interval_s: float = INTERVAL_S
) -> Step:
    """One learner's step against a server of `handler`'s, once `before` holds."""
    async with server(handler) as url:
        learner = await Learner.open(url)
        try:
            if before is not None:
                await until(before)
            return await run_step([learner], calls=calls, interval_s=interval_s)
        finally:
            await learner.close()


async def test_a_step_through_the_real_relay(live_app) -> None:  # noqa: ANN001
    learners = [await Learner.open(live_app.ws_base + "/ws/demo-orders") for _ in range(3)]
    try:
        step = await run_step(learners, calls=9)
        assert step.errors == []
        assert len(step.times_ms) >= 9 and all(0 < t < 30_000 for t in step.times_ms)
        assert step.learners == set()  # every learner left the step
        again = await run_step(learners, calls=3)  # the same sessions carry on into the next step
        assert again.errors == [] and len(again.times_ms) >= 3
    finally:
        await asyncio.gather(*(learner.close() for learner in learners))


async def test_each_learner_keeps_to_its_interval() -> None:
    arrivals: list[float] = []

    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        async for message in ws:
            arrivals.append(asyncio.get_running_loop().time())
            await ws.send(reply_to(json.loads(message)))

    await step_against(handler, calls=6, interval_s=0.5)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    # One call per slot of 0.5 s, not one after each reply. A gap can be shorter than the interval by
    # as much as a send was held up, so the bound leaves room for a busy machine's stalls.
    assert len(gaps) >= 5 and min(gaps) >= 0.25, gaps


@pytest.mark.parametrize("size", [10, 125, 126, 65_535, 65_536, 300_000])
async def test_every_length_class_is_masked_and_framed_as_the_library_reads_it(size: int) -> None:
    seen: list[dict] = []

    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        async for message in ws:
            seen.append(request := json.loads(message))  # unmasked by the server: a bad mask is garbage
            await ws.send(reply_to(request, result={"pad": "é" * size}))

    step = await step_against(handler, calls=2)
    assert step.errors == [] and len(step.times_ms) >= 2
    assert seen[0]["method"] == "tools/call" and seen[0]["params"] == CALL


async def test_a_fragmented_reply_is_put_back_together_and_pings_are_answered_while_idle() -> None:
    pongs: list[float] = []

    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        pongs.append(await asyncio.wait_for(await ws.ping(b"are you there"), 30))  # no call in flight
        async for message in ws:
            request = json.loads(message)
            await ws.send(
                ['{"jsonrpc": "2.0", ', f'"id": {request["id"]}, ', '"result": {}}']
            )  # three frames

    step = await step_against(handler, calls=3, before=lambda: len(pongs) == 1)
    assert step.errors == [] and len(step.times_ms) >= 3


async def test_a_reply_that_is_an_error_counts_against_the_step() -> None:
    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        async for message in ws:
            await ws.send(reply_to(json.loads(message), error={"code": -32602, "message": "unknown tool"}))

    step = await step_against(handler, calls=2)
    assert len(step.errors) >= 1 and "unknown tool" in step.errors[0]


async def test_a_close_from_the_server_fails_the_learner_and_the_step_still_ends() -> None:
    codes: list[int | None] = []

    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        await ws.recv()
        await ws.close(4008, "too often")
        codes.append(ws.close_code)

    async with server(handler) as url:
        learner = await Learner.open(url)
        try:
            step = Step(CALL, INTERVAL_S)
            step.start([learner])
            await until(lambda: bool(step.errors))
            assert step.learners == set()  # it left the step; nothing waits for it
            await asyncio.wait_for(step.stop(), 30)
        finally:
            await learner.close()
    assert step.errors == ["closed by the server: 4008 'too often'"]
    await until(lambda: bool(codes))
    assert codes == [4008]  # the close was answered, so the server's closing handshake completed


async def test_a_session_ended_between_steps_is_an_error_of_the_next_one_at_once() -> None:
    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        await ws.close(1001, "going away")

    async with server(handler) as url:
        learner = await Learner.open(url)
        try:
            await asyncio.wait_for(asyncio.shield(learner.closed), 30)
            step = Step(CALL, INTERVAL_S)
            step.start([learner])
            assert step.errors == ["closed by the server: 1001 'going away'"] and step.learners == set()
            await asyncio.wait_for(step.stop(), 30)
        finally:
            await learner.close()


async def test_a_call_never_answered_is_an_error_when_the_step_stops() -> None:
    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        await ws.wait_closed()  # takes the call, never answers

    async with server(handler) as url:
        learner = await Learner.open(url)
        try:
            step = Step(CALL, INTERVAL_S)
            step.start([learner])
            await until(lambda: learner.in_flight)
            await asyncio.wait_for(step.stop(timeout_s=0.2), 30)
        finally:
            await learner.close()
    assert step.errors == ["no reply in 0.2 s"] and step.learners == set()


async def test_stopping_waits_for_the_call_in_flight() -> None:
    release = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        async for message in ws:
            await release.wait()
            await ws.send(reply_to(json.loads(message)))

    async with server(handler) as url:
        learner = await Learner.open(url)
        try:
            step = Step(CALL, INTERVAL_S)
            step.open_window()
            step.start([learner])
            await until(lambda: learner.in_flight)
            stopping = asyncio.create_task(step.stop())
            await asyncio.sleep(0)
            assert not stopping.done()
            release.set()
            await asyncio.wait_for(stopping, 30)
        finally:
            await learner.close()
    assert step.errors == [] and len(step.times_ms) == 1  # the reply in flight was counted


async def test_closing_sends_a_normal_close_and_waits_for_the_servers() -> None:
    codes: list[int | None] = []

    async def handler(ws: ServerConnection) -> None:
        await handshake(ws)
        await ws.wait_closed()
        codes.append(ws.close_code)

    async with server(handler) as url:
        learner = await Learner.open(url)
        await asyncio.wait_for(learner.close(), 30)
        assert learner.closed.done()  # the server's close came back before the stream ended
        await until(lambda: bool(codes))
    assert codes == [1000]


async def test_a_notification_before_the_initialize_reply_is_not_taken_for_it() -> None:
    async def handler(ws: ServerConnection) -> None:
        request = json.loads(await ws.recv())
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}))
        await ws.send(reply_to(request, result={"protocolVersion": "2025-06-18"}))
        await ws.wait_closed()

    async with server(handler) as url:
        learner = await Learner.open(url)
        await learner.close()


async def test_a_refused_initialize_is_a_clear_error() -> None:
    async def handler(ws: ServerConnection) -> None:
        request = json.loads(await ws.recv())
        await ws.send(reply_to(request, error={"code": -32602, "message": "unsupported version"}))
        await ws.wait_closed()

    async with server(handler) as url:
        with pytest.raises(ConnectionError, match="unsupported version"):
            await Learner.open(url)


async def test_a_masked_frame_from_the_server_is_refused() -> None:
    """`websockets` will not send one, so this server is written by hand."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"sec-websocket-key:"))  # fmt: skip
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Accept: " + accept_for(key) + b"\r\nSec-WebSocket-Protocol: mcp\r\n\r\n")  # fmt: skip
        writer.write(frame(TEXT, b'{"jsonrpc": "2.0", "id": 1, "result": {}}', mask=b"\x01\x02\x03\x04"))
        await reader.read()  # until the learner hangs up
        writer.close()

    running = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = running.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ConnectionError, match="masked frame"):
            await Learner.open(f"ws://127.0.0.1:{port}/ws/demo-orders")
    finally:
        running.close()
        await running.wait_closed()
