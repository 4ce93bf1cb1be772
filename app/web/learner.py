"""Who a request is: the learner id in a cookie the server signed, and the client's address.

- A signed cookie (`<id>.<signature>`, HMAC-SHA256 with a secret shared through the progress store)
  is an identity; anything else the browser sends (a bare id, an edited cookie) is none.
- Reading never makes an identity: a page, a progress read or a 404 without one is served as to a
  fresh visitor (empty progress, nothing stored). The first *action* makes one: a POST, PUT, PATCH or
  DELETE (answering a quiz, saving a file, creating an endpoint, joining a class) runs under a new id,
  which becomes the visitor's identity, with its cookie, when the answer is a success (below 400): a
  wrong join code or a refused request makes none. At most so many per client address in a window
  (PLAYGROUND_NEW_LEARNERS_PER_ADDRESS; past it an action without an identity answers 429).
- A WebSocket cannot set a cookie before it opens: the console's page asks for an identity first
  (`POST /api/identity`, static/console/connection.js); a WebSocket without one (a script) goes on
  without, counted by its address (app/relay/admission.py).
- The client's address comes from app/web/client.py (trusted proxies taken into account).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable

import anyio
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.progress.errors import StoreUnavailable
from app.relay.rates import KEYS_KEPT, KeyedRate, Recent
from app.web.client import client_key, is_https
from app.web.errors import STORE_RETRY_S, STORE_UNAVAILABLE, error_response

COOKIE = "playground_learner"
MAX_AGE_S = 365 * 24 * 3600
SECRET_NAME = "learner-cookie"
_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
# The scope key set when a cookie could not be checked because the database was away.
STORE_AWAY = "playground.store_away"
# Paths that need no identity: nobody is given one for fetching a stylesheet or a probe, nor an MCP
# client on an endpoint (the URL's token names whose it is; a client without a cookie jar would
# otherwise make one per request).
ANONYMOUS_PATHS = (
    "/mcp/",
    "/.well-known/",
    "/authorize",
    "/token",
    "/register",
    "/revoke",
    "/static/",
    "/healthz",
    "/metrics",
    "/api/servers",
    "/api/docs",
    "/openapi.json",
    "/favicon",
)
# Actions that make no learner identity: they sign someone in or switch who the visitor is, each with a
# cookie of its own, or act only for a visitor who has one (a consent's answer).
OWN_COOKIE_PATHS = ("/access", "/instructor", "/resume", "/oauth/consent/")
READING = frozenset({"GET", "HEAD", "OPTIONS"})
# New identities per client address are counted over this window (PLAYGROUND_NEW_LEARNERS_PER_ADDRESS).
MINT_WINDOW_S = 600.0
# A learner's sign-in generation is read again this long after (a new resume code made on another
# replica ends the old sign-ins here within it), for this many learners at most.
GENERATION_FRESH_S = 10.0
GENERATIONS_KEPT = KEYS_KEPT

router = APIRouter()


def new_id() -> str:
    return secrets.token_urlsafe(18)


def learner_id(request: Request) -> str:
    """This request's learner id. For a visitor without an identity it is a new id that nothing is
    stored under (scope["learner_minted"]): it reads as empty progress, and becomes the visitor's
    identity only if the request is an action that succeeds."""
    value = request.scope.get("learner_id")
    assert value, f"{request.url.path} is served without a learner identity"
    return value


def has_identity(request: Request) -> bool:
    """Whether the request carries the visitor's identity (a signed cookie), not a new id."""
    return bool(request.scope.get("learner_id")) and not request.scope.get("learner_minted")


@router.post("/api/identity", status_code=204)
async def identity_please() -> Response:
    """Make sure this browser has a learner identity: a console's page asks before it opens its
    WebSocket, whose handshake cannot set a cookie. Nothing changes for a visitor who has one."""
    return Response(status_code=204)


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

    def sign(self, learner: str, generation: int = 0) -> str:
        """`learner.signature`, or `learner~N.signature` for a learner whose sign-ins were ended N times."""
        body = learner if generation == 0 else f"{learner}~{generation}"
        return f"{body}.{self._signature(body)}"

    def verify(self, value: str) -> tuple[str, int] | None:
        """The learner a value proves, and the generation it was signed in; None if it proves nobody."""
        body, dot, signature = value.rpartition(".")
        learner, tilde, generation = body.partition("~")
        number = not tilde or (generation.isascii() and generation.isdigit())
        if not dot or not _ID.match(learner) or not number:
            return None
        if not hmac.compare_digest(signature.encode(), self._signature(body).encode()):
            return None
        return learner, int(generation) if tilde else 0


