"""One error handler: JSON for /api and WebSocket paths, an HTML page for everything else."""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.progress.errors import StoreUnavailable
from app.web.templating import templates

log = logging.getLogger(__name__)

MESSAGES = {
    400: "The request was not understood.",
    403: "You are not allowed to see this page.",
    404: "There is no such page.",
    405: "That method is not allowed here.",
    422: "The request's data was not valid.",
    429: "Too many requests from your address. Try again in a while.",
    500: "Something went wrong on our side. It has been logged.",
    503: "The playground is busy. Try again in a minute.",
}


# What a request that needed the progress database is told while the database cannot be used.
STORE_UNAVAILABLE = (
    "The playground's progress database cannot be used right now, so nothing of this was saved. "
    "Try again in a moment."
)
STORE_RETRY_S = 5


def error_body(status: int, message: str, **extra: object) -> dict:
    """The one JSON error envelope, for HTTP answers and WebSocket handshake refusals alike."""
    return {"error": {"status": status, "message": message, **extra}}


def validation_body(exc: RequestValidationError) -> bytes:
    """The 422 answer for any input: where and what, never the input itself (it may hold anything, a
    lone surrogate that cannot become UTF-8 among it); ASCII JSON, so every string can be written."""
    details = [{"loc": error.get("loc", ()), "msg": error.get("msg", ""), "type": error.get("type", "")}
               for error in exc.errors()]  # fmt: skip
    return json.dumps(error_body(422, MESSAGES[422], details=details), default=str).encode("ascii")


def wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith(("/api/", "/ws/", "/mcp/")) or path in ("/healthz", "/metrics")


def error_response(request: Request, status: int, detail: str | None) -> Response:
    message = detail or MESSAGES.get(status, "Error")
    if wants_json(request):
        return JSONResponse(error_body(status, message), status_code=status)
    names = [f"{status}.html", "error.html"]
    template = templates.env.select_template(names)
    html = template.render(request=request, status=status, message=message, title=f"{status}")
    return Response(html, status_code=status, media_type="text/html")


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else None
        response = error_response(request, exc.status_code, detail)
        for name, value in (exc.headers or {}).items():  # Retry-After, WWW-Authenticate
            response.headers[name] = value
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        if wants_json(request):
            return Response(validation_body(exc), status_code=422, media_type="application/json")
        return error_response(request, 422, None)

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(request: Request, exc: StoreUnavailable) -> Response:
        log.error("%s %s: %s", request.method, request.url.path, exc)
        response = error_response(request, 503, STORE_UNAVAILABLE)
        response.headers["Retry-After"] = str(STORE_RETRY_S)
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.url.path)
        return error_response(request, 500, None)
