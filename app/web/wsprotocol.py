"""uvicorn's WebSocket protocol (websockets, sans-I/O), with one of its bugs mended and its
per-connection chatter left unmade."""

from __future__ import annotations

import logging
from typing import Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

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

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True
