"""Every page works under the Content-Security-Policy: no console error, no violation, on a real
Chromium, including a console that connects and sends."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import PageProbe

PAGES = ("/", "/course", "/course/initialize-handshake", "/playground", "/join", "/resume", "/instructor",
         "/no-such-page")  # fmt: skip


def test_every_page_loads_under_the_policy_without_a_console_error(page: Page, probe: PageProbe) -> None:
    for path in PAGES:
        page.goto(path)
        # Until nothing loads: the editor's bundle comes after the load event, and leaving the page
        # mid-transfer is logged as a failed load (ERR_CONTENT_LENGTH_MISMATCH seen on a busy machine).
        page.wait_for_load_state("networkidle")
    # /instructor answers 401 (its sign-in form) and /no-such-page 404: the browser logs those statuses.
    expected = "error: Failed to load resource: the server responded with a status of 40"
    errors = [line for line in probe.console if line.startswith("error:") and not line.startswith(expected)]
    assert errors == []


def test_a_console_connects_and_answers_under_the_policy(page: Page, probe: PageProbe) -> None:
    page.goto("/course/initialize-handshake/versions")
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("li.check[data-check='version-counter-offer']")).to_have_attribute(
        "data-passed", "true"
    )
    assert [line for line in probe.console if line.startswith("error:")] == []


def test_a_check_reason_shows_code_as_code_not_backticks(page: Page) -> None:
    page.goto("/course/initialize-handshake/initialized")
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")
    page.get_by_role("button", name="Send", exact=True).click()  # initialize; the check now asks for the rest
    reason = page.locator("li.check[data-check='initialized-after-reply'] .check-reason")
    expect(reason.locator("code").last).to_have_text("notifications/initialized")
    assert "`" not in reason.inner_text()
