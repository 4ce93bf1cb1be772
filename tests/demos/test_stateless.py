"""demo-stateless: 2026-07-28 only; discover, the _meta envelope, -32022, input-required results."""

from __future__ import annotations

from app.protocol import messages
from tests.support.rawclient import HANDSHAKE_CLIENT_INFO, RawClient, envelope

TRANSFER = {"name": "transfer", "arguments": {"amount": 50, "to_account": "DE-42"}}


def test_discover_and_a_call_with_the_envelope() -> None:
    with RawClient("app.demos.stateless") as client:
        found = client.call("server/discover", {"_meta": envelope()})["result"]
        assert found["supportedVersions"] == ["2026-07-28"]
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "demo-stateless"
        params = {
            "_meta": envelope(),
            "name": "convert",
            "arguments": {"amount": 10, "from_currency": "EUR", "to_currency": "INR"},
        }
        result = client.call("tools/call", params)["result"]
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "10.00 EUR = 900.00 INR"


def test_unsupported_version_and_initialize_get_minus_32022() -> None:
    with RawClient("app.demos.stateless") as client:
        handshake = messages.initialize(revision="2025-11-25", client_info=HANDSHAKE_CLIENT_INFO)
        refused = client.call("initialize", handshake["params"])["error"]
        assert refused["code"] == -32022 and refused["data"]["supported"] == ["2026-07-28"]
        old = client.call("tools/list", {"_meta": envelope(version="2025-11-25")})["error"]
        assert old == {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"},
        }
        # The connection is not locked by the refused initialize: the envelope still works.
        assert "tools" in client.call("tools/list", {"_meta": envelope()})["result"]


def test_a_request_without_the_envelope_is_invalid_params() -> None:
    with RawClient("app.demos.stateless") as client:
        assert client.call("tools/list")["error"]["code"] == -32602


def test_logs_only_when_the_request_asks_for_them() -> None:
    with RawClient("app.demos.stateless") as client:
        params = {"name": "convert", "arguments": {"amount": 1, "from_currency": "EUR", "to_currency": "USD"}}
        client.call("tools/call", {"_meta": envelope(), **params})  # fails if a log line arrives
        meta = {**envelope(), "io.modelcontextprotocol/logLevel": "info"}
        _, between = client.until_response(client.request("tools/call", {"_meta": meta, **params}))
        assert [message["method"] for message in between] == ["notifications/message"]


def test_input_required_then_retry_with_the_answer() -> None:
    with RawClient("app.demos.stateless") as client:
        meta = envelope({"elicitation": {}})
        first = client.call("tools/call", {"_meta": meta, **TRANSFER})["result"]
        assert first["resultType"] == "input_required"
        [(key, asked)] = first["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        retry = {
            "_meta": meta,
            **TRANSFER,
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
            "requestState": first["requestState"],
        }
        done = client.call("tools/call", retry)["result"]
        assert done["content"][0]["text"] == "Sent 50.00 EUR to account DE-42."


def test_without_elicitation_declared_the_question_is_an_error() -> None:
    with RawClient("app.demos.stateless") as client:
        refused = client.call("tools/call", {"_meta": envelope(), **TRANSFER})["error"]
        assert refused["code"] == -32021
        assert refused["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
