"""demo-monitor: resource subscriptions, progress when asked for, logging filtered by setLevel."""

from __future__ import annotations

import pytest

from tests.support.rawclient import RawClient

URI = "sensor://greenhouse/temperature"


@pytest.fixture
def client():
    with RawClient("app.demos.monitor") as c:
        capabilities = c.initialize()["capabilities"]
        assert capabilities["logging"] == {}
        assert capabilities["resources"]["subscribe"] is True
        yield c


def call_tool(
    client: RawClient, name: str, arguments: dict, meta: dict | None = None
) -> tuple[dict, list[dict]]:
    params = {"name": name, "arguments": arguments, **({"_meta": meta} if meta else {})}
    return client.until_response(client.request("tools/call", params))


def methods(messages: list[dict]) -> list[str]:
    return [message["method"] for message in messages]


def test_updates_reach_only_a_subscribed_client(client: RawClient) -> None:
    _, between = call_tool(client, "set_temperature", {"celsius": 30})
    assert methods(between) == ["notifications/message"]  # a log line, but no update
    assert client.call("resources/subscribe", {"uri": URI})["result"] == {}
    _, between = call_tool(client, "set_temperature", {"celsius": 31})
    assert {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": URI}} in between
    assert client.call("resources/read", {"uri": URI})["result"]["contents"][0]["text"] == "31.0 C"
    assert client.call("resources/unsubscribe", {"uri": URI})["result"] == {}
    _, between = call_tool(client, "set_temperature", {"celsius": 32})
    assert "notifications/resources/updated" not in methods(between)


def test_subscribing_to_an_unknown_resource_is_an_error(client: RawClient) -> None:
    assert client.call("resources/subscribe", {"uri": "sensor://nowhere"})["error"]["code"] == -32602


def test_progress_only_with_a_progress_token(client: RawClient) -> None:
    arguments = {"steps": 3, "step_seconds": 0}
    _, between = call_tool(client, "run_diagnostics", arguments, meta={"progressToken": "p-1"})
    progress = [m["params"] for m in between if m["method"] == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
        ("p-1", 1, 3),
        ("p-1", 2, 3),
        ("p-1", 3, 3),
    ]
    _, between = call_tool(client, "run_diagnostics", arguments)
    assert "notifications/progress" not in methods(between)


def test_set_level_filters_log_messages(client: RawClient) -> None:
    arguments = {"steps": 2, "step_seconds": 0}
    _, between = call_tool(client, "run_diagnostics", arguments)
    assert [m["params"]["level"] for m in between] == ["info", "info"]  # default: info and above
    assert client.call("logging/setLevel", {"level": "debug"})["result"] == {}
    _, between = call_tool(client, "run_diagnostics", arguments)
    assert [m["params"]["level"] for m in between] == ["info", "debug", "debug", "info"]
    assert client.call("logging/setLevel", {"level": "error"})["result"] == {}
    _, between = call_tool(client, "set_temperature", {"celsius": 50})  # a warning: below error
    assert between == []
