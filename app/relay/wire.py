"""The two wire modes over one accepted WebSocket (see docs/websocket.md).

- McpWire (subprotocol `mcp`): a pure MCP channel. A valid frame becomes one compact stdin line;
  every stdout line goes back unchanged; a bad frame gets one JSON-RPC error reply.
- EnvelopeWire (`playground.v1` or none): the console's typed frames, with findings, pairing,
  round-trip times, stderr, state and hands-on checks.

Every frame a client sends counts against its connection's rate limit, whatever it holds; a client
that goes on sending far past the limit is closed with 1008. And every frame is read at its session's
pace (SessionLimits): past it, the next frame waits unread in the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from app.protocol import explain
from app.protocol.jsonrpc import (
    MAX_ITEMS,
    RATE_LIMITED,
    Frame,
    FrameError,
    binary_frame_error,
    json_items,
    parse_client_text,
    rate_limit_error,
    readable_id,
)
from app.protocol.text import clip
from app.protocol.transcript import Entry, Transcript
from app.relay.apphost import app_frame, direction_of, host_request
from app.relay.session import RelaySession, line_cost
from app.relay.sessions import Sessions
from app.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

RATE_WINDOW_S = 10.0
RESTART_WINDOW_S = 60.0
# How much of a refused frame the transcript keeps.
REFUSED_TEXT_KEPT = 2000
# Hands-on checks run at most this often on one connection; a burst of messages is checked once.
CHECK_MIN_INTERVAL_S = 0.05
# ... and a round that held the event loop long waits this many times as long before the next: a
# transcript made costly to check (thousands of entries of many values each, 90 ms a round) then takes
# a tenth of the loop at most, not all of it, and other consoles' replies are not held up.
CHECK_SPACING = 10
POLICY_VIOLATION = 1008
# A refused frame's id is read only from a frame this small: parsing megabytes per refused frame of a
# flood would cost more than the answer is worth.
ID_PEEK_BYTES = 64 * 1024
# A console's frame is a small object, {"type": "send", "text": "..."}, whatever the message it carries
# (that is one string): one with more JSON values than this is not read (a 4 MiB frame of `[],[],...`
# would take the web process 400 ms to parse).
ENVELOPE_ITEMS = 16
# Made once: json.dumps with options builds a new encoder on every call, and a console gets a frame
# for every message.
_FRAME_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class WireLimits:
    max_message_bytes: int
    messages_per_window: int  # any frame, in RATE_WINDOW_S
    restarts_per_window: int = 5  # restart frames, in RESTART_WINDOW_S (on top of the above)
    max_message_items: int = MAX_ITEMS  # see json_items

    @classmethod
    def from_settings(cls, settings: Any) -> WireLimits:  # app.config.Settings, kept import-free
        """The same limits for every front door: a console's WebSocket and an endpoint's HTTP."""
        return cls(settings.max_message_bytes, settings.max_messages_per_10s, settings.max_restarts_per_min,
                   settings.max_message_values)  # fmt: skip

    def admit(self, text: str) -> Frame | FrameError:
        """A client's text, read by every rule a message must pass before it may reach a server."""
        return parse_client_text(text, self.max_message_bytes, self.max_message_items)


class Checks(Protocol):
    """A step's hands-on checks on this connection (built by the web layer, which knows the course)."""

    cost_s: float  # how long the last round held the event loop

    async def run(self, transcript: Transcript) -> tuple[list[dict[str, Any]], bool]:
        """`check` frames to push (only what changed), and whether every check had its turn."""
        ...


class RateLimiter:
    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self._times: deque[float] = deque()

    def check(self) -> float | None:
        """None when one more may pass now (and it is counted), else the seconds until one may."""
        wait = self.wait()
        if wait is None:
            self.count()
        return wait

    def wait(self) -> float | None:
        """None when one more may pass now (not counted), else the seconds until one may."""
        now = time.monotonic()
        while self._times and now - self._times[0] > self.window_s:
            self._times.popleft()
        if len(self._times) >= self.limit:
            return self.window_s - (now - self._times[0])
        return None

    def count(self) -> None:
        self._times.append(time.monotonic())


