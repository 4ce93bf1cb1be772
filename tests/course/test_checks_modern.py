"""Lesson 19, 2026-07-28 in depth: listen streams, two rounds of questions, caching hints, extensions."""

from __future__ import annotations

from app.protocol import messages
from tests.course.checkhelp import fails, note, passes, req, res, text_result, transcript

ENV = messages.envelope()
ASKING = messages.envelope({"elicitation": {}})
APPS = messages.envelope(
    {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
)
SUB = "io.modelcontextprotocol/subscriptionId"
LISTEN = req(1, "subscriptions/listen", {"_meta": ENV, "notifications": {"toolsListChanged": True}})
ACK = note(
    "notifications/subscriptions/acknowledged",
    {"_meta": {SUB: 1}, "notifications": {"toolsListChanged": True}},
)
LISTED = req(2, "tools/list", {"_meta": ENV})


def test_listen_acknowledged() -> None:
    fails("listen-acknowledged", transcript(), "Open a stream")
    fails("listen-acknowledged", transcript((">", LISTEN)), "Waiting for the acknowledgment")
    passes(
        "listen-acknowledged", transcript((">", LISTEN), ("<", ACK)), "the server agreed to: toolsListChanged"
    )
    other = note("notifications/subscriptions/acknowledged", {"_meta": {SUB: 99}, "notifications": {}})
    fails("listen-acknowledged", transcript((">", LISTEN), ("<", other)), "Waiting for the acknowledgment")


def test_listen_notified() -> None:
    changed = note("notifications/tools/list_changed", {"_meta": {SUB: 1}})
    untagged = note("notifications/tools/list_changed")
    fails("listen-notified", transcript((">", LISTEN)), "Waiting for the acknowledgment")
    fails(
        "listen-notified",
        transcript((">", LISTEN), ("<", ACK), (">", LISTED), ("<", untagged)),
        "Wait for a change it asked for",
    )
    passes("listen-notified", transcript((">", LISTEN), ("<", ACK), ("<", changed)), "on stream 1")


def test_a_stream_the_server_closed_is_not_called_open() -> None:
    closing = res(1, {"resultType": "complete", "_meta": {SUB: 1}})
    closed = transcript((">", LISTEN), ("<", ACK), ("<", closing))
    passes("listen-acknowledged", closed, "then closed by the server's answer (message #3)")
    fails("listen-notified", closed, "Your stream 1 is closed: the server answered it (message #3)")


def _call(id_: int, **extra: object) -> dict:
    return req(id_, "tools/call", {"_meta": ASKING, "name": "book_seats", "arguments": {"count": 2}, **extra})


ASKED = {"resultType": "input_required", "inputRequests": {"k1": {}}, "requestState": "s1"}
ASKED_AGAIN = {"resultType": "input_required", "inputRequests": {"k2": {}}, "requestState": "s2"}
DONE = {"resultType": "complete", **text_result("Booked 2 seat(s) in the balcony; 18 left there.")}
ROUND_1 = _call(4, inputResponses={"k1": {"action": "accept"}}, requestState="s1")


def test_input_required_two_rounds() -> None:
    fails("input-required-two-rounds", transcript(), "Call `book_seats`")
    fails("input-required-two-rounds", transcript((">", _call(3))), "Waiting for the reply")
    one = (((">", _call(3))), ("<", res(3, ASKED)))
    fails("input-required-two-rounds", transcript(*one), "You got a first question")
    two = (*one, (">", ROUND_1), ("<", res(4, ASKED_AGAIN)))
    fails("input-required-two-rounds", transcript(*two), "Now answer the second question")
    final = _call(5, inputResponses={"k2": {"action": "accept"}}, requestState="s2")
    passes("input-required-two-rounds", transcript(*two, (">", final), ("<", res(5, DONE))), "Two rounds")
    reused = _call(4, inputResponses={"k2": {"action": "accept"}}, requestState="s2")
    fails(
        "input-required-two-rounds", transcript(*two, (">", reused), ("<", res(4, DONE))), "reused the id 4"
    )


def test_cache_hints_read() -> None:
    listing = req(5, "tools/list", {"_meta": ENV})
    fails("cache-hints-read", transcript(), "Send `tools/list`")
    fails("cache-hints-read", transcript((">", listing), ("<", res(5, {"tools": []}))), "no caching hints")
    hinted = res(5, {"tools": [], "ttlMs": 300000, "cacheScope": "public"})
    passes(
        "cache-hints-read",
        transcript((">", listing), ("<", hinted)),
        'for 300000 ms, by a cache of scope "public"',
    )


def test_extension_fallback_compared() -> None:
    rich = req(10, "tools/call", {"_meta": APPS, "name": "seat_map", "arguments": {}})
    plain = req(11, "tools/call", {"_meta": ENV, "name": "seat_map", "arguments": {}})
    answered_rich = ((">", rich), ("<", res(10, text_result("view"))))
    fails("extension-fallback-compared", transcript(), "Call `seat_map`")
    fails("extension-fallback-compared", transcript(*answered_rich), "without `extensions`")
    fails(
        "extension-fallback-compared",
        transcript((">", plain), ("<", res(11, text_result("map")))),
        "declaring",
    )
    both = transcript(*answered_rich, (">", plain), ("<", res(11, text_result("map"))))
    passes("extension-fallback-compared", both, "`seat_map` answered both ways")
