"""Lessons 7 to 10: misbehaving servers, client features, changes over time, the stateless revision."""

from __future__ import annotations

from app.protocol.transcript import Transcript
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


def test_relay_refused_bad_input() -> None:
    t = Transcript(server="demo-orders")
    fails("relay-refused-bad-input", t, "Send the broken message first")
    bad = '{"jsonrpc": "2.0", "id": 1, "method": "ping",}'
    reply = {"jsonrpc": "2.0", "id": None,
             "error": {"code": -32700, "message": "Parse error", "data": {"from": "relay", "reason": "trailing"}}}  # fmt: skip
    t.add_relay_error(bad, reply)
    fails("relay-refused-bad-input", t, "Now fix the message and send it again")
    t.add_client("p", req(1, "ping"))
    fails("relay-refused-bad-input", t, "Now fix the message")  # sent, not yet answered
    t.add_server("r", res(1, {}))
    passes("relay-refused-bad-input", t, "your fixed ping (#2) reached the server")


def test_garbled_line_seen() -> None:
    t = Transcript(server="demo-flaky")
    t.add_server("oops: this line is not JSON\n", None)
    passes("garbled-line-seen", t, "'oops: this line is not JSON'")
    fails("garbled-line-seen", transcript(*HANDSHAKE), "Call the tool `garbled_line`")


def test_stray_response_seen() -> None:
    stray = res("stray-1", text_result("nobody asked"))
    passes("stray-response-seen", transcript(*HANDSHAKE, ("<", stray)), "id 'stray-1'")
    fails("stray-response-seen", transcript(*HANDSHAKE), "Call the tool `unknown_id`")


SLOW = req(2, "tools/call", {"name": "slow_reply", "arguments": {"seconds": 5}})


def cancel(request_id: object) -> dict:
    return note("notifications/cancelled", {"requestId": request_id, "reason": "too slow"})


def test_request_cancelled() -> None:
    passes("request-cancelled", transcript(*HANDSHAKE, (">", SLOW), (">", cancel(2))), "none should")
    crossed = transcript(*HANDSHAKE, (">", SLOW), (">", cancel(2)), ("<", res(2, text_result("done"))))
    passes("request-cancelled", crossed, "can cross the reply")
    fails("request-cancelled", transcript(*HANDSHAKE, (">", SLOW)), "not sent `notifications/cancelled`")
    fails("request-cancelled", transcript(*HANDSHAKE, (">", SLOW), (">", cancel("2"))), "names no request")
    done = transcript(*HANDSHAKE, (">", SLOW), ("<", res(2, text_result("done"))), (">", cancel(2)))
    fails("request-cancelled", done, "still open")


def assistant(*caps: str) -> tuple:
    declared: dict = {c: {} for c in caps}
    return ((">", init(caps=declared)), ("<", init_result()), (">", INITIALIZED))


TRIP = req(2, "tools/call", {"name": "suggest_trip", "arguments": {"city": "Pune"}})
SAMPLE = req(1, "sampling/createMessage", {"messages": [], "maxTokens": 200})
ANSWER = res(
    1, {"role": "assistant", "content": {"type": "text", "text": "Walk the old fort."}, "model": "learner"}
)
DONE = res(2, text_result("Trip idea for Pune, written by learner: Walk the old fort."))


def test_sampling_answered() -> None:
    t = transcript(*assistant("sampling"), (">", TRIP), ("<", SAMPLE), (">", ANSWER), ("<", DONE))
    passes("sampling-answered", t, "the tool finished: Trip idea for Pune")
    fails("sampling-answered", transcript(), "Declare `sampling`")
    fails("sampling-answered", transcript(*assistant("sampling"), (">", TRIP)), "Waiting")
    asked = transcript(*assistant("sampling"), (">", TRIP), ("<", SAMPLE))
    fails("sampling-answered", asked, "Answer it: a response with that id")
    refused = transcript(*assistant("sampling"), (">", TRIP), ("<", SAMPLE), (">", error(1, -1)))
    fails("sampling-answered", refused, "answered with an error")
    pending = transcript(*assistant("sampling"), (">", TRIP), ("<", SAMPLE), (">", ANSWER))
    fails("sampling-answered", pending, "Waiting for the tool's result")
    undeclared = transcript(*assistant(), (">", TRIP), ("<", res(2, text_result("did not declare", True))))
    fails("sampling-answered", undeclared, 'Did your `initialize` declare `"sampling": {}`')


