"""A learner's server.ts: the language setting, saving with esbuild's syntax errors, the exercises a
TypeScript learner cannot take yet, the instructor's view, and (over a real uvicorn, in the real
sandbox) my-server running it on Node, breaking as a broken server.py does."""

from __future__ import annotations

import secrets
import subprocess
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from app import workspace
from app.web.learner import COOKIE
from app.workspace import typescript
from tests.support.appserver import AppProcess
from tests.support.inprocess import InProcessApp
from tests.support.wsclient import EnvelopeClient, McpClient

ADDER = textwrap.dedent("""
    import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
    import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
    import { z } from "zod";

    const server = new McpServer({ name: "adder-ts", version: "1.0.0" });

    server.registerTool(
      "add",
      { description: "Add two whole numbers.", inputSchema: { a: z.number().int(), b: z.number().int() } },
      async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
    );

    await server.connect(new StdioServerTransport());
""")
TOKEN = "typescript-instructor-token"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):
    with InProcessApp(tmp_path_factory.mktemp("ts-in-process"), instructor_token=TOKEN) as site:
        yield site


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("ts"), max_sessions_per_learner=3) as app:
        yield app


def browser(app: AppProcess | InProcessApp, name: str) -> httpx.Client:
    return app.client(cookies={COOKIE: app.learner_cookie(name)})


def choose(app: AppProcess | InProcessApp, name: str, language: str) -> httpx.Response:
    with browser(app, name) as page:
        return page.put("/api/workspace/settings", json={"language": language})


def save_ts(app: AppProcess | InProcessApp, name: str, source: str | bytes) -> httpx.Response:
    with browser(app, name) as page:
        return page.put("/api/workspace/server.ts", content=source)


# --- the setting ---------------------------------------------------------------------------------


def test_a_learner_writes_python_until_they_choose_typescript(site: InProcessApp) -> None:
    with browser(site, "chooser") as page:
        first = page.get("/api/workspace/settings").json()
        assert first["language"] == "python" and first["files"] == {
            "python": "server.py",
            "typescript": "server.ts",
        }
        assert first["typescript"] == {"available": True, "why_not": None, "sdk": typescript.SDK_VERSION,
                                       "newest_revision": "2025-11-25"}  # fmt: skip
        chosen = page.put("/api/workspace/settings", json={"language": "typescript"})
        assert chosen.status_code == 200 and chosen.json()["language"] == "typescript"
        assert page.get("/api/workspace/settings").json()["language"] == "typescript"
        starter = page.get("/api/workspace/server.ts")
    assert starter.headers["content-type"].startswith("text/x-typescript")
    assert "new McpServer" in starter.text and "StdioServerTransport" in starter.text
    with browser(site, "someone-else") as other:  # one learner's choice is theirs alone
        assert other.get("/api/workspace/settings").json()["language"] == "python"


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"typescript", 400, "must be JSON"),
        (b'["typescript"]', 400, 'exactly one key, "language"'),
        (b'{"language": "typescript", "theme": "dark"}', 400, 'exactly one key, "language"'),
        (b'{"language": "bash"}', 400, 'must be "python" or "typescript"'),
        (b'{"language": ["typescript"]}', 400, 'must be "python" or "typescript"'),
        (b'{"language": null}', 400, 'must be "python" or "typescript"'),
        (b"[" * 5000, 413, "over the limit"),
        (b'{"language": "' + b"t" * 2000 + b'"}', 413, "over the limit"),
    ],
    ids=["not-json", "a-list", "extra-key", "unknown", "a-list-value", "null", "deep", "long"],
)
def test_hostile_settings_are_refused_and_change_nothing(site: InProcessApp, body: bytes, status: int,
                                                          words: str) -> None:  # fmt: skip
    name = f"settings-{status}-{len(body)}"
    assert choose(site, name, "typescript").status_code == 200
    with browser(site, name) as page:
        reply = page.put(
            "/api/workspace/settings", content=body, headers={"Content-Type": "application/json"}
        )
        assert reply.status_code == status, reply.text
        message = reply.json()["error"]["message"]
        assert words in message and "Nothing was saved" in message
        assert page.get("/api/workspace/settings").json()["language"] == "typescript"