class Wire:
    """What both modes share: the socket, a send lock, the receive loop with its limits, and ending."""

    def __init__(self, websocket: WebSocket, session: RelaySession, sessions: Sessions, limits: WireLimits,
                 lost: asyncio.Event | None = None) -> None:  # fmt: skip
        self.ws = websocket
        self.lost = lost  # set once the connection is gone (app/web/wsprotocol.py), if known
        self.session = session
        self.sessions = sessions
        self.limits = limits
        self.limiter = RateLimiter(limits.messages_per_window, RATE_WINDOW_S)
        # Frames refused for the rate: as many again as the limit within one window closes the connection.
        self.refused = RateLimiter(limits.messages_per_window, RATE_WINDOW_S)
        self._send_lock = asyncio.Lock()
        self.ended = False
        self.abusive = False  # closed for flooding: the route ends the session at once
        self.peer_close_code: int | None = None  # how the client closed, when it did

    # An attached WebSocket hears everything its session's server writes (Listener.listening).
    listening = True

    async def send_text(self, text: str) -> None:
        async with self._send_lock:
            if self.ws.client_state == WebSocketState.CONNECTED and not self.ended:
                try:
                    await self.ws.send_text(text)
                except (RuntimeError, WebSocketDisconnect, OSError):
                    pass  # the peer left; the receive loop will notice

    async def send_json(self, value: Any) -> None:
        await self.send_text(_FRAME_ENCODER.encode(value))

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
            if owed := self.session.client_owed():
                await self._pause(owed)
            try:
                event = await self.ws.receive()
            except (WebSocketDisconnect, RuntimeError):
                return
            if event["type"] == "websocket.disconnect":
                self.peer_close_code = event.get("code")
                return
            await self._on_event(event)

    async def _pause(self, seconds: float) -> bool:
        """Read nothing for a while: the socket stops reading once a frame waits for us, and the
        client's sends back up. A connection lost meanwhile ends the pause, so that its session is free
        at once for the client's next connection. False if it was lost."""
        if self.lost is None:
            await asyncio.sleep(seconds)
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.lost.wait(), seconds)
        return not self.lost.is_set()

    async def _on_event(self, event: Mapping[str, Any]) -> None:
        text = event.get("text")
        self.session.client_read(len(text) if text is not None else len(event.get("bytes") or b""))
        wait = self.limiter.check()
        if wait is not None:
            await self._rate_limited(text, wait)
            return
        if text is None:  # a binary frame
            data = event.get("bytes") or b""
            await self.refuse(binary_frame_error(), f"(a binary frame of {len(data)} bytes)")
            return
        await self.on_text(text)

    async def _rate_limited(self, text: str | None, wait: float) -> None:
        if self.refused.check() is not None:
            self.abusive = True
            self.session.metrics.refusals.labels("flood").inc()
            await self.on_ended(POLICY_VIOLATION, "too many messages past the rate limit; connection closed")
            return
        error = rate_limit_error(self.limiter.limit, self.limiter.window_s, wait,
                                 request_id=self.id_of(text) if text is not None else None)  # fmt: skip
        self.session.metrics.relay_errors.labels(str(error.code)).inc()
        await self.on_bad_frame(error)  # answered, not recorded: a flood must not fill the transcript

    async def refuse(self, error: FrameError, text: str | None = None) -> None:
        """Answer a bad frame (each mode in its own way), count it, and record what was refused."""
        self.session.metrics.relay_errors.labels(str(error.code)).inc()
        seq = None
        if text is not None:
            seq = self.session.transcript.add_relay_error(clip(text, REFUSED_TEXT_KEPT), error.reply()).seq
        await self.on_bad_frame(error, seq)

    def admit(self, text: str) -> Frame | FrameError:
        result = self.limits.admit(text)
        if isinstance(result, Frame):  # its bytes were counted as the frame came
            self.session.client_read(line_cost("", result.items))
        return result

    def id_of(self, text: str) -> Any:
        """The request id inside a frame, for an error reply to a frame we did not forward."""
        return readable_id(text, ID_PEEK_BYTES)

    async def finish(self) -> None:
        """The connection is over: stop anything the wire still runs."""

    async def on_text(self, text: str) -> None:
        raise NotImplementedError

    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None:
        raise NotImplementedError


