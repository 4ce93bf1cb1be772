"""Wrong codes people type, per client address: the request side of credentials.FailureThrottle.

A route checks the code first (a right one always passes) and calls `wrong()` only when it is wrong.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from app.web.client import client_key
from app.web.credentials import retry_words
from app.web.errors import error_response
from app.web.state import get_state


def wrong(request: Request, kind: str) -> Response | None:
    """Count a wrong code of this kind from this address: None while it is within its budget (answer
    as for any wrong code), else the 429 to answer with."""
    wait = get_state(request).throttle.failed(kind, client_key(request.scope))
    if wait is None:
        return None
    response = error_response(
        request, 429, f"Too many wrong codes from your address. Try again in {retry_words(wait)}."
    )
    response.headers["Retry-After"] = str(int(wait) + 1)
    return response