def test_a_language_change_from_another_site_is_refused(site: InProcessApp) -> None:
    with site.plain_client(cookies={COOKIE: site.learner_cookie("csrf-ts")}) as other:
        reply = other.put("/api/workspace/settings", json={"language": "typescript"},
                          headers={"Origin": "https://evil.example"})  # fmt: skip
        assert reply.status_code == 403
    with browser(site, "csrf-ts") as page:
        assert page.get("/api/workspace/settings").json()["language"] == "python"


# --- saving server.ts ----------------------------------------------------------------------------


def test_a_syntax_error_in_server_ts_is_saved_and_reported_with_line_and_column(site: InProcessApp) -> None:
    # The column counts characters, not bytes: "é" is two bytes in UTF-8.
    reply = save_ts(site, "ts-typo", 'const café = "é";\nconst total: number = ;\n')
    assert reply.status_code == 200 and reply.json()["saved"] is True
    assert reply.json()["diagnostics"] == [{"line": 2, "col": 23, "message": 'Unexpected ";"'}]
    accented = save_ts(site, "ts-typo", 'const s = "é" +;\n').json()["diagnostics"]
    assert accented == [{"line": 1, "col": 16, "message": 'Unexpected ";"'}]
    with browser(site, "ts-typo") as page:
        state = page.get("/api/workspace", params={"file": "server.ts"}).json()
    assert state["file"] == "server.ts" and state["version"] == 2 and len(state["history"]) == 2


def test_a_server_ts_written_to_hold_esbuild_is_stopped_whole_and_its_answer_kept(
    site: InProcessApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the side of a learner saving `f<a<a<a…(`: esbuild's parser is quadratic on it (40 KB held it
    15 s), the time-out killed Node and left esbuild's service running outside any sandbox for a minute,
    and a check that timed out was not kept, so each reload of the editor ran it again."""
    monkeypatch.setattr(typescript, "TRANSPILE_TIMEOUT_S", 0.5)
    started: list[int] = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            started.append(self.pid)

    monkeypatch.setattr(typescript.subprocess, "Popen", Recorded)
    hostile = "f" + "<a" * 20_000 + "( // " + secrets.token_hex(8)  # a text no other test transpiled
    reply = save_ts(site, "ts-hostile", hostile)
    assert reply.status_code == 200 and reply.json()["saved"] is True
    [diagnostic] = reply.json()["diagnostics"]
    assert diagnostic["message"].startswith("esbuild took longer than")
    assert len(started) == 1
    with browser(site, "ts-hostile") as page:
        again = page.get("/api/workspace", params={"file": "server.ts"}).json()
    assert again["diagnostics"] == [diagnostic] and len(started) == 1  # kept: not run again
    deadline = time.monotonic() + 10
    while session_members(started[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(started[0]) == []  # Node and esbuild's service, all gone


def test_a_server_ts_written_to_fill_esbuilds_memory_is_stopped_at_its_limit(site: InProcessApp) -> None:
    """From the side of a learner saving `x=---…1` (64 KiB): esbuild reports 32,000 errors, each holding
    the whole line, and took 5.4 GB of the host's memory in 5 s (esbuild runs on the host, with no
    cgroup); two learners at once took 9 GB. Its address space is held to a limit: it stops there."""
    hostile = "x=" + "-" * 65_000 + "1 // " + secrets.token_hex(8)
    reply = save_ts(site, "ts-greedy", hostile)
    assert reply.status_code == 200 and reply.json()["saved"] is True
    assert [d["message"] for d in reply.json()["diagnostics"]] == [typescript.TOO_BIG]
    assert typescript.cached(hostile).diagnostics[0].message == typescript.TOO_BIG  # not run again
    honest = save_ts(
        site, "ts-greedy", workspace.starter(workspace.TS_FILE_NAME) + "\n// " + secrets.token_hex(8)
    )
    assert honest.status_code == 200 and honest.json()["diagnostics"] == []  # well within the limit


def session_members(session_id: int) -> list[int]:
    """The processes of a session (all that a transpile started), as /proc lists them."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session_id and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"let x = 1;\n" * 7000, 413, "over the limit of 64 KiB"),
        ("const s = 'caf\u00e9';\n".encode("latin-1"), 400, "not UTF-8"),
        (b"let x = 1;\x00\n", 400, "NUL byte"),
    ],
    ids=["too-big", "latin-1", "nul"],
)
def test_a_server_ts_that_cannot_be_saved_is_refused(site: InProcessApp, body: bytes, status: int,
                                                      words: str) -> None:  # fmt: skip
    name = f"ts-refused-{status}-{words[:3]}"
    assert save_ts(site, name, "const kept = true;\n").status_code == 200
    reply = save_ts(site, name, body)
    assert reply.status_code == status and words in reply.json()["error"]["message"]
    with browser(site, name) as page:
        assert page.get("/api/workspace/server.ts").text == "const kept = true;\n"


