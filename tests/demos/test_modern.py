"""demo-modern: subscriptions/listen, two-round input_required, caching hints, the MCP Apps extension."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server.subscriptions import ToolsListChanged

from app.demos import modern
from tests.support.rawclient import RawClient, envelope

ASKING = envelope({"elicitation": {}})
APPS = envelope({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
BOOK = {"name": "book_seats", "arguments": {"count": 2}}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def _answer(client: RawClient, interim: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    [key] = interim["inputRequests"]
    retry = {
        "_meta": ASKING,
        **BOOK,
        "inputResponses": {key: {"action": "accept", "content": content}},
        "requestState": interim["requestState"],
    }
    response, _ = client.until_response(client.request("tools/call", retry))
    return response


def test_discover_advertises_the_apps_extension_and_caching_hints() -> None:
    with RawClient("app.demos.modern") as client:
        found = client.call("server/discover", {"_meta": envelope()})["result"]
        assert found["capabilities"]["extensions"] == {"io.modelcontextprotocol/ui": {}}
        assert (found["ttlMs"], found["cacheScope"]) == (3_600_000, "public")
        listed = client.call("tools/list", {"_meta": envelope()})["result"]
        assert (listed["ttlMs"], listed["cacheScope"]) == (300_000, "public")
        read = client.call("resources/read", {"_meta": envelope(), "uri": "boxoffice://my-bookings"})[
            "result"
        ]
        assert (read["ttlMs"], read["cacheScope"]) == (10_000, "private")
        assert read["contents"][0]["text"] == "No bookings yet."


def test_a_booking_takes_two_rounds_and_the_second_question_depends_on_the_first() -> None:
    with RawClient("app.demos.modern") as client:
        first = client.call("tools/call", {"_meta": ASKING, **BOOK})["result"]
        assert first["resultType"] == "input_required" and "ttlMs" not in first
        [asked] = first["inputRequests"].values()
        assert "stalls or balcony" in asked["params"]["message"]
        second = _answer(client, first, {"section": "balcony"})["result"]
        assert second["resultType"] == "input_required"
        [(key, asked)] = second["inputRequests"].items()
        assert key not in first["inputRequests"] and "60 steps" in asked["params"]["message"]
        assert second["requestState"] != first["requestState"]
        done = _answer(client, second, {"confirm": True})["result"]
        assert done["content"][0]["text"] == "Booked 2 seat(s) in the balcony; 18 left there."
        read = client.call("resources/read", {"_meta": envelope(), "uri": "boxoffice://my-bookings"})
        assert read["result"]["contents"][0]["text"] == "2 seat(s) in the balcony"


def test_a_tampered_request_state_is_refused() -> None:
    with RawClient("app.demos.modern") as client:
        first = client.call("tools/call", {"_meta": ASKING, **BOOK})["result"]
        forged = {**first, "requestState": first["requestState"][:-6] + "AAAAAA"}
        assert _answer(client, forged, {"section": "stalls"})["error"]["code"] == -32602


def test_without_elicitation_declared_the_booking_is_refused() -> None:
    with RawClient("app.demos.modern") as client:
        assert client.call("tools/call", {"_meta": envelope(), **BOOK})["error"]["code"] == -32021


def test_the_seat_map_falls_back_to_text_without_the_extension() -> None:
    with RawClient("app.demos.modern") as client:
        plain = client.call("tools/call", {"_meta": envelope(), "name": "seat_map", "arguments": {}})
        assert plain["result"]["content"][0]["text"].startswith("Stage\n")
        rich = client.call("tools/call", {"_meta": APPS, "name": "seat_map", "arguments": {}})
        assert "ui://boxoffice/seat-map.html" in rich["result"]["content"][0]["text"]


def test_a_stream_is_acknowledged_with_the_subset_and_carries_its_id() -> None:
    with RawClient("app.demos.modern") as client:
        asked = {"toolsListChanged": True, "promptsListChanged": True, "resourceSubscriptions": ["x://nope"]}
        client.send(
            {
                "jsonrpc": "2.0",
                "id": "s1",
                "method": "subscriptions/listen",
                "params": {"_meta": envelope(), "notifications": asked},
            }
        )
        ack = client.read()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"] == {
            "_meta": {SUBSCRIPTION_ID: "s1"},
            "notifications": {"toolsListChanged": True},
        }
        # On stdio the client ends its stream with notifications/cancelled; the server goes on answering.
        client.notify("notifications/cancelled", {"requestId": "s1"})
        assert client.call("tools/list", {"_meta": envelope()})["result"]["tools"]


def test_no_request_changes_the_tool_list() -> None:
    """2026-07-28 server/tools, Capabilities: the list must not vary as a side effect of requests,
    so no tool opens the late show; the box office's clock does."""
    with RawClient("app.demos.modern") as client:
        listed = client.call("tools/list", {"_meta": envelope()})["result"]["tools"]
        assert {"seat_map", "book_seats"} <= {tool["name"] for tool in listed}
        assert "open_late_show" not in {tool["name"] for tool in listed}