def test_roots_answered() -> None:
    call = req(2, "tools/call", {"name": "find_itineraries", "arguments": {}})
    roots = res(1, {"roots": [{"uri": "file:///home/me/trips", "name": "trips"}]})
    t = transcript(
        *assistant("roots"),
        (">", call),
        ("<", req(1, "roots/list")),
        (">", roots),
        ("<", res(2, text_result("trips"))),
    )
    passes("roots-answered", t, "You answered `roots/list`")
    fails(
        "roots-answered",
        transcript(*assistant("roots"), (">", call), ("<", req(1, "roots/list"))),
        "Answer it",
    )


def test_elicitation_answered() -> None:
    call = req(2, "tools/call", {"name": "book_train", "arguments": {"destination": "Goa"}})
    ask = req(
        1,
        "elicitation/create",
        {"message": "How many?", "requestedSchema": {"type": "object", "properties": {}}},
    )
    accept = res(1, {"action": "accept", "content": {"travellers": 2}})
    t = transcript(
        *assistant("elicitation"),
        (">", call),
        ("<", ask),
        (">", accept),
        ("<", res(2, text_result("Booked 2"))),
    )
    passes("elicitation-answered", t, "Booked 2")
    fails("elicitation-answered", transcript(*assistant("elicitation"), (">", call), ("<", ask)), "Answer it")


def test_undeclared_feature_refused() -> None:
    refusal = res(
        2, text_result("Could not use sampling: the client did not declare the 'sampling' capability", True)
    )
    passes(
        "undeclared-feature-refused",
        transcript(*assistant(), (">", TRIP), ("<", refusal)),
        "without asking you",
    )
    fails("undeclared-feature-refused", transcript(), "then call `suggest_trip`")
    fails("undeclared-feature-refused", transcript(*assistant(), (">", TRIP)), "Waiting")
    t = transcript(*assistant("sampling"), (">", TRIP), ("<", SAMPLE), (">", ANSWER), ("<", DONE))
    fails("undeclared-feature-refused", t, "The tool did not refuse")


LIST = req(3, "tools/list")
CHANGED = note("notifications/tools/list_changed")
TOOLS = res(3, {"tools": [{"name": "count_stock"}, {"name": "return_item"}]})


def test_list_changed_relisted() -> None:
    passes(
        "list-changed-relisted",
        transcript(*HANDSHAKE, ("<", CHANGED), (">", LIST), ("<", TOOLS)),
        "count_stock, return_item",
    )
    fails("list-changed-relisted", transcript(*HANDSHAKE), "Call `open_returns_desk`")
    fails(
        "list-changed-relisted",
        transcript(*HANDSHAKE, (">", LIST), ("<", TOOLS), ("<", CHANGED)),
        "Send `tools/list` again",
    )
    fails("list-changed-relisted", transcript(*HANDSHAKE, ("<", CHANGED), (">", LIST)), "Waiting")


SUB = req(2, "resources/subscribe", {"uri": "sensor://greenhouse/temperature"})
UPDATED = note("notifications/resources/updated", {"uri": "sensor://greenhouse/temperature"})


def test_resource_update_received() -> None:
    passes(
        "resource-update-received",
        transcript(*HANDSHAKE, (">", SUB), ("<", res(2, {})), ("<", UPDATED)),
        "sensor://greenhouse/temperature changed",
    )
    fails("resource-update-received", transcript(*HANDSHAKE), "Subscribe first")
    fails("resource-update-received", transcript(*HANDSHAKE, (">", SUB)), "Waiting")
    fails(
        "resource-update-received", transcript(*HANDSHAKE, (">", SUB), ("<", res(2, {}))), "`set_temperature`"
    )


DIAG = req(
    4, "tools/call", {"_meta": {"progressToken": "p1"}, "name": "run_diagnostics", "arguments": {"steps": 3}}
)


def progress(n: int, token: object = "p1") -> dict:
    return note("notifications/progress", {"progressToken": token, "progress": n, "total": 3})


def test_progress_received() -> None:
    passes(
        "progress-received",
        transcript(*HANDSHAKE, (">", DIAG), ("<", progress(1)), ("<", progress(2))),
        "2 progress notification(s)",
    )
    fails("progress-received", transcript(*HANDSHAKE), "progressToken")
    fails("progress-received", transcript(*HANDSHAKE, (">", DIAG), ("<", progress(1, "other"))), "Waiting")


def log(level: str) -> dict:
    return note(
        "notifications/message", {"level": level, "logger": "greenhouse", "data": "sensor 1 answered"}
    )


