"""Lesson 2, JSON-RPC 2.0: ids, errors, notifications."""

from __future__ import annotations

from mcp_types import METHOD_NOT_FOUND

from app.course.checks import Outcome, check, error_of, error_words, judge, newest_first, waiting
from app.protocol.transcript import Entry, Transcript


@check("string-id-answered", 'Send a request whose `id` is a string, such as `"abc"`, and get its response.')
def string_id_answered(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        if response is None:
            return None
        return f"Your request used the id {request.message['id']!r}, and the response carried it back."

    sent = [e for e in t.client_messages() if e.is_request and isinstance(e.message["id"], str)]
    return judge(
        newest_first(t, sent),
        passes,
        unsent=(
            'Your requests so far use number ids. Try a string, such as "id": "abc".'
            if any(e.is_request for e in t.client_messages())
            else "You have not sent a request yet (a message with a `method` and an `id`)."
        ),
        what="request",
        failed="",  # never reached: an answered request passes
    )


@check("method-not-found-seen", "Call a method the server does not have and read the `-32601` error.")
def method_not_found_seen(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        error = error_of(response)
        if error is None or error.get("code") != METHOD_NOT_FOUND:
            return None
        return f"`{request.method}` (message #{request.seq}) got {error_words(error)}."

    return judge(
        newest_first(t, [e for e in t.client_messages() if e.is_request]),
        passes,
        unsent="You have not sent a request yet. Invent a method name, such as `orders/teleport`.",
        failed=lambda request, _: (
            f"`{request.method}` is a method the server knows. Invent one it does not have."
        ),
    )


@check(
    "notification-then-request",
    "Send a notification (no `id`), see that nothing answers it, then send a request that is answered.",
)
def notification_then_request(t: Transcript) -> Outcome:
    notes = [e for e in t.client_messages() if e.is_notification]
    if not notes:
        return False, "You have not sent a notification yet: a message with a `method` and no `id`."
    later = [e for e in t.client_messages() if e.is_request and e.seq > notes[0].seq]
    for request in later:
        if t.response_to(request) is not None:
            return True, (
                f"Nothing answered your `{notes[0].method}` (message #{notes[0].seq}), while your "
                f"`{request.method}` (message #{request.seq}) got its response."
            )
    if later:
        return False, waiting(later[-1])
    return False, (
        f"Your `{notes[0].method}` got no reply, as it should. Now send a request (with an `id`), "
        "such as `ping`, to see that the server is still there."
    )
