"""The learner's own server.py over a real uvicorn: saved through the workspace API, run as my-server in
the learner's own sandboxed instance, and refused with a clear answer when it cannot be saved."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import httpx
import pytest

from app.web.learner import COOKIE
from tests.support.appserver import AppProcess
from tests.support.inprocess import InProcessApp
from tests.support.wsclient import EnvelopeClient, McpClient, init_request

ADDER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("adder")


    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b


    if __name__ == "__main__":
        mcp.run()
''')


TOKEN = "workspace-instructor-token"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("workspace"), warm_pool_size=1, max_sessions_per_learner=3,
                    instructor_token=TOKEN) as app:  # fmt: skip
        yield app


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):
    """The same settings, built in process: for what the workspace API answers without a server run."""
    with InProcessApp(tmp_path_factory.mktemp("workspace-in-process"), max_sessions_per_learner=3,
                      instructor_token=TOKEN) as site:  # fmt: skip
        yield site


def browser(app: AppProcess | InProcessApp, name: str) -> httpx.Client:
    """A page of the site as learner `name` (the same learner each time for the same name)."""
    return app.client(cookies={COOKIE: app.learner_cookie(name)})


def save(app: AppProcess | InProcessApp, name: str, source: str | bytes) -> httpx.Response:
    with browser(app, name) as page:
        return page.put("/api/workspace/server.py", content=source)


async def my_server(app: AppProcess, name: str) -> McpClient:
    return await McpClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                   additional_headers={"Cookie": f"{COOKIE}={app.learner_cookie(name)}"})  # fmt: skip


async def console(app: AppProcess, name: str) -> EnvelopeClient:
    return await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                        additional_headers={"Cookie": f"{COOKIE}={app.learner_cookie(name)}"})  # fmt: skip


def test_a_learner_with_nothing_saved_gets_the_starter(site: InProcessApp) -> None:
    with browser(site, "new") as page:
        reply = page.get("/api/workspace/server.py")
        state = page.get("/api/workspace").json()
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/x-python")
    assert "MCPServer" in reply.text and "mcp.run()" in reply.text
    assert state["starter"] is True and state["version"] == 0 and state["diagnostics"] == []


async def test_a_saved_server_runs_as_my_server_and_answers(app: AppProcess) -> None:
    saved = save(app, "ada", ADDER)
    assert saved.status_code == 200, saved.text
    assert saved.json()["saved"] is True and saved.json()["diagnostics"] == []
    client = await my_server(app, "ada")
    try:
        reply = await client.initialize()
        assert reply["result"]["serverInfo"]["name"] == "adder"
        tools = (await client.call(2, "tools/list"))["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["add"]
        assert await client.tool(3, "add", a=2, b=40) == "42"
    finally:
        await client.close()


async def test_one_learners_file_never_runs_for_another(app: AppProcess) -> None:
    assert save(app, "owner", ADDER.replace('"adder"', '"owners-server"')).status_code == 200
    client = await my_server(app, "stranger")
    try:
        reply = await client.initialize()
    finally:
        await client.close()
    assert reply["result"]["serverInfo"]["name"] == "my-server"  # the stranger's own starter


def test_a_syntax_error_is_saved_and_reported_with_line_and_column(site: InProcessApp) -> None:
    reply = save(site, "typo", "from mcp.server.mcpserver import MCPServer\n\ndef broken(:\n    pass\n")
    assert reply.status_code == 200
    body = reply.json()
    assert body["saved"] is True
    assert body["diagnostics"] == [{"line": 3, "col": 12, "message": "invalid syntax"}]


async def test_an_import_time_exception_reaches_the_console_with_the_learners_line_numbers(
    app: AppProcess,
) -> None:
    assert save(app, "crash", "import json\n\nvalue = json.loads('{')\n").status_code == 200
    client = await console(app, "crash")
    try:
        await client.recv_type("state")
        stderr: list[str] = []
        while True:
            frame = await client.recv_type("stderr", "state")
            if frame["type"] == "stderr":
                stderr.append(frame["text"])
            elif frame["status"] == "exited":
                break
    finally:
        await client.close()
    text = "".join(stderr)
    assert 'server.py", line 3, in <module>' in text and "JSONDecodeError" in text, text
    assert "forkserver" not in text and "runpy" not in text  # only the learner's own frames
    assert frame["exit_status"]["code"] == 1


async def test_how_a_learners_own_server_ended_is_recorded_for_the_instructor(app: AppProcess) -> None:
    from app.progress.sqlite import SQLiteProgressStore
    from app.web.state import PROGRESS_DB
    from tests.support.appserver import learner_id_of

    crash = "import sys\nprint('reading the config', file=sys.stderr)\nraise SystemExit('the config is missing')\n"
    assert save(app, "crasher", crash).status_code == 200
    client = await console(app, "crasher")
    try:
        while (await client.recv_type("state"))["status"] != "exited":
            pass
    finally:
        await client.close()
    store = SQLiteProgressStore(app.data_dir / PROGRESS_DB)
    store.open()
    try:
        recorded = store.server_exit(learner_id_of(app.learner_cookie("crasher")))
    finally:
        store.close()
    assert recorded is not None
    report = json.loads(recorded)
    assert report["exit"] == "exited with status 1" and "the config is missing" in report["stderr"]
    assert report["failed"] is True
    assert "reading the config" in report["stderr"]


async def test_a_fixed_file_works_again(app: AppProcess) -> None:
    assert save(app, "fixer", "raise SystemExit(3)\n").status_code == 200
    client = await console(app, "fixer")
    try:
        ready = await client.recv_type("state")
        ended = ready if ready["status"] == "exited" else await client.recv_type("state")
        assert ended["status"] == "exited" and ended["exit_status"]["code"] == 3
    finally:
        await client.close()
    assert save(app, "fixer", ADDER).status_code == 200
    client = await my_server(app, "fixer")
    try:
        assert (await client.initialize())["result"]["serverInfo"]["name"] == "adder"
    finally:
        await client.close()


async def test_a_restart_runs_the_file_saved_since(app: AppProcess) -> None:
    assert save(app, "editor", ADDER).status_code == 200
    client = await console(app, "editor")
    try:
        assert (await client.recv_type("state"))["status"] == "ready"
        assert save(app, "editor", ADDER.replace('"adder"', '"adder-v2"')).status_code == 200
        await client.ws.send('{"type": "restart"}')
        while (await client.recv_type("state"))["status"] != "ready":
            pass
        await client.send(init_request(version="2025-11-25"))
        reply = await client.recv_type("received")
        assert reply["message"]["result"]["serverInfo"]["name"] == "adder-v2"
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"x = 1\n" * 12000, 413, "over the limit of 64 KiB"),
        ("print('caf\u00e9')\n".encode("latin-1"), 400, "not UTF-8"),
        (b"x = 1\x00\n", 400, "NUL byte"),
    ],
    ids=["too-big", "latin-1", "nul"],
)
def test_a_file_that_cannot_be_saved_is_refused_and_nothing_is_saved(
    site: InProcessApp, body: bytes, status: int, words: str
) -> None:
    name = f"refused-{status}-{words[:3]}"
    assert save(site, name, "kept = True\n").status_code == 200
    reply = save(site, name, body)
    assert reply.status_code == status
    assert (
        words in reply.json()["error"]["message"] and "Nothing was saved" in reply.json()["error"]["message"]
    )
    with browser(site, name) as page:
        assert page.get("/api/workspace/server.py").text == "kept = True\n"


def test_saves_from_one_address_are_held_to_its_hourly_budget_whatever_identities_they_use(
    tmp_path: Path,
) -> None:
    """From the attacker's side: identities cost nothing, so each one's ten versions of each file would
    let one visitor fill the database; the bytes saved from one address in an hour are capped."""
    with InProcessApp(tmp_path, saved_kib_per_hour_per_address=64) as small:

        def put(learner: str, source: str, address: str = "10.0.0.1") -> httpx.Response:
            with small.client(address=address, cookies={COOKIE: small.learner_cookie(learner)}) as page:
                return page.put("/api/workspace/server.py", content=source)

        first = "# " + "a" * 40 * 1024 + "\n"
        assert put("one", first).status_code == 200
        assert put("one", first).json()["unchanged"]  # the same text again costs nothing
        refused = put("two", "# " + "b" * 30 * 1024 + "\n")  # a fresh identity, the same address
        assert refused.status_code == 429
        assert "saved 64 KiB of files in the last hour" in refused.json()["error"]["message"]
        assert "Nothing was saved" in refused.json()["error"]["message"]
        assert 0 < int(refused.headers["retry-after"]) <= 3600
        with small.client(address="10.0.0.1", cookies={COOKIE: small.learner_cookie("two")}) as page:
            assert page.get("/api/workspace").json()["starter"]  # nothing of it was kept
        assert small.metric("playground_writes_capped_total", '{what="saves"}') == 1
        assert put("two", "small = True\n").status_code == 200  # what still fits is saved
        assert put("three", "# " + "c" * 30 * 1024 + "\n", address="10.0.0.2").status_code == 200


def test_a_save_from_another_site_is_refused(site: InProcessApp) -> None:
    with site.plain_client(cookies={COOKIE: site.learner_cookie("csrf")}) as other:
        reply = other.put(
            "/api/workspace/server.py", content="x = 1\n", headers={"Origin": "https://evil.example"}
        )
    assert reply.status_code == 403


def test_a_save_from_a_stale_tab_is_refused_and_names_the_version_saved_since(site: InProcessApp) -> None:
    """Two tabs (or devices) of one learner opened on version 0: the first saves; the second, still on
    version 0, would replace that unseen, and is told instead; saved again, on purpose, it goes."""
    with browser(site, "two-tabs") as first, browser(site, "two-tabs") as second:
        assert (
            first.put("/api/workspace/server.py", content="x = 1\n", headers={"If-Match": '"0"'}).json()[
                "version"
            ]
            == 1
        )
        stale = second.put("/api/workspace/server.py", content="x = 2\n", headers={"If-Match": '"0"'})
        assert stale.status_code == 409
        error = stale.json()["error"]
        assert error["version"] == 1 and error["saved_at"] > 0 and "Nothing was saved" in error["message"]
        assert second.get("/api/workspace/server.py").text == "x = 1\n"
        again = second.put("/api/workspace/server.py", content="x = 2\n", headers={"If-Match": '"1"'})
        assert again.status_code == 200 and again.json()["version"] == 2
        # The same text as the newest is no conflict, whatever version it was based on.
        same = first.put("/api/workspace/server.py", content="x = 2\n", headers={"If-Match": '"1"'})
        assert same.status_code == 200 and same.json()["unchanged"] is True
        for bad in ("abc", '"-1"', '"1, 2"', "9" * 12):
            refused = first.put("/api/workspace/server.py", content="y\n", headers={"If-Match": bad})
            assert refused.status_code == 400 and "If-Match" in refused.json()["error"]["message"], bad
        # Without If-Match (a script), a save replaces whatever is newest, as it always has.
        assert first.put("/api/workspace/server.py", content="x = 3\n").json()["version"] == 3


def test_history_keeps_versions_and_a_restore_saves_an_old_one_as_the_newest(site: InProcessApp) -> None:
    for n in (1, 2, 3):
        assert save(site, "hist", f"n = {n}\n").status_code == 200
    with browser(site, "hist") as page:
        history = page.get("/api/workspace").json()["history"]
        assert [v["version"] for v in history] == [3, 2, 1]
        assert page.get("/api/workspace/history/1").text == "n = 1\n"
        restored = page.post("/api/workspace/history/1/restore")
        assert restored.status_code == 200 and restored.json()["version"] == 4
        assert page.get("/api/workspace/server.py").text == "n = 1\n"
        missing = page.post("/api/workspace/history/99/restore")
        assert missing.status_code == 404 and "No saved version 99" in missing.json()["error"]["message"]


def test_the_instructor_reads_a_class_members_file_and_its_versions(site: InProcessApp) -> None:
    from bs4 import BeautifulSoup

    teacher = site.plain_client(headers={"Authorization": f"Bearer {TOKEN}"})
    with teacher, browser(site, "student") as student:
        made = teacher.post("/instructor/classes", data={"name": "Builders"})
        class_page = made.headers["location"]
        code = (
            BeautifulSoup(teacher.get(class_page).text, "html.parser")
            .select_one("[data-join-code]")
            .get_text()
        )
        assert student.post("/join", data={"code": code, "display_name": "Grace"}).status_code == 303
        link = BeautifulSoup(teacher.get(class_page).text, "html.parser").select_one("a[data-server-file]")[
            "href"
        ]
        empty = BeautifulSoup(teacher.get(link).text, "html.parser")
        assert empty.select_one("[data-version]")["data-version"] == "0"
        student.put("/api/workspace/server.py", content="first = 1\n")
        student.put("/api/workspace/server.py", content=ADDER)
        page = BeautifulSoup(teacher.get(link).text, "html.parser")
        assert page.select_one("[data-version]")["data-version"] == "2"
        assert "def add(a: int, b: int)" in page.select_one("pre.code").get_text()
        older = BeautifulSoup(teacher.get(link, params={"version": 1}).text, "html.parser")
        assert older.select_one("pre.code").get_text().strip() == "first = 1"
        assert teacher.get(link, params={"version": 9}).status_code == 404
        # Only the instructor reads it: the learner's cookie alone is not enough.
        assert student.get(link, follow_redirects=False).status_code in (303, 401, 403)


async def test_an_sdk_client_reaches_the_learners_server_through_an_endpoint(app: AppProcess) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    assert save(app, "connector", ADDER).status_code == 200
    with browser(app, "connector") as page:
        made = page.post("/api/endpoints", json={"server": "my-server"})
    assert made.status_code == 201, made.text
    async with (
        streamable_http_client(made.json()["url"]) as (read, write),
        ClientSession(read, write) as client,
    ):
        result = await client.initialize()
        assert result.server_info.name == "adder"
        assert [tool.name for tool in (await client.list_tools()).tools] == ["add"]
        call = await client.call_tool("add", {"a": 20, "b": 22})
        assert not call.is_error and call.content[0].text == "42"
