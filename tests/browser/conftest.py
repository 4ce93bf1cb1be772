"""Real-browser tests: Debian Chromium driven by Playwright against the real app on a loopback port.

One app and one browser serve the whole package; each test gets a fresh browser context (a new
learner cookie). Every request a page makes is recorded, and a test fails if one leaves this machine (127.0.0.1, and localhost for the apps' proxy).
When a test fails, each of its pages leaves a screenshot and what it logged and sent in
test-artifacts/failures/, named after the test.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from tests.support.appserver import ROOT, AppProcess

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ARTIFACTS = ROOT / "test-artifacts"
# Generous: two busy cores start sandboxed servers while Chromium renders.
EXPECT_TIMEOUT_MS = 20_000
LOCAL_SCHEMES = {"data", "blob", "about"}
# The site, and the MCP Apps sandbox proxy on this machine's other name (app/web/apps_proxy.py).
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
INSTRUCTOR_TOKEN = "browser-tests-instructor-token"
FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Mark a test whose body failed, so that its pages' teardown can keep what they show."""
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing: `make test` installs it (apt-get install chromium)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="package")
def browser_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    """The real app, with the test-only `test-probe` server registered too."""
    _require_chromium()
    app = AppProcess(
        tmp_path_factory.mktemp("browser-app"),
        extra_demo_modules=["tests.fixtures.probe_server", "tests.fixtures.hostile_app_server"],
        reply_timeout_s=1,  # so the "no reply yet" explanation shows within a test
        instructor_token=INSTRUCTOR_TOKEN,
        # A learner's output is read at an eighth of the default pace (still far above any demo's), so a
        # flooding server outruns it even when a busy machine slows the web process's own reading.
        server_read_bytes_per_s=512 * 1024,
        run_time_limit_s=3,  # a runnable block that never ends is stopped within a test
    )
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="package")
def playwright_driver() -> Iterator[Playwright]:
    _require_chromium()
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    browser = playwright_driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture(scope="package")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class PageProbe:
    """What a page did that a test may assert on afterwards."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.frames_sent: list[str] = []
        self.console: list[str] = []  # every console message, "type: text"

    def csp_violations(self) -> list[str]:
        return [line for line in self.console if "Content Security Policy" in line]

    def outside(self) -> list[str]:
        return [
            url for url in self.requests
            if urlsplit(url).scheme not in LOCAL_SCHEMES and urlsplit(url).hostname not in LOCAL_HOSTS
        ]  # fmt: skip


def _new_page(browser: Browser, app: AppProcess, color_scheme: str, probe: PageProbe) -> Page:
    context = browser.new_context(
        base_url=app.base, viewport={"width": 1400, "height": 950}, color_scheme=color_scheme,  # type: ignore[arg-type]
        permissions=["clipboard-read", "clipboard-write"],
    )  # fmt: skip
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    page = context.new_page()
    page.on("request", lambda request: probe.requests.append(request.url))
    page.on("websocket", lambda ws: probe.requests.append(ws.url))
    page.on(
        "websocket", lambda ws: ws.on("framesent", lambda payload: probe.frames_sent.append(str(payload)))
    )
    page.on("pageerror", lambda error: probe.errors.append(str(error)))
    page.on("console", lambda message: probe.console.append(f"{message.type}: {message.text}"))
    return page


@pytest.fixture
def probe() -> PageProbe:
    return PageProbe()


@pytest.fixture
def page(
    browser: Browser, browser_app: AppProcess, probe: PageProbe, request: pytest.FixtureRequest
) -> Iterator[Page]:
    yield from _page(browser, browser_app, probe, "light", request, "page")


@pytest.fixture
def second_page(browser: Browser, browser_app: AppProcess, request: pytest.FixtureRequest) -> Iterator[Page]:
    """Another browser (its own cookies): a second person in the same test."""
    yield from _page(browser, browser_app, PageProbe(), "light", request, "second_page")


@pytest.fixture
def dark_page(
    browser: Browser, browser_app: AppProcess, probe: PageProbe, request: pytest.FixtureRequest
) -> Iterator[Page]:
    yield from _page(browser, browser_app, probe, "dark", request, "dark_page")


def _page(browser: Browser, app: AppProcess, probe: PageProbe, scheme: str, request: pytest.FixtureRequest,
          role: str) -> Iterator[Page]:  # fmt: skip
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    page = _new_page(browser, app, scheme, probe)
    yield page
    if request.node.stash.get(FAILED, False):
        keep_failure(page, probe, f"{request.node.name}-{role}")
    page.context.close()
    assert probe.outside() == [], f"the page made requests off this machine: {probe.outside()}"
    assert probe.errors == [], f"JavaScript errors on the page: {probe.errors}"
    assert probe.csp_violations() == [], (
        f"the page broke its Content-Security-Policy: {probe.csp_violations()}"
    )


def keep_failure(page: Page, probe: PageProbe, name: str) -> None:
    """Save what a failed test's page shows, logged and sent, for whoever reads the failure."""
    folder = ARTIFACTS / "failures"
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / re.sub(r"[^\w.-]+", "_", name)
    try:
        page.screenshot(path=f"{stem}.png", full_page=True)
    except Exception as exc:  # a page that crashed still leaves its log
        probe.console.append(f"(no screenshot: {exc})")
    lines = [f"url: {page.url}", "", "console:", *probe.console, "", "frames sent:", *probe.frames_sent]
    Path(f"{stem}.txt").write_text("\n".join(lines) + "\n")


def clear_and_insert(page: Page, text: str) -> None:
    """Replace the focused editor's text: select all, delete, insert. (Inserting, or Playwright's
    fill(), over a selection of several lines lets Chromium's own editing merge the lines, and it
    tries a style attribute the CSP refuses; the editor's own delete does not.)"""
    page.keyboard.press("Control+a")
    page.keyboard.press("Backspace")
    page.keyboard.insert_text(text)


def console_ready(page: Page) -> None:
    """Wait until the page's console has its session, before a test sends: on a busy machine a page
    may not have it yet when the test's next line runs."""
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")