def _envelope(text: str) -> Any:
    """A console's frame, parsed; None when it is not JSON or holds too much to be one."""
    if json_items(text, ENVELOPE_ITEMS) > ENVELOPE_ITEMS:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


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

    async def on_server_line(self, line: str) -> None:
        # Forwarded as it came, before it is parsed and recorded, since the client waits for nothing else.
        await self.send_text(line)

    async def on_server_entry(self, entry: Entry) -> None:
        pass

    async def on_stderr(self, text: str, at_ms: float) -> None:
        pass  # a pure MCP channel carries only protocol messages

    async def on_state(self) -> None:
        pass


# --- the envelope frames: built here once, for live traffic and for replay alike ------------------


def sent_frame(entry: Entry, findings: list[dict[str, Any]], by: str | None = None) -> dict[str, Any]:
    frame = {"type": "sent", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "message": entry.message,
             "line": entry.line, "findings": findings}  # fmt: skip
    if by is not None:  # made by the console as an Apps host, for itself or for an app
        frame["by"] = by
    return frame


def received_frame(entry: Entry, transcript: Transcript) -> dict[str, Any]:
    return {"type": "received", "seq": entry.seq, "at_ms": round(entry.at_ms, 3), "message": entry.message,
            "raw": entry.line, "answers": entry.answers,
            "rtt_ms": None if entry.rtt_ms is None else round(entry.rtt_ms, 3),
            "findings": explain.server_findings(entry, transcript)}  # fmt: skip


def relay_error_frame(error: dict[str, Any], request_id: Any, explanation: str, seq: int | None,
                      at_ms: float) -> dict[str, Any]:  # fmt: skip
    return {"type": "relay_error", "seq": seq, "at_ms": round(at_ms, 3), "error": error, "id": request_id,
            "explanation": explanation}  # fmt: skip


def entry_frame(entry: Entry, transcript: Transcript) -> dict[str, Any]:
    """The frame for a kept entry, as a console that missed it live gets it (a reconnect's replay,
    an instructor following the session): a sent message's findings were for that moment, not kept."""
    if entry.direction == "client":
        return sent_frame(entry, [], transcript.made_by(entry))
    if entry.direction in ("to_app", "from_app"):
        return app_frame(entry)
    if entry.direction == "relay":
        error = entry.message["error"]
        return relay_error_frame(error, entry.message.get("id"), error["data"].get("reason", ""),
                                 entry.seq, entry.at_ms)  # fmt: skip
    return received_frame(entry, transcript)


