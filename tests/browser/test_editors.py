"""The vendored CodeMirror editors in a real browser: the console's JSON message box, the workspace's
Python editor (static/workspace/codeeditor.js), and the plain textarea each keeps when the bundle
cannot load."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.browser.conftest import PageProbe, clear_and_insert, console_ready

BUNDLE = "**/static/vendor/codemirror.js"
MESSAGE_BOX = "section.console .cm-editor[data-editor-for=console-message] .cm-content"
PY_BOX = ".cm-editor[data-editor-for=py-test]"

# Puts a labelled textarea on the page and makes it a Python editor; every callback is recorded.
MAKE_PYTHON_EDITOR = """async (text) => {
  const label = Object.assign(document.createElement("label"), { htmlFor: "py-test", textContent: "Your server" });
  const area = Object.assign(document.createElement("textarea"), { id: "py-test", rows: 6, value: text });
  const after = Object.assign(document.createElement("button"), { type: "button", textContent: "After" });
  after.id = "after-editor";
  document.querySelector("main").prepend(label, area, after);
  window.calls = [];
  const { pythonEditor } = await import("/static/workspace/codeeditor.js");
  window.pyEditor = await pythonEditor(area, {
    onSave: (t) => window.calls.push(["save", t]),
    onRun: (t) => window.calls.push(["run", t]),
    onChange: (t) => window.calls.push(["change", t]),
  });
  // Whether the editor kept the browser from acting on a key (its save dialog, say).
  document.addEventListener("keydown", (e) => { window.lastKeyPrevented = e.defaultPrevented; });
  return window.pyEditor.usingFallback;
}"""


def received(page: Page):
    return page.locator("ol.log li.log-entry[data-kind=received]")


def sent_texts(probe: PageProbe) -> list[str]:
    return [
        json.loads(frame)["text"] for frame in probe.frames_sent if json.loads(frame).get("type") == "send"
    ]


def test_the_console_types_checks_and_sends_in_a_json_editor(page: Page, probe: PageProbe) -> None:
    page.goto("/playground")
    console_ready(page)
    box = page.locator(MESSAGE_BOX)
    expect(box).to_be_visible()
    expect(page.locator("#console-message")).to_have_attribute("aria-hidden", "true")  # out of sight
    box.click()
    page.keyboard.press("Control+Enter")  # the prefilled initialize
    expect(received(page)).to_have_count(1)
    page.keyboard.press("Control+a")
    page.keyboard.type('{"jsonrpc": "2.0", "id": 2, "method": "tools/list"')
    status = page.locator("[data-editor-status]")
    expect(status.locator(".json-error")).to_contain_text("line 1, column 51")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".cm-lintRange-error, .cm-lintPoint-error")).to_have_count(1)  # marked in place
    page.keyboard.type("}")
    expect(status).to_contain_text("Valid JSON: a request: tools/list, id 2")
    expect(page.locator(".cm-lintRange-error, .cm-lintPoint-error")).to_have_count(0)
    typed = '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}'
    expect(page.locator("#console-message")).to_have_value(typed)  # the textarea follows
    page.keyboard.press("Control+Enter")
    expect(received(page)).to_have_count(2)
    expect(received(page).last).to_contain_text("result for tools/list")
    assert sent_texts(probe)[-1] == typed  # exactly as typed
    # Tab leaves the message box (the console's keyboard help says so).
    page.keyboard.press("Tab")
    expect(box).not_to_be_focused()


def test_a_template_and_go_to_the_error_reach_the_json_editor(page: Page) -> None:
    page.goto("/playground")
    console_ready(page)
    box = page.locator(MESSAGE_BOX)
    page.select_option("#console-template", "tools-list")
    page.get_by_role("button", name="Use template").click()
    expect(box).to_be_focused()
    expect(box).to_contain_text('"method": "tools/list"')
    clear_and_insert(page, '{"jsonrpc": "2.0",\n  "id": 1,,\n  "method": "ping"}')  # the box has focus
    page.get_by_role("button", name="Go to the error").click()
    expect(box).to_be_focused()
    assert page.evaluate("getSelection().toString()") == ","  # the second comma, selected


def test_without_the_bundle_the_console_keeps_its_textarea_and_sends(page: Page, probe: PageProbe) -> None:
    page.route(BUNDLE, lambda route: route.abort())
    with page.expect_console_message(lambda message: "could not load" in message.text):
        page.goto("/playground")
    console_ready(page)
    expect(page.locator(".cm-editor")).to_have_count(0)
    area = page.locator("#console-message")
    area.press("Control+Enter")
    expect(received(page)).to_have_count(1)
    typed = '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}'
    area.fill(typed)
    expect(page.locator("[data-editor-status]")).to_contain_text("Valid JSON: a request: tools/list")
    area.press("Control+Enter")
    expect(received(page)).to_have_count(2)
    assert sent_texts(probe)[-1] == typed


def test_the_python_editor_saves_runs_indents_and_shows_diagnostics(page: Page) -> None:
    page.goto("/playground")
    assert page.evaluate(MAKE_PYTHON_EDITOR, "import os\n") is False
    editor = page.locator(PY_BOX)
    content = editor.locator(".cm-content")
    expect(content).to_have_attribute("aria-labelledby", "py-test-label")
    expect(page.locator("#py-test")).to_have_attribute("aria-hidden", "true")
    expect(editor.locator(".cm-line").first.locator("span").first).to_have_text("import")  # highlighted
    content.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("def f():")
    page.keyboard.press("Enter")
    page.keyboard.type("return x")
    text = "import os\ndef f():\n    return x"  # Enter indented the body
    expect(page.locator("#py-test")).to_have_value(text)
    page.keyboard.press("Control+s")
    page.keyboard.press("Control+Enter")
    calls = page.evaluate("window.calls")
    assert calls[-2:] == [["save", text], ["run", text]]
    assert ["change", "import os\nd"] in calls
    assert page.evaluate("window.lastKeyPrevented") is True
    # Tab indents; Escape, then Tab, leaves the editor.
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    expect(page.locator("#py-test")).to_have_value(text.replace("    return", "        return"))
    expect(content).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(page.locator("#after-editor")).to_be_focused()

    page.evaluate(
        "window.pyEditor.setDiagnostics([{line: 3, col: 16, message: \"NameError: name 'x' is not defined\"}])"
    )
    expect(editor.locator(".cm-lintRange-error")).to_have_text("x")
    marker = editor.locator(".cm-gutter-lint .cm-lint-marker-error")
    expect(marker).to_have_count(1)
    line_box = editor.locator(".cm-line").nth(2).bounding_box()
    marker_box = marker.bounding_box()
    assert line_box and marker_box and abs(marker_box["y"] - line_box["y"]) < line_box["height"]
    marker.hover()
    expect(page.locator(".cm-tooltip")).to_contain_text("NameError: name 'x' is not defined")
    page.evaluate("window.pyEditor.setDiagnostics([])")
    expect(editor.locator(".cm-lintRange-error")).to_have_count(0)

    calls_before = len(page.evaluate("window.calls"))
    page.evaluate("window.pyEditor.setValue('print(1)\\n')")
    assert page.evaluate("window.pyEditor.getValue()") == "print(1)\n"
    expect(page.locator("#py-test")).to_have_value("print(1)\n")
    assert len(page.evaluate("window.calls")) == calls_before  # setValue is not the learner's edit


def test_without_the_bundle_the_python_editor_is_the_textarea(page: Page) -> None:
    page.route(BUNDLE, lambda route: route.abort())
    page.goto("/playground")
    assert page.evaluate(MAKE_PYTHON_EDITOR, "print(1)\n") is True
    expect(page.locator(".cm-editor")).to_have_count(0)
    area = page.locator("#py-test")
    area.press("End")
    area.press("Control+s")
    area.press("Control+Enter")
    assert page.evaluate("window.calls") == [["save", "print(1)\n"], ["run", "print(1)\n"]]
    assert page.evaluate("window.lastKeyPrevented") is True
    page.evaluate(
        "window.pyEditor.setDiagnostics([{line: 1, col: 7, message: 'SyntaxError: invalid syntax'}])"
    )
    expect(page.locator("#py-test-diagnostics")).to_have_text("Line 1, column 7: SyntaxError: invalid syntax")
    expect(area).to_have_attribute("aria-describedby", "py-test-diagnostics")


def test_the_editors_follow_dark_mode_under_the_policy(dark_page: Page, probe: PageProbe) -> None:
    page = dark_page
    page.goto("/playground")
    console_ready(page)
    page.evaluate(MAKE_PYTHON_EDITOR, "def f():\n    return 1\n")
    for editor in (page.locator("section.console .cm-editor"), page.locator(PY_BOX)):
        expect(editor).to_be_visible()
        background = editor.evaluate("e => getComputedStyle(e).backgroundColor")
        red, green, blue = (int(v) for v in background[background.index("(") + 1 : -1].split(",")[:3])
        assert (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255 < 0.2, background
    assert probe.csp_violations() == []
