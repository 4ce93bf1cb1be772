"""Lesson 18: URL-mode elicitation: a server that asks the learner to open a page, the client's
declaration and answer, and the retry after `URLElicitationRequiredError`."""

from __future__ import annotations

from typing import Any

from app.course.checks import (
    Outcome,
    check,
    error_of,
    error_words,
    first_text,
    items,
    judge,
    obj,
    params_of,
    result_of,
    server_notifications,
    waiting,
    waiting_for_tool,
)
from app.course.checks.features import tool_calls
from app.protocol.transcript import Entry, Transcript

# -32042, URL elicitation required (2025-11-25 only).
URL_ELICITATION_REQUIRED = -32042


def _client_reply(t: Transcript, request: Entry) -> Entry | None:
    """The learner's response to a request the server sent."""
    return next(
        (e for e in t.client_messages()
         if e.is_response and e.seq > request.seq and e.message.get("id") == request.message["id"]),
        None,
    )  # fmt: skip


def _url_questions(t: Transcript) -> list[Entry]:
    return [
        e for e in t.server_messages()
        if e.is_request and e.method == "elicitation/create" and params_of(e).get("mode") == "url"
    ]  # fmt: skip


@check(
    "url-mode-undeclared-refused",
    "Declare form mode only, call a tool that needs a sign-in, and read why it refused.",
)
def url_mode_undeclared_refused(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or result.get("isError") is not True or "URL-mode" not in first_text(result):
            return None
        return f"The tool asked nothing, not even by form: {first_text(result)}"

    return judge(
        tool_calls(t),
        passes,
        unsent='Complete the handshake with `"elicitation": {}`, then call `connect_album`.',
        failed='The tool did not refuse. Start again with `"elicitation": {}` (no `url`) in `initialize`.',
    )


@check(
    "url-elicitation-accepted",
    "Answer a URL-mode `elicitation/create` with `accept`, and see the tool finish.",
)
def url_elicitation_accepted(t: Transcript) -> Outcome:
    asked = _url_questions(t)
    for question in reversed(asked):
        reply = _client_reply(t, question)
        if reply is None or obj(reply.message.get("result")).get("action") != "accept":
            continue
        for call, response in tool_calls(t):
            if (
                call.seq < question.seq
                and response is not None
                and response.seq > reply.seq
                and result_of(response)
            ):
                return True, f"You accepted to open {params_of(question).get('url')}; the tool finished."
        return False, waiting_for_tool("elicitation/create", reply)
    if asked:
        reply = _client_reply(t, asked[-1])
        if reply is not None:
            return False, 'That answer was not `{"action": "accept"}`. Call the tool again and accept.'
        return False, (
            f"The server sent `elicitation/create` with id {asked[-1].message['id']!r} (message "
            f'#{asked[-1].seq}). Answer it: a response with that id and `"result": {{"action": "accept"}}`.'
        )
    calls = tool_calls(t)
    if calls and calls[0][1] is None:
        return False, waiting(calls[0][0])
    if calls:
        return False, 'No URL-mode request came. Did `initialize` declare `"elicitation": {"url": {}}`?'
    return False, 'Declare `"elicitation": {"url": {}}` in `initialize`, then call `connect_album`.'


def _ids_asked(t: Transcript) -> set[str]:
    """elicitationIds the server asked under: in elicitation/create, or in a -32042 error's data."""
    ids = {str(params_of(q).get("elicitationId")) for q in _url_questions(t)}
    for _request, response in tool_calls(t):
        error = error_of(response)
        if error is not None and error.get("code") == URL_ELICITATION_REQUIRED:
            data = error.get("data")
            data = data if isinstance(data, dict) else {}
            ids |= {
                str(e.get("elicitationId")) for e in items(data.get("elicitations")) if isinstance(e, dict)
            }
    return ids


@check(
    "elicitation-complete-received",
    "Get `notifications/elicitation/complete` naming the `elicitationId` the server asked under.",
)
def elicitation_complete_received(t: Transcript) -> Outcome:
    asked = _ids_asked(t)
    done = server_notifications(t, "notifications/elicitation/complete")
    for note in reversed(done):
        if str(params_of(note).get("elicitationId")) in asked:
            return True, f"The server said {params_of(note)['elicitationId']} is complete."
    if not asked:
        return False, 'Call `connect_album` (with `"elicitation": {"url": {}}` declared) and accept.'
    if done:
        return False, "That notification names an id the server never asked under; a client ignores it."
    return False, "The sign-in has not finished. Call `finish_sign_in` to play the user on the page."


@check(
    "url-required-retried", "Get error `-32042`, finish the sign-in, and retry the call so that it succeeds."
)
def url_required_retried(t: Transcript) -> Outcome:
    required = [
        (r, s) for r, s in tool_calls(t) if (error_of(s) or {}).get("code") == URL_ELICITATION_REQUIRED
    ]
    if not required:
        calls = tool_calls(t)
        if calls and calls[0][1] is None:
            return False, waiting(calls[0][0])
        if calls and error_of(calls[0][1]) is not None:
            return False, f"That was {error_words(error_of(calls[0][1]) or {})}, not -32042."
        return False, "Call `print_photos` before signing in, and read its error."
    first, answer = required[-1]
    tool = params_of(first).get("name")
    assert answer is not None

    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if request.seq < answer.seq or result is None or result.get("isError") is True:
            return None
        return f"The retry (message #{request.seq}) went through: {first_text(result)}"

    retries = [(r, s) for r, s in tool_calls(t, str(tool)) if r.seq > answer.seq]
    return judge(
        retries,
        passes,
        unsent=f"Play the sign-in with `finish_sign_in`, then call `{tool}` again.",
        failed=lambda _r, s: (
            f"{error_words(error_of(s) or {})} again: finish the sign-in first (`finish_sign_in`)."
            if error_of(s)
            else f"The retry failed: {first_text(result_of(s) or {})}"
        ),
    )


@check(
    "url-input-required-completed",
    "On 2026-07-28, get a URL-mode question in `input_required`, and retry with a new id and the answer.",
)
def url_input_required_completed(t: Transcript) -> Outcome:
    def asks_url(result: dict[str, Any] | None) -> bool:
        questions = (result or {}).get("inputRequests")
        return isinstance(questions, dict) and any(
            isinstance(q, dict) and obj(q.get("params")).get("mode") == "url" for q in questions.values()
        )

    calls = tool_calls(t)
    interim = [(r, s) for r, s in calls if s is not None and asks_url(result_of(s))]
    if not interim:
        if calls and calls[0][1] is None:
            return False, waiting(calls[0][0])
        return (
            False,
            'Call `connect_album` with `"elicitation": {"url": {}}` in the envelope\'s clientCapabilities.',
        )
    first = interim[-1][1]
    assert first is not None
    asked_ids = {r.message.get("id") for r, _ in interim}

    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if request.message.get("id") in asked_ids or result is None:
            return None
        if result.get("resultType", "complete") != "complete":
            return None
        return f"The retry (message #{request.seq}), a new request, completed the call."

    retries = [(r, s) for r, s in calls if r.seq > first.seq and "inputResponses" in params_of(r)]
    return judge(
        retries,
        passes,
        unsent='Retry the call with a new id and `"inputResponses": {"sign_in": {"action": "accept"}}`.',
        failed="The retry did not complete. Give the answer under the key of `inputRequests`.",
        before_reply=lambda request: (
            f"The retry reused the id {request.message.get('id')!r}: a retry is a new request, give it a new id."
            if request.message.get("id") in asked_ids
            else None
        ),
    )