def test_the_file_in_the_other_language_is_kept_while_the_learner_switches(site: InProcessApp) -> None:
    with browser(site, "both") as page:
        page.put("/api/workspace/server.py", content="x = 1\n")
        choose(site, "both", "typescript")
        page.put("/api/workspace/server.ts", content="const x = 1;\n")
        choose(site, "both", "python")
        assert page.get("/api/workspace/server.py").text == "x = 1\n"
        assert page.get("/api/workspace/server.ts").text == "const x = 1;\n"


# --- exercises -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("notifications-stateless-and-clients/stateless", "protocol revision 2026-07-28"),
        ("notifications-stateless-and-clients/list-changed", "checks what the Python SDK does"),
    ],
)
def test_an_exercise_the_typescript_sdk_cannot_take_says_why(
    site: InProcessApp, step: str, words: str
) -> None:
    name = f"ts-exercise-{step[-6:]}"
    choose(site, name, "typescript")
    with browser(site, name) as page:
        page.get(f"/lessons/{step}")  # a lesson page first: exercises need the learner's identity
        report = page.post(f"/api/exercises/{step}").json()
    assert (
        report["passed"] is False
        and words in report["problem"]
        and "switch your server to Python" in report["problem"]
    )


def joined(teacher: httpx.Client, student: httpx.Client, class_name: str, display_name: str) -> str:
    """A class the teacher makes and the student joins: its page's path."""
    from bs4 import BeautifulSoup

    class_page = teacher.post("/instructor/classes", data={"name": class_name}).headers["location"]
    page = BeautifulSoup(teacher.get(class_page).text, "html.parser")
    code = page.select_one("[data-join-code]").get_text()
    assert student.post("/join", data={"code": code, "display_name": display_name}).status_code == 303
    return class_page


def test_the_instructor_sees_which_file_runs(site: InProcessApp) -> None:
    from bs4 import BeautifulSoup

    teacher = site.plain_client(headers={"Authorization": f"Bearer {TOKEN}"})
    with teacher, browser(site, "ts-student") as student:
        class_page = joined(teacher, student, "TypeScripters", "Linus")
        student.put("/api/workspace/settings", json={"language": "typescript"})
        student.put("/api/workspace/server.ts", content=ADDER)
        link = BeautifulSoup(teacher.get(class_page).text, "html.parser").select_one("a[data-server-file]")[
            "href"
        ]
        python_page = BeautifulSoup(teacher.get(link).text, "html.parser")
        assert python_page.select_one("[data-runs]")["data-runs"] == "no"
        ts_page = BeautifulSoup(teacher.get(link.replace("server.py", "server.ts")).text, "html.parser")
        assert ts_page.select_one("[data-runs]")["data-runs"] == "yes"
        assert "registerTool" in ts_page.select_one("pre.code").get_text()


# --- running it, sandboxed -----------------------------------------------------------------------


async def my_server(app: AppProcess, name: str) -> McpClient:
    return await McpClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                   additional_headers={"Cookie": f"{COOKIE}={app.learner_cookie(name)}"})  # fmt: skip


async def ended_with(app: AppProcess, name: str) -> tuple[str, dict]:
    """What the learner's server wrote on stderr before it exited, and how it exited."""
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers={"Cookie": f"{COOKIE}={app.learner_cookie(name)}"})  # fmt: skip
    stderr: list[str] = []
    try:
        await client.recv_type("state")
        while True:
            frame = await client.recv_type("stderr", "state")
            if frame["type"] == "stderr":
                stderr.append(frame["text"])
            elif frame["status"] == "exited":
                return "".join(stderr), frame["exit_status"]
    finally:
        await client.close()


