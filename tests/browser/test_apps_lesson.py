"""Lesson 25 (MCP Apps) walked in Chromium, the steps whose checks need a rendered app: the host-app
handshake, an app's call allowed and declined, and the learner's own app (the reference solution,
saved as their server.py). tests/course/test_walk.py walks the lesson's other steps."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import FrameLocator, Page, expect

from tests.browser.conftest import console_ready
from tests.browser.test_apps import send
from tests.support.appserver import ROOT

LESSON = "/course/mcp-apps"


def passed(page: Page, *checks: str) -> None:
    for name in checks:
        expect(page.locator(f'li.check[data-check="{name}"]')).to_have_attribute("data-passed", "true")


def open_app(page: Page, step: str, tool: str, arguments: dict[str, Any]) -> FrameLocator:
    """As the step says: its own initialize (in the editor), initialized, tools/list, the tool call."""
    page.goto(f"{LESSON}/{step}")
    console_ready(page)
    page.locator(".console .cm-content").first.click()
    page.keyboard.press("Control+Enter")
    expect(page.locator(".console .log-received")).to_have_count(1)
    send(page, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(page, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    expect(page.locator(".console .log-received")).to_have_count(2)
    send(
        page,
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    )
    return page.frame_locator("iframe.app-frame").frame_locator("iframe")


def test_the_handshake_and_the_calls_steps_pass_with_the_order_card(page: Page) -> None:
    card = open_app(page, "handshake", "show_order", {"order_id": "123456"})
    expect(card.locator("#status")).to_have_text("shipped")
    passed(page, "app-initialized", "app-tool-data-delivered")

    card = open_app(page, "security", "show_order", {"order_id": "123456"})
    expect(card.locator("#status")).to_have_text("shipped")
    card.locator("#refresh").click()
    page.locator(".app-ask").get_by_role("button", name="Allow").click()
    expect(card.locator("#note")).to_have_text("Refreshed through the host.")
    card.locator("#refresh").click()
    page.locator(".app-ask").get_by_role("button", name="Deny").click()
    expect(card.locator("#note")).to_contain_text("Not refreshed")
    passed(page, "app-call-allowed", "app-call-declined")


# Whether the app's frame lies wholly in what the learner sees: the window, and the console's panel
# where the panel scrolls by itself (a step page on a laptop).
FRAME_IN_VIEW = """() => {
  const frame = document.querySelector("iframe.app-frame").getBoundingClientRect();
  const panel = document.querySelector(".console");
  const area = panel.scrollHeight > panel.clientHeight ? panel.getBoundingClientRect() : {top: 0, bottom: innerHeight};
  return frame.top >= Math.max(area.top, 0) - 1 && frame.bottom <= Math.min(area.bottom, innerHeight) + 1;
}"""
TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


@pytest.mark.parametrize("size", [(1400, 950), (390, 844)], ids=["laptop", "phone"])
def test_the_card_stays_in_view_while_the_apps_own_messages_fill_the_log(
    page: Page, size: tuple[int, int]
) -> None:
    """Each message between the console and the app is a log entry; none of them may scroll the card
    the learner is about to use out of view, as the step asks them to press its button."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    card = open_app(page, "security", "show_order", {"order_id": "123456"})
    expect(card.locator("#status")).to_have_text("shipped")
    sized = page.locator('.console .log-app[data-from="app"]').filter(has_text="size-changed")
    expect(sized).not_to_have_count(0)  # the app's last message of its opening
    page.evaluate(TWO_FRAMES)  # the log brings entries into view on the next animation frame
    assert page.evaluate(FRAME_IN_VIEW)
    card.locator("#refresh").click()
    expect(page.locator(".app-ask")).to_be_in_viewport()


def test_the_learners_own_app_makes_its_round_trip(page: Page) -> None:
    page.goto(f"{LESSON}/own-app")
    console_ready(page)  # the console has asked for the learner's identity by now
    solution = (ROOT / "lessons" / "solutions" / "25-app.py").read_text()
    saved = page.request.put("/api/workspace/server.py", data=solution,
                             headers={"Origin": page.url.split("/course")[0]})  # fmt: skip
    assert saved.ok and json.loads(saved.text())["diagnostics"] == [], saved.text()
    app = open_app(page, "own-app", "show_menu", {})
    expect(app.locator("#menu")).to_contain_text("latte")
    app.locator("#order").click()
    page.locator(".app-ask").get_by_role("button", name="Allow").click()
    expect(app.locator("#said")).not_to_be_empty()
    passed(page, "own-app-round-trip")
    page.screenshot(path=str(ROOT / "test-artifacts" / "apps-own-app.png"), full_page=True)
