"""demo-legacy: speaks only 2024-11-05 and counter-offers it; the client decides to disconnect."""

from __future__ import annotations

import pytest

from app.protocol import messages
from tests.support.rawclient import HANDSHAKE_CLIENT_INFO, RawClient, envelope


def initialize(client: RawClient, version: str) -> dict:
    return client.call(
        "initialize", messages.initialize(revision=version, client_info=HANDSHAKE_CLIENT_INFO)["params"]
    )


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01"])
def test_every_request_gets_the_one_revision_it_knows(version: str) -> None:
    with RawClient("app.demos.legacy") as client:
        reply = initialize(client, version)
        assert "error" not in reply
        assert reply["result"]["protocolVersion"] == "2024-11-05"
        assert reply["result"]["capabilities"] == {"tools": {}}


def test_a_client_that_needs_newer_disconnects_and_the_server_leaves_cleanly() -> None:
    client = RawClient("app.demos.legacy")
    try:
        offered = initialize(client, "2025-11-25")["result"]["protocolVersion"]
        assert offered != "2025-11-25"  # the client's decision: it cannot speak 2024-11-05, so it leaves
    finally:
        assert client.close() == 0


def test_after_accepting_the_offer_the_old_tools_work() -> None:
    with RawClient("app.demos.legacy") as client:
        assert client.call("tools/list")["error"]["code"] == -32600  # not initialized yet
        assert client.call("ping")["result"] == {}
        initialize(client, "2024-11-05")
        client.notify("notifications/initialized")
        assert [tool["name"] for tool in client.call("tools/list")["result"]["tools"]] == ["get_forecast"]
        reply = client.call("tools/call", {"name": "get_forecast", "arguments": {"city": "Oslo"}})
        assert reply["result"] == {
            "content": [{"type": "text", "text": "Oslo: Snow showers, -3 C"}],
            "isError": False,
        }


def test_it_knows_nothing_of_later_revisions() -> None:
    with RawClient("app.demos.legacy") as client:
        assert client.call("server/discover", {"_meta": envelope()})["error"]["code"] == -32601
        assert client.call("initialize", {"protocolVersion": "2024-11-05"})["error"]["code"] == -32602
