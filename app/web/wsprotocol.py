"""uvicorn's WebSocket protocol (websockets, sans-I/O), with one of its bugs mended."""

from __future__ import annotations

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """A refused handshake ends quietly.

    The relay refuses with an HTTP response (the ASGI denial-response extension: `deny` in
    app/web/ws.py). uvicorn 0.54 sends it, but still counts the handshake as unfinished, so when the
    route returns it logs `ERROR ASGI callable returned without completing handshake.` for every
    refusal: any visitor could fill the error log with a loop of bad origins. The other two
    implementations mark the handshake done there; upstream, Kludex/uvicorn pull request 3138 does the same.
    """

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True
