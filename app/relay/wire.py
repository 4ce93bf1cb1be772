"""The two wire modes over one accepted WebSocket (see docs/websocket.md).

- McpWire (subprotocol `mcp`): a pure MCP channel. A valid frame becomes one compact stdin line;
  every stdout line goes back unchanged; a bad frame gets one JSON-RPC error reply.
- EnvelopeWire (`playground.v1` or none): the console's typed frames, with findings, pairing,
  round-trip times, stderr, state and hands-on checks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from app.protocol import explain
from app.protocol.jsonrpc import Frame, FrameError, binary_frame_error, parse_client_text, rate_limit_error
from app.protocol.transcript import Entry, Transcript
from app.relay.session import RelaySession
from app.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

RATE_WINDOW_S = 10.0
# How much of a refused frame the transcript keeps.
REFUSED_TEXT_KEPT = 2000
# Checks run after every message; a slow predicate must not stall the pump for long.
CheckHook = Callable[[Transcript], Awaitable[list[dict[str, Any]]]]


class RateLimiter:
    def __init__(self, limit: int, window_s: float = RATE_WINDOW_S) -> None:
        self.limit = limit
        self.window_s = window_s
        self._times: deque[float] = deque()

    def check(self) -> float | None:
        """None when a message may pass now, else the seconds until one may."""
        now = time.monotonic()
        while self._times and now - self._times[0] > self.window_s:
            self._times.popleft()
        if len(self._times) >= self.limit:
            return self.window_s - (now - self._times[0])
        self._times.append(now)
        return None


class Wire:
    """What both modes share: the socket, a send lock, the receive loop and ending."""

    def __init__(
        self, websocket: WebSocket, session: RelaySession, *, max_message_bytes: int, rate_limit: int
    ) -> None:
        self.ws = websocket
        self.session = session
        self.max_message_bytes = max_message_bytes
        self.limiter = RateLimiter(rate_limit)
        self._send_lock = asyncio.Lock()
        self.ended = False
        self.peer_close_code: int | None = None  # how the client closed, when it did

    async def send_text(self, text: str) -> None:
        async with self._send_lock:
            if self.ws.client_state == WebSocketState.CONNECTED and not self.ended:
                try:
                    await self.ws.send_text(text)
                except (RuntimeError, WebSocketDisconnect, OSError):
                    pass  # the peer left; the receive loop will notice

    async def send_json(self, value: Any) -> None:
        await self.send_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    async def on_ended(self, code: int, reason: str) -> None:
        if self.ended:
            return
        async with self._send_lock:
            self.ended = True
            if self.ws.client_state == WebSocketState.CONNECTED:
                try:
                    await self.ws.close(code, _close_reason(reason))
                except (RuntimeError, OSError):
                    pass

    async def run(self) -> None:
        """Read frames until the peer leaves or the session ends."""
        while not self.ended:
            try:
                event = await self.ws.receive()
            except (WebSocketDisconnect, RuntimeError):
                return
            if event["type"] == "websocket.disconnect":
                self.peer_close_code = event.get("code")
                return
            text = event.get("text")
            if text is None:  # a binary frame
                data = event.get("bytes") or b""
                await self.refuse(binary_frame_error(), f"(a binary frame of {len(data)} bytes)")
                continue
            await self.on_text(text)

    async def refuse(self, error: FrameError, text: str | None = None) -> None:
        """Answer a bad frame (each mode in its own way), count it, and record what was refused."""
        self.session.metrics.relay_errors.labels(str(error.code)).inc()
        seq = None
        if text is not None:
            seq = self.session.transcript.add_relay_error(_clip(text), error.reply()).seq
        await self.on_bad_frame(error, seq)

    def admit(self, text: str) -> Frame | FrameError:
        wait = self.limiter.check()
        if wait is not None:
            return rate_limit_error(self.limiter.limit, self.limiter.window_s, wait)
        return parse_client_text(text, self.max_message_bytes)

    async def on_text(self, text: str) -> None:
        raise NotImplementedError

    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None:
        raise NotImplementedError


def _clip(text: str) -> str:
    # A refused frame may be megabytes; the transcript keeps enough to show what it was.
    return text if len(text) <= REFUSED_TEXT_KEPT else text[:REFUSED_TEXT_KEPT] + "…"


def _close_reason(reason: str) -> str:
    # A close frame's reason is at most 123 bytes of UTF-8.
    data = reason.encode("utf-8")[:123]
    return data.decode("utf-8", errors="ignore")


class McpWire(Wire):
    async def on_text(self, text: str) -> None:
        result = self.admit(text)
        if isinstance(result, FrameError):
            await self.refuse(result, text)
            return
        try:
            await self.session.send(result)
        except SandboxError:
            pass  # the exit is being reported by the session; the connection closes with 1011

    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None:
        await self.send_json(error.reply())

    async def on_server_entry(self, entry: Entry) -> None:
        await self.send_text(entry.line)

    async def on_stderr(self, text: str, at_ms: float) -> None:
        pass  # a pure MCP channel carries only protocol messages

    async def on_state(self) -> None:
        pass


class EnvelopeWire(Wire):
    def __init__(self, websocket: WebSocket, session: RelaySession, *, max_message_bytes: int, rate_limit: int,
                 checks: CheckHook | None = None) -> None:  # fmt: skip
        super().__init__(websocket, session, max_message_bytes=max_message_bytes, rate_limit=rate_limit)
        self.checks = checks

    async def on_text(self, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            frame = None
        if not isinstance(frame, dict) or frame.get("type") not in ("send", "restart"):
            await self._relay_error(
                "unknown frame",
                'The console speaks frames like {"type": "send", "text": "..."} or {"type": "restart"}.',
            )
            return
        if frame["type"] == "restart":
            await self._restart()
            return
        if not isinstance(frame.get("text"), str):
            await self._relay_error("send without text", 'A "send" frame needs "text": the message as typed.')
            return
        result = self.admit(frame["text"])
        if isinstance(result, FrameError):
            await self.refuse(result, frame["text"])
            return
        findings = explain.client_findings(result.message, self.session.transcript)
        try:
            entry = await self.session.send(result)
        except SandboxError as exc:
            await self._relay_error("server not running", exc.message + " Restart it to go on.")
            return
        await self.send_json(
            {"type": "sent", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "message": entry.message,
             "line": entry.line, "findings": findings}
        )  # fmt: skip
        await self._run_checks()

    async def _restart(self) -> None:
        self.session.status = "starting"
        await self.on_state()
        try:
            await self.session.restart()
        except SandboxError as exc:
            self.session.status, self.session.reason = "exited", exc.message
            await self.on_state()
            await self._relay_error(exc.reason, exc.message)
            return
        await self.on_state()

    async def _relay_error(self, reason: str, explanation: str, code: int = -32600) -> None:
        error = FrameError(code, reason, explanation)
        await self.refuse(error)

    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None:
        await self.send_json(
            {"type": "relay_error", "seq": seq, "at_ms": round(self.session.transcript.now_ms(), 3),
             "error": error.reply()["error"], "id": error.id, "explanation": error.explanation}
        )  # fmt: skip
        if seq is not None:  # a refused message is part of the transcript: checks may look at it
            await self._run_checks()

    async def on_server_entry(self, entry: Entry) -> None:
        await self.send_json(
            {"type": "received", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "message": entry.message,
             "raw": entry.line, "answers": entry.answers,
             "rtt_ms": None if entry.rtt_ms is None else round(entry.rtt_ms, 3),
             "findings": explain.server_findings(entry, self.session.transcript)}
        )  # fmt: skip
        await self._run_checks()

    async def on_stderr(self, text: str, at_ms: float) -> None:
        await self.send_json({"type": "stderr", "at_ms": round(at_ms, 3), "text": text})

    async def on_state(self) -> None:
        await self.send_json(self.session.state_frame())

    async def replay(self, after_seq: int) -> None:
        """After a reconnect: the entries the console missed, as sent/received frames."""
        transcript = self.session.transcript
        for entry in [e for e in transcript.entries if e.seq > after_seq]:
            if entry.direction == "client":
                await self.send_json(
                    {"type": "sent", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "message": entry.message,
                     "line": entry.line, "findings": [], "replayed": True}
                )  # fmt: skip
            elif entry.direction == "relay":
                error = entry.message["error"]
                await self.send_json(
                    {"type": "relay_error", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "error": error,
                     "id": entry.message.get("id"), "explanation": error["data"].get("reason", ""),
                     "replayed": True}
                )  # fmt: skip
            else:
                await self.send_json(
                    {"type": "received", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "message": entry.message,
                     "raw": entry.line, "answers": entry.answers, "rtt_ms": entry.rtt_ms,
                     "findings": explain.server_findings(entry, transcript), "replayed": True}
                )  # fmt: skip
        await self._run_checks()

    async def _run_checks(self) -> None:
        if self.checks is None:
            return
        try:
            frames = await self.checks(self.session.transcript)
        except Exception:
            log.exception("hands-on checks failed on session %s", self.session.id)
            return
        for frame in frames:
            await self.send_json(frame)
