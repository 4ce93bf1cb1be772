"""Lessons 16 and 17: structured tool output and links, pagination and completion (lesson 18, URL-mode
elicitation, is elicitation.py)."""

from __future__ import annotations

from typing import Any

from app.course.checks import (
    Exchange,
    Outcome,
    answered_with,
    check,
    error_of,
    exchanges,
    first_good_initialize,
    first_text,
    items,
    judge,
    key,
    newest_first,
    params_of,
    refused,
    requests,
    result_of,
    waiting,
)
from app.protocol.transcript import Entry, Transcript

LIST_METHODS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
LIST_KEYS = {"tools/list": "tools", "resources/list": "resources", "resources/templates/list": "resourceTemplates",
             "prompts/list": "prompts"}  # fmt: skip
# The revision that brought title, outputSchema, structuredContent and resource links.
TITLES_FROM = "2025-06-18"


def tool_calls(t: Transcript, tool: str | None = None) -> list[Exchange]:
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
            for x in items(tools)
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

    return judge(
        tool_calls(t), passes, unsent="Call `get_book` with a `book_id` such as b-101.", failed=failed
    )


@check("resource-link-followed", "Get a `resource_link` from a tool, then read the resource it names.")
def resource_link_followed(t: Transcript) -> Outcome:
    linked: dict[str, int] = {}  # uri -> seq of the result that named it
    for _request, response in reversed(tool_calls(t)):
        for link in _content(result_of(response), "resource_link"):
            if isinstance(link.get("uri"), str) and response is not None:
                linked.setdefault(link["uri"], response.seq)
    if not linked:
        calls = tool_calls(t)
        if calls and calls[0][1] is None:
            return False, waiting(calls[0][0])
        return False, "Call `search_books` with a word of a title or an author, to get resource links."
    reads = newest_first(
        t, [r for r in requests(t, "resources/read") if key(params_of(r).get("uri")) in linked]
    )
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
        tool_calls(t),
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
        for tool in items((result_of(response) or {}).get("tools")):
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
    calls = [(r, s) for r, s in tool_calls(t) if r.seq > marked.get(str(params_of(r).get("name")), r.seq)]
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
        count = len(items(result.get(LIST_KEYS[str(request.method)])))
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
            None
            if key(params_of(request)["cursor"]) in given
            else "That cursor is not one the server gave you."
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
