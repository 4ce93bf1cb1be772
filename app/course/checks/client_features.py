"""Lesson 8, the client's side: sampling, roots and elicitation, answered by the learner."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    check,
    exchanges,
    first_text,
    judge,
    result_of,
    waiting,
    waiting_for_tool,
)
from app.protocol.transcript import Entry, Transcript


def _client_reply(t: Transcript, request: Entry) -> Entry | None:
    """The learner's response to a request the server sent."""
    return next(
        (e for e in t.client_messages()
         if e.is_response and e.seq > request.seq and e.message.get("id") == request.message["id"]),
        None,
    )  # fmt: skip


def _answered(t: Transcript, method: str, capability: str) -> Outcome:
    asked = [e for e in t.server_messages() if e.is_request and e.method == method]
    for request in reversed(asked):
        reply = _client_reply(t, request)
        if reply is None or "result" not in reply.message:
            continue
        for call, response in exchanges(t, "tools/call"):
            result = result_of(response)
            if call.seq < request.seq and response is not None and response.seq > reply.seq and result:
                return True, f"You answered `{method}`, and the tool finished: {first_text(result)}"
        return False, waiting_for_tool(method, reply)
    if asked:
        request = asked[-1]
        reply = _client_reply(t, request)
        if reply is not None:
            return False, "You answered with an error, so the tool could not go on. Answer with a result."
        return False, (
            f"The server sent `{method}` with id {request.message['id']!r} (message #{request.seq}). "
            "Answer it: a response with that id and a `result`."
        )
    calls = list(exchanges(t, "tools/call"))
    if calls and calls[0][1] is None:
        return False, waiting(calls[0][0])
    if calls:
        return False, (
            f"The server did not send `{method}`. Did your `initialize` declare "
            f'`"{capability}": {{}}`? Reconnect, declare it, and call the tool again.'
        )
    return False, f"Declare `{capability}` in `initialize`, finish the handshake, then call the tool."


@check(
    "undeclared-feature-refused",
    "Without declaring a client capability, call a tool that needs it, and read why it refused.",
)
def undeclared_feature_refused(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or result.get("isError") is not True or "declare" not in first_text(result):
            return None
        return f"The tool refused without asking you anything: {first_text(result)}"

    return judge(
        list(exchanges(t, "tools/call")),
        passes,
        unsent='Complete the handshake with `"capabilities": {}`, then call `suggest_trip`.',
        failed='The tool did not refuse. Start again with `"capabilities": {}` in `initialize`.',
    )


@check(
    "sampling-answered",
    "Answer the server's `sampling/createMessage` as the model would, and see the tool finish.",
)
def sampling_answered(t: Transcript) -> Outcome:
    return _answered(t, "sampling/createMessage", "sampling")


@check("roots-answered", "Answer the server's `roots/list` with your folders, and see the tool finish.")
def roots_answered(t: Transcript) -> Outcome:
    return _answered(t, "roots/list", "roots")


@check(
    "elicitation-answered", "Answer the server's `elicitation/create` as the user, and see the tool finish."
)
def elicitation_answered(t: Transcript) -> Outcome:
    return _answered(t, "elicitation/create", "elicitation")
