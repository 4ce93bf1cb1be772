"""The course on a touch phone (390 x 844): Send stays in view after a Try-it, no keyboard hints, long
messages wrap in the editor, the check banner covers nothing, and no step page scrolls sideways."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.browser.conftest import clear_and_insert, console_ready
from tests.support.appserver import AppProcess
from tests.support.lessons import course


def test_on_a_touch_phone_try_it_keeps_send_in_view_and_no_keyboard_hint_shows(
    browser: Browser, browser_app: AppProcess, artifacts: Path
) -> None:
    context = browser.new_context(base_url=browser_app.base, viewport={"width": 390, "height": 844},
                                  is_mobile=True, has_touch=True)  # fmt: skip
    try:
        page = context.new_page()
        page.goto("/course/tools/list")
        console_ready(page)
        assert page.locator(".keys-hint").count() >= 2
        for hint in page.locator(".keys-hint").all():
            expect(hint).to_be_hidden()  # a phone has no Ctrl, and no arrow keys
        example = page.locator("figure[data-before] pre[data-example]").first
        example.locator("xpath=following-sibling::button[1]").tap()  # sends initialize first, then puts it
        expect(page.locator("section.console")).to_contain_text("Sent first what this example needs")
        send = page.get_by_role("button", name="Send", exact=True)
        expect(send).to_be_in_viewport()
        page.screenshot(path=artifacts / "phone-try-it-send-in-view.png")
        send.tap()
        news = page.locator("[data-check-news]")
        expect(news).to_contain_text("Check passed")
        expect(news).to_be_in_viewport()  # held at the bottom of the screen at first
        expect(news).to_have_attribute("data-settled", "true", timeout=20_000)  # then out of the way
        newest = page.locator("ol.log li.log-entry").last
        newest.evaluate("e => e.scrollIntoView({block: 'end'})")  # its last lines, where the banner was
        box, entry = news.bounding_box(), newest.bounding_box()
        assert (
            box
            and entry
            and (box["y"] >= entry["y"] + entry["height"] or box["y"] + box["height"] <= entry["y"])
        )
        # A long message wraps in the editor rather than running off its side.
        page.locator("section.console .cm-content").tap()
        clear_and_insert(page, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                           "params": {"name": "get_order_status", "arguments": {"order_id": "1" * 60}}}))  # fmt: skip
        scroller = page.locator("section.console .cm-scroller")
        assert scroller.evaluate("e => e.scrollWidth - e.clientWidth") <= 1
    finally:
        context.close()


def no_step_page_scrolls_sideways(browser: Browser, app: AppProcess, half: int) -> None:
    """Every step of the course (its first or second half) at 390 px: wide content (code, logs,
    tables) scrolls in its own box, the page itself never does. The consoles' WebSockets are answered
    in the page (no server starts): the layout is what is checked."""

    steps = list(course().steps())
    middle = len(steps) // 2
    context = browser.new_context(base_url=app.base, viewport={"width": 390, "height": 844},
                                  is_mobile=True, has_touch=True)  # fmt: skip
    try:
        page = context.new_page()
        page.route_web_socket(re.compile(r".*/ws/.*"), lambda ws: None)  # open, and silent
        wide = {}
        for step in steps[:middle] if half == 1 else steps[middle:]:
            page.goto(f"/course/{step.slug}")
            expect(page.locator("article.step")).to_be_visible()
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            if overflow > 1:
                wide[step.slug] = overflow
        assert not wide, f"step pages wider than a phone (px): {wide}"
    finally:
        context.close()


# The second half is walked in test_phone_later.py: another worker walks it meanwhile.
def test_no_step_page_of_the_first_half_scrolls_sideways_on_a_phone(
    browser: Browser, browser_app: AppProcess
) -> None:
    no_step_page_scrolls_sideways(browser, browser_app, 1)