class EnvelopeWire(Wire):
    def __init__(self, websocket: WebSocket, session: RelaySession, sessions: Sessions, limits: WireLimits,
                 checks: Checks | None = None, lost: asyncio.Event | None = None) -> None:  # fmt: skip
        super().__init__(websocket, session, sessions, limits, lost)
        self.checks = checks
        self.restarts = RateLimiter(limits.restarts_per_window, RESTART_WINDOW_S)
        self._checks_dirty = False
        self._next_check = 0.0  # when the next round of checks may start
        self._check_task: asyncio.Task | None = None

    def id_of(self, text: str) -> Any:
        frame = _envelope(text) if len(text) <= ID_PEEK_BYTES else None
        inner = frame.get("text") if isinstance(frame, dict) else None
        return super().id_of(inner) if isinstance(inner, str) else None

    async def on_text(self, text: str) -> None:
        frame = _envelope(text)
        if not isinstance(frame, dict) or frame.get("type") not in ("send", "restart", "app", "call"):
            await self._relay_error(
                "unknown frame",
                'The console speaks frames like {"type": "send", "text": "..."} or {"type": "restart"}.',
            )
            return
        if frame["type"] == "restart":
            await self._restart()
            return
        if not isinstance(frame.get("text"), str):
            await self._relay_error(f"{frame['type']} without text",
                                    f'A "{frame["type"]}" frame needs "text": the message, as JSON text.')  # fmt: skip
            return
        if frame["type"] == "app":
            await self._app_message(frame)
            return
        by = frame.get("by") if frame["type"] == "call" else None
        if frame["type"] == "call" and by not in ("host", "app"):
            await self._relay_error(
                "call without by", 'A "call" frame names who makes it: "by": "host" or "app".'
            )
            return
        result = self.admit(frame["text"])
        if isinstance(result, Frame) and by is not None:
            result = host_request(result, by, self.session.transcript)
        if isinstance(result, FrameError):
            await self.refuse(result, frame["text"])
            return
        findings = explain.client_findings(result.message, self.session.transcript) if by is None else []
        try:
            entry = await self.session.send(result, by)
        except SandboxError as exc:
            await self._relay_error("server not running", exc.message + " Restart it to go on.")
            return
        await self.send_json(sent_frame(entry, findings, by))
        self.checks_due()

    async def _app_message(self, frame: dict[str, Any]) -> None:
        """A message between the console (an Apps host) and an app: recorded and shown, never forwarded."""
        direction = direction_of(frame.get("from"))
        if direction is None:
            await self._relay_error(
                "app without from", 'An "app" frame says who sent it: "from": "host" or "app".'
            )
            return
        result = self.admit(frame["text"])
        if isinstance(result, FrameError):
            await self.refuse(result, frame["text"])
            return
        entry = self.session.transcript.add_app(direction, result.line, result.message)
        self.session.touch()
        await self.send_json(app_frame(entry))
        self.checks_due()

    async def _restart(self) -> None:
        wait = self.restarts.check()
        if wait is not None:
            await self._relay_error(
                "too many restarts",
                f"At most {self.restarts.limit} restarts in {RESTART_WINDOW_S:g} seconds. "
                f"Try again in {wait:.0f} s.",
                code=RATE_LIMITED,
            )
            return
        try:
            await self.sessions.restart(self.session)
        except SandboxError as exc:
            await self._relay_error(exc.reason, exc.message)
            return
        self.checks_due()

    async def _relay_error(self, reason: str, explanation: str, code: int = -32600) -> None:
        await self.refuse(FrameError(code, reason, explanation))

    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None:
        at_ms = self.session.transcript.now_ms()
        await self.send_json(
            relay_error_frame(error.reply()["error"], error.id, error.explanation, seq, at_ms)
        )
        if seq is not None:  # a refused message is part of the transcript: checks may look at it
            self.checks_due()

    async def on_server_line(self, line: str) -> None:
        pass  # sent as a `received` frame, with its seq and findings, once it is an entry

    async def on_server_entry(self, entry: Entry) -> None:
        await self.send_json(received_frame(entry, self.session.transcript))
        self.checks_due()

    async def on_stderr(self, text: str, at_ms: float) -> None:
        await self.send_json({"type": "stderr", "at_ms": round(at_ms, 3), "text": text})

    async def on_state(self) -> None:
        await self.send_json(self.session.state_frame())

    async def replay(self, after_seq: int) -> None:
        """After a reconnect: the entries the console missed, as the same frames live traffic uses.
        At the client's pace, as its messages are: a client reconnecting in a loop for the whole of a
        2 MiB transcript each time took the web process's core (a dropped connection stops the wait)."""
        if (owed := self.session.client_owed()) and not await self._pause(owed):
            return
        transcript = self.session.transcript
        self.session.client_read(transcript.page_bytes(after_seq))
        for entry in transcript.page(after_seq):
            frame = entry_frame(entry, transcript)
            frame["replayed"] = True
            await self.send_json(frame)
        self.checks_due()

    # --- hands-on checks: coalesced, off the receive path ------------------------------------------

    def checks_due(self) -> None:
        """Something a check may read has changed: run the checks soon (once for a burst)."""
        if self.checks is None or self.ended:
            return
        self._checks_dirty = True
        if self._check_task is None or self._check_task.done():
            self._check_task = asyncio.create_task(self._check_loop(), name=f"checks-{self.session.id}")

    async def _check_loop(self) -> None:
        assert self.checks is not None
        while self._checks_dirty and not self.ended:
            delay = self._next_check - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self._checks_dirty = False
            began = time.monotonic()
            try:
                frames, complete = await self.checks.run(self.session.transcript)
            except Exception:
                log.exception("hands-on checks failed on session %s", self.session.id)
                return
            self._next_check = began + max(CHECK_MIN_INTERVAL_S, self.checks.cost_s * CHECK_SPACING)
            if not complete:
                self._checks_dirty = True
            for frame in frames:
                await self.send_json(frame)

    async def finish(self) -> None:
        if self._check_task is not None and not self._check_task.done():
            self._check_task.cancel()
            try:
                await self._check_task
            except (asyncio.CancelledError, Exception):
                pass
