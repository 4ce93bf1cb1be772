"""The anonymous learner id: a random token in a cookie, set on the first page a browser loads."""

from __future__ import annotations

import re
import secrets

from fastapi import FastAPI, Request
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "playground_learner"
MAX_AGE_S = 365 * 24 * 3600
_VALID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def new_id() -> str:
    return secrets.token_urlsafe(18)


def read_id(cookies: dict[str, str]) -> str | None:
    value = cookies.get(COOKIE)
    return value if value and _VALID.match(value) else None


def learner_id(request: Request) -> str:
    """This request's learner id (the middleware guarantees one on every HTTP request)."""
    return request.scope["learner_id"]


class LearnerMiddleware:
    """Give every HTTP request a learner id, and set the cookie when the browser had none.

    WebSocket connections only read it (a handshake cannot set a cookie the page will see); a
    client without one (a script) gets a fresh id for that connection alone.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        existing = read_id(HTTPConnection(scope).cookies)
        scope["learner_id"] = existing or new_id()
        if existing or scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = (
                    f"{COOKIE}={scope['learner_id']}; Path=/; Max-Age={MAX_AGE_S}; HttpOnly; SameSite=Lax"
                )
                message.setdefault("headers", []).append((b"set-cookie", cookie.encode()))
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def install(app: FastAPI) -> None:
    app.add_middleware(LearnerMiddleware)
