"""Who a request is: the learner id in a cookie the server signed, and the client's address.

- A signed cookie (`<id>.<signature>`, HMAC-SHA256 with a secret shared through the progress store)
  is an identity; anything else the browser sends is not.
- A cookie from before signing (a bare id) that names a learner the store knows is re-issued signed,
  so nobody loses progress; any other unsigned value is ignored.
- A page request without an identity gets a new one (a new cookie), at most so many per client
  address in a window; a WebSocket cannot set a cookie, so it goes on without one and is counted by
  its address (app/relay/admission.py).
- The client's address comes from app/web/client.py (trusted proxies taken into account).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

import anyio
from fastapi import FastAPI, Request
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.progress import ProgressStore
from app.relay.rates import KeyedRate
from app.web.client import client_key, is_https

COOKIE = "playground_learner"
MAX_AGE_S = 365 * 24 * 3600
SECRET_NAME = "learner-cookie"
_LEGACY_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
# Paths that need no identity: nobody is minted one for fetching a stylesheet or a probe, nor an MCP
# client on an endpoint (the URL's token names whose it is; a client without a cookie jar would
# otherwise mint one per request, and spend its whole address's allowance of new learners).
ANONYMOUS_PATHS = (
    "/mcp/",
    "/static/",
    "/healthz",
    "/metrics",
    "/api/servers",
    "/api/docs",
    "/openapi.json",
    "/favicon",
)
# New identities per client address are counted over this window (PLAYGROUND_NEW_LEARNERS_PER_ADDRESS).
MINT_WINDOW_S = 600.0


def new_id() -> str:
    return secrets.token_urlsafe(18)


def learner_id(request: Request) -> str:
    """This request's learner id (the middleware gives one to every page and API request)."""
    value = request.scope.get("learner_id")
    assert value, f"{request.url.path} is served without a learner identity"
    return value


class CookieSigner:
    def __init__(self, secret: str) -> None:
        self._key = hashlib.sha256(b"playground learner cookie:" + secret.encode()).digest()

    def _signature(self, learner: str) -> str:
        digest = hmac.new(self._key, learner.encode(), hashlib.sha256).digest()[:24]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def row_id(self, learner: str) -> str:
        """An opaque name for a learner on instructor pages and in the CSV: the learner's own id is
        a secret (it is their identity), this one proves nothing."""
        return hmac.new(self._key, b"row:" + learner.encode(), hashlib.sha256).hexdigest()[:16]

    def sign(self, learner: str) -> str:
        return f"{learner}.{self._signature(learner)}"

    def verify(self, value: str) -> str | None:
        learner, dot, signature = value.rpartition(".")
        if not dot or not _LEGACY_ID.match(learner):
            return None
        return learner if hmac.compare_digest(signature.encode(), self._signature(learner).encode()) else None


class Identity:
    """Built at start-up, once the progress store (which keeps the signing secret) is open."""

    def __init__(self, store: ProgressStore, secret: str, mint_limit: int) -> None:
        self.store = store
        self.signer = CookieSigner(secret)
        self.minting = KeyedRate(mint_limit, MINT_WINDOW_S)

    async def learner_of(self, value: str | None) -> tuple[str | None, bool]:
        """(the learner this cookie value proves, whether the cookie must be re-issued signed)."""
        if not value:
            return None, False
        learner = self.signer.verify(value)
        if learner is not None:
            return learner, False
        if _LEGACY_ID.match(value) is None:
            return None, False
        known = await anyio.to_thread.run_sync(self.store.learner_exists, value)
        return (value, True) if known else (None, False)

    def cookie(self, learner: str, secure: bool) -> str:
        flags = "; Secure" if secure else ""
        return f"{COOKIE}={self.signer.sign(learner)}; Path=/; Max-Age={MAX_AGE_S}; HttpOnly; SameSite=Lax{flags}"


class LearnerMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        identity: Identity | None = getattr(scope["app"].state.playground, "identity", None)
        if scope["type"] not in ("http", "websocket") or identity is None:
            await self.app(scope, receive, send)
            return
        learner, reissue = await identity.learner_of(HTTPConnection(scope).cookies.get(COOKIE))
        if learner is None and scope["type"] == "http" and not scope["path"].startswith(ANONYMOUS_PATHS):
            wait = identity.minting.wait(client_key(scope))
            if wait is not None:
                await _too_many_visitors(scope, receive, send, wait)
                return
            learner, reissue = new_id(), True
            scope["learner_minted"] = True  # no identity until this response: a GET records nothing
        scope["learner_id"] = learner
        if not reissue or scope["type"] != "http" or learner is None:
            await self.app(scope, receive, send)
            return
        cookie = identity.cookie(learner, secure=is_https(scope))

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", []).append((b"set-cookie", cookie.encode()))
            await send(message)

        await self.app(scope, receive, send_with_cookie)


async def _too_many_visitors(scope: Scope, receive: Receive, send: Send, wait: float) -> None:
    from app.web.errors import error_response

    retry = max(int(wait) + 1, 1)
    when = f"{retry} s" if retry < 120 else f"{-(-retry // 60)} minutes"
    message = (
        "Too many new visitors have come from your network address in the last "
        f"{MINT_WINDOW_S / 60:g} minutes. Try again in {when}, or ask whoever runs this playground."
    )
    response = error_response(Request(scope), 429, message)
    response.headers["Retry-After"] = str(retry)
    await response(scope, receive, send)


def install(app: FastAPI) -> None:
    app.add_middleware(LearnerMiddleware)
