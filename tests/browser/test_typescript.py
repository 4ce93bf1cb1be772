"""A learner writes their server in TypeScript, as a learner would: on lesson 11's first step, choose
TypeScript in the workspace's switch, see server.ts (the starter) in the editor and the lesson's code in
TypeScript, write the first tool under the starter's comment, save, pass the exercise, see a syntax
error where it is; and find the choice kept after a reload. Runs on the real course (the package's app),
with the TypeScript runtime `make install` puts in runtime/."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import clear_and_insert, console_ready
from tests.support.appserver import ROOT

STEP = "/course/your-first-tool/first-tool"
STARTER = (ROOT / "app" / "workspace" / "starters" / "server.ts").read_text()
WHERE = "// with server.registerTool()."  # the last line of the starter's "Lesson 11 starts here" comment
# The lesson's TypeScript block, as a learner types it under the starter's comment.
ADD_TOOL = """server.registerTool(
  "add",
  {
    description: "Add two whole numbers.",
    inputSchema: { a: z.number().int(), b: z.number().int() },
  },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);"""
# Starting a fresh Node instance and running the exercise on two busy cores takes a while.
EXERCISE_TIMEOUT_MS = 90_000


def open_step(page: Page) -> None:
    page.goto(STEP)
    expect(page.locator("[data-workspace]")).to_have_attribute("data-state", "ready")
    console_ready(page)  # choosing a language restarts the console's server: let it have one first


def choose_typescript(page: Page) -> None:
    switch = page.locator("[data-language-switch]")
    expect(switch).to_be_visible()
    typescript = switch.get_by_label("TypeScript")
    expect(typescript).to_be_enabled()  # disabled (with a note why) when the runtime is missing
    typescript.check()
    expect(page.locator("[data-workspace-status]")).to_contain_text(
        "Your server is now written in TypeScript"
    )


def editor_text(page: Page) -> str:
    """The whole file in the server's editor (the textarea mirrors CodeMirror)."""
    return page.locator("#workspace-source-server").input_value()


def write_first_tool(page: Page) -> None:
    """Put the cursor at the end of the starter's "Lesson 11 starts here" comment and type the tool."""
    page.locator("[data-workspace] .cm-line", has_text="with server.registerTool().").click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.insert_text(ADD_TOOL)
    expect(page.locator("[data-workspace]")).to_have_attribute("data-edited", "true")


def expected_file() -> str:
    # Enter at the end of the comment's line (no indentation to keep), then the tool: the blank lines
    # after it stay as the starter has them.
    return STARTER.replace(WHERE, WHERE + "\n" + ADD_TOOL, 1)


def test_choose_typescript_write_the_first_tool_and_pass_the_exercise(page: Page, artifacts: Path) -> None:
    open_step(page)
    pair = page.locator("[data-code-pair]").first
    expect(pair.locator('.code-pair-pane[data-lang="python"]')).to_be_visible()  # Python until chosen
    expect(pair.locator('.code-pair-pane[data-lang="typescript"]')).to_be_hidden()

    choose_typescript(page)
    expect(page.locator("[data-exercise] [data-server-file-name]")).to_have_text("server.ts")  # what it runs
    expect(page.locator("[data-language-switch] input[value=typescript]")).to_be_checked()
    expect(page.locator("[data-workspace] .cm-content")).to_contain_text("new McpServer")
    assert editor_text(page) == STARTER
    expect(page.locator("[data-workspace] [data-file-name]")).to_have_text(["server.ts", "server.ts"])
    expect(page.locator('[data-workspace] [data-hint-for="typescript"]')).to_be_visible()
    expect(page.locator('[data-workspace] [data-hint-for="python"]')).to_be_hidden()
    # The lesson's code follows: its TypeScript tab is chosen and shown, the Python one hidden.
    expect(pair.locator('[role="tab"][data-lang="typescript"]')).to_have_attribute("aria-selected", "true")
    expect(pair.locator('.code-pair-pane[data-lang="typescript"]')).to_be_visible()
    expect(pair.locator('.code-pair-pane[data-lang="python"]')).to_be_hidden()
    expect(pair.locator('.code-pair-pane[data-lang="typescript"]')).to_contain_text("server.registerTool(")
    console_ready(page)  # the console's server restarted on server.ts

    write_first_tool(page)
    assert editor_text(page) == expected_file()
    page.keyboard.press("Control+s")
    status = page.locator("[data-workspace-status]")
    expect(status).to_have_text("Saved as version 1. Restart the server to run it.", timeout=30_000)
    expect(status).not_to_have_attribute("data-tone", "warn")  # esbuild found no syntax error
    expect(page.locator("[data-workspace] .cm-lintRange-error")).to_have_count(0)
    expect(page.locator("[data-workspace]")).not_to_have_attribute("data-edited", "true")

    exercise = page.locator("[data-exercise]")
    exercise.locator('[data-action="run-exercise"]').click()
    expect(exercise.locator("[data-exercise-status]")).to_contain_text(
        "All 2 passed: the exercise is done.", timeout=EXERCISE_TIMEOUT_MS
    )
    expect(exercise.locator("[data-test][data-state=passed]")).to_have_count(2)
    expect(exercise).to_have_attribute("data-passed", "true")
    page.screenshot(path=artifacts / "typescript-exercise-passed.png", full_page=True)

    # The compiler's type check, on demand, in the learner's sandbox: the first tool has no type error.
    page.locator('[data-workspace] [data-action="type-check"]').click()
    expect(status).to_contain_text("No type errors in server.ts", timeout=EXERCISE_TIMEOUT_MS)

    # A syntax error: saved, and shown where it is, in the status and in the editor.
    page.locator("[data-workspace] .cm-content").click()
    clear_and_insert(page, STARTER.replace(WHERE, WHERE + "\nconst broken = ;", 1))
    page.keyboard.press("Control+s")
    broken_line = STARTER.splitlines().index(WHERE) + 2
    expect(status).to_contain_text("Saved as version 2, but it cannot be run", timeout=30_000)
    expect(status).to_contain_text(f"line {broken_line}, column 16: ")
    expect(status).to_have_attribute("data-tone", "warn")
    expect(page.locator("[data-workspace] .cm-lintRange-error")).to_have_count(1)

    # After a reload the choice holds: TypeScript, the saved server.ts (version 2), its code pairs.
    page.reload()
    expect(page.locator("[data-workspace]")).to_have_attribute("data-state", "ready")
    expect(page.locator("[data-language-switch] input[value=typescript]")).to_be_checked()
    expect(page.locator("[data-language-switch] input[value=python]")).not_to_be_checked()
    expect(page.locator("[data-workspace] [data-file-name]")).to_have_text(["server.ts", "server.ts"])
    expect(page.locator("[data-workspace-status]")).to_contain_text("Version 2, saved")
    assert editor_text(page) == STARTER.replace(WHERE, WHERE + "\nconst broken = ;", 1)
    pair = page.locator("[data-code-pair]").first
    expect(pair.locator('.code-pair-pane[data-lang="typescript"]')).to_be_visible()
    expect(pair.locator('.code-pair-pane[data-lang="python"]')).to_be_hidden()
