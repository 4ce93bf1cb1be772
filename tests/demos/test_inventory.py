"""demo-inventory: declares tools.listChanged and sends list_changed when its tool list changes."""

from __future__ import annotations

from tests.support.rawclient import RawClient, envelope

LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def tool_names(client: RawClient, params: dict | None = None) -> list[str]:
    return [tool["name"] for tool in client.call("tools/list", params)["result"]["tools"]]


def test_opening_and_closing_the_desk_changes_the_list_and_notifies() -> None:
    with RawClient("app.demos.inventory") as client:
        assert client.initialize()["capabilities"]["tools"] == {"listChanged": True}
        assert tool_names(client) == ["count_stock", "open_returns_desk", "close_returns_desk"]

        reply, between = client.until_response(
            client.request("tools/call", {"name": "open_returns_desk", "arguments": {}})
        )
        assert between == [LIST_CHANGED]
        assert "return_item" in tool_names(client)
        returned = client.call(
            "tools/call", {"name": "return_item", "arguments": {"item": "mug", "quantity": 2}}
        )
        assert returned["result"]["content"][0]["text"] == "Took back 2 mug(s); 42 in stock now."

        # No change, no notification: call() fails if anything arrives before the reply.
        again = client.call("tools/call", {"name": "open_returns_desk", "arguments": {}})
        assert "already open" in again["result"]["content"][0]["text"]

        _, between = client.until_response(
            client.request("tools/call", {"name": "close_returns_desk", "arguments": {}})
        )
        assert between == [LIST_CHANGED]
        gone = client.call("tools/call", {"name": "return_item", "arguments": {"item": "mug"}})
        assert gone["result"]["isError"] is True


def test_in_2026_the_change_goes_only_to_a_listen_stream() -> None:
    with RawClient("app.demos.inventory") as client:
        listen = client.request(
            "subscriptions/listen", {"_meta": envelope(), "notifications": {"toolsListChanged": True}}
        )
        acknowledged = client.read()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        _, between = client.until_response(
            client.request("tools/call", {"_meta": envelope(), "name": "open_returns_desk", "arguments": {}})
        )
        assert [message["method"] for message in between] == ["notifications/tools/list_changed"]
        assert between[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen
