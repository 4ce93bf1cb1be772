"""The console on a lesson step and on /playground, in a real browser."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect

from tests.browser.conftest import PageProbe, console_ready
from tests.support.procs import wait_until

INITIALIZE_STEP = "/course/initialize-handshake/request"


def log_entry(page: Page, kind: str):
    return page.locator(f"ol.log li.log-entry[data-kind={kind}]")


def test_send_the_prefilled_initialize_and_the_check_turns_green(page: Page, artifacts: Path) -> None:
    page.goto(INITIALIZE_STEP)
    console_ready(page)
    editor = page.locator("#console-message")
    assert json.loads(editor.input_value())["method"] == "initialize"
    check = page.locator('li.check[data-check="initialize-answered"]')
    expect(check).to_have_attribute("data-passed", "false")
    editor.focus()
    page.keyboard.press("Control+Enter")
    reply = log_entry(page, "received").first
    expect(reply).to_contain_text("result for initialize")
    expect(reply.locator(".log-rtt")).to_contain_text("ms round trip")
    expect(check).to_have_attribute("data-passed", "true")
    expect(check.locator(".mark")).to_have_class("mark mark-done")
    expect(page.locator("svg.sequence g.arrow")).to_have_count(2)
    expect(page.locator('[data-fact="revision"]')).to_have_text("2025-06-18")
    page.screenshot(path=artifacts / "step-initialize-after-send.png")
    page.locator("section.console").screenshot(path=artifacts / "console-after-initialize.png")


def test_a_new_visitor_gets_an_identity_as_the_console_opens_and_the_check_is_theirs(page: Page) -> None:
    """Reading makes no identity; the console's page asks for one before its WebSocket opens (whose
    handshake cannot set a cookie), so the check passed in it is recorded as this visitor's progress."""
    reply = page.goto(INITIALIZE_STEP)
    assert reply is not None and "set-cookie" not in reply.all_headers()  # the page itself made none
    expect(page.locator("section.console")).to_have_attribute("data-identity", "none")
    console_ready(page)
    assert [c["name"] for c in page.context.cookies()] == ["playground_learner"]
    page.locator("#console-message").press("Control+Enter")
    check = page.locator('li.check[data-check="initialize-answered"]')
    expect(check).to_have_attribute("data-passed", "true")
    step = INITIALIZE_STEP.removeprefix("/course/")
    assert wait_until(  # recorded off the event loop, moments after the check's frame
        lambda: page.request.get("/api/progress").json()["steps"][step]["checks"]["initialize-answered"], 30
    )
    page.reload()
    console_ready(page)
    expect(page.locator("section.console")).not_to_have_attribute("data-identity", "none")


def send(page: Page, text: str) -> None:
    """Type a message in the editor, exactly, and send it with the keyboard."""
    editor = page.locator("#console-message")
    editor.fill(text)
    editor.press("Control+Enter")


def test_invalid_json_shows_where_it_breaks_without_a_round_trip_and_is_sent_as_typed(
    page: Page, probe: PageProbe
) -> None:
    page.goto("/playground")
    console_ready(page)
    text = '{"jsonrpc": "2.0",\n  "id": 1,\n  "method": "ping",,\n}'
    page.locator("#console-message").fill(text)
    error = page.locator("[data-editor-status] .json-error")
    expect(error).to_contain_text("line 3, column 20")
    expect(error).to_have_attribute("data-line", "3")
    expect(page.locator("#console-message")).to_have_attribute("aria-invalid", "true")
    assert probe.frames_sent == []  # the position came from the page, not from the relay
    error.get_by_role("button", name="Go to the error").click()
    assert page.evaluate("document.querySelector('#console-message').selectionStart") == text.index(",,") + 1
    page.locator("[data-action=send]").click()
    refusal = log_entry(page, "relay_error")
    expect(refusal).to_contain_text("-32700")
    assert [json.loads(f) for f in probe.frames_sent] == [{"type": "send", "text": text}]
    expect(page.locator("#console-message")).to_have_value(text)  # never replaced by an older valid message


