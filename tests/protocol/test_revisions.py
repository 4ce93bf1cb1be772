"""Our table of differences between the handshake revisions, on top of mcp_types."""

from __future__ import annotations

import pytest

from app.protocol import messages
from app.protocol.revisions import RULES, parse_strict_json, validate_message

INIT = messages.initialize(1, "2024-11-05", client_info={"name": "c", "version": "1"})


def init_with(**params: object) -> dict:
    return {**INIT, "params": {**INIT["params"], **params}}


def result(method_result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "result": method_result}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_a_plain_initialize_is_valid_in_every_handshake_revision(revision: str) -> None:
    assert validate_message(INIT, revision) == []


def test_initialize_does_not_exist_in_the_stateless_revision() -> None:
    assert "not a client request in revision 2026-07-28" in validate_message(INIT, "2026-07-28")[0]


@pytest.mark.parametrize(
    ("message", "reply_to", "first_valid"),
    [
        (init_with(clientInfo={"name": "c", "version": "1", "title": "C"}), None, "2025-06-18"),
        (init_with(clientInfo={"name": "c", "version": "1", "websiteUrl": "https://x"}), None, "2025-11-25"),
        (init_with(capabilities={"elicitation": {}}), None, "2025-06-18"),
        (init_with(capabilities={"elicitation": {"form": {}}}), None, "2025-11-25"),
        (init_with(capabilities={"tasks": {}}), None, "2025-11-25"),
        (
            result(
                {
                    "protocolVersion": "x",
                    "capabilities": {"completions": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                }
            ),
            "initialize",
            "2025-03-26",
        ),
        (
            result(
                {
                    "protocolVersion": "x",
                    "capabilities": {},
                    "serverInfo": {"name": "s", "version": "1", "title": "S"},
                }
            ),
            "initialize",
            "2025-06-18",
        ),
        (
            result({"tools": [{"name": "t", "inputSchema": {"type": "object"}, "annotations": {}}]}),
            "tools/list",
            "2025-03-26",
        ),
        (
            result({"tools": [{"name": "t", "inputSchema": {"type": "object"}, "title": "T"}]}),
            "tools/list",
            "2025-06-18",
        ),
        (result({"content": [], "structuredContent": {}}), "tools/call", "2025-06-18"),
        (
            result({"content": [{"type": "audio", "data": "", "mimeType": "audio/wav"}]}),
            "tools/call",
            "2025-03-26",
        ),
        (
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 1, "message": "Half way"},
            },
            None,
            "2025-03-26",
        ),
        (
            result({"resourceTemplates": [{"name": "t", "uriTemplate": "x://{a}", "icons": []}]}),
            "resources/templates/list",
            "2025-11-25",
        ),
    ],
)
def test_a_field_is_valid_only_from_its_revision(
    message: dict, reply_to: str | None, first_valid: str
) -> None:
    order = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
    for revision in order:
        problems = validate_message(message, revision, reply_to=reply_to)
        if order.index(revision) < order.index(first_valid):
            assert any(f"exists only from {first_valid}" in p for p in problems), revision
        else:
            assert problems == [], revision


def test_elicitation_create_arrives_in_2025_06_18() -> None:
    ask = {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create",
           "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}}  # fmt: skip
    assert validate_message(ask, "2025-03-26", sender="server")
    assert validate_message(ask, "2025-06-18", sender="server") == []


def test_batches_exist_only_in_2025_03_26() -> None:
    batch = [INIT, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    assert validate_message(batch, "2025-03-26") == []
    for revision in ("2024-11-05", "2025-06-18", "2025-11-25"):
        assert "only in 2025-03-26" in validate_message(batch, revision)[0]
    assert validate_message([], "2025-03-26") == ["an empty batch is not valid"]


def test_required_fields_and_envelopes() -> None:
    no_client_info = {**INIT, "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}
    assert "clientInfo" in validate_message(no_client_info, "2025-06-18")[0]
    no_capabilities = {
        **INIT,
        "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "c", "version": "1"}},
    }
    assert "capabilities" in validate_message(no_capabilities, "2025-06-18")[0]
    assert "JSON-RPC 2.0" in validate_message({"jsonrpc": "1.0", "id": 1, "method": "ping"}, "2025-06-18")[0]
    assert "reply-to" in validate_message(result({}), "2025-06-18")[0]
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid params"}}
    assert validate_message(error, "2025-06-18") == []
    assert "unknown revision" in validate_message(INIT, "2024-10-07")[0]


def test_every_rule_names_a_known_revision_and_a_reachable_place() -> None:
    for rule in RULES:
        assert rule.since in ("2025-03-26", "2025-06-18", "2025-11-25"), rule
        assert rule.path.split(".")[0] in ("params", "result"), rule


def test_strict_json_refuses_nan() -> None:
    with pytest.raises(ValueError):
        parse_strict_json('{"a": NaN}')


@pytest.mark.parametrize("bad_id", [None, 1.5, True, [1], {"n": 1}])
def test_an_id_is_a_string_or_an_integer(bad_id: object) -> None:
    problems = validate_message({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}, "2025-11-25")
    assert problems and "an id is a string or an integer" in problems[0]


def test_no_revision_has_a_null_id_not_even_in_an_error_response() -> None:
    """JSON-RPC 2.0 answers an unreadable request with `"id": null`; MCP's schemas have no null id
    (lesson 7 says so, and its examples are checked by this)."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    for revision in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert validate_message(error, revision) == ["an id is a string or an integer, not null"], revision
    assert validate_message({"jsonrpc": "2.0", "id": "a", "method": "ping"}, "2025-11-25") == []
