"""A learner writes their own server in the page, as a learner would: type a tool in the editor, save,
see it listed in the console, and pass the step's exercise. Runs on a small test course
(tests/fixtures/build_lessons), so the page is asserted, not the Build track's wording."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import PageProbe, _page, clear_and_insert
from tests.support.appserver import AppProcess

LESSONS = Path(__file__).resolve().parents[1] / "fixtures" / "build_lessons"
SOLUTION = (LESSONS / "solutions" / "add.py").read_text()
STEP = "/course/first-tool/add"


@pytest.fixture(scope="module")
def build_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    # A slower read of servers' output than the default 4 MiB/s (64 lines of `x` a second, not 1000):
    # a server printing in a loop is then held back by the relay's pace, which stops it within ~20 s,
    # not by a busy machine's browser reading slower still.
    with AppProcess(tmp_path_factory.mktemp("build-browser"), lessons_dir=str(LESSONS), warm_pool_size=0,
                    server_read_bytes_per_s=256 * 1024) as app:  # fmt: skip
        yield app


@pytest.fixture
def learner(
    browser: Browser, build_app: AppProcess, probe: PageProbe, request: pytest.FixtureRequest
) -> Iterator[Page]:
    yield from _page(browser, build_app, probe, "light", request, "learner")


def send(page: Page, message: dict) -> None:
    """Type a message in the console's JSON editor and send it with the keyboard."""
    page.locator("section.console .cm-content").click()
    clear_and_insert(page, json.dumps(message))
    page.keyboard.press("Control+Enter")


def open_workspace(page: Page) -> None:
    """The step's page, its editor loaded."""
    page.goto(STEP)
    expect(page.locator("[data-workspace]")).to_have_attribute("data-state", "ready")


def write(page: Page, text: str) -> None:
    """Replace the whole file in the Python editor, as typing would."""
    page.locator("[data-workspace] .cm-content").click()
    clear_and_insert(page, text)


