"""Lessons 16 to 18: structured tool output and links, pagination and completion, URL-mode elicitation."""

from __future__ import annotations

from typing import Any

from app.course.checks import (
    Exchange,
    Outcome,
    answered_with,
    check,
    error_of,
    error_words,
    exchanges,
    first_good_initialize,
    first_text,
    judge,
    newest_first,
    params_of,
    refused,
    requests,
    result_of,
    server_notifications,
    waiting,
    waiting_for_tool,
)
from app.protocol.transcript import Entry, Transcript

LIST_METHODS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
LIST_KEYS = {"tools/list": "tools", "resources/list": "resources", "resources/templates/list": "resourceTemplates",
             "prompts/list": "prompts"}  # fmt: skip
# -32042, URL elicitation required (2025-11-25 only).
URL_ELICITATION_REQUIRED = -32042
# The revision that brought title, outputSchema, structuredContent and resource links.
TITLES_FROM = "2025-06-18"


def _calls(t: Transcript, tool: str | None = None) -> list[Exchange]:
    """tools/call exchanges (of `tool`, when given), newest first."""
    return [(r, s) for r, s in exchanges(t, "tools/call") if tool is None or params_of(r).get("name") == tool]


def _list_exchanges(t: Transcript) -> list[Exchange]:
    """Every list request of the four paginated methods with its response, newest first."""
    sent = sorted((e for m in LIST_METHODS for e in requests(t, m)), key=lambda e: e.seq)
    return newest_first(t, sent)


def _content(result: dict[str, Any] | None, kind: str) -> list[dict[str, Any]]:
    items = (result or {}).get("content")
    return (
        [i for i in items if isinstance(i, dict) and i.get("type") == kind] if isinstance(items, list) else []
    )


# --- Lesson 16: structured output, links, annotations -------------------------------------------