def test_answer_a_quiz_in_place(page: Page, artifacts: Path) -> None:
    page.goto("/course/initialize-handshake/capabilities")
    quiz = page.locator("form#quiz-after-initialize-result")
    quiz.get_by_label("The server sends").check()
    quiz.get_by_role("button", name="Check my answer").click()
    expect(quiz.locator(".quiz-verdict")).to_contain_text("Not quite")
    quiz.get_by_label("The client sends").check()
    quiz.get_by_role("button", name="Check my answer").click()
    expect(quiz.locator(".quiz-verdict.right")).to_contain_text("Correct")
    assert page.url.endswith("/course/initialize-handshake/capabilities")  # answered in place
    quiz.screenshot(path=artifacts / "quiz-answered.png")


def test_server_output_is_shown_as_text_and_runs_nothing(page: Page, artifacts: Path) -> None:
    page.goto("/playground?server=test-probe")
    console_ready(page)
    page.locator("#console-message").press("Control+Enter")  # the prefilled initialize
    expect(log_entry(page, "received")).to_have_count(1)
    send(page, '{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    send(
        page,
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "html_text", "arguments": {}}}',
    )
    reply = log_entry(page, "received").nth(1)
    expect(reply).to_contain_text('<img src=x onerror=\\"window.__xss = 1\\">')
    expect(log_entry(page, "stderr")).to_contain_text('<img src=x onerror="window.__xss = 1">')
    assert page.evaluate("window.__xss") is None
    expect(page.locator("section.console img")).to_have_count(0)
    expect(page.locator("section.console script")).to_have_count(0)
    page.locator("section.console").screenshot(path=artifacts / "console-markup-as-text.png")


def test_a_server_request_becomes_a_card_answered_by_editing_a_reply(page: Page, artifacts: Path) -> None:
    page.goto("/playground?server=demo-assistant")
    console_ready(page)
    page.select_option("#console-template", "initialize-2025-11-25")  # declares sampling, roots, elicitation
    page.locator("[data-action=template]").click()
    page.locator("#console-message").press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(1)
    send(page, '{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    send(
        page,
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "suggest_trip", "arguments": {"city": "Pune"}}}',
    )
    card = page.locator('.request-card[data-method="sampling/createMessage"]')
    expect(card).to_be_visible()
    # Past the reply time-out (1 s here) the wait is the learner's answer, not a slow server.
    wait = page.locator("[data-wait]")
    expect(wait).to_contain_text(
        "The server is waiting for your answer to its sampling/createMessage request"
    )
    expect(wait).not_to_contain_text("may never answer")
    reply = card.get_by_label("Your reply")
    expect(reply).to_be_focused()
    prefilled = json.loads(reply.input_value())
    assert prefilled["result"]["role"] == "assistant" and prefilled["result"]["model"] == "learner"
    prefilled["result"]["content"]["text"] = "See the Aga Khan Palace."
    reply.fill(json.dumps(prefilled, indent=2))
    card.screenshot(path=artifacts / "server-request-card.png")
    card.get_by_role("button", name="Send reply").click()
    result = log_entry(page, "received").filter(has_text="result for tools/call")
    expect(result).to_contain_text("See the Aga Khan Palace.")
    expect(card).to_have_class("request-card answered")
    pairs = page.locator("svg.sequence g.arrow[data-pair]")
    expect(pairs).to_have_count(6)  # initialize, tools/call and sampling, each with its reply


def relayed_sockets(page: Page) -> list[tuple[WebSocketRoute, WebSocketRoute]]:
    """The console's WebSockets from now on, each relayed through Playwright as (page side, server
    side), so that a test can cut one as a network would."""
    sockets: list[tuple[WebSocketRoute, WebSocketRoute]] = []

    def relay(ws: WebSocketRoute) -> None:
        sockets.append((ws, ws.connect_to_server()))

    page.route_web_socket(re.compile(r"/ws/"), relay)
    return sockets