class Identity:
    """Built at start-up, once the progress store (which keeps the signing secret) is open. A cookie
    proves its learner while its generation is the learner's: a new resume code (the instructor's,
    for a code others saw) ends every sign-in made before, on every device."""

    def __init__(
        self, secret: str, mint_limit: int, generation_of: Callable[[str], int] = lambda _: 0
    ) -> None:
        self.signer = CookieSigner(secret)
        self.minting = KeyedRate(mint_limit, MINT_WINDOW_S)
        self._generation_of = generation_of  # the store's, read off the event loop
        self._generations: Recent[str, tuple[int, float]] = Recent(GENERATIONS_KEPT)

    async def learner_of(self, value: str | None) -> str | None:
        """The learner a cookie value proves: only a value this server signed, in the learner's
        current generation, proves anyone."""
        proved = self.signer.verify(value) if value else None
        if proved is None:
            return None
        learner, generation = proved
        return learner if generation == await self.generation(learner) else None

    async def generation(self, learner: str) -> int:
        """The learner's current generation, as read at most GENERATION_FRESH_S ago (on this replica)."""
        now = time.monotonic()
        known = self._generations.get(learner)
        if known is not None and now - known[1] < GENERATION_FRESH_S:
            return known[0]
        try:
            current = await anyio.to_thread.run_sync(self._generation_of, learner)
        except StoreUnavailable:
            if known is None:
                raise
            return known[0]  # the database is away for now: the last generation read stands
        self._generations.add(learner, (current, now))
        return current

    def forget(self, learner: str) -> None:
        """The learner's generation has changed here: read it again next time."""
        self._generations.discard(learner)

    def cookie(self, learner: str, secure: bool, generation: int = 0) -> str:
        flags = "; Secure" if secure else ""
        value = self.signer.sign(learner, generation)
        return f"{COOKIE}={value}; Path=/; Max-Age={MAX_AGE_S}; HttpOnly; SameSite=Lax{flags}"


SIGNED_OUT = "playground.signed_out"  # scope key: the browser's sign-in was ended by a new resume code


class LearnerMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        identity: Identity | None = getattr(scope["app"].state.playground, "identity", None)
        if scope["type"] not in ("http", "websocket") or identity is None:
            await self.app(scope, receive, send)
            return
        value = HTTPConnection(scope).cookies.get(COOKIE)
        try:
            learner = await identity.learner_of(value)
        except StoreUnavailable:  # a cookie to check, and the database away: nobody is proved
            if scope["type"] == "http" and not scope["path"].startswith(ANONYMOUS_PATHS):
                response = error_response(Request(scope), 503, STORE_UNAVAILABLE)
                response.headers["Retry-After"] = str(STORE_RETRY_S)
                await response(scope, receive, send)
                return
            scope[STORE_AWAY], learner = True, None  # a WebSocket's route refuses it as such
        scope["learner_id"] = learner
        if learner is None and value and not scope.get(STORE_AWAY):
            # A cookie signed by us that proves nobody now: its learner got a new resume code. Pages say
            # so, rather than greet them as someone new.
            scope[SIGNED_OUT] = identity.signer.verify(value) is not None
        if learner is not None or scope["type"] != "http" or scope["path"].startswith(ANONYMOUS_PATHS):
            await self.app(scope, receive, send)
            return
        scope["learner_id"], scope["learner_minted"] = new_id(), True
        if scope["method"] in READING or scope["path"].startswith(OWN_COOKIE_PATHS):
            await self.app(scope, receive, send)
            return
        address = client_key(scope)
        wait = identity.minting.wait(address)
        if wait is not None:
            await _too_many_visitors(scope, receive, send, wait)
            return
        cookie = identity.cookie(scope["learner_id"], secure=is_https(scope)).encode()
        succeeded = False

        async def send_with_cookie(message: Message) -> None:
            nonlocal succeeded
            if message["type"] == "http.response.start" and message["status"] < 400:
                succeeded = True
                message.setdefault("headers", []).append((b"set-cookie", cookie))
            await send(message)

        try:
            await self.app(scope, receive, send_with_cookie)
        finally:
            if not succeeded:  # a failed action (a wrong code, a refusal) makes no identity
                identity.minting.refund(address)


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
    app.include_router(router)
    app.add_middleware(LearnerMiddleware)
