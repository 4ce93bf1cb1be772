"""Lessons 2, 3, 5 and 6: JSON-RPC, transports, tools, resources and prompts checks."""

from __future__ import annotations

from tests.course.checkhelp import (
    HANDSHAKE,
    error,
    fails,
    note,
    passes,
    req,
    res,
    text_result,
    transcript,
)

PING = req(1, "ping")


def test_string_id_answered() -> None:
    passes("string-id-answered", transcript((">", req("abc", "ping")), ("<", res("abc", {}))), "'abc'")
    fails("string-id-answered", transcript(), "not sent a request")
    fails("string-id-answered", transcript((">", PING), ("<", res(1, {}))), "use number ids")
    fails("string-id-answered", transcript((">", req("abc", "ping"))), "Waiting")


def test_method_not_found_seen() -> None:
    passes("method-not-found-seen", transcript((">", req(1, "x/y")), ("<", error(1, -32601))), "-32601")
    fails("method-not-found-seen", transcript(), "Invent a method name")
    fails("method-not-found-seen", transcript((">", PING)), "Waiting")
    fails(
        "method-not-found-seen",
        transcript((">", PING), ("<", res(1, {}))),
        "`ping` is a method the server knows",
    )


def test_notification_then_request() -> None:
    passes(
        "notification-then-request",
        transcript((">", note("notifications/hello")), (">", PING), ("<", res(1, {}))),
        "Nothing answered your `notifications/hello`",
    )
    fails("notification-then-request", transcript((">", PING), ("<", res(1, {}))), "not sent a notification")
    fails("notification-then-request", transcript((">", note("n/x"))), "got no reply, as it should")
    fails("notification-then-request", transcript((">", note("n/x")), (">", PING)), "Waiting")


def test_round_trip_measured() -> None:
    passes("round-trip-measured", transcript((">", PING), ("<", res(1, {}))), "ms.")
    fails("round-trip-measured", transcript(), "not sent a request")
    fails("round-trip-measured", transcript((">", PING)), "Waiting")


CALL = req(2, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}})


def test_tools_listed() -> None:
    tools = res(2, {"tools": [{"name": "get_order_status", "inputSchema": {"type": "object"}}]})
    passes(
        "tools-listed",
        transcript(*HANDSHAKE, (">", req(2, "tools/list")), ("<", tools)),
        "1 tool(s): get_order_status",
    )
    fails("tools-listed", transcript(), "not sent `tools/list`")
    fails("tools-listed", transcript((">", req(2, "tools/list"))), "Waiting")
    fails("tools-listed", transcript((">", req(2, "tools/list")), ("<", error(2))), "finish the handshake")


def test_tool_called() -> None:
    passes(
        "tool-called",
        transcript(*HANDSHAKE, (">", CALL), ("<", res(2, text_result("shipped")))),
        "returned: shipped",
    )
    fails("tool-called", transcript(), "not sent a `tools/call`")
    fails("tool-called", transcript((">", CALL)), "Waiting")
    fails("tool-called", transcript((">", CALL), ("<", error(2))), "refused with error -32602")
    fails("tool-called", transcript((">", CALL), ("<", res(2, text_result("bad", True)))), "`isError: true`")


def test_tool_error_result() -> None:
    bad = res(2, text_result("Field required", True))
    passes("tool-error-result", transcript((">", CALL), ("<", bad)), "isError true: Field required")
    fails("tool-error-result", transcript(), "not sent a `tools/call`")
    fails("tool-error-result", transcript((">", CALL)), "Waiting")
    fails("tool-error-result", transcript((">", CALL), ("<", error(2))), "That was a protocol error")
    fails(
        "tool-error-result", transcript((">", CALL), ("<", res(2, text_result("ok")))), "The tool succeeded"
    )


def test_tool_call_protocol_error() -> None:
    passes("tool-call-protocol-error", transcript((">", CALL), ("<", error(2))), "no tool ran")
    fails("tool-call-protocol-error", transcript(), "not sent a `tools/call`")
    fails("tool-call-protocol-error", transcript((">", CALL)), "Waiting")
    fails(
        "tool-call-protocol-error", transcript((">", CALL), ("<", res(2, text_result("ok")))), "Remove `name`"
    )


READ = req(3, "resources/read", {"uri": "policy://refunds"})
CONTENTS = res(
    3, {"contents": [{"uri": "policy://refunds", "text": "Refunds above 5000 rupees need approval."}]}
)
GET = req(4, "prompts/get", {"name": "triage", "arguments": {"ticket": "x"}})
MESSAGES = res(4, {"messages": [{"role": "user", "content": {"type": "text", "text": "Classify"}}]})


def test_resource_read() -> None:
    passes("resource-read", transcript((">", READ), ("<", CONTENTS)), "You read policy://refunds")
    fails("resource-read", transcript(), "not sent `resources/read`")
    fails("resource-read", transcript((">", READ)), "Waiting")
    fails(
        "resource-read",
        transcript((">", READ), ("<", error(3))),
        "Use a `uri` that `resources/list` gave you",
    )


def test_resource_not_found() -> None:
    passes("resource-not-found", transcript((">", READ), ("<", error(3))), "refused with error -32602")
    fails("resource-not-found", transcript(), "not sent `resources/read`")
    fails("resource-not-found", transcript((">", READ)), "Waiting")
    fails("resource-not-found", transcript((">", READ), ("<", CONTENTS)), "That URI exists")


def test_prompt_got() -> None:
    passes("prompt-got", transcript((">", GET), ("<", MESSAGES)), "1 message(s)")
    fails("prompt-got", transcript(), "not sent `prompts/get`")
    fails("prompt-got", transcript((">", GET)), "Waiting")
    fails("prompt-got", transcript((">", GET), ("<", error(4, 0))), "error 0")


def test_prompt_refused() -> None:
    passes("prompt-refused", transcript((">", GET), ("<", error(4, 0))), "refused with error 0")
    fails("prompt-refused", transcript(), "not sent `prompts/get`")
    fails("prompt-refused", transcript((">", GET)), "Waiting")
    fails("prompt-refused", transcript((">", GET), ("<", MESSAGES)), "Leave out `arguments`")
