"""An instructor and a learner in two browsers: create a class, join it, see the progress."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from app.progress.store import JOIN_CODE_LENGTH
from tests.browser.conftest import INSTRUCTOR_TOKEN, console_ready
from tests.support.appserver import AppProcess
from tests.support.lessons import course

STEP = "/course/initialize-handshake/request"


def create_class(teacher: Page, name: str, expected_size: str = "") -> str:
    """Sign in as the instructor, create a class as the dashboard's form does; its join code."""
    teacher.goto("/instructor")
    teacher.get_by_label("Instructor token").fill(INSTRUCTOR_TOKEN)
    teacher.get_by_role("button", name="Open the dashboard").click()
    teacher.get_by_label("Name").fill(name)
    if expected_size:
        teacher.get_by_label("Expected class size").fill(expected_size)
    teacher.get_by_role("button", name="Create the class").click()
    return teacher.locator("[data-join-code]").inner_text()


def test_a_class_from_creation_to_the_learners_progress(
    page: Page, second_page: Page, artifacts: Path
) -> None:
    teacher, learner = page, second_page
    code = create_class(teacher, "Browser lab")
    assert len(code) == JOIN_CODE_LENGTH
    expect(teacher.locator("[data-class-grid]")).to_contain_text("No learner has joined yet")

    learner.goto(f"/join/{code}")
    learner.get_by_label("Your name", exact=True).fill("Ada")
    learner.get_by_role("button", name="Join").click()
    expect(learner).to_have_url(re.compile(r"/course\?joined=1$"))
    learner.goto(STEP)
    console_ready(learner)
    learner.locator("#console-message").press("Control+Enter")
    expect(learner.locator('li.check[data-check="initialize-answered"]')).to_have_attribute(
        "data-passed", "true"
    )

    # The class page follows by itself: no reload.
    row = teacher.locator("tr[data-learner]")
    expect(row.locator("th")).to_have_text("Ada")
    cell = row.locator('td[data-step="initialize-handshake/request"]')
    expect(cell).to_have_attribute("data-status", "started")  # one of the step's two checks passed
    expect(cell).to_have_attribute("title", re.compile(r"checks 1/2$"))
    expect(row.locator("a[data-session]")).to_have_text("demo-orders")  # the console is live
    teacher.screenshot(path=str(artifacts / "instructor-class.png"), full_page=True)
    with teacher.expect_download() as download:  # the grade book, as a spreadsheet opens it
        teacher.locator("a[data-gradebook]").click()
    header, ada = list(csv.reader(io.StringIO(Path(download.value.path()).read_text())))
    assert ada[0] == "Ada" and ada[header.index("steps done")] == "0"
    assert float(ada[header.index("course (%)")]) > 0  # one check of the step passed: a point
    row.locator("a[data-session]").click()
    # The learner's console as the learner sees it (the same log), following what they send next.
    sent = teacher.locator("ol.log li.log-entry[data-kind=sent]")
    expect(sent.first).to_contain_text("initialize (request, id 1)")
    received = teacher.locator("ol.log li.log-entry[data-kind=received]")
    expect(received.first).to_contain_text("result for initialize")
    expect(teacher.get_by_role("button", name="Edit in the editor")).to_have_count(0)
    learner.locator("#console-message").fill('{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
    learner.locator("#console-message").press("Control+Enter")
    expect(sent.nth(1)).to_contain_text("ping (request, id 2)")
    expect(received.nth(1)).to_contain_text("result for ping")
    teacher.screenshot(path=str(artifacts / "instructor-transcript.png"), full_page=True)

    # The instructor ends the console: the learner reads who did, in a sentence of its own.
    teacher.go_back()
    teacher.once("dialog", lambda dialog: dialog.accept())
    teacher.locator("tr[data-learner]").get_by_role("button", name="End").click()
    state = learner.locator("[data-console-state]")
    expect(state).to_have_attribute("data-state", "exited")
    expect(state).to_contain_text("Your instructor ended this console. Its session is over")
    expect(learner.locator("ol.log .note-error").last).to_have_text(
        re.compile(r"Your instructor ended this console\.$")
    )


def test_destructive_actions_ask_first(browser_app, browser) -> None:  # noqa: ANN001
    from tests.browser.conftest import EXPECT_TIMEOUT_MS

    context = browser.new_context(base_url=browser_app.base)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    teacher = context.new_page()
    try:
        teacher.goto("/instructor")
        teacher.fill("#instructor-token", INSTRUCTOR_TOKEN)
        teacher.keyboard.press("Enter")
        teacher.wait_for_url("**/instructor")
        teacher.fill("input[name=name]", "Keep me")
        teacher.locator("form[action='/instructor/classes'] button").click()
        class_page = teacher.url
        asked: list[str] = []
        teacher.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
        teacher.get_by_role("button", name="Lock joining").click()
        expect(teacher.locator("[data-joining]")).to_have_attribute("data-joining", "open")  # dismissed
        teacher.once("dialog", lambda dialog: dialog.accept())
        teacher.get_by_role("button", name="Lock joining").click()
        expect(teacher.locator("[data-joining]")).to_have_attribute("data-joining", "locked")
        teacher.get_by_role("button", name="Unlock joining").click()  # reopening needs no question
        expect(teacher.locator("[data-joining]")).to_have_attribute("data-joining", "open")
        assert "until you unlock it" in asked.pop()
        teacher.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
        teacher.get_by_role("button", name="Delete the class and its progress").click()
        expect(teacher.locator("h1")).to_have_text("Keep me")  # dismissed: nothing was sent
        assert teacher.url == class_page and "cannot be undone" in asked[0]
        teacher.once("dialog", lambda dialog: dialog.accept())
        teacher.get_by_role("button", name="Delete the class and its progress").click()
        teacher.wait_for_url("**/instructor")
        expect(teacher.locator("body")).not_to_contain_text("Keep me")
    finally:
        context.close()


def test_joins_past_the_expected_size_wait_for_approve_or_deny(
    page: Page, second_page: Page, browser: Browser, browser_app: AppProcess, artifacts: Path
) -> None:
    teacher, ada = page, second_page
    code = create_class(teacher, "One seat", expected_size="1")
    ada.goto(f"/join/{code}")
    ada.get_by_label("Your name", exact=True).fill("Ada")
    ada.get_by_role("button", name="Join").click()
    expect(ada).to_have_url(re.compile(r"/course\?joined=1$"))

    late = {name: browser.new_context(base_url=browser_app.base).new_page() for name in ("Bea", "Cy")}
    try:
        for name, learner in late.items():
            learner.goto(f"/join/{code}")
            learner.get_by_label("Your name", exact=True).fill(name)
            learner.get_by_role("button", name="Join").click()
            expect(learner).to_have_url(re.compile(r"/join/waiting$"))
            expect(learner.locator("[data-join-notice]")).to_contain_text(
                "waits for the instructor's approval"
            )
        waiting = teacher.locator("tr[data-waiting]")  # the class page's grid follows by itself
        expect(waiting).to_have_count(2)
        waiting.filter(has_text="Bea").get_by_role("button", name="Approve").click()
        expect(teacher.locator("tr[data-learner] th")).to_have_text(["Ada", "Bea"])
        teacher.locator("tr[data-waiting]").filter(has_text="Cy").get_by_role("button", name="Deny").click()
        expect(teacher.locator("tr[data-waiting]")).to_have_count(0)
        for name, answer in (("Bea", "member"), ("Cy", "denied")):
            late[name].reload()
            expect(late[name].locator("[data-join-status]")).to_have_attribute("data-join-status", answer)
        # Cy is turned away: the list, opened, stays open as the grid refreshes itself.
        teacher.locator("[data-turned-away] summary").click()
        with teacher.expect_response(lambda response: response.url.endswith("/grid")):
            pass
        expect(teacher.locator("[data-turned-away]")).to_have_attribute("open", "")
        expect(teacher.locator("[data-turned-away] li")).to_have_text(
            [re.compile(r"^\s*Cy\s+Let them join again")]
        )
        # A new code: asked first; then the old one finds no class.
        teacher.once("dialog", lambda dialog: dialog.accept())
        teacher.get_by_role("button", name="New join code").click()
        expect(teacher.locator("[data-join-code]")).not_to_have_text(code)
        late["Cy"].goto(f"/join/{code}")
        late["Cy"].get_by_label("Your name", exact=True).fill("Cy")
        late["Cy"].get_by_role("button", name="Join").click()
        expect(late["Cy"].locator(".form-error")).to_contain_text("There is no class with that code")
        teacher.screenshot(path=str(artifacts / "instructor-joins.png"), full_page=True)
    finally:
        for learner in late.values():
            learner.context.close()


def test_a_class_of_forty_reads_in_one_grid(page: Page, browser_app: AppProcess, artifacts: Path) -> None:
    """Forty learners (joined by script): the grid scrolls in its own box with the names and headers in
    sight, counts who completed each step, and keeps the order the instructor picked across refreshes."""

    catalog = course()
    step = catalog.step("what-is-mcp/client-features")  # quizzes only: answering them completes it
    assert step is not None and not step.required_checks
    teacher = page
    code = create_class(teacher, "Forty")
    for n in range(40):
        with browser_app.client() as learner:
            learner.get("/")
            assert (
                learner.post("/join", data={"code": code, "display_name": f"Learner {n:02}"}).status_code
                == 303
            )
            if n % 4 == 0:  # ten of them complete the step
                learner.get(f"/course/{step.slug}")
                for quiz in step.quizzes:
                    right = [c.key for c in quiz.choices if c.correct]
                    learner.post(f"/api/course/{step.slug}/quiz/{quiz.id}", json={"choices": right})
    with browser_app.client() as stuck:  # one past the 40 expected, whose server does not even import
        stuck.get("/")
        stuck.post("/join", data={"code": code, "display_name": "Stuck Learner"})
        stuck.get("/course/your-first-tool/first-tool")
        stuck.put("/api/workspace/server.py", content="import requests_that_do_not_exist\n")
        assert stuck.post("/api/exercises/your-first-tool/first-tool").json()["passed"] is False
    teacher.reload()
    waiting = teacher.locator("tr[data-waiting]")  # past the expected size: waits for the instructor
    expect(waiting.locator("th")).to_have_text("Stuck Learner")
    waiting.get_by_role("button", name="Approve").click()
    rows = teacher.locator("table.progress-grid tbody tr")
    expect(rows).to_have_count(41)
    expect(teacher.locator(f'[data-completed-by="{step.slug}"]')).to_have_text("10")
    teacher.get_by_role("button", name="least done first").click()
    expect(rows.first).to_have_attribute("data-done", "0")
    expect(rows.last).to_have_attribute("data-done", "1")
    with teacher.expect_response(lambda response: response.url.endswith("/grid")):
        pass  # the grid refreshes by itself: the order holds
    expect(teacher.get_by_role("button", name="least done first")).to_have_attribute("aria-pressed", "true")
    expect(rows.first).to_have_attribute("data-done", "0")
    # Filters: the learner whose exercise fails is stuck; everyone just joined, so nobody is inactive.
    teacher.get_by_role("button", name="stuck (1)").click()
    visible = teacher.locator("table.progress-grid tbody tr:visible")
    expect(visible).to_have_count(1)
    expect(visible.locator("th")).to_contain_text("Stuck Learner")
    teacher.get_by_role("button", name="inactive (0)").click()
    expect(visible).to_have_count(0)
    teacher.get_by_role("button", name="everyone (41)").click()
    expect(visible).to_have_count(41)
    # Scrolled to the far right and down, the names and the step headers are still in sight.
    wrap = teacher.locator(".grid-wrap")
    wrap.evaluate("e => { e.scrollLeft = e.scrollWidth; e.scrollTop = e.scrollHeight; }")
    box = wrap.bounding_box()
    name = rows.last.locator("th").bounding_box()
    header = teacher.locator("table.progress-grid th.step-head").last.bounding_box()
    assert box and name and header
    assert box["x"] <= name["x"] <= box["x"] + 5  # the name column is pinned to the left
    assert box["y"] <= header["y"] <= box["y"] + 60  # the headers are pinned to the top
    # ... and the box stays where it was scrolled as the grid refreshes (it went back to the left).
    scrolled = wrap.evaluate("e => { e.dataset.before = 'refresh'; return [e.scrollLeft, e.scrollTop]; }")
    assert scrolled[0] > 0 and scrolled[1] > 0
    fresh = teacher.locator(".grid-wrap:not([data-before])")  # the box the next refresh brings
    expect(fresh).to_have_count(1, timeout=20_000)
    assert fresh.evaluate("e => [e.scrollLeft, e.scrollTop]") == scrolled
    teacher.screenshot(path=str(artifacts / "instructor-forty.png"))


def grace_at_her_console(teacher: Page, learner: Page, class_name: str) -> None:
    """A new class; Grace joins it and opens a console; the teacher opens her learner page."""
    code = create_class(teacher, class_name)
    learner.goto(f"/join/{code}")
    learner.get_by_label("Your name", exact=True).fill("Grace")
    learner.get_by_role("button", name="Join").click()
    learner.goto(STEP)
    console_ready(learner)
    teacher.reload()
    teacher.get_by_role("link", name="Grace").click()


def test_following_a_learner_moves_with_them_from_step_to_step(page: Page, second_page: Page) -> None:
    teacher, learner = page, second_page
    grace_at_her_console(teacher, learner, "Follow me")
    teacher.get_by_role("link", name="follow them").click()
    log = teacher.locator("ol.follow-log li.log-entry")
    learner.locator("#console-message").press("Control+Enter")  # initialize, on the first step
    expect(log.filter(has_text="initialize (request, id 1)")).to_have_count(1)
    learner.goto("/course/initialize-handshake/result")  # the next step: a console of its own
    console_ready(learner)
    learner.locator("#console-message").fill('{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    learner.locator("#console-message").press("Control+Enter")
    step = course().step("initialize-handshake/result")
    assert step is not None
    expect(teacher.locator("[data-follow-note]")).to_contain_text(  # where they went, by its name
        f"They moved on (lesson {step.lesson_number}: {step.title.striptags()})", timeout=30_000
    )
    expect(log.filter(has_text="ping (request, id 1)")).to_have_count(1)
    expect(log.filter(has_text="initialize (request, id 1)")).to_have_count(0)  # the new console alone


def test_a_learner_signed_out_by_a_new_resume_code_is_told_where_it_goes(
    page: Page, second_page: Page
) -> None:
    """Their console offered "Start a new server", which started them as someone new (their progress
    out of the class's grid), and their pages showed 0 steps done without a word why."""
    teacher, learner = page, second_page
    grace_at_her_console(teacher, learner, "Signed out")
    teacher.on("dialog", lambda dialog: dialog.accept())
    teacher.get_by_role("button", name="Issue a new code").click()
    console = learner.locator("section.console")
    expect(console).to_have_attribute("data-state", "signed-out", timeout=30_000)
    expect(console.locator("[data-state]").first).to_contain_text("Enter it on")
    expect(learner.get_by_role("button", name="Start a new server")).to_be_hidden()
    learner.goto("/course")
    expect(learner.locator("[data-signed-out] a")).to_have_attribute("href", "/resume")


def test_a_learner_in_a_new_browser_finds_the_way_back_in_from_the_home_page(
    page: Page, second_page: Page
) -> None:
    first, second = page, second_page
    first.goto("/course/initialize-handshake/request")
    console_ready(first)  # the page made the browser's identity
    first.reload()  # some progress in the first browser: the step seen
    first.goto("/")
    first.get_by_role("link", name="Continue on another device").click()
    code = first.locator(".resume-code code").first.inner_text()
    second.goto("/")  # a new browser: nothing but the home page
    second.get_by_role("link", name="Continue on another device").click()
    second.get_by_label("Resume code").fill(code)
    second.get_by_role("button", name="Continue with that progress").click()
    expect(second.locator("[data-notice]")).to_contain_text("progress of your resume code")
    step = second.locator('li.map-step[data-step="initialize-handshake/request"]')
    expect(step).not_to_have_attribute("data-status", "new")