def test_write_a_tool_save_see_it_listed_and_pass_the_exercise(learner: Page, artifacts: Path) -> None:
    page = learner
    open_workspace(page)
    expect(page.locator("[data-workspace-status]")).to_contain_text("starter file")
    write(page, SOLUTION)
    expect(page.locator("[data-workspace]")).to_have_attribute("data-edited", "true")
    page.keyboard.press("Control+Enter")  # save and restart the console's server with the new file
    expect(page.locator("[data-workspace-status]")).to_contain_text("Saved as version 1")
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")
    expect(page.locator("[data-workspace-status]")).to_have_text(
        "Saved as version 1. Your server is running it."
    )
    send(page, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "me", "version": "1"}}})  # fmt: skip
    expect(page.locator("ol.log li.log-entry[data-kind=received]").first).to_contain_text("initialize")
    send(page, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(page, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    expect(page.locator("ol.log li.log-entry[data-kind=received]").last).to_contain_text('"add"')
    page.locator('[data-action="run-exercise"]').click()
    expect(page.locator("[data-exercise-status]")).to_contain_text("All 3 passed")
    expect(page.locator("[data-exercise] [data-test][data-state=passed]")).to_have_count(3)
    page.screenshot(path=artifacts / "own-server-exercise-passed.png", full_page=True)
    page.reload()
    expect(page.locator("[data-exercise]")).to_have_attribute("data-passed", "true")


def test_a_syntax_error_is_shown_where_it_is_and_the_exercise_says_why_it_fails(learner: Page) -> None:
    page = learner
    open_workspace(page)
    write(page, "from mcp.server.mcpserver import MCPServer\n\ndef broken(:\n    pass\n")
    page.keyboard.press("Control+s")
    expect(page.locator("[data-workspace-status]")).to_contain_text("line 3, column 12: invalid syntax")
    expect(page.locator("[data-workspace] .cm-lintRange-error")).to_have_count(1)
    page.locator('[data-action="run-exercise"]').click()
    expect(page.locator("[data-exercise-status]")).to_contain_text("The run stopped")
    expect(page.locator("[data-exercise-stderr] pre")).to_contain_text("SyntaxError")
    # A file that compiles but stops at once, saved and run: the status follows the server.
    write(page, "import sys\n\nsys.exit('no mcp.run() here')\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("[data-workspace-status]")).to_contain_text(
        "your server stopped: the console says why"
    )


def test_without_the_editor_bundle_the_textarea_saves(learner: Page) -> None:
    page = learner
    page.route("**/static/vendor/codemirror.js", lambda route: route.abort())
    open_workspace(page)
    source = page.locator("#workspace-source-server")
    source.fill(SOLUTION)
    source.press("Control+s")
    expect(page.locator("[data-workspace-status]")).to_contain_text("Saved as version 1")


def test_a_server_that_never_serves_is_explained_in_the_console(learner: Page) -> None:
    page = learner
    open_workspace(page)
    write(page, "import time\n\ntime.sleep(10 ** 6)  # forgot mcp.run()\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("[data-workspace-status]")).to_contain_text("Saved as version 1")
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")
    send(page, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    notes = page.locator("ol.log .note-warn")
    expect(notes.filter(has_text="has not started serving")).to_have_count(1, timeout=30_000)
    expect(page.locator("[data-console-state]")).to_contain_text("not answering")
    # Saved and restarted while the first server may still have been starting: one session all along.
    expect(notes.filter(has_text="ended while you were away")).to_have_count(0)


def test_a_server_printing_in_a_loop_keeps_the_page_quick_and_is_stopped_with_its_reason(
    learner: Page,
) -> None:
    """The page keeps only the newest entries (the log) and arrows (the diagram), so it reads as fast as
    the relay sends, and the relay's pace then stops the flood: the console says why, not just the
    signal that ended it."""
    page = learner
    open_workspace(page)
    write(page, "import sys\n\nwhile True:\n    sys.stdout.write('x\\n')\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("[data-workspace-status]")).to_contain_text("Saved as version 1")
    state = page.locator("[data-console-state]")
    expect(state).to_have_attribute("data-state", "exited", timeout=240_000)  # a busy machine reads slowly
    expect(state).to_contain_text("kept writing faster than the playground reads output")
    entries = page.locator("ol.log li.log-entry")
    assert entries.count() <= 302  # the newest 300, the note of how many left, and the stop's note
    expect(page.locator("ol.log .note-warn").first).to_contain_text("no longer shown here")
    assert page.locator("svg.sequence g.arrow").count() <= 300
    expect(page.locator("svg.sequence")).to_contain_text("more messages")


def test_a_traceback_is_one_log_card_with_its_lines(learner: Page) -> None:
    page = learner
    open_workspace(page)
    write(page, "def fails():\n    return 1 / 0\n\n\nfails()\n")
    page.keyboard.press("Control+Enter")
    expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "exited")
    cards = page.locator("ol.log li.log-entry[data-kind=stderr]")
    expect(cards).to_have_count(1)  # a card for the burst, not one for each of its lines
    text = cards.first.locator("pre").inner_text()
    assert text.startswith("Traceback (most recent call last):\n"), text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero"), text


def test_write_tests_run_them_and_pass_the_testing_exercise(learner: Page, artifacts: Path) -> None:
    """Lesson steps with `workspace: test_server.py` show a second editor: the learner pastes the
    server, writes tests, runs them with pytest in the sandbox, and passes the exercise that runs them
    beside broken servers."""
    page = learner
    page.goto("/course/testing/calculator")
    server = page.locator("[data-workspace='server.py']")
    tests = page.locator("[data-workspace='test_server.py']")
    expect(server).to_have_attribute("data-state", "ready")
    expect(tests).to_have_attribute("data-state", "ready")
    expect(tests.locator("[data-workspace-status]")).to_contain_text("starter file")
    server.locator(".cm-content").click()
    clear_and_insert(page, (LESSONS / "solutions" / "calc.py").read_text())
    tests.locator(".cm-content").click()
    clear_and_insert(page, (LESSONS / "solutions" / "calc_tests.py").read_text())
    page.keyboard.press("Control+Enter")  # saves both files, then runs the tests
    expect(tests).to_have_attribute("data-tests-ended", "0", timeout=60_000)
    expect(tests.locator("[data-run-output]")).to_contain_text("test_add_adds[asyncio] PASSED")
    expect(tests.locator("[data-run-status]")).to_contain_text("Every test passed.")
    expect(server.locator("[data-workspace-status]")).to_contain_text("Saved as version 1")
    page.screenshot(path=str(artifacts / "testing-run.png"), full_page=True)
    page.locator("[data-action='run-exercise']").click()
    exercise = page.locator("[data-exercise]")
    expect(exercise).to_have_attribute("data-passed", "true", timeout=60_000)
    expect(exercise.locator("[data-test][data-state=passed]")).to_have_count(3)
    expect(exercise.locator("[data-exercise-status]")).to_contain_text("All 3 passed")


def test_on_a_laptop_a_79_character_line_of_server_py_fits_its_editor(learner: Page) -> None:
    page = learner
    page.set_viewport_size({"width": 1366, "height": 768})
    open_workspace(page)
    write(page, "x = 1  # " + "y" * 70 + "\n")  # 79 characters
    scroller = page.locator("[data-workspace] .cm-scroller")
    assert scroller.evaluate("e => e.scrollWidth - e.clientWidth") <= 1, scroller.evaluate(
        "e => [e.scrollWidth, e.clientWidth]"
    )


def test_a_second_tab_an_unsaved_edit_and_a_restore_never_lose_typed_text(learner: Page) -> None:
    """Two tabs of one learner: a save from the one that has not seen the other's is refused and
    says so, keeping its text, until saved again on purpose; leaving or restoring over typed text
    asks first."""
    first = learner
    open_workspace(first)
    write(first, "x = 1  # first tab\n")
    first.keyboard.press("Control+s")
    expect(first.locator("[data-workspace-status]")).to_contain_text("Saved as version 1")

    second = first.context.new_page()
    try:
        open_workspace(second)
        write(second, "x = 2  # second tab\n")
        second.keyboard.press("Control+s")
        expect(second.locator("[data-workspace-status]")).to_contain_text("Saved as version 2")
    finally:
        second.close()

    write(first, "x = 3  # an hour of work in the first tab\n")
    first.keyboard.press("Control+s")
    status = first.locator("[data-workspace-status]")
    expect(status).to_contain_text("another tab or device saved version 2")
    expect(first.locator("[data-workspace] .cm-content")).to_contain_text("an hour of work")
    assert first.request.get("/api/workspace/server.py").text() == "x = 2  # second tab\n"
    first.keyboard.press("Control+s")  # again, knowing: the first tab's text becomes the newest
    expect(status).to_contain_text("Saved as version 3")
    assert "an hour of work" in first.request.get("/api/workspace/server.py").text()

    # Restoring over typed text asks; declined, the text stays.
    write(first, "x = 4  # typed, not saved\n")
    asked: list[str] = []
    first.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    first.get_by_text("Saved versions").click()
    first.locator("[data-history]").select_option("1")
    first.locator('[data-action="restore"]').click()
    expect(first.locator("[data-workspace] .cm-content")).to_contain_text("typed, not saved")
    assert asked and "not saved will be replaced" in asked[0]

    # Leaving with typed text asks too (here: closing the tab).
    left: list[str] = []
    first.once("dialog", lambda dialog: (left.append(dialog.type), dialog.accept()))
    still_open = first.context.new_page()  # where the test waits while the first tab asks and closes
    first.close(run_before_unload=True)
    deadline = time.monotonic() + 10
    while not left:
        assert time.monotonic() < deadline, "no question before leaving typed text"
        still_open.wait_for_timeout(50)
    assert left == ["beforeunload"]
