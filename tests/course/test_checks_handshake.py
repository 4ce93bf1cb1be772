"""Lesson 4's hands-on checks (the initialize handshake), passing and failing."""

from __future__ import annotations

from tests.course.checkhelp import INITIALIZED, error, fails, init, init_result, passes, transcript


def test_ping_answered() -> None:
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    passes(
        "ping-answered",
        transcript((">", ping), ("<", {"jsonrpc": "2.0", "id": 5, "result": {}})),
        "empty result",
    )
    fails("ping-answered", transcript(), "not sent a `ping`")
    fails("ping-answered", transcript((">", ping)), "Waiting")
    fails("ping-answered", transcript((">", ping), ("<", error(5, -32601))), "-32601")


def test_initialize_answered() -> None:
    passes("initialize-answered", transcript((">", init()), ("<", init_result())), "'demo-orders'")
    fails("initialize-answered", transcript(), "not sent an `initialize`")
    no_id = {k: v for k, v in init().items() if k != "id"}
    fails("initialize-answered", transcript((">", no_id)), "no `id`")
    fails("initialize-answered", transcript((">", init(version=None))), "no `params.protocolVersion`")
    fails("initialize-answered", transcript((">", init())), "Waiting")
    fails("initialize-answered", transcript((">", init()), ("<", error(1))), "-32602")
    # A later failed attempt does not undo an earlier success.
    t = transcript((">", init()), ("<", init_result()), (">", init(2, clientInfo=None)), ("<", error(2)))
    passes("initialize-answered", t, "demo-orders")


def test_initialize_rejected() -> None:
    bad = init(clientInfo=None)
    passes("initialize-rejected", transcript((">", bad), ("<", error(1))), "-32602")
    fails("initialize-rejected", transcript((">", init()), ("<", init_result())), "accepted every")
    fails("initialize-rejected", transcript((">", bad)), "Waiting")
    fails("initialize-rejected", transcript(), "not sent an `initialize`")


def test_initialized_after_reply() -> None:
    good = transcript((">", init()), ("<", init_result()), (">", INITIALIZED))
    passes("initialized-after-reply", good, "after the server's reply")
    fails("initialized-after-reply", transcript((">", INITIALIZED)), "First get a successful result")
    early = transcript((">", init()), (">", INITIALIZED), ("<", init_result()))
    fails("initialized-after-reply", early, "before the `initialize` reply")
    with_id = transcript((">", init()), ("<", init_result()), (">", {**INITIALIZED, "id": 2}))
    fails("initialized-after-reply", with_id, "carries an `id`")
    fails("initialized-after-reply", transcript((">", init()), ("<", init_result())), "now send")
    refused = transcript((">", init()), ("<", error(1)), (">", INITIALIZED))
    fails("initialized-after-reply", refused, "First get a successful result")


def test_client_capabilities_declared() -> None:
    t = transcript((">", init(caps={"roots": {"listChanged": True}})), ("<", init_result()))
    passes(
        "client-capabilities-declared", t, "You declared roots; the server declared prompts, resources, tools"
    )
    fails("client-capabilities-declared", transcript((">", init()), ("<", init_result())), "is empty")
    fails("client-capabilities-declared", transcript((">", init(caps={"sampling": {}}))), "Waiting")
    fails("client-capabilities-declared", transcript(), "not sent an `initialize`")


def test_used_declared_capability() -> None:
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    tools = {"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "get_order_status"}]}}
    handshake = ((">", init()), ("<", init_result()), (">", INITIALIZED))
    passes(
        "used-declared-capability",
        transcript(*handshake, (">", tools_list), ("<", tools)),
        "1 tool came back",
    )
    fails("used-declared-capability", transcript(), "complete the handshake")
    fails(
        "used-declared-capability",
        transcript((">", init()), ("<", init_result())),
        "send `notifications/initialized`",
    )
    early = transcript(
        (">", init()), ("<", init_result()), (">", tools_list), ("<", tools), (">", INITIALIZED)
    )
    fails("used-declared-capability", early, "Now send `tools/list`")
    fails("used-declared-capability", transcript(*handshake, (">", tools_list)), "Waiting for a result")


def test_version_counter_offer() -> None:
    offer = transcript((">", init(version="1999-01-01")), ("<", init_result(version="2025-11-25")))
    passes(
        "version-counter-offer",
        offer,
        "asked for '1999-01-01'; with no error, the server offered '2025-11-25'",
    )
    agreed = transcript((">", init(version="2025-06-18")), ("<", init_result(version="2025-06-18")))
    fails("version-counter-offer", agreed, "which the server supports")
    fails("version-counter-offer", transcript(), "1999-01-01")
    fails("version-counter-offer", transcript((">", init(version="1999-01-01"))), "Waiting")
    refused = transcript((">", init(version="1999-01-01", clientInfo=None)), ("<", error(1)))
    fails("version-counter-offer", refused, "The version is not the problem")
