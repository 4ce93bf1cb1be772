"""A lesson's runnable block in Chromium: the learner runs it as shown and sees its output as it comes,
then edits it into a loop that never ends, which is stopped at its time limit (3 s here)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import clear_and_insert

STEP = "/course/notifications-stateless-and-clients/real-client"


def test_a_block_runs_and_a_block_that_never_ends_is_stopped(page: Page) -> None:
    page.goto(STEP)
    block = page.locator("[data-runnable]").first
    run = block.get_by_role("button", name="Run")
    expect(run).to_be_visible()  # the editor has replaced the static code
    run.click()
    output = block.locator("[data-run-output]")
    expect(output).to_contain_text("tools: ['show_order', 'get_order_status']")
    expect(output).to_contain_text("shipped")
    expect(block.locator("[data-run-status]")).to_contain_text(re.compile(r"^Finished in \d"))
    block.locator(".cm-content").click()
    clear_and_insert(page, "import time\nprint('looping', flush=True)\nwhile True:\n    time.sleep(0.1)\n")
    run.click()
    expect(output).to_have_text("looping\n")
    expect(block.locator("[data-run-status]")).to_contain_text("Stopped after", timeout=30_000)
    expect(block.locator("[data-run-status]")).to_contain_text("at most 3 s")
    expect(block).to_have_attribute("data-ended", "time")
    expect(run).to_be_enabled()