async def test_a_saved_server_ts_runs_as_my_server_and_answers(app: AppProcess) -> None:
    assert choose(app, "ts-ada", "typescript").status_code == 200
    assert save_ts(app, "ts-ada", ADDER).json()["diagnostics"] == []
    client = await my_server(app, "ts-ada")
    try:
        reply = await client.initialize()
        assert reply["result"]["serverInfo"] == {"name": "adder-ts", "version": "1.0.0"}
        tools = (await client.call(2, "tools/list"))["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["add"]
        assert await client.tool(3, "add", a=2, b=40) == "42"
    finally:
        await client.close()
    # Back to Python: my-server runs server.py again (the starter here).
    assert choose(app, "ts-ada", "python").status_code == 200
    client = await my_server(app, "ts-ada")
    try:
        assert (await client.initialize())["result"]["serverInfo"]["name"] == "my-server"
    finally:
        await client.close()


async def test_a_server_ts_with_a_syntax_error_exits_saying_where(app: AppProcess) -> None:
    choose(app, "ts-broken", "typescript")
    save_ts(app, "ts-broken", "const a = 1;\nconst b: number = ;\n")
    stderr, status = await ended_with(app, "ts-broken")
    assert "server.ts:2:19: error: Unexpected" in stderr and status["code"] == 1


async def test_an_exception_in_server_ts_names_the_learners_own_line(app: AppProcess) -> None:
    choose(app, "ts-crash", "typescript")
    source = (
        'type Config = { port: number };\n\nconst config: Config = JSON.parse("{");\nconsole.log(config);\n'
    )
    save_ts(app, "ts-crash", source)
    stderr, status = await ended_with(app, "ts-crash")
    assert "SyntaxError" in stderr and "server.ts:3" in stderr, stderr  # the source map: its own lines
    assert status["code"] == 1


async def test_the_type_check_finds_the_compilers_errors_in_the_learners_sandbox(app: AppProcess) -> None:
    # (A clean file's check, "No type errors", is walked in Chromium: tests/browser/test_typescript.py.)
    choose(app, "ts-types", "typescript")
    # A number where the SDK wants a string; and a first line that would end the file at once if it ran:
    # the check reads the file, it never runs it.
    wrong = "process.exit(3);\n" + ADDER.replace("text: String(a + b)", "text: a + b")
    save_ts(app, "ts-types", wrong)
    with browser(app, "ts-types") as page:
        found = page.post("/api/workspace/typecheck", timeout=120)
    assert found.status_code == 200, found.text
    diagnostics = found.json()["diagnostics"]
    line = next(n for n, text in enumerate(wrong.splitlines(), 1) if "text: a + b" in text)
    assert [d["line"] for d in diagnostics] == [line]
    assert "not assignable" in diagnostics[0]["message"]


async def test_an_sdk_client_reaches_the_learners_server_ts_through_an_endpoint(app: AppProcess) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    choose(app, "ts-connector", "typescript")
    save_ts(app, "ts-connector", ADDER)
    with browser(app, "ts-connector") as page:
        made = page.post("/api/endpoints", json={"server": "my-server"})
    assert made.status_code == 201, made.text
    async with (
        streamable_http_client(made.json()["url"]) as (read, write),
        ClientSession(read, write) as client,
    ):
        result = await client.initialize()
        assert result.server_info.name == "adder-ts"
        call = await client.call_tool("add", {"a": 20, "b": 22})
        assert not call.is_error and call.content[0].text == "42"


def test_a_file_written_to_slow_a_highlighter_is_shown_to_the_instructor_as_text(site: InProcessApp) -> None:
    """From the side of a class member who saves a server.ts of "a." over and over: Pygments'
    TypeScript lexer takes time quadratic in such a run (64 KiB held the web process two minutes,
    8 KiB four seconds) when the instructor opens the file. Learners' files are shown as text."""
    from bs4 import BeautifulSoup

    hostile = "a." * 4000
    teacher = site.plain_client(headers={"Authorization": f"Bearer {TOKEN}"})
    with teacher, browser(site, "ts-slower") as student:
        class_page = joined(teacher, student, "Highlighted", "Slow")
        assert student.put("/api/workspace/server.ts", content=hostile).status_code == 200
        link = BeautifulSoup(teacher.get(class_page).text, "html.parser").select_one("a[data-server-file]")[
            "href"
        ]
        shown = BeautifulSoup(teacher.get(link.replace("server.py", "server.ts")).text, "html.parser")
    block = shown.select_one("pre.code")
    assert block.get_text().strip() == hostile and block.select("span") == []  # no lexer ran over it
