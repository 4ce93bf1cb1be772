"""The "Connect your own client" panel in Chromium: it makes an endpoint, its Python snippet runs as
given, and the page shows that client's exchange live."""

from __future__ import annotations

import subprocess
import sys

from playwright.sync_api import Page, expect

from tests.support.appserver import ROOT

CLIENT_TIMEOUT_S = 120


def test_the_panel_makes_an_endpoint_and_shows_a_real_clients_traffic(page: Page) -> None:
    page.goto("/playground")
    panel = page.locator("[data-endpoint-panel]")
    panel.get_by_role("button", name="Make an endpoint URL").click()
    url = panel.locator("[data-endpoint-url]")
    expect(url).to_contain_text("/mcp/")
    snippet = panel.locator('[data-snippet="python"]').inner_text()
    assert (
        url.inner_text() in snippet
        and url.inner_text() in panel.locator('[data-snippet="vscode"]').inner_text()
    )
    # The snippet exactly as a learner would copy it, run by the official SDK in our own venv.
    ran = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, cwd=ROOT,
                         timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == "['get_order_status']"
    # The SDK's Client speaks 2026-07-28: stateless requests, each naming its method in a header.
    expect(panel.locator("[data-endpoint-status]")).to_contain_text("stateless requests (2026-07-28)")
    log = panel.locator("[data-endpoint-log] li.log-entry")
    expect(log.filter(has_text="tools/list (request")).to_have_count(1)
    reply = log.filter(has_text="result for tools/list")
    expect(reply).to_have_count(1)
    expect(reply).to_contain_text("get_order_status")
    expect(panel.locator("[data-endpoint-sequence] g.arrow")).not_to_have_count(0)
    for _ in range(2):  # two more polls of the traffic: what was shown is not shown again
        with page.expect_request(lambda request: "/traffic?" in request.url):
            pass
    expect(log.filter(has_text="tools/list (request")).to_have_count(1)
    expect(panel.locator("[data-endpoint-sequence] g.arrow")).to_have_count(log.count())
    http = panel.locator("[data-endpoint-exchanges] li")
    listed = http.filter(has_text="POST → 200: tools/list")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("MCP-Protocol-Version: 2026-07-28")
    expect(listed).to_contain_text("Mcp-Method: tools/list")
    expect(listed).to_contain_text("got text/event-stream")  # the SDK asks for both; we answer as a stream
