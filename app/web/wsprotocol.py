"""uvicorn's WebSocket protocol (websockets, sans-I/O), with one of its bugs mended and its
per-connection chatter left unmade; and its HTTP protocol, which hands a connection to it, mended so
that the hand-over leaves no garbage for the collector."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.http11 import Request

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


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """A refused handshake ends quietly, and an accepted one adds no lines.

    The relay refuses with an HTTP response (the ASGI denial-response extension: `deny` in
    app/web/ws.py). uvicorn 0.54 sends it, but still counts the handshake as unfinished, so when the
    route returns it logs `ERROR ASGI callable returned without completing handshake.` for every
    refusal: any visitor could fill the error log with a loop of bad origins. The other two
    implementations mark the handshake done there; upstream, Kludex/uvicorn pull request 3138 does the same.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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
        try:
            self.conn.send_text(text.encode())
        except InvalidState:
            return False
        self.transport.write(b"".join(self.conn.data_to_send()))
        return True

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol (httptools), which leaves no reference cycle behind an upgrade.

    Its parser holds the protocol's bound callbacks, and the protocol holds its parser. uvicorn breaks
    that cycle in `connection_lost`, which a protocol that has handed its connection to a WebSocket
    never gets: every WebSocket left one behind (about 30 objects) for the collector. Hundreds of
    upgrades a second, from one client reconnecting in a loop, made a young collection every 0.4-1 s
    that stopped every session for 15-55 ms (bench/README.md, round 15)."""

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()
        # Nothing reads the parser once the connection is the WebSocket's: this call is the last
        # thing `data_received` does.
        self.parser = None  # type: ignore[assignment]
