"""uvicorn's WebSocket protocol (websockets, sans-I/O), with one of its bugs mended, its
per-connection chatter left unmade, and a short way for a pure MCP channel's usual messages; and its
HTTP protocol, which hands a connection to it, mended so that the hand-over leaves no garbage for
the collector."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from uvicorn._types import ASGI3Application, ASGISendEvent
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.frames import apply_mask
from websockets.http11 import Request
from websockets.protocol import State
from websockets.streams import StreamReader

if TYPE_CHECKING:
    from app.web.connections import Connections

# The scope extension under which a connection offers itself to the relay (app/relay/wire.py's
# DirectSocket).
DIRECT = "playground.direct"

# uvicorn's line for an accepted WebSocket, and the websockets library's (which uvicorn hands its
# logger) for one opened and one closed. The relay logs each session it starts and ends, with its id.
CHATTER = frozenset({'%s - "WebSocket %s" [accepted]', "connection open", "connection closed"})


class QuietLog(logging.LoggerAdapter):
    """uvicorn's error log less the three INFO lines of every WebSocket that opens and closes, dropped
    before a record is made: made and then filtered out, they cost a third of a millisecond of each
    learner's handshake after an idle moment (bench/README.md, round 6). Everything else, a refused
    handshake's lines included, goes to uvicorn's logger as before."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})

    @property
    def level(self) -> int:  # uvicorn reads its logger's level for its trace lines
        return self.logger.level

    def info(self, msg: object, *args: Any, **kwargs: Any) -> None:
        if msg not in CHATTER:
            super().info(msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        return msg, kwargs  # no `extra` of the adapter's own


# One for every connection: it holds nothing of a connection's own.
_QUIET = QuietLog(logging.getLogger("uvicorn.error"))

# The first byte of a final text frame with no reserved bits, and the mask bit of the second.
_FINAL_TEXT = 0x81
_MASKED = 0x80
_OPEN = State.OPEN
# Where `websockets`' frame parser waits between two frames (and nowhere else while a connection is open).
_BETWEEN_FRAMES = StreamReader.at_eof.__code__


def _text_frame_head(length: int) -> bytes:
    """The head of a server's final text frame (RFC 6455, 5.2) carrying `length` bytes."""
    if length < 126:
        return bytes((_FINAL_TEXT, length))
    if length < 1 << 16:
        return bytes((_FINAL_TEXT, 126)) + length.to_bytes(2)
    return bytes((_FINAL_TEXT, 127)) + length.to_bytes(8)


def _between_frames(parser: Any) -> bool:
    """Whether `websockets`' parser (a generator, and those it delegates to) waits for a new frame,
    rather than for the rest of one begun in an earlier read."""
    while (inner := parser.gi_yieldfrom) is not None:
        parser = inner
    return parser.gi_code is _BETWEEN_FRAMES


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """A refused handshake ends quietly, and an accepted one adds no lines.

    The relay refuses with an HTTP response (the ASGI denial-response extension: `deny` in
    app/web/ws.py). uvicorn 0.54 sends it, but still counts the handshake as unfinished, so when the
    route returns it logs `ERROR ASGI callable returned without completing handshake.` for every
    refusal: any visitor could fill the error log with a loop of bad origins. The other two
    implementations mark the handshake done there; upstream, Kludex/uvicorn pull request 3138 does the same.
    """

    def __init__(self, *args: Any, connections: Connections | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = connections  # counted this connection when it was HTTP (HttpProtocol)
        self.logger = _QUIET  # type: ignore[assignment]
        self.conn.logger = _QUIET
        self.text_sink: Callable[[str], bool] | None = None
        self.lost = asyncio.Event()

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # only an upgrade gets one
        if scope is not None:
            scope["extensions"][DIRECT] = self

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.lost.set()
        if self.guard is not None:
            self.guard.release(self.transport)
        # The scope's offer refers back to this protocol: left in place, every connection would end
        # as a reference cycle (the protocol, its transport, request, queue: about 90 objects) that
        # only the collector frees. A client reconnecting in a loop then made it stop every session
        # for 15-55 ms every 0.4-1 s (bench/README.md, round 15).
        scope = getattr(self, "scope", None)
        if scope is not None:
            scope["extensions"].pop(DIRECT, None)

    # --- the relay's direct way (DirectSocket) -----------------------------------------------------

    def take_texts(self, sink: Callable[[str], bool] | None) -> None:
        self.text_sink = sink

    def data_received(self, data: bytes) -> None:
        # A read that is exactly one whole text message, in one frame, is unmasked here and offered as
        # below: the usual message of a pure MCP channel skips `websockets`' frame parser, and costs a
        # third of what reading it did (bench/README.md, round 24). Anything else goes to that parser.
        payload = self._whole_text_frame(data) if self.text_sink is not None else None
        if payload is None:
            super().data_received(data)
            return
        self.curr_msg_data_type = "text"
        self.frames = [payload]
        self.send_receive_event_to_app()

    def _whole_text_frame(self, data: bytes) -> bytes | None:
        """The unmasked payload when `data` is one final, masked text frame without reserved bits,
        within the size limit, and the parser has nothing of an earlier read; None otherwise. What
        `websockets` would do with such a frame on an open connection is only to hand it on: its state
        is the same after it as before."""
        conn = self.conn
        if (len(data) < 6 or data[0] != _FINAL_TEXT or not data[1] & _MASKED or conn.state is not _OPEN
                or conn.extensions or conn.current_size is not None
                or not _between_frames(conn.parser)):  # fmt: skip
            return None
        length, start = data[1] & 0x7F, 2
        if length == 126:
            length, start = int.from_bytes(data[2:4]), 4
        elif length == 127:
            length, start = int.from_bytes(data[2:10]), 10
        if start + 4 + length != len(data):
            return None  # a part of a frame, or more than one: the parser's
        for limit in (conn.max_message_size, conn.max_fragment_size):
            if limit is not None and length > limit:
                return None
        return apply_mask(data[start + 4 :], data[start : start + 4])

    def send_receive_event_to_app(self) -> None:
        # A whole text message with nothing queued before it goes to the sink first; anything else,
        # or what the sink declines, goes to the app's queue as uvicorn does it.
        sink = self.text_sink
        if (sink is not None and self.curr_msg_data_type == "text" and len(self.frames) == 1
                and not self.close_sent and self.queue.empty()):  # fmt: skip
            try:
                text = self.frames[0].decode()
            except UnicodeDecodeError:
                pass  # uvicorn's own path closes with 1007
            else:
                if sink(text):
                    self.frames = []
                    return
        super().send_receive_event_to_app()

    def send_text_now(self, text: str) -> bool:
        if (not self.handshake_complete or self.close_sent or self.disconnected
                or self.initial_response is not None or not self.writable.is_set()
                or self.transport.is_closing()):  # fmt: skip
            return False
        payload, conn = text.encode(), self.conn
        if conn.state is _OPEN and not (conn.writes or conn.expect_continuation_frame or conn.extensions):
            # Framed here, as `websockets` frames it (a server's frame is not masked), at half the cost,
            # when nothing of its own waits to go out before it.
            self.transport.write(_text_frame_head(len(payload)) + payload)
            return True
        try:
            conn.send_text(payload)
        except InvalidState:
            return False
        self.transport.write(b"".join(conn.data_to_send()))
        return True

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True


# Answers for a connection closed before the app saw its request. The connection ends after each,
# so a client learns why rather than seeing only a reset.
_TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
             b"retry-after: 10\r\nconnection: close\r\ncontent-length: 36\r\n\r\n"
             b"Too many connections: try again soon")  # fmt: skip
_HEAD_TOO_SLOW = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                  b"connection: close\r\ncontent-length: 31\r\n\r\nThe request head came too slowly")  # fmt: skip
_HEAD_TOO_BIG = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
                 b"connection: close\r\ncontent-length: 37\r\n\r\nThe request line or headers are too big")  # fmt: skip


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol (httptools), held to what a connection may cost before the app sees a
    request (app/web/connections.py), and leaving no reference cycle behind an upgrade.

    Its parser holds the protocol's bound callbacks, and the protocol holds its parser. uvicorn breaks
    that cycle in `connection_lost`, which a protocol that has handed its connection to a WebSocket
    never gets: every WebSocket left one behind (about 30 objects) for the collector. Hundreds of
    upgrades a second, from one client reconnecting in a loop, made a young collection every 0.4-1 s
    that stopped every session for 15-55 ms (bench/README.md, round 15)."""

    def __init__(self, *args: Any, connections: Connections | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = connections  # None: uvicorn's behaviour (a protocol test)
        self._in_head = False  # a request head is due or under way
        self._head_begun = False  # ... and its first byte has come
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_moved_at = 0.0
        self._turn: asyncio.TimerHandle | None = None  # a request waiting for its address's pace

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.guard is None:
            return
        peer = self.client[0] if self.client else ""
        if self.guard.admit(transport, peer) is not None:
            transport.write(_TOO_MANY)
            transport.close()
            return
        self._open_head()  # the first request's head is due from now

    def data_received(self, data: bytes) -> None:
        if self.guard is None:
            super().data_received(data)
            return
        # Counted as it comes, before httptools gathers it (it keeps a header value whole until its end,
        # and uvicorn adds a URL's pieces together). A read that ends one head and begins the next
        # (pipelining) leaves the new head's first piece uncounted: at most one read, never a refusal
        # of a head within the limit.
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.guard.limits.max_head_bytes:
            self._cut("head_size", _HEAD_TOO_BIG)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.guard is not None and not self._in_head:
            self._open_head()  # a later request on a kept-alive connection: due from its first byte
        self._head_begun = True

    def on_headers_complete(self) -> None:
        if self.guard is not None:
            self._in_head = False
            self._stop_timers()
            upgrade = self.parser.should_upgrade() and self._should_upgrade()
            if not upgrade:  # its body, if any, must keep coming while we read it
                self._body_moved_at = self.loop.time()
                self._body_timer = self.loop.call_later(self.guard.limits.body_idle_s, self._body_check)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._body_moved_at = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        # A request starts at its address's pace; while it waits, nothing more is read (a body the
        # app has not asked for yet is not the client's stall).
        if self.guard is not None and (wait := self.guard.request_wait(cycle.scope)):
            self.flow.pause_reading()
            self._turn = self.loop.call_later(wait, self._take_turn, super()._start_asgi_task, cycle, app)
            return
        super()._start_asgi_task(cycle, app)

    def handle_websocket_upgrade(self) -> None:
        self._stop_timers()  # the WebSocket's pings watch the connection from now on
        # A handshake is a request too: a client reconnecting in a loop is paced with the rest.
        if self.guard is not None and (wait := self.guard.request_wait(self.scope)):
            self.flow.pause_reading()
            self._turn = self.loop.call_later(wait, self._take_turn, self._upgrade)
            return
        self._upgrade()

    def _upgrade(self) -> None:
        super().handle_websocket_upgrade()
        # The WebSocket reads from here on (its own flow control); nothing reads the parser again.
        self.flow.resume_reading()
        self.parser = None  # type: ignore[assignment]

    def _take_turn(self, start: Callable[..., None], *args: Any) -> None:
        self._turn = None
        if not self.transport.is_closing():
            start(*args)

    def shutdown(self) -> None:
        if self._turn is not None:  # a request not started yet: nothing to finish
            self._turn.cancel()
            self._turn = None
            self.transport.close()
            return
        super().shutdown()

    # --- timers ------------------------------------------------------------------------------------

    def _open_head(self) -> None:
        assert self.guard is not None
        self._in_head = True
        self._head_begun = False
        self._head_bytes = 0
        self._head_timer = self.loop.call_later(self.guard.limits.head_timeout_s, self._head_late)

    def _head_late(self) -> None:
        self._head_timer = None
        if self._in_head:
            # A connection that sent nothing is closed without a word, as it asked nothing.
            self._cut("head", _HEAD_TOO_SLOW if self._head_begun else None)

    def _body_check(self) -> None:
        assert self.guard is not None
        idle_s = self.guard.limits.body_idle_s
        now = self.loop.time()
        if self.flow.read_paused:  # we are not reading (the app has not asked yet): not the client's stall
            self._body_moved_at = now
        stalled_s = now - self._body_moved_at
        if stalled_s < idle_s:
            self._body_timer = self.loop.call_later(idle_s - stalled_s, self._body_check)
        else:
            self._body_timer = None
            self._cut("body", None)

    def _stop_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._turn is not None:
            self._turn.cancel()
            self._turn = None
        self._stop_timers()
        if self.guard is not None:
            self.guard.release(self.transport)
        super().connection_lost(exc)

    def _cut(self, phase: str, answer: bytes | None) -> None:
        self._in_head = False
        self._stop_timers()
        if self.transport.is_closing():
            return
        assert self.guard is not None
        self.guard.cut(phase)
        if answer is not None and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(answer)  # only where no response of the app's is under way
        self.transport.close()
