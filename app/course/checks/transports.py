"""Lesson 3, transports: a round trip through the relay to a server on stdio."""

from __future__ import annotations

from app.course.checks import Outcome, check, waiting
from app.protocol.transcript import Transcript


@check("round-trip-measured", "Send any request and get its response: the console shows how long it took.")
def round_trip_measured(t: Transcript) -> Outcome:
    asked = [e for e in t.client_messages() if e.is_request]
    for request in reversed(asked):
        response = t.response_to(request)
        if response is not None and response.rtt_ms is not None:
            return True, (
                f"Your `{request.method}` went out as one line (message #{request.seq}) and its "
                f"response came back in {response.rtt_ms:.1f} ms."
            )
    if asked:
        return False, waiting(asked[-1])
    return False, "You have not sent a request yet."
