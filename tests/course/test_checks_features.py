"""Lessons 16 to 18: structured output and links, pagination and completion, URL-mode elicitation."""

from __future__ import annotations

from tests.course.checkhelp import (
    HANDSHAKE,
    INITIALIZED,
    error,
    fails,
    init,
    init_result,
    note,
    passes,
    req,
    res,
    text_result,
    transcript,
)

BOOK = {"book_id": "b-101", "title": "The Salt Road"}


def call(id_: int, name: str, arguments: dict | None = None, **params: object) -> dict:
    return req(id_, "tools/call", {"name": name, "arguments": arguments or {}, **params})


def tools(*entries: dict) -> dict:
    return {"tools": [{"name": "t", "inputSchema": {"type": "object"}, **e} for e in entries]}


# --- lesson 16 -----------------------------------------------------------------------------------


def test_output_schema_listed() -> None:
    fails("output-schema-listed", transcript(*HANDSHAKE), "send `tools/list`")
    t = transcript(*HANDSHAKE, (">", req(2, "tools/list")))
    fails("output-schema-listed", t, "Waiting for the reply")
    t.add_server("r", res(2, tools({"name": "plain"})))
    fails("output-schema-listed", t, "No tool in that list declares")
    listed = transcript(*HANDSHAKE, (">", req(2, "tools/list")),
                        ("<", res(2, tools({"name": "get_book", "outputSchema": {"type": "object"}}))))  # fmt: skip
    passes("output-schema-listed", listed, "`get_book` declares an `outputSchema`")


def test_structured_content_received() -> None:
    fails("structured-content-received", transcript(*HANDSHAKE), "Call `get_book`")
    plain = transcript(*HANDSHAKE, (">", call(2, "library_hours")), ("<", res(2, text_result("9 to 7"))))
    fails("structured-content-received", plain, "has no `structuredContent`")
    failed = transcript(*HANDSHAKE, (">", call(2, "get_book")), ("<", res(2, text_result("No book", True))))
    fails("structured-content-received", failed, "The tool failed: No book")
    good = {**text_result("{...}"), "structuredContent": BOOK}
    done = transcript(*HANDSHAKE, (">", call(2, "get_book", {"book_id": "b-101"})), ("<", res(2, good)))
    passes("structured-content-received", done, "`get_book` answered with `structuredContent`")


LINK = {"type": "resource_link", "uri": "library://books/b-101", "name": "b-101"}


def test_resource_link_followed() -> None:
    fails("resource-link-followed", transcript(*HANDSHAKE), "Call `search_books`")
    found = res(2, {"content": [{"type": "text", "text": "1 match"}, LINK], "isError": False})
    t = transcript(*HANDSHAKE, (">", call(2, "search_books", {"words": "salt"})), ("<", found))
    fails("resource-link-followed", t, "Now read one of the links")
    t.add_client("r", req(3, "resources/read", {"uri": "library://books/b-101"}))
    fails("resource-link-followed", t, "Waiting for the reply")
    t.add_server("c", res(3, {"contents": [{"uri": "library://books/b-101", "text": "# The Salt Road"}]}))
    passes("resource-link-followed", t, "followed the link to library://books/b-101")
    # Reading some other resource is not following a link.
    other = transcript(*HANDSHAKE, (">", call(2, "search_books", {"words": "salt"})), ("<", found),
                       (">", req(3, "resources/read", {"uri": "library://books/b-102"})),
                       ("<", res(3, {"contents": [{"uri": "library://books/b-102", "text": "x"}]})))  # fmt: skip
    fails("resource-link-followed", other, "Now read one of the links")


def test_embedded_resource_received() -> None:
    fails("embedded-resource-received", transcript(*HANDSHAKE), "Call `book_card`")
    linked = transcript(*HANDSHAKE, (">", call(2, "search_books")), ("<", res(2, {"content": [LINK]})))
    fails("embedded-resource-received", linked, "embeds no resource")
    card = {"type": "resource", "resource": {"uri": "library://books/b-102", "text": "# Quiet Orbit"}}
    done = transcript(
        *HANDSHAKE, (">", call(2, "book_card")), ("<", res(2, {"content": [card], "isError": False}))
    )
    passes("embedded-resource-received", done, "embedded library://books/b-102")


