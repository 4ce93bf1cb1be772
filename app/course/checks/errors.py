"""Lesson 7, errors and bad input: what a misbehaving server looks like, and cancelling."""

from __future__ import annotations

from app.course.checks import Outcome, check, params_of
from app.protocol.transcript import Transcript


@check(
    "relay-refused-bad-input",
    "Send a message that is not valid JSON-RPC, read the relay's answer, then send a fixed one.",
)
def relay_refused_bad_input(t: Transcript) -> Outcome:
    refused = t.relay_errors()
    if not refused:
        return False, "Send the broken message first: the relay answers it, the server never sees it."
    first = refused[0]
    error = first.message["error"]
    answered = [e for e in t.client_messages() if e.is_request and e.seq > first.seq and t.response_to(e)]
    if not answered:
        return False, (
            f"The relay answered message #{first.seq} with {error['code']} {error['message']} "
            f"({error['data'].get('reason')}). Now fix the message and send it again."
        )
    fixed = answered[0]
    return True, (
        f"The relay refused message #{first.seq} with {error['code']}; your fixed {fixed.method} "
        f"(#{fixed.seq}) reached the server and was answered."
    )


@check("garbled-line-seen", "Make the server write a line that is not JSON (the tool `garbled_line`).")
def garbled_line_seen(t: Transcript) -> Outcome:
    for entry in t.server_messages():
        if entry.message is None:
            return True, f"Message #{entry.seq} from the server is not JSON: {entry.line.strip()[:80]!r}."
    return False, "Every line from the server so far was JSON. Call the tool `garbled_line`."


@check(
    "stray-response-seen", "Catch the server sending a response to a request you never sent (`unknown_id`)."
)
def stray_response_seen(t: Transcript) -> Outcome:
    sent_ids = {repr(e.message["id"]) for e in t.client_messages() if e.is_request}
    for entry in t.server_messages():
        if entry.is_response and entry.answers is None and repr(entry.message.get("id")) not in sent_ids:
            return True, (
                f"Message #{entry.seq} is a response with id {entry.message.get('id')!r}, "
                "and you never sent a request with that id."
            )
    return False, "Every response so far answers one of your requests. Call the tool `unknown_id`."


@check(
    "request-cancelled",
    "Start a slow request, then cancel it with `notifications/cancelled` before it is answered.",
)
def request_cancelled(t: Transcript) -> Outcome:
    cancels = [e for e in t.client_messages() if e.is_notification and e.method == "notifications/cancelled"]
    if not cancels:
        return False, "You have not sent `notifications/cancelled` yet (no `id`: it is a notification)."
    for cancel in reversed(cancels):
        target = params_of(cancel).get("requestId")
        request = next(
            (e for e in t.client_messages()
             if e.is_request and e.seq < cancel.seq and e.message["id"] == target
             and type(e.message["id"]) is type(target)),
            None,
        )  # fmt: skip
        if request is None:
            continue
        response = t.response_to(request)
        if response is None:
            return True, (
                f"You cancelled request {target!r} (message #{request.seq}); no response to it "
                "has arrived, and none should."
            )
        if response.seq > cancel.seq:
            return True, (
                f"You cancelled request {target!r}, but its response was already on the way: "
                "a cancellation can cross the reply."
            )
    target = params_of(cancels[-1]).get("requestId")
    return False, (
        f"`requestId` {target!r} names no request you sent before it that was still open. "
        "Send `slow_reply` first, then cancel its id."
    )
