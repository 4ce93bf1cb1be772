"""Learners' side of hosting: join a class with its code, resume on another device, the access code."""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.web.client import client_address, is_https
from app.web.credentials import retry_words, same_secret
from app.web.errors import error_body, error_response
from app.web.learner import MAX_AGE_S, learner_id
from app.web.state import get_state
from app.web.templating import templates

router = APIRouter()

ACCESS_COOKIE = "playground_access"
# Paths that stay open without the site's access code: the form itself, assets, probes.
OPEN_PATHS = ("/access", "/static/", "/healthz", "/metrics")


def _throttled(request: Request, kind: str) -> Response | None:
    """429 while this address has sent too many wrong codes of this kind, else None."""
    wait = get_state(request).throttle.wait(kind, client_address(request.scope))
    if wait is None:
        return None
    response = error_response(
        request, 429, f"Too many wrong codes from your address. Try again in {retry_words(wait)}."
    )
    response.headers["Retry-After"] = str(int(wait) + 1)
    return response


def _failed(request: Request, kind: str) -> None:
    get_state(request).throttle.failed(kind, client_address(request.scope))


def _page(request: Request, template: str, status: int = 200, **context: object) -> HTMLResponse:
    return templates.TemplateResponse(request, template, context, status_code=status)


@router.get("/join", response_class=HTMLResponse)
def join_form(request: Request, code: str = "") -> HTMLResponse:
    progress = get_state(request).progress.learner(learner_id(request))
    return _page(request, "join.html", title="Join a class", code=code, name=progress.display_name or "")


@router.get("/join/{code}", response_class=HTMLResponse)
def join_link(request: Request, code: str) -> HTMLResponse:
    return join_form(request, code)


@router.post("/join", response_class=HTMLResponse)
def join(request: Request, code: str = Form(""), display_name: str = Form("")) -> Response:
    state = get_state(request)
    throttled = _throttled(request, "join")
    if throttled is not None:
        return throttled
    klass = state.progress.class_by_code(code) if code.strip() else None
    error = None
    if klass is None:
        _failed(request, "join")
        error = (
            "There is no class with that code. Check it with your instructor (letters and digits, no 0 or 1)."
        )
    elif klass.closed:
        error = f"The class “{klass.name}” is closed to new learners. Ask your instructor."
    elif not display_name.strip():
        error = "Enter the name your instructor will see beside your progress."
    else:
        try:
            state.progress.join_class(learner_id(request), klass.id, display_name)
        except ValueError as exc:
            error = str(exc)
    if error:
        return _page(
            request, "join.html", status=400, title="Join a class", code=code, name=display_name, error=error
        )
    return RedirectResponse("/course?joined=1", status_code=303)


@router.get("/resume", response_class=HTMLResponse)
def resume_page(request: Request) -> HTMLResponse:
    return _resume_page(request)


def _resume_page(request: Request, status: int = 200, error: str | None = None) -> HTMLResponse:
    """The learner's own code and link; a visitor without an identity yet gets none (a GET makes no rows)."""
    code = link = None
    if not request.scope.get("learner_minted"):
        code = get_state(request).progress.resume_code(learner_id(request))
        link = str(request.base_url).rstrip("/") + f"/resume/{code}"
    return _page(request, "resume.html", status=status, title="Continue on another device", code=code, link=link,
                 error=error)  # fmt: skip


def _switch_to(request: Request, code: str) -> Response:
    throttled = _throttled(request, "resume")
    if throttled is not None:
        return throttled
    learner = get_state(request).progress.learner_for_resume_code(code)
    if learner is None:
        _failed(request, "resume")
        return _resume_page(request, 404, "No progress has that resume code. Check it and try again.")
    response = RedirectResponse("/course?resumed=1", status_code=303)
    identity = get_state(request).identity
    assert identity is not None  # the app has started
    response.headers.append("set-cookie", identity.cookie(learner, secure=is_https(request.scope)))
    return response


@router.get("/resume/{code}", response_class=HTMLResponse)
def resume_link(request: Request, code: str) -> Response:
    """A link only asks: switching who you are takes a click, so a link planted elsewhere cannot."""
    progress = get_state(request).progress
    throttled = _throttled(request, "resume")
    if throttled is not None:
        return throttled
    learner = progress.learner_for_resume_code(code)
    if learner is None:
        return _switch_to(request, code)  # says the code is unknown
    name = progress.learner(learner).display_name
    return _page(request, "resume_confirm.html", title="Continue on this device", code=code, name=name)


@router.post("/resume")
def resume_code(request: Request, code: str = Form("")) -> Response:
    return _switch_to(request, code)


# --- the site-wide access code -------------------------------------------------------------------


def access_token(code: str) -> str:
    """What the cookie holds: a digest, so the code itself is never stored in browsers."""
    return hashlib.sha256(b"playground-access:" + code.encode()).hexdigest()


@router.get("/access", response_class=HTMLResponse)
async def access_form(request: Request, next: str = "/") -> HTMLResponse:
    return _page(request, "access.html", title="Access code", next=_safe_next(next))


@router.post("/access")
def access(request: Request, code: str = Form(""), next: str = Form("/")) -> Response:
    expected = get_state(request).settings.access_code
    throttled = _throttled(request, "access")
    if throttled is not None:
        return throttled
    if not expected or same_secret(code.strip(), expected):
        response = RedirectResponse(_safe_next(next), status_code=303)
        if expected:
            response.set_cookie(ACCESS_COOKIE, access_token(expected), max_age=MAX_AGE_S, path="/", httponly=True,
                                samesite="lax", secure=is_https(request.scope))  # fmt: skip
        return response
    _failed(request, "access")
    return _page(request, "access.html", status=403, title="Access code", next=_safe_next(next),
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