def test_debug_log_seen() -> None:
    lower = req(5, "logging/setLevel", {"level": "debug"})
    passes(
        "debug-log-seen",
        transcript(*HANDSHAKE, (">", lower), ("<", res(5, {})), ("<", log("debug"))),
        "sensor 1 answered",
    )
    fails("debug-log-seen", transcript(*HANDSHAKE), '"level": "debug"')
    fails(
        "debug-log-seen",
        transcript(*HANDSHAKE, (">", lower), ("<", res(5, {})), ("<", log("info"))),
        "Call `run_diagnostics`",
    )
    early = transcript(*HANDSHAKE, ("<", log("debug")), (">", lower), ("<", res(5, {})))
    fails("debug-log-seen", early, "Call `run_diagnostics`")


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
DISCOVER = req(1, "server/discover", {"_meta": META})


def test_server_discover_answered() -> None:
    found = res(1, {"supportedVersions": ["2026-07-28"], "capabilities": {}, "resultType": "complete"})
    passes("server-discover-answered", transcript((">", DISCOVER), ("<", found)), "supports 2026-07-28")
    fails("server-discover-answered", transcript(), "not sent `server/discover`")
    fails("server-discover-answered", transcript((">", DISCOVER)), "Waiting")
    bare = req(1, "server/discover")
    fails("server-discover-answered", transcript((">", bare), ("<", error(1))), "needs both envelope keys")
    fails("server-discover-answered", transcript((">", DISCOVER), ("<", error(1, -32601))), "-32601")


def test_envelope_request_answered() -> None:
    tools = req(2, "tools/list", {"_meta": META})
    passes(
        "envelope-request-answered",
        transcript((">", tools), ("<", res(2, {"tools": [], "resultType": "complete"}))),
        "'complete'",
    )
    fails("envelope-request-answered", transcript(), "with the `_meta` envelope")
    fails("envelope-request-answered", transcript((">", tools)), "Waiting")
    bare = req(2, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    fails(
        "envelope-request-answered",
        transcript((">", bare), ("<", error(2))),
        "lacks io.modelcontextprotocol/clientCapabilities",
    )


def test_unsupported_version_seen() -> None:
    old = req(2, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}})
    refusal = {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"},
        },
    }
    passes("unsupported-version-seen", transcript((">", old), ("<", refusal)), "You asked for '2025-11-25'")
    fails("unsupported-version-seen", transcript(), "older revision")
    fails("unsupported-version-seen", transcript((">", old)), "Waiting")
    fails("unsupported-version-seen", transcript((">", DISCOVER), ("<", res(1, {}))), "accepted the revision")


def test_input_required_completed() -> None:
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    first = req(
        3,
        "tools/call",
        {"_meta": meta, "name": "transfer", "arguments": {"amount": 50, "to_account": "DE-42"}},
    )
    interim = res(3, {"resultType": "input_required", "inputRequests": {"k": {}}, "requestState": "s"})
    retry = req(
        4,
        "tools/call",
        {
            **first["params"],
            "inputResponses": {"k": {"action": "accept", "content": {"confirm": True}}},
            "requestState": "s",
        },
    )
    done = res(4, {**text_result("Sent 50.00 EUR to account DE-42."), "resultType": "complete"})
    passes(
        "input-required-completed",
        transcript((">", first), ("<", interim), (">", retry), ("<", done)),
        "completed the call",
    )
    fails("input-required-completed", transcript(), "Call `transfer`")
    fails("input-required-completed", transcript((">", first)), "Waiting")
    fails("input-required-completed", transcript((">", first), ("<", error(3, -32021))), "Declare")
    fails("input-required-completed", transcript((">", first), ("<", interim)), "Now retry")
    fails("input-required-completed", transcript((">", first), ("<", interim), (">", retry)), "Waiting")
    fails(
        "input-required-completed",
        transcript((">", first), ("<", interim), (">", retry), ("<", interim | {"id": 4})),
        "did not complete",
    )
    # The retry is a new request (2026-07-28 basic/patterns/mrtr): the same id does not count.
    same_id = {**retry, "id": 3}
    fails(
        "input-required-completed",
        transcript((">", first), ("<", interim), (">", same_id), ("<", {**done, "id": 3})),
        "reused the id 3",
    )
    second_try = {**retry, "id": 5}
    passes(
        "input-required-completed",
        transcript(
            (">", first), ("<", interim), (">", same_id), ("<", {**done, "id": 3}), (">", second_try),
            ("<", {**done, "id": 5}),
        ),
        "as a new request",
    )  # fmt: skip


def test_legacy_fallback() -> None:
    probe = req(0, "server/discover")
    ok = transcript(
        (">", probe), ("<", error(0, -32601)), (">", init()), ("<", init_result(version="2024-11-05"))
    )
    passes("legacy-fallback", ok, "agreed on 2024-11-05")
    fails("legacy-fallback", transcript(), "Send `server/discover` first")
    fails("legacy-fallback", transcript((">", probe)), "Waiting")
    fails("legacy-fallback", transcript((">", probe), ("<", error(0, -32601))), "fall back to `initialize`")