@check("output-schema-listed", "List the tools and find one that declares an `outputSchema`.")
def output_schema_listed(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        tools = (result_of(response) or {}).get("tools")
        named = [
            x.get("name")
            for x in tools or []
            if isinstance(x, dict) and isinstance(x.get("outputSchema"), dict)
        ]
        return f"`{named[0]}` declares an `outputSchema`: its answers have a known shape." if named else None

    return judge(
        list(exchanges(t, "tools/list")),
        passes,
        unsent="Complete the handshake, then send `tools/list`.",
        failed="No tool in that list declares an `outputSchema`. Is this the first page (no `cursor`)?",
    )


@check("structured-content-received", "Call a tool that answers with `structuredContent`.")
def structured_content_received(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or result.get("isError") is True or "structuredContent" not in result:
            return None
        return f"`{params_of(request).get('name')}` answered with `structuredContent` and a text copy."

    def failed(request: Entry, response: Entry) -> str:
        if error_of(response) is not None:
            return answered_with(request, response)
        if (result_of(response) or {}).get("isError") is True:
            return f"The tool failed: {first_text(result_of(response) or {})}"
        return "That result has no `structuredContent`. Call `get_book`, which declares an `outputSchema`."

    return judge(_calls(t), passes, unsent="Call `get_book` with a `book_id` such as b-101.", failed=failed)


@check("resource-link-followed", "Get a `resource_link` from a tool, then read the resource it names.")
def resource_link_followed(t: Transcript) -> Outcome:
    linked: dict[str, int] = {}  # uri -> seq of the result that named it
    for _request, response in reversed(_calls(t)):
        for link in _content(result_of(response), "resource_link"):
            if isinstance(link.get("uri"), str) and response is not None:
                linked.setdefault(link["uri"], response.seq)
    if not linked:
        calls = _calls(t)
        if calls and calls[0][1] is None:
            return False, waiting(calls[0][0])
        return False, "Call `search_books` with a word of a title or an author, to get resource links."
    reads = newest_first(t, [r for r in requests(t, "resources/read") if params_of(r).get("uri") in linked])
    for request, response in reads:
        uri = params_of(request)["uri"]
        if request.seq > linked[uri] and (result_of(response) or {}).get("contents"):
            return True, f"You followed the link to {uri} with `resources/read`."
    if reads and reads[0][1] is None:
        return False, waiting(reads[0][0])
    return False, f"Now read one of the links: `resources/read` with a `uri` such as {next(iter(linked))}."


@check("embedded-resource-received", 'Call a tool whose result embeds a resource (`"type": "resource"`).')
def embedded_resource_received(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        embedded = _content(result_of(response), "resource")
        if not embedded or not isinstance(embedded[0].get("resource"), dict):
            return None
        return f"The result embedded {embedded[0]['resource'].get('uri')}, contents included."

    return judge(
        _calls(t),
        passes,
        unsent="Call `book_card` with a `book_id` such as b-102.",
        failed="That result embeds no resource. Call `book_card`.",
    )


def _destructive(tool: dict[str, Any]) -> bool:
    """Annotation defaults: destructive unless read-only or said otherwise."""
    notes = tool.get("annotations")
    if not isinstance(notes, dict) or notes.get("readOnlyHint") is True:
        return False
    return notes.get("destructiveHint", True) is True


@check("destructive-tool-called", "From `tools/list`, find the tool marked destructive and call it.")
def destructive_tool_called(t: Transcript) -> Outcome:
    marked: dict[str, int] = {}  # tool name -> seq of the list that marked it
    for _request, response in reversed(list(exchanges(t, "tools/list"))):
        for tool in (result_of(response) or {}).get("tools") or []:
            if isinstance(tool, dict) and _destructive(tool) and response is not None:
                marked.setdefault(str(tool.get("name")), response.seq)
    if not marked:
        return False, "List the tools (`tools/list`) and read their `annotations`."

    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None:
            return None
        name = params_of(request).get("name")
        return f"You called `{name}` knowing its annotations say it is destructive: {first_text(result)}"

    # Only calls after the list that marked the tool: the point is to read the hint first.
    calls = [(r, s) for r, s in _calls(t) if r.seq > marked.get(str(params_of(r).get("name")), r.seq)]
    return judge(
        calls,
        passes,
        unsent="Which tool has `destructiveHint: true` (and is not read-only)? Call that one.",
        failed=answered_with,
    )


@check(
    "older-revision-listed", "On a session older than 2025-06-18, list the tools and see what is left out."
)
def older_revision_listed(t: Transcript) -> Outcome:
    opened = first_good_initialize(t)
    if opened is None:
        return False, "Complete the handshake the console starts with (2025-03-26)."
    version = str((result_of(opened[1]) or {}).get("protocolVersion"))
    if version >= TITLES_FROM:
        return False, f"This session agreed on {version}. Restart and initialize with 2025-03-26."

    def passes(_request: Entry, response: Entry | None) -> str | None:
        tools = (result_of(response) or {}).get("tools")
        if not isinstance(tools, list) or not tools:
            return None
        if any(isinstance(x, dict) and ({"title", "outputSchema", "icons"} & x.keys()) for x in tools):
            return None
        return f"On {version} the tools come without title, outputSchema and icons."

    listed = [(r, s) for r, s in exchanges(t, "tools/list") if r.seq > opened[1].seq]
    return judge(
        listed,
        passes,
        unsent="Now send `tools/list` on this session.",
        failed=f"That list still carries fields {version} lacks.",
    )


# --- Lesson 17: pagination and completion ------------------------------------------------------


@check("next-cursor-seen", "Send a list request and get a page that ends with a `nextCursor`.")
def next_cursor_seen(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or not isinstance(result.get("nextCursor"), str):
            return None
        count = len(result.get(LIST_KEYS[str(request.method)]) or [])
        return f"`{request.method}` gave {count} items and a `nextCursor`: there is more."

    return judge(
        _list_exchanges(t),
        passes,
        unsent="Complete the handshake, then send `resources/list` (or `tools/list`).",
        failed=lambda request, response: (
            answered_with(request, response)
            if error_of(response)
            else "That page was the last. Ask from the start, without a cursor."
        ),
    )


@check("cursor-followed-to-end", "Follow `nextCursor` with `cursor` until a page comes without one.")
def cursor_followed_to_end(t: Transcript) -> Outcome:
    given = {
        (result_of(s) or {}).get("nextCursor")
        for _r, s in _list_exchanges(t)
        if isinstance((result_of(s) or {}).get("nextCursor"), str)
    }
    with_cursor = [(r, s) for r, s in _list_exchanges(t) if "cursor" in params_of(r)]

    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or "nextCursor" in result or params_of(request)["cursor"] not in given:
            return None
        return f"Message #{request.seq} got the last page of `{request.method}`: no `nextCursor`."

    def failed(request: Entry, response: Entry) -> str:
        if error_of(response) is not None:
            return f"{answered_with(request, response)} Copy a `nextCursor` exactly as the server gave it."
        return "Not the end yet: that page has a `nextCursor` too. Send it as the next `cursor`."

    return judge(
        with_cursor,
        passes,
        unsent='List from the start, then send the same method with `"params": {"cursor": <the nextCursor>}`.',
        failed=failed,
        before_reply=lambda request: (
            None if params_of(request)["cursor"] in given else "That cursor is not one the server gave you."
        ),
    )


@check(
    "invalid-cursor-refused", "Send a list request with a cursor the server never gave, and read the error."
)
def invalid_cursor_refused(t: Transcript) -> Outcome:
    with_cursor = [(r, s) for r, s in _list_exchanges(t) if "cursor" in params_of(r)]
    return judge(
        with_cursor,
        refused,
        unsent='Send `resources/list` with `"params": {"cursor": "..."}` and a cursor of your own making.',
        failed="The server accepted that cursor. Make one up instead.",
    )


def _completion(response: Entry | None) -> dict[str, Any] | None:
    completion = (result_of(response) or {}).get("completion")
    return completion if isinstance(completion, dict) and isinstance(completion.get("values"), list) else None


def _completed(request: Entry, response: Entry) -> str:
    if error_of(response) is not None:
        return f"{answered_with(request, response)} Check `ref` and `argument`'s name."
    return "No values came back. Try a shorter `value` (an empty one asks for everything)."


@check("completion-values-received", "Ask `completion/complete` for an argument's values and get some.")
def completion_values_received(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        completion = _completion(response)
        if not completion or not completion["values"]:
            return None
        return f"Suggested: {', '.join(map(str, completion['values']))}."

    return judge(
        list(exchanges(t, "completion/complete")),
        passes,
        unsent="Send `completion/complete` for the prompt `recommend`, argument `genre`.",
        failed=_completed,
    )


@check(
    "completion-with-context", "Complete a template variable, passing the one already chosen in `context`."
)
def completion_with_context(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        context = params_of(request).get("context")
        completion = _completion(response)
        if (
            not isinstance(context, dict)
            or not context.get("arguments")
            or not completion
            or not completion["values"]
        ):
            return None
        return f"With {context['arguments']} in context: {', '.join(map(str, completion['values']))}."

    def failed(request: Entry, response: Entry) -> str:
        if not params_of(request).get("context"):
            return 'Add `"context": {"arguments": {"genre": "mystery"}}` to the request.'
        return _completed(request, response)

    return judge(
        list(exchanges(t, "completion/complete")),
        passes,
        unsent="Send `completion/complete` for `author` of `library://shelves/{genre}/{author}`, with a genre in `context`.",
        failed=failed,
    )


# --- Lesson 18: URL-mode elicitation -------------------------------------------------------------


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
        _calls(t),
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
        if reply is None or (reply.message.get("result") or {}).get("action") != "accept":
            continue
        for call, response in _calls(t):
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
    calls = _calls(t)
    if calls and calls[0][1] is None:
        return False, waiting(calls[0][0])
    if calls:
        return False, 'No URL-mode request came. Did `initialize` declare `"elicitation": {"url": {}}`?'
    return False, 'Declare `"elicitation": {"url": {}}` in `initialize`, then call `connect_album`.'


def _ids_asked(t: Transcript) -> set[str]:
    """elicitationIds the server asked under: in elicitation/create, or in a -32042 error's data."""
    ids = {str(params_of(q).get("elicitationId")) for q in _url_questions(t)}
    for _request, response in _calls(t):
        error = error_of(response)
        if error is not None and error.get("code") == URL_ELICITATION_REQUIRED:
            data = error.get("data")
            data = data if isinstance(data, dict) else {}
            ids |= {
                str(e.get("elicitationId")) for e in data.get("elicitations") or [] if isinstance(e, dict)
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
    required = [(r, s) for r, s in _calls(t) if (error_of(s) or {}).get("code") == URL_ELICITATION_REQUIRED]
    if not required:
        calls = _calls(t)
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

    retries = [(r, s) for r, s in _calls(t, str(tool)) if r.seq > answer.seq]
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
            isinstance(q, dict) and (q.get("params") or {}).get("mode") == "url" for q in questions.values()
        )

    calls = _calls(t)
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
