"""Lesson 2, JSON-RPC 2.0: ids, errors, notifications."""

from __future__ import annotations

from app.course.checks import Outcome, check, error_of, error_words, waiting
from app.protocol.transcript import Transcript


@check("string-id-answered", 'Send a request whose `id` is a string, such as `"abc"`, and get its response.')
def string_id_answered(t: Transcript) -> Outcome:
    sent = [e for e in t.client_messages() if e.is_request and isinstance(e.message["id"], str)]
    for request in reversed(sent):
        response = t.response_to(request)
        if response is not None:
            return (
                True,
                f"Your request used the id {request.message['id']!r}, and the response carried it back.",
            )
    if sent:
        return False, waiting(sent[-1], "request")
    if any(e.is_request for e in t.client_messages()):
        return False, 'Your requests so far use number ids. Try a string, such as "id": "abc".'
    return False, "You have not sent a request yet (a message with a `method` and an `id`)."


@check("method-not-found-seen", "Call a method the server does not have and read the `-32601` error.")
def method_not_found_seen(t: Transcript) -> Outcome:
    asked = [e for e in t.client_messages() if e.is_request]
    for request in reversed(asked):
        error = error_of(t.response_to(request))
        if error is not None and error.get("code") == -32601:
            return True, f"`{request.method}` (message #{request.seq}) got {error_words(error)}."
    if not asked:
        return False, "You have not sent a request yet. Invent a method name, such as `orders/teleport`."
    if t.response_to(asked[-1]) is None:
        return False, waiting(asked[-1])
    return False, f"`{asked[-1].method}` is a method the server knows. Invent one it does not have."


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
