"""The second half of the course's step pages on a phone (tests/browser/test_phone.py walks the
first): a module of its own, so that another worker walks it meanwhile."""

from __future__ import annotations

from playwright.sync_api import Browser

from tests.browser.test_phone import no_step_page_scrolls_sideways
from tests.support.appserver import AppProcess


def test_no_step_page_of_the_second_half_scrolls_sideways_on_a_phone(
    browser: Browser, browser_app: AppProcess
) -> None:
    no_step_page_scrolls_sideways(browser, browser_app, 2)