LISTED = res(2, tools(
    {"name": "get_book", "annotations": {"readOnlyHint": True}},
    {"name": "reserve_book", "annotations": {"readOnlyHint": False, "destructiveHint": False}},
    {"name": "cancel_reservations", "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "unmarked"},
))  # fmt: skip


def test_destructive_tool_called() -> None:
    fails("destructive-tool-called", transcript(*HANDSHAKE), "List the tools")
    listed = (*HANDSHAKE, (">", req(2, "tools/list")), ("<", LISTED))
    fails("destructive-tool-called", transcript(*listed), "Which tool has `destructiveHint: true`")
    safe = transcript(*listed, (">", call(3, "reserve_book")), ("<", res(3, text_result("reserved"))))
    fails("destructive-tool-called", safe, "Which tool has")
    done = transcript(
        *listed, (">", call(3, "cancel_reservations")), ("<", res(3, text_result("Cancelled 0")))
    )
    passes("destructive-tool-called", done, "`cancel_reservations` knowing its annotations")
    # Called before it was listed: the learner did not read the hint first.
    blind = transcript(*HANDSHAKE, (">", call(2, "cancel_reservations")), ("<", res(2, text_result("x"))),
                       (">", req(3, "tools/list")), ("<", {**LISTED, "id": 3}))  # fmt: skip
    fails("destructive-tool-called", blind, "Which tool has")


def test_older_revision_listed() -> None:
    fails("older-revision-listed", transcript(), "Complete the handshake")
    newer = transcript((">", init(version="2025-11-25")), ("<", init_result(version="2025-11-25")))
    fails("older-revision-listed", newer, "agreed on 2025-11-25")
    opened = ((">", init(version="2025-03-26")), ("<", init_result(version="2025-03-26")), (">", INITIALIZED))
    fails("older-revision-listed", transcript(*opened), "Now send `tools/list`")
    full = transcript(*opened, (">", req(2, "tools/list")), ("<", res(2, tools({"name": "a", "title": "A"}))))
    fails("older-revision-listed", full, "still carries fields 2025-03-26 lacks")
    trimmed = transcript(*opened, (">", req(2, "tools/list")), ("<", res(2, tools({"name": "a"}))))
    passes("older-revision-listed", trimmed, "On 2025-03-26 the tools come without")


# --- lesson 17 -----------------------------------------------------------------------------------

PAGE_1 = res(2, {"resources": [{"uri": "u1", "name": "1"}], "nextCursor": "c2"})


def test_next_cursor_seen() -> None:
    fails("next-cursor-seen", transcript(*HANDSHAKE), "send `resources/list`")
    last = transcript(*HANDSHAKE, (">", req(2, "prompts/list")), ("<", res(2, {"prompts": []})))
    fails("next-cursor-seen", last, "That page was the last")
    refused = transcript(*HANDSHAKE, (">", req(2, "tools/list", {"cursor": "x"})), ("<", error(2)))
    fails("next-cursor-seen", refused, "error -32602")
    t = transcript(*HANDSHAKE, (">", req(2, "resources/list")), ("<", PAGE_1))
    passes("next-cursor-seen", t, "`resources/list` gave 1 items and a `nextCursor`")


def test_cursor_followed_to_end() -> None:
    fails("cursor-followed-to-end", transcript(*HANDSHAKE), "List from the start")
    start = (*HANDSHAKE, (">", req(2, "resources/list")), ("<", PAGE_1))
    made_up = transcript(*start, (">", req(3, "resources/list", {"cursor": "c9"})))
    fails("cursor-followed-to-end", made_up, "not one the server gave you")
    t = transcript(*start, (">", req(3, "resources/list", {"cursor": "c2"})))
    fails("cursor-followed-to-end", t, "Waiting for the reply")
    t.add_server("p2", res(3, {"resources": [{"uri": "u2", "name": "2"}], "nextCursor": "c3"}))
    fails("cursor-followed-to-end", t, "Not the end yet")
    t.add_client("r", req(4, "resources/list", {"cursor": "c3"}))
    t.add_server("p3", res(4, {"resources": [{"uri": "u3", "name": "3"}]}))
    passes("cursor-followed-to-end", t, "Message #8 got the last page of `resources/list`")


def test_invalid_cursor_refused() -> None:
    fails("invalid-cursor-refused", transcript(*HANDSHAKE), "a cursor of your own making")
    accepted = transcript(*HANDSHAKE, (">", req(2, "resources/list", {"cursor": "c2"})), ("<", PAGE_1))
    fails("invalid-cursor-refused", accepted, "accepted that cursor")
    t = transcript(*HANDSHAKE, (">", req(2, "tools/list", {"cursor": "nope"})), ("<", error(2)))
    passes("invalid-cursor-refused", t, "refused with error -32602")


PROMPT_REF = {"ref": {"type": "ref/prompt", "name": "recommend"}, "argument": {"name": "genre", "value": "f"}}
SHELF = {"ref": {"type": "ref/resource", "uri": "library://shelves/{genre}/{author}"},
         "argument": {"name": "author", "value": ""}}  # fmt: skip


def completion(id_: int, *values: str) -> dict:
    return res(id_, {"completion": {"values": list(values), "total": len(values), "hasMore": False}})


def test_completion_values_received() -> None:
    fails("completion-values-received", transcript(*HANDSHAKE), "for the prompt `recommend`")
    empty = transcript(*HANDSHAKE, (">", req(2, "completion/complete", PROMPT_REF)), ("<", completion(2)))
    fails("completion-values-received", empty, "No values came back")
    wrong = transcript(*HANDSHAKE, (">", req(2, "completion/complete", PROMPT_REF)), ("<", error(2)))
    fails("completion-values-received", wrong, "Check `ref`")
    t = transcript(
        *HANDSHAKE, (">", req(2, "completion/complete", PROMPT_REF)), ("<", completion(2, "fantasy"))
    )
    passes("completion-values-received", t, "Suggested: fantasy.")


def test_completion_with_context() -> None:
    fails("completion-with-context", transcript(*HANDSHAKE), "with a genre in `context`")
    bare = transcript(*HANDSHAKE, (">", req(2, "completion/complete", SHELF)), ("<", completion(2, "a", "b")))
    fails("completion-with-context", bare, 'Add `"context"')
    with_context = {**SHELF, "context": {"arguments": {"genre": "mystery"}}}
    t = transcript(*HANDSHAKE, (">", req(2, "completion/complete", with_context)),
                   ("<", completion(2, "meera-pillai", "sunil-varma")))  # fmt: skip
    passes("completion-with-context", t, "meera-pillai, sunil-varma")


# --- lesson 18 -----------------------------------------------------------------------------------

URL_CAPS = {"elicitation": {"url": {}}}
OPENED = ((">", init(caps=URL_CAPS, version="2025-11-25")), ("<", init_result(version="2025-11-25")),
          (">", INITIALIZED))  # fmt: skip
ASK = req(1, "elicitation/create", {"mode": "url", "message": "Sign in", "url": "https://photos.example/connect",
                                    "elicitationId": "sign-in-1"})  # fmt: skip
REQUIRED = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32042, "message": "Sign in first",
            "data": {"elicitations": [{**ASK["params"]}]}}}  # fmt: skip