def test_a_dropped_connection_reconnects_and_keeps_transcript_and_checks(page: Page) -> None:
    sockets = relayed_sockets(page)
    page.goto(INITIALIZE_STEP)
    console_ready(page)
    session = page.locator('[data-fact="session"]').inner_text()
    page.locator("#console-message").press("Control+Enter")
    check = page.locator('li.check[data-check="initialize-answered"]')
    expect(check).to_have_attribute("data-passed", "true")
    sockets[-1][0].close(code=4000, reason="dropped")  # not a goodbye: the session waits for us
    expect(page.locator("[data-console-state]")).to_contain_text("Reconnected")
    expect(page.locator('[data-fact="session"]')).to_have_text(session)
    expect(log_entry(page, "sent")).to_have_count(1)
    expect(check).to_have_attribute("data-passed", "true")
    send(page, '{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
    pong = log_entry(page, "received").nth(1)
    expect(pong).to_contain_text("result for ping")
    expect(pong).to_have_attribute("data-seq", "4")  # the same transcript goes on
    expect(pong).to_have_attribute("data-pair", "c:3")  # it answers the ping, sent as #3


def test_a_reconnect_that_finds_the_session_gone_says_so_and_starts_afresh(page: Page) -> None:
    sockets = relayed_sockets(page)
    page.goto(INITIALIZE_STEP)
    console_ready(page)
    first = page.locator('[data-fact="session"]').inner_text()
    page.locator("#console-message").press("Control+Enter")
    send(page, '{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
    expect(log_entry(page, "received")).to_have_count(2)  # this transcript reached seq 4
    page_side, server_side = sockets[-1]
    server_side.on_close(lambda code, reason: None)  # the page must not hear the goodbye below
    server_side.close(code=1000, reason="gone")  # a goodbye ends the session at once...
    page_side.close(code=4000, reason="dropped")  # ...while the page only sees the network drop
    state = page.locator("[data-console-state]")
    expect(state).to_contain_text("Ready")
    expect(page.locator("ol.log .note-warn")).to_contain_text("Your previous server had ended")
    expect(page.locator('[data-fact="session"]')).not_to_have_text(first)
    expect(page.locator("svg.sequence g.arrow")).to_have_count(0)  # the old session's arrows are gone
    editor, status = page.locator("#console-message"), page.locator("[data-editor-status]")
    editor.fill('{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    expect(status).to_contain_text("a request: ping, id 1")
    expect(status).not_to_contain_text("already used")  # the new session has used no id yet
    editor.press("Control+Enter")
    expect(log_entry(page, "received").last).to_have_attribute("data-seq", "2")
    # What the server says next never reaches the page before the next drop: the resume must
    # replay it, counting from the new transcript's last seq (2), not the old one's (4).
    held: list[str | bytes] = []
    sockets[-1][1].on_message(lambda message: held.append(message))
    send(page, '{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
    deadline = time.monotonic() + 20
    while len(held) < 2:  # its `sent` frame and its reply
        assert time.monotonic() < deadline, held
        page.wait_for_timeout(50)  # lets Playwright deliver the socket's messages
    sockets[-1][0].close(code=4000, reason="dropped")
    expect(state).to_contain_text("Reconnected")
    pong = log_entry(page, "received").last
    expect(pong).to_have_attribute("data-replayed", "true")
    expect(pong).to_have_attribute("data-seq", "4")
    expect(pong).to_have_attribute("data-pair", "c:3")


def test_a_server_exit_says_why_and_offers_a_new_server(page: Page) -> None:
    page.goto("/playground?server=demo-flaky")
    console_ready(page)
    first = page.locator('[data-fact="session"]').inner_text()
    page.locator("#console-message").press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(1)
    send(
        page,
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow_reply", "arguments": {"seconds": 4}}}',
    )
    expect(page.locator("[data-wait]")).to_contain_text("Waiting for the reply to tools/call (id 2)")
    # Past the reply time-out (1 s in these tests) the console says what a time-out means.
    expect(page.locator("[data-wait]")).to_contain_text("No reply after 1 s. MCP sets no deadline")
    expect(log_entry(page, "received")).to_have_count(2)
    expect(page.locator("[data-wait]")).to_have_text("")
    send(
        page,
        '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "crash", "arguments": {"status": 3}}}',
    )
    state = page.locator("[data-console-state]")
    expect(state).to_have_attribute("data-state", "exited")
    expect(state).to_contain_text("status 3")
    expect(log_entry(page, "stderr")).to_contain_text("crashing on purpose")
    new_server = page.get_by_role("button", name="Start a new server")
    expect(new_server).to_be_focused()
    page.get_by_role("button", name="Send", exact=True).click()  # Send instead: nothing to send it to
    expect(state).to_have_attribute("data-state", "exited")
    expect(state).to_contain_text("Nothing was sent: this server has stopped. Start a new server")
    expect(new_server).to_be_visible()
    new_server.press("Enter")
    console_ready(page)
    expect(page.locator('[data-fact="session"]')).not_to_have_text(first)


def test_try_it_templates_and_next_id(page: Page) -> None:
    page.goto(INITIALIZE_STEP)
    console_ready(page)
    menu = page.locator("#console-template")
    expect(menu).to_have_value("")  # the editor holds the step's message, which no template names
    own = page.locator("#console-message").input_value()
    page.get_by_role("button", name="Use template").click()
    expect(page.locator("section.console")).to_contain_text("Pick a message in the Template menu first")
    example = page.locator("pre[data-example]").first
    example.locator("xpath=following-sibling::button[1]").click()
    editor = page.locator("#console-message")
    expect(page.locator(".console .cm-content")).to_be_focused()  # the CodeMirror box over it
    assert editor.input_value() == example.inner_text().strip()
    editor.press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(1)
    page.select_option("#console-template", "tools-list")
    page.get_by_role("button", name="Use template").click()
    assert json.loads(editor.input_value()) == {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    expect(menu).to_have_value("tools-list")  # it names what the editor holds
    typed = '{ "jsonrpc": "2.0",\n  "id": 1,   "method": "ping" }'
    editor.fill(typed)
    expect(page.locator("[data-editor-status]")).to_contain_text("already used")
    page.get_by_role("button", name="Next id").click()
    expect(editor).to_have_value(typed.replace('"id": 1', '"id": 2'))  # only the id changed
    # The initialize example again: a session has one handshake, so Try-it starts a fresh server,
    # whose answer is the one the page shows.
    example.locator("xpath=following-sibling::button[1]").click()
    expect(page.locator("ol.log")).to_contain_text("Try it started a fresh server")
    expect(menu).to_have_value("")  # a Try-it put something else there
    console_ready(page)
    editor.press("Control+Enter")
    expect(log_entry(page, "received").last).to_contain_text("result for initialize")
    page.select_option("#console-template", "step-message")  # and the menu brings the step's own back
    page.get_by_role("button", name="Use template").click()
    assert editor.input_value() == own.strip()


# Pages a learner meets first, and one step of each kind (a console, the learner's own server, an
# outside client's panel): none may be wider than a phone.
PHONE_PAGES = ("/", "/course", "/playground", "/playground?server=my-server", INITIALIZE_STEP,
               "/course/your-first-tool/first-tool", "/course/streamable-http/sessions",
               # long repository paths in the text, and the two workspace files
               "/course/security-for-server-authors/confused-deputy", "/course/modern-in-depth/extensions",
               "/course/testing-your-server/exercise")  # fmt: skip


def test_the_main_pages_work_in_light_and_fit_a_phone(page: Page, artifacts: Path, probe: PageProbe) -> None:
    page.goto("/")
    page.screenshot(path=artifacts / "home.png", full_page=True)
    page.goto("/course")
    page.screenshot(path=artifacts / "course-map.png", full_page=True)
    page.goto("/playground")
    console_ready(page)
    page.locator("#console-message").press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(1)
    send(page, '{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    send(page, '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')
    expect(log_entry(page, "received")).to_have_count(2)
    page.screenshot(path=artifacts / "playground.png", full_page=True)
    assert probe.requests and probe.outside() == []
    assert luminance(page, "body", "backgroundColor") > 0.8 and luminance(page, "body", "color") < 0.2
    page.set_viewport_size({"width": 390, "height": 844})
    for path in PHONE_PAGES:
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
        # Wide content (code, logs, tables) scrolls inside its own box; the page itself never does.
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{path} is {overflow} px wider than a phone"
        name = path.strip("/").replace("/", "-").replace("?", "-").replace("=", "-") or "home"
        page.screenshot(path=artifacts / f"phone-{name}.png", full_page=True)


def luminance(page: Page, selector: str, prop: str) -> float:
    """Relative luminance (0 black, 1 white) of an element's computed colour."""
    rgb = page.locator(selector).first.evaluate(f"e => getComputedStyle(e).{prop}")
    red, green, blue = (int(v) for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def test_dark_mode_playground(dark_page: Page, artifacts: Path) -> None:
    page = dark_page
    page.goto("/playground?server=demo-stateless")
    console_ready(page)
    page.locator("#console-message").press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(1)
    page.locator("#console-message").fill('{"jsonrpc": "2.0", "id": 2, "method": "tools/list", }')
    expect(page.locator("[data-editor-status] .json-error")).to_contain_text("trailing commas")
    page.screenshot(path=artifacts / "playground-dark.png", full_page=True)
    assert luminance(page, "body", "backgroundColor") < 0.1 and luminance(page, "body", "color") > 0.6
    assert luminance(page, "#console-message", "backgroundColor") < 0.2  # the editor follows the scheme
    page.goto(INITIALIZE_STEP)
    console_ready(page)
    page.screenshot(path=artifacts / "step-dark.png")
    assert luminance(page, "pre.code", "backgroundColor") < 0.2 and luminance(page, "body", "color") > 0.6


def test_restart_and_export_the_transcript(page: Page) -> None:
    page.goto("/playground")
    console_ready(page)
    session = page.locator('[data-fact="session"]').inner_text()
    page.locator("#console-message").press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(1)
    with page.expect_download() as download:
        page.get_by_role("button", name="Export the transcript (JSON)").click()
    transcript = json.loads(Path(download.value.path()).read_text())
    assert transcript["session"] == session
    assert [e["direction"] for e in transcript["entries"]] == ["client", "server"]
    page.get_by_role("button", name="Restart the server").click()
    expect(page.locator("ol.log li.note-info").filter(has_text="Restarting")).to_have_count(1)
    console_ready(page)
    expect(page.locator("svg.sequence g.arrow")).to_have_count(0)
    send(page, '{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    expect(log_entry(page, "sent").nth(1)).to_have_attribute("data-seq", "1")  # a fresh transcript
    expect(page.locator('[data-fact="session"]')).to_have_text(session)


def test_a_big_message_is_shown_a_few_hundred_lines_at_a_time(page: Page) -> None:
    """A server writing big messages on and on (here the learner's own, sent back as its `sent`
    entry) must not make the page (or an instructor following it) build an element per value: a view
    builds a few hundred lines, the rest when asked for."""
    page.goto("/playground")
    console_ready(page)
    numbers = list(range(2000))  # 8,000 values: within the relay's 10,000 a message
    send(
        page,
        json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"big": numbers, "nested": [numbers] * 3}}
        ),
    )
    entry = log_entry(page, "sent").last
    expect(entry).to_contain_text("ping")
    lines = entry.locator(".json-view .j-line")
    assert 0 < lines.count() <= 450, lines.count()  # `big` and `nested` start folded, unbuilt
    summary = entry.locator(".json-view summary").filter(has_text='"big"')
    big = summary.locator("..")
    summary.click()  # built when opened: its first lines, and a way to the rest
    more = big.locator("button.j-more")
    expect(more).to_have_text("… 1600 more")
    assert 400 < lines.count() <= 900, lines.count()
    more.click()
    expect(big.locator("button.j-more")).to_have_text("… 1200 more")
    assert 800 < lines.count() <= 1300, lines.count()


def test_arrow_keys_inside_the_console_do_not_turn_the_page(page: Page) -> None:
    page.goto(INITIALIZE_STEP)
    console_ready(page)
    turned = page.evaluate(
        """() => {
            const event = new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true, cancelable: true});
            document.querySelector("ol.log").dispatchEvent(event);
            return event.defaultPrevented;
        }"""
    )
    assert turned is False


def waiting_for_a_slow_reply(page: Page, seconds: int) -> None:
    """demo-flaky, initialized, with tools/call id 12 waiting `seconds` for its reply."""
    page.goto("/playground?server=demo-flaky")
    console_ready(page)
    page.locator("#console-message").press("Control+Enter")  # initialize
    expect(log_entry(page, "received")).to_have_count(1)
    send(page, '{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    arguments = json.dumps({"name": "slow_reply", "arguments": {"seconds": seconds}})
    send(page, f'{{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {arguments}}}')
    expect(page.locator("[data-wait]")).to_contain_text("Waiting for the reply to tools/call (id 12)")


def test_the_cancel_template_names_the_request_still_waiting(page: Page) -> None:
    waiting_for_a_slow_reply(page, 3)
    page.select_option("#console-template", "cancelled")
    page.get_by_role("button", name="Use template").click()
    message = json.loads(page.locator("#console-message").input_value())
    assert message["method"] == "notifications/cancelled" and message["params"]["requestId"] == 12
    expect(page.locator("[data-tool-feedback]")).to_contain_text("This cancels request 12")


def test_a_restart_names_the_requests_it_leaves_without_a_reply(page: Page) -> None:
    waiting_for_a_slow_reply(page, 10)  # the most demo-flaky waits: longer than a restart takes
    page.get_by_role("button", name="Restart the server").click()
    note = page.locator("ol.log li.note-warn").filter(has_text="no reply, since the server was restarted")
    expect(note).to_contain_text("tools/call (id 12)")
    console_ready(page)


@pytest.mark.parametrize("size", [(1366, 900), (390, 844)])
def test_after_a_send_the_reply_and_the_passed_check_are_in_view(browser_app, browser, size) -> None:  # noqa: ANN001
    from tests.browser.conftest import EXPECT_TIMEOUT_MS

    context = browser.new_context(base_url=browser_app.base, viewport={"width": size[0], "height": size[1]})
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto("/course/initialize-handshake/versions")
        expect(page.locator("[data-console-state]")).to_have_attribute("data-state", "ready")
        hint = page.locator("[data-next-hint]")  # what to do next, under Send: the first open check
        first_goal = page.locator("li.check .check-goal").first.inner_text()
        expect(hint).to_have_text(f"Next: {first_goal}")
        send_button = page.get_by_role("button", name="Send", exact=True)
        send_button.scroll_into_view_if_needed()
        send_button.click()
        expect(log_entry(page, "received").last).to_be_in_viewport()
        news = page.locator("[data-check-news]")
        expect(news).to_contain_text("Check passed")
        expect(news).to_be_in_viewport()
        expect(hint).not_to_have_text(f"Next: {first_goal}")  # it moved on with the passed check
        # The way on is at the end of the console too, not only at the end of the text above it.
        onward = page.locator("[data-console-next]")
        expect(onward).to_have_attribute("href", page.locator("[data-nav=next]").get_attribute("href") or "")
        onward.scroll_into_view_if_needed()
        expect(onward).to_be_in_viewport()
        assert page.evaluate("document.documentElement.scrollWidth") <= size[0]  # nothing runs off the side
    finally:
        context.close()


def test_try_it_sends_the_handshake_an_example_needs_first(page: Page) -> None:
    page.goto("/course/initialize-handshake/capabilities")
    console_ready(page)
    figure = page.locator("figure[data-before]").filter(has=page.locator('pre[data-example="send"]')).first
    example = figure.locator('pre[data-example="send"]')
    assert json.loads(example.inner_text())["method"] == "prompts/list"
    example.locator("xpath=following-sibling::button[1]").click()
    expect(page.locator("[data-tool-feedback]")).to_contain_text("initialize, notifications/initialized")
    expect(log_entry(page, "received")).to_have_count(1)  # the handshake's reply
    expect(log_entry(page, "sent")).to_have_count(2)
    # notifications/initialized goes after the initialize result, so the console has no warning about
    # the handshake's order.
    kinds = [entry.get_attribute("data-kind") for entry in page.locator("ol.log li.log-entry").all()]
    assert kinds[:3] == ["sent", "received", "sent"] or kinds[-3:] == ["sent", "received", "sent"], kinds
    expect(page.locator("ol.log .note-warn")).to_have_count(0)
    page.locator("#console-message").press("Control+Enter")  # now the example itself
    expect(log_entry(page, "received")).to_have_count(2)
    assert "result for prompts/list" in log_entry(page, "received").last.inner_text()
    example.locator("xpath=following-sibling::button[1]").click()  # again: the handshake is not repeated
    expect(page.locator("[data-tool-feedback]")).not_to_contain_text("Sent first")
    expect(log_entry(page, "sent")).to_have_count(3)  # initialize, notifications/initialized, prompts/list


def test_a_learner_over_their_cap_is_told_which_and_gets_in_when_a_tab_closes(
    page: Page, probe: PageProbe, artifacts: Path
) -> None:
    """Four consoles in four tabs are the most one learner may hold. A fifth says which cap is full and
    what to do, says once that it tries again by itself (the refusal's own "try again in" left out),
    and gets in on its own once a tab is closed. A sixth, refused too, gets in at once when the learner
    restarts it, and the retry it had planned does not replace that session later."""
    page.clock.install()  # time flows as usual; fast_forward() fires a planned retry at once
    tabs = [page, *(page.context.new_page() for _ in range(3))]
    for tab in tabs:
        tab.goto("/playground")
        console_ready(tab)
    fifth = page.context.new_page()
    fifth.on("pageerror", lambda error: probe.errors.append(str(error)))
    fifth.goto("/playground")
    state = fifth.locator("[data-console-state]")
    expect(state).to_have_attribute("data-state", "full")
    expect(state).to_have_text(
        "You already have 4 consoles open, the most one person may have. Close one (another tab?). "
        "Trying again by itself in 10 s…"
    )
    expect(fifth.locator('[data-fact="status"]')).to_have_text("waiting for a place")
    for width, height in ((1366, 900), (390, 844)):
        fifth.set_viewport_size({"width": width, "height": height})
        state.scroll_into_view_if_needed()
        expect(state).to_be_in_viewport()
        fifth.screenshot(path=artifacts / f"console-full-{width}.png")
        assert fifth.evaluate("document.documentElement.scrollWidth") <= width  # nothing runs off the side
    tabs.pop().close()
    fifth.clock.fast_forward(11_000)  # its own retry, due 10 s after the refusal
    console_ready(fifth)
    expect(fifth.locator('[data-fact="status"]')).to_have_text("ready")

    sixth = page.context.new_page()
    sixth.on("pageerror", lambda error: probe.errors.append(str(error)))
    sixth.goto("/playground")
    sixth_state = sixth.locator("[data-console-state]")
    expect(sixth_state).to_have_attribute("data-state", "full")
    sixth.get_by_role("button", name="Send", exact=True).click()  # nowhere to send it yet
    expect(sixth_state).to_have_attribute("data-state", "full")
    expect(sixth_state).to_contain_text("Nothing was sent. You already have 4 consoles open")
    tabs.pop().close()
    sixth.get_by_role("button", name="Restart the server").click()  # try now, not in 10 s
    console_ready(sixth)
    session = sixth.locator('[data-fact="session"]').inner_text()
    sixth.clock.fast_forward(11_000)  # the planned retry's time: its timer would run (and reconnect) now
    expect(sixth_state).to_have_attribute("data-state", "ready")
    expect(sixth.locator('[data-fact="session"]')).to_have_text(session)
    expect(log_entry(sixth, "note")).to_have_count(1)  # "A new server": the one it was asked for


def test_answering_rounds_and_polling_a_task_need_no_copying(page: Page, artifacts: Path) -> None:
    """An input_required reply and a task handle each offer the next message, filled in from the
    reply: two rounds of questions are answered, and a task polled, without copying a thing."""
    page.goto("/course/modern-in-depth/rounds")
    console_ready(page)
    page.locator("#console-message").press("Control+Enter")  # the step's own call
    for round_ in (1, 2):
        retry = log_entry(page, "received").last.get_by_role("button", name="Answer and retry")
        expect(retry).to_be_visible()
        retry.click()
        page.locator("#console-message").press("Control+Enter")
        expect(log_entry(page, "received")).to_have_count(round_ + 1)
    check = page.locator('li.check[data-check="input-required-two-rounds"]')
    expect(check).to_have_attribute("data-passed", "true")
    page.screenshot(path=artifacts / "console-rounds-follow-ups.png", full_page=True)

    page.goto("/course/tasks/poll")
    console_ready(page)
    page.locator("#console-message").press("Control+Enter")  # a call that comes back as a task
    poll = log_entry(page, "received").last.get_by_role("button", name="Poll it (tasks/get)")
    expect(poll).to_be_visible()
    poll.click()
    sent = json.loads(page.locator("#console-message").input_value())
    assert sent["method"] == "tasks/get" and len(sent["params"]["taskId"]) >= 8
    page.locator("#console-message").press("Control+Enter")
    expect(log_entry(page, "received")).to_have_count(2)
    expect(log_entry(page, "received").last).to_contain_text("result for tasks/get")
