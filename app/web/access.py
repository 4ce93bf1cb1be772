"""The site-wide access code: with PLAYGROUND_ACCESS_CODE set, every page, API and console needs it once."""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.web.client import is_https
from app.web.credentials import same_secret
from app.web.errors import error_body
from app.web.guesses import wrong
from app.web.learner import MAX_AGE_S
from app.web.state import get_state
from app.web.templating import page

router = APIRouter()

ACCESS_COOKIE = "playground_access"
# Paths that stay open without the site's access code: the form itself, assets, probes.
# An endpoint's token is its credential; an OAuth client's requests carry their own (app/web/oauth.py).
OPEN_PATHS = ("/access", "/static/", "/healthz", "/metrics", "/mcp/", "/.well-known/", "/authorize", "/token",
              "/register", "/revoke")  # fmt: skip


def access_token(code: str) -> str:
    """What the cookie holds: a digest, so the code itself is never stored in browsers."""
    return hashlib.sha256(b"playground-access:" + code.encode()).hexdigest()


@router.get("/access", response_class=HTMLResponse)
async def access_form(request: Request, next: str = "/") -> HTMLResponse:
    return page(request, "access.html", title="Access code", next=_safe_next(next))


@router.post("/access")
def access(request: Request, code: str = Form(""), next: str = Form("/")) -> Response:
    expected = get_state(request).settings.access_code
    if not expected or same_secret(code.strip(), expected):
        response = RedirectResponse(_safe_next(next), status_code=303)
        if expected:
            response.set_cookie(ACCESS_COOKIE, access_token(expected), max_age=MAX_AGE_S, path="/", httponly=True,
                                samesite="lax", secure=is_https(request.scope))  # fmt: skip
        return response
    if (refusal := wrong(request, "access")) is not None:
        return refusal
    return page(request, "access.html", status=403, title="Access code", next=_safe_next(next),
                 error="That is not the access code. Ask whoever runs this playground.")  # fmt: skip


def _safe_next(target: str) -> str:
    # Only a path on this site: never an open redirect.
    return target if target.startswith("/") and not target.startswith("//") else "/"


class AccessCodeMiddleware:
    """With PLAYGROUND_ACCESS_CODE set, everything but OPEN_PATHS needs the access cookie."""

    def __init__(self, app: ASGIApp, code: str) -> None:
        self.app = app
        self.token = access_token(code)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"].startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        from starlette.requests import HTTPConnection

        cookies = HTTPConnection(scope).cookies
        if same_secret(cookies.get(ACCESS_COOKIE, ""), self.token):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            from starlette.responses import JSONResponse
            from starlette.websockets import WebSocket

            body = error_body(401, "This playground needs its access code first.")
            await WebSocket(scope, receive, send).send_denial_response(JSONResponse(body, status_code=401))
            return
        if scope["path"].startswith("/api/"):
            from starlette.responses import JSONResponse

            body = error_body(401, "This playground needs its access code first.")
            await JSONResponse(body, status_code=401)(scope, receive, send)
            return
        await RedirectResponse(f"/access?next={scope['path']}", status_code=303)(scope, receive, send)


def install(app, code: str | None) -> None:  # noqa: ANN001
    if code:
        app.add_middleware(AccessCodeMiddleware, code=code)