COMPLETE = note("notifications/elicitation/complete", {"elicitationId": "sign-in-1"})


def test_url_mode_undeclared_refused() -> None:
    fails("url-mode-undeclared-refused", transcript(*HANDSHAKE), "call `connect_album`")
    refusal = text_result("Signing in needs URL-mode elicitation, and this client did not declare it", True)
    t = transcript(*HANDSHAKE, (">", call(2, "connect_album")), ("<", res(2, refusal)))
    passes("url-mode-undeclared-refused", t, "The tool asked nothing")
    other = transcript(*HANDSHAKE, (">", call(2, "connect_album")), ("<", res(2, text_result("ok"))))
    fails("url-mode-undeclared-refused", other, "The tool did not refuse")


def test_url_elicitation_accepted() -> None:
    fails("url-elicitation-accepted", transcript(*OPENED), 'Declare `"elicitation": {"url": {}}`')
    asked = (*OPENED, (">", call(2, "connect_album")), ("<", ASK))
    fails("url-elicitation-accepted", transcript(*asked), "Answer it: a response with that id")
    declined = transcript(
        *asked, (">", res(1, {"action": "decline"})), ("<", res(2, text_result("Not connected")))
    )
    fails("url-elicitation-accepted", declined, 'was not `{"action": "accept"}`')
    t = transcript(*asked, (">", res(1, {"action": "accept"})))
    fails("url-elicitation-accepted", t, "Waiting for the tool's result")
    t.add_server("r", res(2, text_result("The user agreed to open")))
    passes("url-elicitation-accepted", t, "You accepted to open https://photos.example/connect")
    form = req(
        1, "elicitation/create", {"mode": "form", "message": "x", "requestedSchema": {"type": "object"}}
    )
    no_url = transcript(*OPENED, (">", call(2, "book")), ("<", form), (">", res(1, {"action": "accept"})),
                        ("<", res(2, text_result("done"))))  # fmt: skip
    fails("url-elicitation-accepted", no_url, "No URL-mode request came")


