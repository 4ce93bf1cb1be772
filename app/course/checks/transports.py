"""Lesson 3, transports: a round trip through the relay to a server on stdio."""

from __future__ import annotations

from app.course.checks import Outcome, check, judge, newest_first, waiting
from app.protocol.transcript import Entry, Transcript


@check("round-trip-measured", "Send any request and get its response: the console shows how long it took.")
def round_trip_measured(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        if response is None or response.rtt_ms is None:
            return None
        return (
            f"Your `{request.method}` went out as one line (message #{request.seq}) and its "
            f"response came back in {response.rtt_ms:.1f} ms."
        )

    return judge(
        newest_first(t, [e for e in t.client_messages() if e.is_request]),
        passes,
        unsent="You have not sent a request yet.",
        failed=lambda request, _: waiting(request),  # a reply always has its time: never reached
    )
