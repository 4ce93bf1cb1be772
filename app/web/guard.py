"""Rules every request meets before any route: the site's own name in Host, security headers on every
response, and no state change from another site.

- The Host header must name this site (`Settings.host_names`: PLAYGROUND_ALLOWED_HOSTS, else on
  loopback only loopback names): a page that DNS rebinding has pointed at this machine carries its
  own name there, and is refused (421; a WebSocket is refused before it opens).
- A POST, PUT, PATCH or DELETE that a cookie could authenticate must come from a page of this site:
  `Sec-Fetch-Site: same-origin`, or an `Origin` naming this site. Anything else (another site, a
  sandboxed frame's `null`, no word at all) gets 403 before any cookie is read or minted. Exempt:
  requests with the instructor's Bearer header and no cookie (nothing but the token authenticates
  them), endpoint URLs (`/mcp/...`, which have an Origin rule of their own) and the authorization
  server's routes for OAuth clients (`/authorize`, `/token`, `/register`, `/revoke`: no cookie counts).
- Every HTTP response carries a Content-Security-Policy without inline script or eval, framing
  refused, `nosniff`, no Referer sent onwards (URLs can hold codes), and HSTS when reached over HTTPS.
- A request body is never held or parsed past its limit: an endpoint URL's is the hard frame cap
  (PLAYGROUND_MAX_FRAME_BYTES), an OAuth client route's `OAUTH_BODY_BYTES` (and `OAUTH_BODY_FIELDS`
  fields), any other's `SITE_BODY_BYTES`. Past it, 413: at once when Content-Length says so, else as
  soon as that many bytes have come. A query string is at most `QUERY_BYTES` and `QUERY_FIELDS`
  fields (400 past them), before anything parses it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.client import is_https

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Answered whatever the Host: probes (a load balancer's or Kubernetes' health check names the pod by
# its address) and metrics read nothing of a learner's and change nothing.
HOST_EXEMPT = ("/healthz", "/metrics")
EXEMPT_PREFIXES = ("/mcp/",)
# The authorization server's routes for OAuth clients (app/web/oauth.py): no cookie authenticates them,
# and a client in a browser page on another site may call them (they send CORS headers).
OAUTH_CLIENT_PATHS = ("/authorize", "/token", "/register", "/revoke")
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))  # fmt: skip
HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
HSTS = (b"strict-transport-security", b"max-age=31536000")
# The largest body the site's own forms and JSON take: every one is a few hundred bytes, and the largest
# thing a learner sends, a server.py, has its own smaller limit (64 KiB) that answers for itself.
# Without it, a script could make the web process hold and parse a body of any size.
SITE_BODY_BYTES = 128 * 1024
# A query string no page, API or OAuth client comes near (an /authorize request is well under 2 KiB, a
# dozen fields): parsing thousands of fields (50 KiB of `a&a&...`) holds the event loop for seconds.
QUERY_BYTES = 8 * 1024
QUERY_FIELDS = 64
# The OAuth client routes' bodies: a form of a few fields, or a client's metadata (at most 8 KiB: app/web/
# registration.py), each parsed more than once on its way (the SDK's route, the flow's watches).
OAUTH_BODY_BYTES = 16 * 1024
OAUTH_BODY_FIELDS = 64


def host_allowed(scope: Scope, names: frozenset[str]) -> bool:
    """Whether the request names this site in its Host header. A page that DNS rebinding moved onto
    this machine still says its own name there (and in Origin, so Origin alone cannot tell)."""
    host = Headers(scope=scope).get("host", "")
    name = urlsplit(f"//{host}").hostname or ""
    return name.lower() in names


def same_origin(origin: str, host: str) -> bool:
    """Whether an Origin header names the site that the Host header names."""
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc.lower() == host.lower()


def from_this_site(headers: Headers) -> bool:
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site == "same-origin"
    origin = headers.get("origin")
    return origin is not None and same_origin(origin, headers.get("host", ""))


def bearer_only(headers: Headers) -> bool:
    """A request authenticated by its Bearer header alone: it carries no cookie. One that carries both
    could be a browser's, sent with the learner's cookie, so it meets the cross-site check."""
    return headers.get("authorization", "").lower().startswith("bearer ") and "cookie" not in headers


def site_headers(apps_origin: str | None) -> tuple[tuple[bytes, bytes], ...]:
    """The security headers of every response; a console frames MCP Apps from the proxy's origin alone."""
    if apps_origin is None:
        return HEADERS
    policy = CONTENT_SECURITY_POLICY + f"; frame-src {apps_origin}"
    return ((b"content-security-policy", policy.encode()), *HEADERS[1:])


class GuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers: tuple[tuple[bytes, bytes], ...] | None = None  # made on the first request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        names = scope["app"].state.playground.settings.host_names
        wrong_host = (
            names is not None and not scope["path"].startswith(HOST_EXEMPT) and not host_allowed(scope, names)
        )
        if scope["type"] != "http":
            await (_wrong_host(scope, receive, send) if wrong_host else self.app(scope, receive, send))
            return
        if self.headers is None:
            self.headers = site_headers(scope["app"].state.playground.settings.apps_proxy[0])
        extra = self.headers + ((HSTS,) if is_https(scope) else ())

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in extra:
                    if name.decode() not in headers:
                        headers.append(name.decode(), value.decode())
            await send(message)

        if wrong_host:
            await _wrong_host(scope, receive, send_with_headers)
            return
        query = scope.get("query_string", b"")
        if len(query) > QUERY_BYTES or query.count(b"&") >= QUERY_FIELDS:
            await _refuse_input(scope, receive, send_with_headers, f"The address's query is over {QUERY_BYTES // 1024} "
                                f"KiB or {QUERY_FIELDS} fields; nothing here takes one that long.")  # fmt: skip
            return
        headers = Headers(scope=scope)
        cross_site_ok = scope["path"].startswith(EXEMPT_PREFIXES) or scope["path"] in OAUTH_CLIENT_PATHS
        if scope["method"] in STATE_CHANGING and not cross_site_ok:
            if not bearer_only(headers) and not from_this_site(headers):
                await _refuse(scope, receive, send_with_headers)
                return
        limit = body_limit(scope)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await _too_large(scope, receive, send_with_headers, limit)
            return
        fields = OAUTH_BODY_FIELDS if scope["path"] in OAUTH_CLIENT_PATHS else None
        await self.app(scope, _limited(receive, limit, fields), send_with_headers)


def body_limit(scope: Scope) -> int:
    if scope["path"].startswith(EXEMPT_PREFIXES):
        return int(scope["app"].state.playground.settings.max_frame_bytes)
    return OAUTH_BODY_BYTES if scope["path"] in OAUTH_CLIENT_PATHS else SITE_BODY_BYTES


def _too_large_message(limit: int) -> str:
    return f"The request's body is over the limit of {limit // 1024} KiB, so nothing of it was read."


def _limited(receive: Receive, limit: int, fields: int | None = None) -> Receive:
    """`receive`, which ends a body that goes past `limit` with a 413 (or, given `fields`, a form of
    more fields than that with a 400), raised as FastAPI's routes and the app's error handler expect
    (a route that reads the body itself sees it as well)."""
    seen = separators = 0

    async def limited_receive() -> Message:
        nonlocal seen, separators
        message = await receive()
        if message["type"] == "http.request":
            body = message.get("body", b"")
            seen += len(body)
            if seen > limit:
                raise HTTPException(413, _too_large_message(limit))
            if fields is not None:
                separators += body.count(b"&")
                if separators >= fields:
                    raise HTTPException(
                        400, f"The form has more than {fields} fields; an OAuth request has a few."
                    )
        return message

    return limited_receive


async def _wrong_host(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})  # before accepting: an HTTP 403
        return
    from app.web.errors import error_response

    message = "This site does not answer to that name (PLAYGROUND_ALLOWED_HOSTS lists the names it does)."
    await error_response(Request(scope), 421, message)(scope, receive, send)


async def _refuse_input(scope: Scope, receive: Receive, send: Send, message: str) -> None:
    from app.web.errors import error_response

    await error_response(Request(scope), 400, message)(scope, receive, send)


async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    from app.web.errors import error_response

    await error_response(Request(scope), 413, _too_large_message(limit))(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
    from app.web.errors import error_response

    message = "This request did not come from a page of this site, so nothing was changed."
    await error_response(Request(scope), 403, message)(scope, receive, send)
