"""Each demo server through the relay (subprotocol `mcp`), as the lessons describe it, including the
negative case of each capability. tests/demos drives the same servers on raw stdio."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.protocol import messages
from tests.support.inprocess import ServedApp
from tests.support.wsclient import McpClient

META = messages.envelope()
CLIENT_INFO = {"name": "t", "version": "1"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("demo-relay"), warm_pool_size=1) as app:
        yield app


async def session(
    app: ServedApp, server: str, capabilities: dict | None = None, version: str = "2025-11-25"
) -> McpClient:
    client = await McpClient.connect(f"{app.ws_base}/ws/{server}")
    opening, done = messages.handshake(1, version, capabilities=capabilities, client_info=CLIENT_INFO)
    reply = await client.call(1, "initialize", opening["params"])
    assert "result" in reply, reply
    await client.send(done)
    return client


async def until_result(client: McpClient, id_: Any) -> tuple[dict, list[dict]]:
    """Read until the response with `id_`; return it and what came before it."""
    before = []
    while (message := await client.recv()).get("id") != id_ or "method" in message:
        before.append(message)
    return message, before


async def test_assistant_uses_roots_only_when_declared(app: ServedApp) -> None:
    declared = await session(app, "demo-assistant", {"roots": {}})
    try:
        await declared.start_tool(2, "find_itineraries")
        ask = await declared.recv()
        assert ask["method"] == "roots/list"
        await declared.send(
            {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"roots": [{"uri": "file:///trips", "name": "trips"}]},
            }
        )
        result, _ = await until_result(declared, 2)
        assert result["result"]["isError"] is False
    finally:
        await declared.close()
    undeclared = await session(app, "demo-assistant")
    try:
        await undeclared.start_tool(2, "suggest_trip", city="Pune")
        result, before = await until_result(undeclared, 2)
        assert before == []  # nothing was asked of a client that did not declare sampling
        assert result["result"]["isError"] is True
        assert "did not declare the 'sampling' capability" in result["result"]["content"][0]["text"]
    finally:
        await undeclared.close()


async def test_inventory_announces_a_changed_tool_list(app: ServedApp) -> None:
    client = await session(app, "demo-inventory")
    try:
        await client.start_tool(2, "open_returns_desk")
        result, before = await until_result(client, 2)
        assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in before
        tools = (await client.call(3, "tools/list"))["result"]["tools"]
        assert "return_item" in [t["name"] for t in tools]
        await client.start_tool(4, "open_returns_desk")  # no change, no notification
        _, before = await until_result(client, 4)
        assert before == []
    finally:
        await client.close()


async def test_monitor_notifies_subscribers_and_reports_progress_only_when_asked(app: ServedApp) -> None:
    client = await session(app, "demo-monitor")
    try:
        uri = "sensor://greenhouse/temperature"
        assert (await client.call(2, "resources/subscribe", {"uri": uri}))["result"] == {}
        await client.start_tool(3, "set_temperature", celsius=40)
        _, before = await until_result(client, 3)
        assert {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": uri},
        } in before
        await client.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "_meta": {"progressToken": "p1"}, "name": "run_diagnostics", "arguments": {"steps": 2, "step_seconds": 0}}})  # fmt: skip
        _, before = await until_result(client, 4)
        assert [m["params"]["progress"] for m in before if m.get("method") == "notifications/progress"] == [
            1,
            2,
        ]
        await client.start_tool(5, "run_diagnostics", steps=2, step_seconds=0)
        _, before = await until_result(client, 5)
        assert not [m for m in before if m.get("method") == "notifications/progress"]  # no token, no progress
    finally:
        await client.close()


async def test_legacy_counter_offers_its_only_revision(app: ServedApp) -> None:
    client = await McpClient.connect(f"{app.ws_base}/ws/demo-legacy")
    try:
        reply = await client.call(1, "initialize", messages.initialize(client_info=CLIENT_INFO)["params"])
        assert reply["result"]["protocolVersion"] == "2024-11-05"
    finally:
        await client.close()  # a client that needs 2025-11-25 disconnects


async def test_stateless_discover_and_refusals(app: ServedApp) -> None:
    client = await McpClient.connect(f"{app.ws_base}/ws/demo-stateless")
    try:
        found = await client.call(1, "server/discover", {"_meta": META})
        assert "result" in found, found
        old = {**META, "io.modelcontextprotocol/protocolVersion": "2025-06-18"}
        refused = await client.call(2, "tools/list", {"_meta": old})
        assert refused["error"]["code"] == -32022
        handshake = await client.call(3, "initialize", messages.initialize(client_info=CLIENT_INFO)["params"])
        assert handshake["error"]["code"] == -32022
        listed = await client.call(4, "tools/list", {"_meta": META})
        assert [t["name"] for t in listed["result"]["tools"]] == ["convert", "transfer"]
    finally:
        await client.close()


async def test_flaky_stray_response_passes_through_unchanged(app: ServedApp) -> None:
    client = await session(app, "demo-flaky")
    try:
        await client.start_tool(2, "unknown_id")
        result, before = await until_result(client, 2)
        assert [m["id"] for m in before] == ["stray-1"] and "result" in result
        assert json.dumps(before[0]).startswith('{"jsonrpc": "2.0", "id": "stray-1"')
    finally:
        await client.close()