def test_elicitation_complete_received() -> None:
    fails("elicitation-complete-received", transcript(*OPENED), "Call `connect_album`")
    asked = (*OPENED, (">", call(2, "connect_album")), ("<", ASK), (">", res(1, {"action": "accept"})),
             ("<", res(2, text_result("agreed"))))  # fmt: skip
    fails("elicitation-complete-received", transcript(*asked), "Call `finish_sign_in`")
    stranger = note("notifications/elicitation/complete", {"elicitationId": "someone-else"})
    fails("elicitation-complete-received", transcript(*asked, ("<", stranger)), "a client ignores it")
    passes("elicitation-complete-received", transcript(*asked, ("<", COMPLETE)), "sign-in-1 is complete")
    # The id may come from a -32042 error instead of a request.
    by_error = transcript(*OPENED, (">", call(2, "print_photos")), ("<", REQUIRED), ("<", COMPLETE))
    passes("elicitation-complete-received", by_error, "sign-in-1 is complete")


def test_url_required_retried() -> None:
    fails("url-required-retried", transcript(*OPENED), "Call `print_photos` before signing in")
    other = transcript(*OPENED, (">", call(2, "print_photos")), ("<", error(2)))
    fails("url-required-retried", other, "not -32042")
    required = (*OPENED, (">", call(2, "print_photos", {"copies": 2})), ("<", REQUIRED))
    fails("url-required-retried", transcript(*required), "then call `print_photos` again")
    early = {**REQUIRED, "id": 4}
    t = transcript(*required, (">", call(4, "print_photos", {"copies": 2})), ("<", early))
    fails("url-required-retried", t, "finish the sign-in first")
    t.add_client("f", call(5, "finish_sign_in"))
    t.add_server("n", COMPLETE)
    t.add_server("d", res(5, text_result("signed in")))
    t.add_client("p", call(6, "print_photos", {"copies": 2}))
    t.add_server("r", res(6, text_result("Printing 2 copies")))
    passes("url-required-retried", t, "went through: Printing 2 copies")


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": URL_CAPS}  # fmt: skip
INTERIM = res(1, {"resultType": "input_required", "inputRequests": {"sign_in": {
    "method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": "https://photos.example/connect"}}}})  # fmt: skip
ANSWERS = {"sign_in": {"action": "accept"}}


def test_url_input_required_completed() -> None:
    fails("url-input-required-completed", transcript(), "Call `connect_album`")
    asked = ((">", call(1, "connect_album", _meta=META)), ("<", INTERIM))
    fails("url-input-required-completed", transcript(*asked), "Retry the call with a new id")
    same_id = transcript(*asked, (">", call(1, "connect_album", _meta=META, inputResponses=ANSWERS)),
                         ("<", res(1, {"resultType": "complete", **text_result("Signed in")})))  # fmt: skip
    fails("url-input-required-completed", same_id, "reused the id 1")
    t = transcript(*asked, (">", call(2, "connect_album", _meta=META, inputResponses=ANSWERS)))
    fails("url-input-required-completed", t, "Waiting for the reply")
    t.add_server("r", res(2, {"resultType": "complete", **text_result("Signed in")}))
    passes("url-input-required-completed", t, "The retry (message #3), a new request, completed the call")
