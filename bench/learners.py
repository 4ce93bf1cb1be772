"""The capacity benchmark's learners: WebSocket clients driven by callbacks, as cheap as we can make
the load that stands in for a class's browsers.

The generator shares the machine with what it measures. On `websockets` with a task per learner it
spent 0.22-0.26 ms of CPU per call (1000 sessions, 15 s phases); as an
asyncio protocol whose calls are timer callbacks, with no task, future or stream per call, 0.13-0.16
ms. Each learner answers the server's pings whenever they arrive, as a browser does.

A `Step` is one measured load: every learner calls once per interval on its own phase (`next_due`)
until the step stops, and the step ends when every learner has its last reply, or has failed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import time
from typing import Any, cast
from urllib.parse import urlsplit

from app.protocol import messages
from bench.wsframe import (
    CLOSE,
    CONTINUATION,
    PING,
    PONG,
    TEXT,
    HandshakeRefused,
    frame,
    parse,
    upgrade_refusal,
    upgrade_request,
)

CLIENT_INFO = {"name": "bench", "version": "1"}
TIMEOUT_S = 60.0  # a reply later than this is an error, not a slow call: it bounds a broken server


def next_due(due: float, now: float, interval: float) -> float:
    """The first slot after `now` on the grid of `due` plus whole `interval`s: a learner's phase stays.

    A learner's calls are due at a random offset plus whole intervals, not an interval after its last
    reply. Waiting an interval after each reply would let one slow moment line learners up: every
    call it delayed would come back at once, an interval later, and again, a herd of hundreds of
    servers woken together that no class of learners acting on their own makes (seen at 1500
    sessions: bursts of 100-200 runnable processes every 3 s, p50 150 ms). A call that overruns its
    slot moves the next one to the following slot of the same phase."""
    if due + interval > now:
        return due + interval
    return due + ((now - due) // interval + 1) * interval


class Step:
    """One step's load: what its calls took, what went wrong, and when its measured window opened.

    Calls that began before `window_opened` are not recorded (the step's first interval is left out:
    the new sessions' first ever calls, and the pool refilling after them)."""

    def __init__(self, call: dict[str, Any], interval_s: float) -> None:
        self.call, self.interval_s = call, interval_s
        self.times_ms: list[float] = []
        self.errors: list[str] = []
        self.window_opened = float("inf")
        self.stopping = False
        self.learners: set[Learner] = set()  # those still in the step
        self._ended = asyncio.get_running_loop().create_future()

    def start(self, learners: list[Learner]) -> None:
        self.learners.update(learners)
        for learner in learners:
            learner.join(self)
        self._check_ended()

    def open_window(self) -> None:
        self.window_opened = time.perf_counter()

    async def stop(self, timeout_s: float = TIMEOUT_S) -> None:
        """No more calls; wait for the ones in flight. One still unanswered after `timeout_s` is an error."""
        self.stopping = True
        for learner in list(self.learners):
            learner.stop_if_idle()
        try:
            await asyncio.wait_for(asyncio.shield(self._ended), timeout_s)
        except TimeoutError:
            for learner in list(self.learners):
                learner.fail(f"no reply in {timeout_s:g} s")

    def left(self, learner: Learner) -> None:
        self.learners.discard(learner)
        self._check_ended()

    def _check_ended(self) -> None:
        if not self.learners and not self._ended.done():
            self._ended.set_result(None)


class Learner(asyncio.Protocol):
    """One learner's connection: the upgrade, then one JSON-RPC message per text frame (subprotocol
    `mcp`), each frame masked with a fresh key (RFC 6455, section 5.3)."""

    def __init__(self, host: str, port: int, path: str) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.key = base64.b64encode(os.urandom(16))
        self.request = upgrade_request(host, port, path, key=self.key)
        self.buffer = bytearray()
        self.parts: list[bytes] = []
        self.upgraded: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[str] = loop.create_future()  # why: the server's close, or the loss
        self.awaited: asyncio.Future[dict] | None = None  # a reply the set-up waits for, and its id
        self.awaited_id: int | str | None = None
        self.step: Step | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.id = 100
        self.began = 0.0
        self.due = 0.0
        self.in_flight = False
        self.closing = False  # our close frame is sent

    @classmethod
    async def open(cls, url: str) -> Learner:
        """Connect, upgrade and initialize, as a learner's console does before its first call."""
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        _, learner = await asyncio.get_running_loop().create_connection(
            lambda: cls(host, port, parts.path), host, port
        )
        learner = cast(Learner, learner)
        try:
            await asyncio.wait_for(asyncio.shield(learner.upgraded), TIMEOUT_S)
            reply = await learner.ask(messages.initialize(1, "2025-06-18", client_info=CLIENT_INFO))
            if "result" not in reply:
                raise ConnectionError(f"initialize refused: {str(reply)[:200]}")
            learner.send(messages.initialized())
        except BaseException:
            learner.transport.close()
            raise
        return learner

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its reply (the set-up's; a step's calls are callbacks)."""
        self.awaited, self.awaited_id = self.loop.create_future(), message["id"]
        self.send(message)
        try:
            done, _ = await asyncio.wait([self.awaited, self.closed], timeout=TIMEOUT_S,
                                         return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            if self.awaited in done:
                return self.awaited.result()
            raise ConnectionError(
                self.closed.result() if self.closed in done else f"no reply in {TIMEOUT_S:g} s"
            )
        finally:
            self.awaited = None

    def send(self, message: dict[str, Any]) -> None:
        self.transport.write(frame(TEXT, json.dumps(message).encode(), mask=os.urandom(4)))

    async def close(self) -> None:
        """Close as section 7.1.2 says: a normal close, then the server's, then the end of the stream."""
        if not self.closed.done():
            self._send_close(1000)
            try:
                await asyncio.wait_for(asyncio.shield(self.closed), TIMEOUT_S)
            except TimeoutError:
                pass
        self.transport.close()

    # A step's calls: each one a timer callback and a reply in data_received.

    def join(self, step: Step) -> None:
        self.step = step
        if self.closed.done():  # the session ended between steps: an error of this one, at once
            self.fail(self.closed.result())
            return
        self.due = self.loop.time() + random.uniform(0, step.interval_s)  # learners do not act in step
        self.timer = self.loop.call_at(self.due, self._call)

    def _call(self) -> None:
        step = self.step
        assert step is not None
        if step.stopping:
            self._leave()
            return
        self.id += 1
        self.in_flight = True
        self.began = time.perf_counter()
        self.send(messages.request(self.id, "tools/call", step.call))

    def _reply(self, reply: dict[str, Any]) -> None:
        step = self.step
        assert step is not None
        self.in_flight = False
        if "result" not in reply:
            step.errors.append(str(reply)[:200])
        if self.began >= step.window_opened:
            step.times_ms.append((time.perf_counter() - self.began) * 1000)
        if step.stopping:
            self._leave()
            return
        self.due = next_due(self.due, self.loop.time(), step.interval_s)
        self.timer = self.loop.call_at(self.due, self._call)

    def stop_if_idle(self) -> None:
        """The step is stopping: a learner waiting for its next slot leaves now, one in flight at its reply."""
        if not self.in_flight:
            self._leave()

    def fail(self, why: str) -> None:
        """A dropped session, or a reply that never came: an error of the step, and the learner leaves it."""
        if self.step is not None:
            self.step.errors.append(why)
            self._leave()

    def _leave(self) -> None:
        step, self.step = self.step, None
        if self.timer is not None:
            self.timer.cancel()
        self.in_flight = False
        if step is not None:
            step.left(self)

    # The connection.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if not self.upgraded.done():
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            why = upgrade_refusal(bytes(buffer[:end]), self.key)
            if why is not None:
                self.upgraded.set_exception(HandshakeRefused(why))
                self.transport.close()
                return
            del buffer[: end + 4]
            self.upgraded.set_result(None)
        at = 0
        while parsed := parse(buffer, at):
            first, masked, payload, at = parsed
            opcode = first & 0x0F
            if masked:
                self._lost("the server sent a masked frame (RFC 6455, section 5.1)")
                self.transport.close()
                return
            if opcode in (TEXT, CONTINUATION):
                self.parts.append(payload)
                if first & 0x80:
                    message, self.parts = b"".join(self.parts), []
                    self._message(json.loads(message))
            elif opcode == PING:
                self.transport.write(frame(PONG, payload, mask=os.urandom(4)))
            elif opcode == CLOSE:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
                self._send_close(code or 1000)  # section 5.5.1: a close is answered with a close
                self._lost(f"closed by the server: {code} {payload[2:].decode(errors='replace')!r}")
                return
        del buffer[:at]

    def _send_close(self, code: int) -> None:
        if not self.closing:
            self.closing = True
            self.transport.write(frame(CLOSE, code.to_bytes(2, "big"), mask=os.urandom(4)))

    def _message(self, message: dict[str, Any]) -> None:
        if self.awaited is not None and message.get("id") == self.awaited_id and not self.awaited.done():
            self.awaited.set_result(message)
        elif self.in_flight and message.get("id") == self.id:
            self._reply(message)
        # Anything else (a notification) is not a reply: the demo servers send none unasked.

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(f"connection lost: {exc!r}" if exc else "connection closed")
        if not self.upgraded.done():
            self.upgraded.set_exception(
                HandshakeRefused(f"closed during the upgrade: {bytes(self.buffer[:200])!r}")
            )

    def _lost(self, why: str) -> None:
        if not self.closed.done():
            self.closed.set_result(why)
        self.fail(why)
