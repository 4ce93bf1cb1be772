"""MCP Apps in Chromium: the console renders demo-orders' order card through the sandbox proxy on the
second origin, hands it the tool's input and result, and runs the app's tool call only once the
learner allows it; a declined call never reaches the server."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import FrameLocator, Page, WebSocketRoute, expect

from tests.browser.conftest import clear_and_insert, console_ready

HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]  # fmt: skip


def send(page: Page, message: dict[str, Any]) -> None:
    page.locator(".console .cm-content").first.click()
    clear_and_insert(page, json.dumps(message))
    page.keyboard.press("Control+Enter")


def open_app(page: Page, server: str, tool: str, arguments: dict[str, Any]) -> FrameLocator:
    """Handshake, tools/list, then call `tool`: the app appears beside the reply. Returns the app's own
    document."""
    page.goto(f"/playground?server={server}")
    console_ready(page)
    for index, message in enumerate(HANDSHAKE):
        send(page, message)
        expect(page.locator(".log-sent")).to_have_count(index + 1)
    expect(page.locator(".log-received")).to_have_count(1)
    # A host finds a tool's app in its tools/list definition.
    send(page, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    expect(page.locator(".log-received")).to_have_count(2)
    send(
        page,
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    )
    port = urlsplit(page.url).port
    expect(page.locator("iframe.app-frame")).to_have_attribute(
        "src", re.compile(rf"^http://localhost:{port}/apps/proxy\?host=http%3A%2F%2F127.0.0.1%3A{port}&csp=")
    )
    return page.frame_locator("iframe.app-frame").frame_locator("iframe")


def transcript(page: Page) -> list[dict[str, Any]]:
    session = page.locator("[data-fact=session]").text_content()
    return page.request.get(f"/api/sessions/{session}/transcript").json()["entries"]


def test_the_order_card_renders_and_calls_a_tool_only_when_allowed(page: Page) -> None:
    app = open_app(page, "demo-orders", "show_order", {"order_id": "123456"})
    expect(app.locator("#order")).to_have_text("123456")  # the tool's input reached the app
    expect(app.locator("#status")).to_have_text("shipped")  # and its result
    lane = page.locator(".log-app .log-label")
    for method in ("ui/notifications/sandbox-proxy-ready", "ui/notifications/sandbox-resource-ready",
                   "ui/initialize", "ui/notifications/initialized", "ui/notifications/tool-input",
                   "ui/notifications/tool-result"):  # fmt: skip
        expect(lane.filter(has_text=method).first).to_be_visible()
    expect(page.locator("[data-sequence] .lane-title").filter(has_text="app")).to_have_count(1)

    app.locator("#refresh").click()  # the app asks the host to call get_order_status
    ask = page.locator(".app-ask")
    expect(ask).to_contain_text("get_order_status")
    assert not [e for e in transcript(page) if e.get("by") == "app"], "nothing reached the server unasked"
    ask.get_by_role("button", name="Deny").click()
    expect(app.locator("#note")).to_contain_text("Not refreshed")
    assert not [e for e in transcript(page) if e.get("by") == "app"], (
        "a declined call never reaches the server"
    )

    app.locator("#refresh").click()
    page.locator(".app-ask").get_by_role("button", name="Allow").click()
    expect(app.locator("#note")).to_have_text("Refreshed through the host.")
    entries = transcript(page)
    call = next(e for e in entries if e.get("by") == "app")
    assert (
        call["message"]["method"] == "tools/call" and call["message"]["params"]["name"] == "get_order_status"
    )
    reply = next(e for e in entries if e["answers"] == call["seq"])
    assert "shipped" in reply["line"]
    app_calls = [
        e for e in entries if e["direction"] == "from_app" and e["message"].get("method") == "tools/call"
    ]
    app_call = app_calls[-1]  # the first was declined
    assert app_call["message"]["id"] != call["message"]["id"], "the app's id is mapped to a fresh relay id"
    answered = [
        e
        for e in entries
        if e["direction"] == "to_app" and e["message"].get("id") == app_call["message"]["id"]
    ]
    assert "result" in answered[-1]["message"], "and mapped back for the app"
    page.screenshot(path="test-artifacts/apps-order-card.png", full_page=True)
    # Closing the app tears it down first, as a host should, then removes its frame.
    page.get_by_role("button", name="Close the app").click()
    expect(page.locator("iframe.app-frame")).to_have_count(0)
    expect(page.locator(".log-app .log-label").filter(has_text="ui/resource-teardown").first).to_be_attached()


def test_an_app_goes_on_working_after_the_connection_drops(page: Page) -> None:
    sockets: list[tuple[WebSocketRoute, WebSocketRoute]] = []
    page.route_web_socket(re.compile(r"/ws/"), lambda ws: sockets.append((ws, ws.connect_to_server())))
    app = open_app(page, "demo-orders", "show_order", {"order_id": "123456"})
    expect(app.locator("#status")).to_have_text("shipped")
    sockets[-1][0].close(code=4000, reason="dropped")  # a network drop: the session waits for the page
    expect(page.locator("[data-console-state]")).to_contain_text("Reconnected")
    app.locator("#refresh").click()
    page.locator(".app-ask").get_by_role("button", name="Allow").click()
    expect(app.locator("#note")).to_have_text("Refreshed through the host.")
    expect(page.locator("iframe.app-frame")).to_have_count(1)  # the replay rendered no second app
