"""A hostile MCP App (tests/fixtures/hostile_app_server.py) in the console: whatever it tries from its
sandboxed frame on the proxy's origin, it cannot reach the playground's cookies, storage, DOM, pages or
network, cannot set a cookie the site receives, post a form or a request the site accepts, navigate
the page, call a tool unasked, or stop the console by sending garbage or a flood."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.conftest import EXPECT_TIMEOUT_MS
from tests.browser.test_apps import open_app, send, transcript
from tests.support.appserver import AppProcess


@pytest.fixture
def context(browser: Browser, browser_app: AppProcess) -> Iterator[BrowserContext]:
    """A browser of its own, without the page probe: this app breaks the policy on purpose."""
    context = browser.new_context(base_url=browser_app.base, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    yield context
    context.close()


def test_a_hostile_app_reaches_nothing_of_the_playground(
    context: BrowserContext, browser_app: AppProcess
) -> None:
    page: Page = context.new_page()
    posts_from_frames: list[str] = []
    page.on(
        "request",
        lambda r: (
            posts_from_frames.append(r.url) if r.method == "POST" and r.frame != page.main_frame else None
        ),
    )
    page.goto("/playground?server=test-hostile-app")
    page.evaluate("localStorage.setItem('site-secret', 'the site keeps this')")
    app = open_app(page, "test-hostile-app", "open_app", {})
    learner = next(c for c in context.cookies(browser_app.base) if c["name"] == "playground_learner")
    expect(app.locator("#done")).to_have_text("attacks done", timeout=30_000)
    results = json.loads(app.locator("#results").text_content() or "{}")

    assert results["parentDom"].startswith("blocked"), results  # another origin: no DOM
    assert "playground_learner" not in results["cookies"], results
    assert results["storage"] is None or results["storage"].startswith("blocked"), results  # not the site's
    assert [c["value"] for c in context.cookies(browser_app.base) if c["name"] == "playground_learner"] == [
        learner["value"]
    ], "the app's cookie went to the proxy's host, never to the site"
    assert page.url.endswith("/playground?server=test-hostile-app"), "the top page was not navigated"
    assert results["openWindow"] == "null" and len(context.pages) == 1, "no popup"
    assert results["fetchSite"].startswith("blocked") and results["fetchOutside"] == "blocked", results
    assert results["image"] == "blocked" and results["websocket"].startswith("blocked"), results
    assert posts_from_frames == [], "no form or request from the app left the browser"
    # Malformed and oversized messages are answered with an error, and the host goes on answering.
    assert results["oversized"] == -32600 and results["badVersion"] == -32600, results
    assert results["nullIdErrors"] == [-32600, -32600], results
    assert "not visible to apps" in results["modelOnly"], results
    assert "did not list a tool" in results["unlisted"] and results["openScript"] is True, results
    assert results["afterwards"] == "answered", results
    expect(
        page.locator(".log-note-entry").filter(has_text="a message the host refused").first
    ).to_be_attached()

    # Its tool call waits for the learner, and a declined one never reaches the server.
    ask = page.locator(".app-ask")
    expect(ask).to_contain_text("secret")
    assert not [e for e in transcript(page) if e.get("by") == "app"]
    # The question takes the focus to Deny, and Allow takes no press at first: the keys of a learner
    # typing in the app when it asks must not say yes.
    expect(ask.get_by_role("button", name="Deny")).to_be_focused()
    page.keyboard.press("Enter")
    expect(app.locator("#done")).to_contain_text("declined")
    assert not [e for e in transcript(page) if e.get("by") == "app"]

    # A flood: the host reads its share and refuses the rest; the session and its console go on.
    expect(app.locator("#flood")).to_contain_text("refused", timeout=30_000)
    answered, refused = (int(n) for n in (app.locator("#flood").text_content() or "").split()[1::2])
    assert answered + refused == 60 and refused > 0, (answered, refused)
    send(page, {"jsonrpc": "2.0", "id": 77, "method": "ping"})
    expect(page.locator(".log-received .log-label").filter(has_text="id 77")).to_be_visible()
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")


def test_a_double_click_on_allow_answers_only_the_question_it_was_meant_for(context: BrowserContext) -> None:
    """An app asks twice at once: the learner sees one question at a time, and the next one's Allow
    takes no press until it has been seen, so a double click on the first cannot allow the second."""
    page: Page = context.new_page()
    app = open_app(page, "test-hostile-app", "two_asks", {})
    ask = page.locator(".app-ask:visible")
    expect(ask).to_have_count(1)
    expect(ask).to_contain_text("harmless")
    allow = ask.get_by_role("button", name="Allow")
    expect(allow).to_be_enabled()
    allow.dblclick()
    expect(app.locator("#first")).to_have_text("ran")
    expect(ask).to_contain_text("DANGEROUS")
    expect(app.locator("#second")).to_be_empty()  # the second click answered nothing
    ask.get_by_role("button", name="Deny").click()
    expect(app.locator("#second")).to_have_text("declined")
    calls = [e for e in transcript(page) if e.get("by") == "app"]
    assert [e["message"]["params"]["arguments"] for e in calls] == [{"text": "harmless"}]


def test_an_app_that_reloads_its_sandbox_page_is_not_loaded_again(context: BrowserContext) -> None:
    """From the side of an app that reloads the proxy's page (its own origin) with a wider policy in
    the address: the host loads an app once a mount, so its declared policy stands."""
    page: Page = context.new_page()
    open_app(page, "test-hostile-app", "reload_app", {})
    # The proxy said it was ready a second time: its page was reloaded, by the app.
    expect(page.locator(".log-note-entry").filter(has_text="sandbox page loaded again")).to_be_attached()
    assert any("again=1" in frame.url for frame in page.frames)
    proxy = page.frame_locator("iframe.app-frame")
    expect(proxy.locator("iframe")).to_have_count(0)  # the reloaded proxy got no app to load
