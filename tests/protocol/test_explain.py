"""The plain-language findings the console shows beside each message."""

from __future__ import annotations

import json

from app.protocol import messages
from app.protocol.explain import client_findings, server_findings
from app.protocol.transcript import Transcript


def init(version: str, **client_info: str) -> dict:
    return messages.initialize(1, version, client_info={"name": "t", "version": "1", **client_info})


def texts(findings: list[dict]) -> list[str]:
    return [f["text"] for f in findings]


def negotiated(version: str) -> Transcript:
    t = Transcript("demo-orders")
    t.add_client("i", init(version))
    t.add_server("r", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": version}})
    return t


def test_an_older_revision_is_read_with_our_table_of_differences() -> None:
    findings = client_findings(init("2024-11-05", title="Nice Client"), Transcript("demo-orders"))
    assert any("exists only from 2025-06-18, not in 2024-11-05" in t for t in texts(findings))
    assert all(f["level"] != "error" for f in findings)  # valid in 2025-11-25 shapes, just too new
    assert not client_findings(init("2025-06-18", title="Nice Client"), Transcript("demo-orders"))


def test_a_reply_using_fields_the_revision_lacks_is_pointed_out() -> None:
    t = negotiated("2024-11-05")
    t.add_client("l", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    reply = t.add_server("r", {"jsonrpc": "2.0", "id": 2, "result": {"tools": [
        {"name": "x", "title": "X", "inputSchema": {"type": "object"}}]}})  # fmt: skip
    assert any("The server's reply has a tool title" in t for t in texts(server_findings(reply, t)))


def test_missing_client_info_is_an_error_and_never_released_revisions_are_named() -> None:
    message = init("2025-06-18")
    del message["params"]["clientInfo"]
    assert "params.clientInfo is required in 2025-06-18." in texts(client_findings(message, Transcript("x")))
    warned = texts(client_findings(init("2024-10-07"), Transcript("x")))
    assert any("never a released MCP revision" in t for t in warned)


def test_lifecycle_and_notification_advice() -> None:
    fresh = Transcript("demo-orders")
    early = texts(client_findings({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, fresh))
    assert any("only ping should be sent" in t for t in early)
    assert not client_findings({"jsonrpc": "2.0", "id": 3, "method": "ping"}, fresh)
    note = texts(client_findings({"jsonrpc": "2.0", "method": "notifications/whatever"}, fresh))
    assert any("no reply" in t for t in note) and any(
        "ignores notifications it does not know" in t for t in note
    )
    unknown = texts(
        client_findings({"jsonrpc": "2.0", "id": 4, "method": "no/such"}, negotiated("2025-11-25"))
    )
    assert any("-32601" in t for t in unknown)


def test_a_server_line_that_is_not_json_and_a_stray_response() -> None:
    t = negotiated("2025-11-25")
    garbled = t.add_server("oops", None)
    assert server_findings(garbled, t)[0]["level"] == "error"
    stray = t.add_server("s", {"jsonrpc": "2.0", "id": "nobody", "result": {}})
    assert "matches no request" in server_findings(stray, t)[0]["text"]


def test_a_server_message_whose_method_is_not_a_string_is_an_error_not_a_crash() -> None:
    t = negotiated("2025-11-25")
    for method in (["tools", "call"], {"name": "x"}, 5, None):
        for message in (
            {"jsonrpc": "2.0", "id": "s1", "method": method},
            {"jsonrpc": "2.0", "method": method},
        ):
            found = server_findings(t.add_server(json.dumps(message), message), t)
            assert [f["level"] for f in found] == ["error"] and "is not a string" in found[0]["text"], message


def test_a_request_refused_for_want_of_a_handshake_says_so() -> None:
    t = Transcript("demo-orders")
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    t.add_client("{}", request)
    refused = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid request parameters"}}
    said = " ".join(texts(server_findings(t.add_server("{}", refused), t)))
    assert "No handshake has happened in this session yet" in said and "send initialize first" in said
    after = negotiated("2025-06-18")  # once the handshake is done, -32602 means the params themselves
    after.add_client("{}", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}})
    wrong = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Invalid request parameters"}}
    said = " ".join(texts(server_findings(after.add_server("{}", wrong), after)))
    assert "params are wrong or missing" in said and "handshake" not in said


def test_an_extensions_method_is_named_as_the_extensions_not_as_unknown() -> None:
    t = Transcript(server="demo-tasks")
    envelope = {"_meta": messages.envelope({"extensions": {"io.modelcontextprotocol/tasks": {}}})}
    poll = {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {**envelope, "taskId": "t-1"}}
    [note] = client_findings(poll, t)
    assert note["level"] == "info" and note["ref"] == "extension"
    assert (
        "belongs to the io.modelcontextprotocol/tasks extension" in note["text"] and "-32601" in note["text"]
    )
    unknown = {**poll, "method": "tasks/explode"}
    assert "is not an MCP method" in client_findings(unknown, t)[0]["text"]


def test_an_extensions_request_is_valid_where_the_extension_applies_and_nowhere_else() -> None:
    from app.protocol.revisions import validate_message

    poll = {"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": {"taskId": "t-1"}}
    assert validate_message(poll, "2026-07-28") == []
    assert validate_message(poll, "2025-06-18") == [
        "'tasks/cancel' is not a client request in revision 2025-06-18"
    ]
    assert validate_message({**poll, "params": [1]}, "2026-07-28") != []  # params are an object


def test_a_client_declaring_mcp_apps_is_not_flagged_in_any_revision() -> None:
    """`capabilities.extensions` (MCP Apps, `io.modelcontextprotocol/ui`) is open in the handshake era too."""
    apps = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    for revision in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        message = messages.initialize(1, revision, client_info={"name": "c", "version": "1"})
        message["params"]["capabilities"] = {"extensions": apps}
        assert client_findings(message, Transcript("demo-orders")) == [], revision


def test_an_id_in_use_is_pointed_out_as_the_revision_reads_it() -> None:
    """A request whose id one still waiting has, in any revision; one used before in the session, in
    the handshake revisions only (2026-07-28's stateless requests may use an id again once answered)."""
    t = negotiated("2025-11-25")  # id 1: initialize, answered
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    assert not client_findings(call, t)
    t.add_client(json.dumps(call), call)
    [waiting] = client_findings({**call, "method": "ping"}, t)
    assert waiting["level"] == "warning" and "id 5 (tools/list) still waits for its reply" in waiting["text"]
    assert waiting["ref"] == "spec 2025-11-25, basic §Requests"
    [again] = client_findings({"jsonrpc": "2.0", "id": 1, "method": "ping"}, t)
    assert "Id 1 was used by an earlier request of this session" in again["text"]
    assert not client_findings({"jsonrpc": "2.0", "id": "1", "method": "ping"}, t)  # "1" is another id
    stateless = Transcript("demo-modern")
    meta = {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    }
    listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": meta}
    stateless.add_client(json.dumps(listing), listing)
    [in_flight] = client_findings(listing, stateless)
    assert "still waits for its reply" in in_flight["text"] and in_flight["ref"].startswith("spec 2026-07-28")
    stateless.add_server("r", {"jsonrpc": "2.0", "id": 9, "result": {"tools": []}})
    assert not client_findings(listing, stateless)  # answered: 2026-07-28 allows it again
