"""uvicorn's protocols, bent where its public settings do not reach: what a connection may hold before
the app sees a request (app/web/connections.py: a head within a time and a size, a body that keeps
coming, connections per address and in all), a handshake refusal that ends quietly, a WebSocket's
per-connection chatter left unmade, and an upgrade that leaves no garbage for the collector.

uvicorn's settings time out only an idle kept-alive connection (not a head sent a byte at a time),
bound a head's size only for its h11 protocol, and cap connections in all, not per address. So this
module subclasses its httptools and websockets protocols, and reads a few of their attributes. It is
the only module that does: uvicorn is pinned exactly in pyproject.toml, and tests/web/test_wsprotocol.py
fails at once on a version whose protocols no longer have what this module uses (`USED`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Request

if TYPE_CHECKING:
    from app.web.connections import Connections

# The scope extension holding an event set once the connection is gone (app/relay/wire.py: a wire
# waiting out its client's pace stops waiting, so that a reconnect finds the session free at once).
LOST = "playground.lost"

# What this module reads or overrides of uvicorn's protocols, beyond asyncio's Protocol interface.
USED = {
    HttpToolsProtocol: ("on_message_begin", "on_headers_complete", "on_body", "on_message_complete",
                        "handle_websocket_upgrade", "_should_upgrade"),
    WebSocketsSansIOProtocol: ("handle_connect", "send"),
}  # fmt: skip

# uvicorn's line for an accepted WebSocket, and the websockets library's (which uvicorn hands its
# logger) for one opened and one closed. The relay logs each session it starts and ends, with its id.
CHATTER = frozenset({'%s - "WebSocket %s" [accepted]', "connection open", "connection closed"})


class QuietLog(logging.LoggerAdapter):
    """uvicorn's error log less the three INFO lines of every WebSocket that opens and closes, dropped
    before a record is made: made and then filtered out, they cost a third of a millisecond of each
    learner's handshake after an idle moment. Everything else, a refused handshake's lines included,
    goes to uvicorn's logger as before."""

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


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """A refused handshake ends quietly, an accepted one adds no lines, and the app learns when the
    connection is gone.

    The relay refuses with an HTTP response (the ASGI denial-response extension: `deny` in
    app/web/ws.py). uvicorn 0.55 sends it, but still counts the handshake as unfinished, so when the
    route returns it logs `ERROR ASGI callable returned without completing handshake.` for every
    refusal: any visitor could fill the error log with a loop of bad origins. The other two
    implementations mark the handshake done there; upstream, Kludex/uvicorn pull request 3138 does the same.
    """

    def __init__(self, *args: Any, connections: Connections | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = connections  # counted this connection when it was HTTP (HttpProtocol)
        self.logger = _QUIET  # type: ignore[assignment]
        self.conn.logger = _QUIET
        self.lost = asyncio.Event()  # holds nothing of the protocol: the scope may keep it

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # only an upgrade gets one
        if scope is not None:
            scope["extensions"][LOST] = self.lost

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.lost.set()
        if self.guard is not None:
            self.guard.release(self.transport)

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
    that stopped every session for 15-55 ms."""

    def __init__(self, *args: Any, connections: Connections | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = connections  # None: uvicorn's behaviour (a protocol test)
        self._in_head = False  # a request head is due or under way
        self._head_begun = False  # ... and its first byte has come
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_moved_at = 0.0

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

    def handle_websocket_upgrade(self) -> None:
        self._stop_timers()  # the WebSocket's pings watch the connection from now on
        super().handle_websocket_upgrade()
        # The WebSocket reads from here on (its own flow control); nothing reads the parser again.
        self.parser = None  # type: ignore[assignment]

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