def test_the_late_show_opens_and_closes_on_the_clock_and_each_change_is_published() -> None:
    published: list[tuple[object, bool]] = []  # each event, and whether the late show was open then

    async def two_ticks() -> list[str]:
        unsubscribe = modern.bus.subscribe(lambda event: published.append((event, modern.SALES["late_show"])))
        try:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(modern.late_show_clock, 0.01)
                    while len(published) < 2:
                        await anyio.sleep(0.005)
                    tasks.cancel_scope.cancel()
            modern.set_late_show(True)
            return [tool.name for tool in await modern.server.list_tools()]
        finally:
            unsubscribe()
            modern.set_late_show(False)

    open_names = anyio.run(two_ticks)
    assert [was_open for _, was_open in published[:2]] == [True, False]
    assert all(isinstance(event, ToolsListChanged) for event, _ in published)
    assert "book_late_show" in open_names
    assert "book_late_show" not in [tool.name for tool in anyio.run(modern.server.list_tools)]


@pytest.mark.slow
def test_a_stream_hears_the_clock_without_sending_anything() -> None:
    with RawClient("app.demos.modern") as client:
        client.send(
            {
                "jsonrpc": "2.0",
                "id": "s1",
                "method": "subscriptions/listen",
                "params": {"_meta": envelope(), "notifications": {"toolsListChanged": True}},
            }
        )
        assert client.read()["method"] == "notifications/subscriptions/acknowledged"
        assert client.read() == {  # within LATE_SHOW_EVERY_S of the start, with no request in between
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: "s1"}},
        }
        names = [t["name"] for t in client.call("tools/list", {"_meta": envelope()})["result"]["tools"]]
        assert "book_late_show" in names


def test_resource_updates_reach_a_stream_that_named_the_uri() -> None:
    with RawClient("app.demos.modern") as client:
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "subscriptions/listen",
                "params": {
                    "_meta": envelope(),
                    "notifications": {"resourceSubscriptions": ["boxoffice://my-bookings"]},
                },
            }
        )
        assert client.read()["params"]["notifications"] == {
            "resourceSubscriptions": ["boxoffice://my-bookings"]
        }
        first = client.call("tools/call", {"_meta": ASKING, **BOOK})["result"]
        second = _answer(client, first, {"section": "stalls"})["result"]
        [key] = second["inputRequests"]
        retry = {
            "_meta": ASKING,
            **BOOK,
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
            "requestState": second["requestState"],
        }
        reply, between = client.until_response(client.request("tools/call", retry))
        assert reply["result"]["content"][0]["text"] == "Booked 2 seat(s) in the stalls; 38 left there."
        updated = between or [client.read()]
        assert updated[0]["method"] == "notifications/resources/updated"
        assert updated[0]["params"] == {"_meta": {SUBSCRIPTION_ID: 7}, "uri": "boxoffice://my-bookings"}


def test_a_stream_with_nothing_to_carry_ends_at_once_gracefully() -> None:
    with RawClient("app.demos.modern") as client:
        params = {"_meta": envelope(), "notifications": {"promptsListChanged": True}}
        reply, between = client.until_response(client.request("subscriptions/listen", params, id_=3))
        assert [m["method"] for m in between] == ["notifications/subscriptions/acknowledged"]
        assert between[0]["params"] == {"_meta": {SUBSCRIPTION_ID: 3}, "notifications": {}}
        assert reply["result"]["resultType"] == "complete"
        assert reply["result"]["_meta"][SUBSCRIPTION_ID] == 3
        # The result alone ends it: no notifications/cancelled before or after (lesson 19 says so).
        _, after = client.until_response(client.request("server/discover", {"_meta": envelope()}, id_=4))
        assert after == []


def test_a_handshake_connection_still_works() -> None:
    with RawClient("app.demos.modern") as client:
        client.initialize()
        text = client.call("tools/call", {"name": "seat_map", "arguments": {}})["result"]["content"][0][
            "text"
        ]
        assert text.startswith("Stage")
