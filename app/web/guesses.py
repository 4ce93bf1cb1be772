"""Wrong codes people type, per client address: the request side of credentials.FailureThrottle."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from app.web.client import client_key
from app.web.credentials import retry_words
from app.web.errors import error_response
from app.web.state import get_state


def throttled(request: Request, kind: str) -> Response | None:
    """429 while this address has sent too many wrong codes of this kind, else None."""
    wait = get_state(request).throttle.wait(kind, client_key(request.scope))
    if wait is None:
        return None
    response = error_response(
        request, 429, f"Too many wrong codes from your address. Try again in {retry_words(wait)}."
    )
    response.headers["Retry-After"] = str(int(wait) + 1)
    return response


def failed(request: Request, kind: str) -> None:
    get_state(request).throttle.failed(kind, client_key(request.scope))
