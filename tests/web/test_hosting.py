"""Hosting for a class: the instructor dashboard, classes, joining, resuming, caps, the access code."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import websockets
from bs4 import BeautifulSoup
from starlette.testclient import WebSocketDenialResponse

from app.web.api import PAGE_CHARS
from app.web.learner import COOKIE
from tests.support.appserver import AppProcess, learner_id_of
from tests.support.inprocess import InProcessApp
from tests.support.wsclient import EnvelopeClient, McpClient, init_request

TOKEN = "instructor-token-for-tests"
STEP = "initialize-handshake/versions"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("hosting"), instructor_token=TOKEN, warm_pool_size=1) as app:
        yield app


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):
    """The same settings, built in process: for the dashboard's and the join pages' HTTP answers."""
    with InProcessApp(tmp_path_factory.mktemp("hosting-in-process"), instructor_token=TOKEN) as site:
        yield site


@contextmanager
def instructor(app: AppProcess | InProcessApp) -> Iterator[httpx.Client]:
    with app.client() as client:
        reply = client.post("/instructor/login", data={"token": TOKEN})
        assert reply.status_code == 303
        yield client


def make_class(app: AppProcess | InProcessApp, name: str, cap: str = "") -> tuple[str, str]:
    with instructor(app) as client:
        reply = client.post("/instructor/classes", data={"name": name, "max_sessions": cap})
        assert reply.status_code == 303
        class_id = reply.headers["location"].rsplit("/", 1)[1]
        page = BeautifulSoup(client.get(f"/instructor/classes/{class_id}").text, "html.parser")
        return class_id, page.select_one("[data-join-code]").get_text()


@contextmanager
def learner(app: AppProcess | InProcessApp, code: str, name: str) -> Iterator[httpx.Client]:
    with app.client() as client:
        client.get("/")  # the learner cookie
        reply = client.post("/join", data={"code": code, "display_name": name})
        assert reply.status_code == 303, reply.text
        landing = BeautifulSoup(client.get(reply.headers["location"]).text, "html.parser")
        assert "You joined the class" in landing.select_one("[data-notice]").get_text()
        yield client


def test_the_dashboard_refuses_without_the_token(site: InProcessApp) -> None:
    page = site.request("GET", "/instructor")
    assert page.status_code == 401
    assert BeautifulSoup(page.text, "html.parser").select_one("input#instructor-token")
    for path in (
        "/instructor/classes/x",
        "/instructor/classes/x/progress.csv",
        "/instructor/classes/x/grid",
        "/api/instructor/sessions/x/transcript",
        "/api/instructor/sessions/x/frames",
    ):
        assert site.request("GET", path).status_code == 401, path
    assert site.post("/instructor/classes", data={"name": "x"}).status_code == 401
    wrong = site.post("/instructor/login", data={"token": "guess"})
    assert wrong.status_code == 401 and "not the instructor token" in wrong.text
    bearer = site.request("GET", "/instructor", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200


def test_a_learners_progress_shows_on_the_dashboard_and_in_the_csv(site: InProcessApp) -> None:
    class_id, code = make_class(site, "Tuesday lab")
    with learner(site, code.lower(), "Grace Hopper") as grace:
        grace.get(f"/course/{STEP}").raise_for_status()
        grace.post(f"/api/course/{STEP}/quiz/unknown-revision", json={"choices": ["a"]}).raise_for_status()
    with instructor(site) as client:
        page = BeautifulSoup(client.get(f"/instructor/classes/{class_id}").text, "html.parser")
        row = page.select_one("tr[data-learner]")
        assert row.select_one("th").get_text() == "Grace Hopper"
        assert row.select_one(f'td[data-step="{STEP}"]')["data-status"] in ("started", "done")
        sheet = client.get(f"/instructor/classes/{class_id}/progress.csv")
        assert sheet.headers["content-type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(sheet.text)))
        header, data = rows[0], rows[1]
        assert data[0] == "Grace Hopper"
        assert data[header.index(f"{STEP} seen")] == "1"
        assert data[header.index(f"{STEP} quizzes right")] == "1"  # a plain number, never "1/2"


def test_reset_close_and_delete(site: InProcessApp) -> None:
    class_id, code = make_class(site, "Wednesday")
    with learner(site, code, "Alan") as alan:
        alan.get(f"/course/{STEP}").raise_for_status()
        learner_id = learner_id_of(alan.cookies[COOKIE])
        with instructor(site) as client:
            page = client.get(f"/instructor/classes/{class_id}").text
            sheet = client.get(f"/instructor/classes/{class_id}/progress.csv").text
            assert learner_id not in page and learner_id not in sheet  # a learner's id is their identity
            row = BeautifulSoup(page, "html.parser").select_one("tr[data-learner]")["data-learner"]
            assert row in sheet
            assert client.post(f"/instructor/classes/{class_id}/learners/not-a-row/reset").status_code == 404
            reset = client.post(f"/instructor/classes/{class_id}/learners/{row}/reset")
            assert reset.status_code == 303
            assert alan.get("/api/progress").json()["steps"][STEP]["seen"] is False
            client.post(f"/instructor/classes/{class_id}/close")
            late = site.post("/join", data={"code": code, "display_name": "Late"})
            assert late.status_code == 400 and "closed to new learners" in late.text
            client.post(f"/instructor/classes/{class_id}/delete")
            assert client.get(f"/instructor/classes/{class_id}").status_code == 404
            assert alan.get("/api/progress").json()["display_name"] is None


def test_a_join_link_that_only_this_machine_can_open_is_said_to_be_so(
    site: InProcessApp, tmp_path: Path
) -> None:
    def shown(app: InProcessApp, host: str) -> BeautifulSoup:
        class_id, code = make_class(app, "Loopback")
        with instructor(app) as client:
            page = client.get(f"/instructor/classes/{class_id}", headers={"Host": host})
        found = BeautifulSoup(page.text, "html.parser")
        assert found.select_one("[data-join-link]")["href"] == f"http://{host}/join/{code}"
        return found

    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
        assert shown(site, host).select_one("[data-join-link-local]") is not None, host
    with InProcessApp(tmp_path, instructor_token=TOKEN, hosting_mode=True,
                      allowed_hosts=["classroom.example", "127.0.0.1"]) as hosted:  # fmt: skip
        assert shown(hosted, "classroom.example").select_one("[data-join-link-local]") is None


def test_an_instructors_action_is_said_once_on_the_page_it_comes_back_to(site: InProcessApp) -> None:
    class_id, code = make_class(site, "Said")
    with learner(site, code, "Ada") as ada, instructor(site) as teacher:
        ada.get(f"/course/{STEP}").raise_for_status()
        grid = BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
        row = grid.select_one("tr[data-learner]")["data-learner"]
        saved = teacher.post(
            f"/instructor/classes/{class_id}/learners/{row}/student-id", data={"student_id": "S-1"}
        )
        assert saved.status_code == 303 and saved.headers["location"].endswith("?done=student-id")
        shown = BeautifulSoup(teacher.get(saved.headers["location"]).text, "html.parser")
        assert shown.select_one("[data-done-note]").get_text() == "Student identifier saved."
        assert (
            BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}").text, "html.parser").select_one(
                "[data-done-note]"
            )
            is None
        )  # once: the page itself says nothing
        # A link that names its own words shows none of them.
        forged = teacher.get(
            f"/instructor/classes/{class_id}", params={"done": "<b>Your class was deleted</b>"}
        )
        assert BeautifulSoup(forged.text, "html.parser").select_one("[data-done-note]") is None


def test_joining_with_a_bad_code_or_no_name_says_why(site: InProcessApp) -> None:
    _, code = make_class(site, "Thursday")
    bad = site.post("/join", data={"code": "NOPE00", "display_name": "X"})
    assert bad.status_code == 400
    assert (
        "no class with that code"
        in BeautifulSoup(bad.text, "html.parser").select_one(".form-error").get_text()
    )
    nameless = site.post("/join", data={"code": code, "display_name": "  "})
    assert nameless.status_code == 400 and "Enter the name" in nameless.text
    link = site.request("GET", f"/join/{code}")
    assert BeautifulSoup(link.text, "html.parser").select_one("input#join-code")["value"] == code


def test_resume_on_another_device(site: InProcessApp) -> None:
    with site.client() as laptop:
        laptop.get(f"/course/{STEP}").raise_for_status()
        laptop.put("/api/progress/name", json={"display_name": "Katherine"}).raise_for_status()
        code = (
            BeautifulSoup(laptop.get("/resume").text, "html.parser")
            .select_one("[data-resume-code]")
            .get_text()
        )
    with site.client() as phone:
        phone.get("/")
        asked = phone.get(f"/resume/{code}")  # a link only asks
        assert asked.status_code == 200
        confirm = BeautifulSoup(asked.text, "html.parser")
        assert confirm.select_one("[data-resume-name]").get_text() == "Katherine"
        assert phone.get("/api/progress").json()["display_name"] is None  # not switched yet
        moved = phone.post("/resume", data={"code": confirm.select_one("input[name=code]")["value"]})
        assert moved.status_code == 303
        assert phone.get("/api/progress").json()["display_name"] == "Katherine"
        missing = phone.post("/resume", data={"code": "WRONGCODE1"})
        assert missing.status_code == 404 and "No progress has that resume code" in missing.text
        assert phone.get("/resume/WRONGCODE1").status_code == 404


async def test_a_full_class_is_refused_kindly(app: AppProcess) -> None:
    _, code = make_class(app, "Tiny", cap="1")
    with learner(app, code, "One") as one, learner(app, code, "Two") as two:
        first = await McpClient.connect(app.ws_base + "/ws/demo-orders",
                                        additional_headers={"Cookie": f"{COOKIE}={one.cookies[COOKIE]}"})  # fmt: skip
        try:
            with pytest.raises(websockets.InvalidStatus) as refused:
                await McpClient.connect(app.ws_base + "/ws/demo-orders",
                                        additional_headers={"Cookie": f"{COOKIE}={two.cookies[COOKIE]}"})  # fmt: skip
            assert refused.value.response.status_code == 503
            assert "Your class has 1 console open" in refused.value.response.body.decode()
            console = await EnvelopeClient.connect(app.ws_base + "/ws/demo-orders",
                                                   additional_headers={"Cookie": f"{COOKIE}={two.cookies[COOKIE]}"})  # fmt: skip
            full = await console.recv()
            assert full["type"] == "full" and "then try again in 60 s." in full["message"]
            assert full["situation"] == "Your class has 1 console open, the most your instructor allowed."
            assert full["advice"] == "Close a console you no longer need"  # the console says when itself
            assert full["reason"] == "class_full"
            assert full["retry_after_s"] == 60
            await console.ws.wait_closed()  # the server ends a refused console; its socket goes with it
        finally:
            await first.close()


def metric(app: AppProcess, name: str, labels: str = "") -> float:
    text = httpx.get(app.base + "/metrics", timeout=30).text
    match = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


async def test_metrics_move_when_sessions_start_and_end(app: AppProcess) -> None:
    started = metric(app, "playground_sessions_started_total", '{server="demo-orders"}')
    messages = metric(app, "playground_relay_messages_total", '{direction="client"}')
    errors = metric(app, "playground_relay_errors_total", '{code="-32700"}')
    assert metric(app, "playground_sandbox_layer", '{layer="seccomp"}') == 1.0
    client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
    try:
        await client.call(1, "initialize", init_request()["params"])
        await client.send("{broken")
        await client.recv()
        assert metric(app, "playground_live_sessions") >= 1
        assert metric(app, "playground_sessions_started_total", '{server="demo-orders"}') == started + 1
        assert metric(app, "playground_relay_messages_total", '{direction="client"}') == messages + 1
        assert metric(app, "playground_relay_errors_total", '{code="-32700"}') == errors + 1
        assert metric(app, "playground_session_start_seconds_count") >= 1
        # What demo-orders' pool keeps: its size (1 here), or more once a burst has grown it.
        assert metric(app, "playground_warm_pool_target", '{server="demo-orders"}') >= 1
    finally:
        await client.close()


def test_the_web_process_times_its_collections_and_froze_its_start_up_heap(app: AppProcess) -> None:
    """Past 1000 sessions a full collection stalls every learner: /metrics shows each one,
    and the real server set its start-up objects aside (app.web.heap.settle_heap, a full collection
    itself, so at least one is counted)."""
    assert metric(app, "playground_gc_pause_seconds_count", '{generation="2"}') >= 1
    assert metric(app, "playground_gc_pause_seconds_sum", '{generation="2"}') > 0
    assert metric(app, "playground_gc_frozen_objects") > 10_000


def test_access_code_guards_every_page_and_the_relay(tmp_path: Path) -> None:
    with InProcessApp(tmp_path, access_code="open sesame") as site:
        visitor = site.client()
        door = visitor.get("/course")
        assert door.status_code == 303 and door.headers["location"] == "/access?next=/course"
        assert visitor.get("/api/servers").status_code == 401
        assert visitor.get("/healthz").status_code == 200
        wrong = visitor.post("/access", data={"code": "guess", "next": "/course"})
        assert wrong.status_code == 403
        right = visitor.post("/access", data={"code": "open sesame", "next": "//evil.example/"})
        assert right.status_code == 303 and right.headers["location"] == "/"  # no open redirect
        assert visitor.get("/course").status_code == 200
        access_cookie = visitor.cookies["playground_access"]

        # The relay: refused before the upgrade without the cookie, let in with it.
        relay_url = site.base.replace("http", "ws", 1) + "/ws/demo-orders"
        with pytest.raises(WebSocketDenialResponse) as refused:
            with site.plain_client().websocket_connect(relay_url):
                pass
        assert refused.value.status_code == 401
        with site.plain_client(cookies={"playground_access": access_cookie}).websocket_connect(
            relay_url, subprotocols=["mcp"]
        ) as relay:
            assert relay.accepted_subprotocol == "mcp"


def test_hosting_mode_prints_a_token_and_refuses_a_weak_sandbox(tmp_path: Path) -> None:
    weak = AppProcess(tmp_path / "weak", host="0.0.0.0", sandbox=False)
    with pytest.raises(RuntimeError, match="Refusing to start: a sandbox layer is missing"):
        weak.start()
    accepted = AppProcess(tmp_path / "accepted", host="0.0.0.0", sandbox=False, accept_weak_sandbox=True)
    with accepted:
        assert "Instructor dashboard token: " in accepted.log()
        health = httpx.get(accepted.base + "/healthz", timeout=30).json()
        assert health["status"] == "degraded" and health["sandbox"]["complete"] is False


async def member_console(app: AppProcess, member: httpx.Client) -> EnvelopeClient:
    """A console of the member's (signed in as their browser is) on demo-orders."""
    return await EnvelopeClient.connect(app.ws_base + "/ws/demo-orders",
                                        additional_headers={"Cookie": f"{COOKIE}={member.cookies[COOKIE]}"})  # fmt: skip


async def test_an_instructor_follows_a_learners_console_as_it_grows(app: AppProcess) -> None:
    class_id, code = make_class(app, "Follow along")
    with learner(app, code, "Lin") as lin, instructor(app) as client:
        grid = client.get(f"/instructor/classes/{class_id}/grid")
        assert grid.status_code == 200 and "<html" not in grid.text  # the live part alone
        console = await member_console(app, lin)
        try:
            session = (await console.recv_type("state"))["session"]
            row = BeautifulSoup(client.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
            assert row.select_one(f'a[data-session="{session}"]').get_text() == "demo-orders"
            await console.send(init_request())
            await console.recv_type("received")
            await console.send_text("{not json")
            await console.recv_type("relay_error")
            frames = client.get(f"/api/instructor/sessions/{session}/frames").json()
            assert [f["type"] for f in frames["frames"]] == ["sent", "received", "relay_error"]
            assert frames["frames"][0]["message"]["method"] == "initialize"
            assert frames["frames"][1]["answers"] == frames["frames"][0]["seq"]
            assert frames["frames"][2]["error"]["code"] == -32700
            # Asked again from where it left off: only what came since.
            await console.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            await console.recv_type("received")
            later = client.get(f"/api/instructor/sessions/{session}/frames",
                               params={"after": frames["next_after"]}).json()  # fmt: skip
            assert [(f["type"], (f["message"] or {}).get("id")) for f in later["frames"]] == [
                ("sent", 2), ("received", 2)]  # fmt: skip
            assert later["status"] == frames["status"] and not later["more"]
            page = client.get(f"/instructor/sessions/{session}")
            follow = BeautifulSoup(page.text, "html.parser").select_one("ol[data-follow]")
            assert follow["data-follow"] == f"/api/instructor/sessions/{session}/frames"
            assert follow["data-after"] == "0"
            shown = BeautifulSoup(page.text, "html.parser")  # the way on: the class, the learner, End
            assert shown.select_one(f'a[href="/instructor/classes/{class_id}"]') is not None
            assert shown.select_one("a[data-learner-page]")["href"].startswith(
                f"/instructor/classes/{class_id}/learners/"
            )
            assert shown.select_one(f'form[action="/instructor/sessions/{session}/end"]') is not None
            # The export names the learner as every instructor page does, by row id: their own id is
            # their identity (what their cookie signs).
            exported = client.get(f"/api/instructor/sessions/{session}/transcript").json()
            learner_id = learner_id_of(lin.cookies[COOKIE])
            assert exported["learner"] != learner_id and learner_id not in json.dumps(exported)
            assert (
                f'data-learner="{exported["learner"]}"'
                in client.get(f"/instructor/classes/{class_id}/grid").text
            )
        finally:
            await console.close()
        deadline = time.monotonic() + 30  # closed: over once its grace period is
        while (ended := client.get(f"/instructor/sessions/{session}")).status_code == 200:
            assert time.monotonic() < deadline, "the console never ended"
            await asyncio.sleep(0.1)
        assert ended.status_code == 404  # a page with the way back, not a bare 404
        assert BeautifulSoup(ended.text, "html.parser").select_one("[data-session-ended]") is not None


async def test_a_console_of_heavy_messages_comes_to_the_instructor_in_pages_of_bounded_size(
    app: AppProcess,
) -> None:
    """From the side of a learner whose console fills its transcript with lines such as `[[],[],...]`,
    each parsed to be shown: one request for every frame took the web process's core for most of a
    second, at every reload. Pages now end past PAGE_CHARS of lines, and following them gets all."""
    class_id, code = make_class(app, "Heavy")
    with learner(app, code, "Ira") as ira, instructor(app) as client:
        console = await member_console(app, ira)
        try:
            session = (await console.recv_type("state"))["session"]
            await console.send(init_request())
            await console.recv_type("received")
            heavy = "[" + ",".join(["[]"] * 4000) + "]"
            for n in range(30):
                await console.send_text(
                    f'{{"jsonrpc": "2.0", "id": {n + 2}, "method": "ping", "params": {{"_meta": {{"x": {heavy}}}}}}}'
                )
                await console.recv_type("received")
            pages, after, more = [], 0, True
            while more:
                page = client.get(
                    f"/api/instructor/sessions/{session}/frames", params={"after": after}
                ).json()
                pages.append(page["frames"])
                after, more = page["next_after"], page["more"]
            assert len(pages) > 1
            for frames in pages:
                lines = [len(frame.get("line") or frame.get("raw") or "") for frame in frames]
                assert sum(lines[:-1]) <= PAGE_CHARS, lines
            sent = [frame["message"]["id"] for frames in pages for frame in frames if frame["type"] == "sent"]
            assert sent == list(range(1, 32))
            exported = client.get(f"/api/instructor/sessions/{session}/transcript").json()
            assert exported["next_after"] is not None and len(exported["entries"]) < 62
        finally:
            await console.close()


async def test_an_instructor_ends_a_learners_console_from_the_class_page(app: AppProcess) -> None:
    class_id, code = make_class(app, "Ending")
    with learner(app, code, "Kit") as kit, instructor(app) as client:
        console = await member_console(app, kit)
        try:
            session = (await console.recv_type("state"))["session"]
            grid = BeautifulSoup(client.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
            form = grid.select_one(f'[data-live-session="{session}"] form')
            assert form["action"] == f"/instructor/sessions/{session}/end"
            ended = client.post(form["action"], data={"class_id": class_id}, follow_redirects=False)
            assert (
                ended.status_code == 303
                and ended.headers["location"] == f"/instructor/classes/{class_id}?done=ended"
            )
            while (frame := await console.recv_type("state"))["status"] != "exited":
                pass
            assert frame["reason"] == "your instructor ended this console"
            assert client.post(form["action"], data={"class_id": class_id}).status_code == 404
        finally:
            await console.close()


def test_a_members_pages_name_the_class_and_every_page_offers_the_way_back_in(site: InProcessApp) -> None:
    _, code = make_class(site, "Thursday lab")
    with site.client() as stranger:
        home = BeautifulSoup(stranger.get("/").text, "html.parser")
        assert home.select_one("footer a[data-resume-link]")["href"] == "/resume"
        fresh = BeautifulSoup(stranger.get("/course").text, "html.parser")
        assert fresh.select_one("[data-new-here] a")["href"] == "/resume"  # a new browser is told how
        assert fresh.select_one("[data-member-of]") is None
    with learner(site, code, "Katherine") as member:
        for path in ("/course", f"/course/{STEP}"):
            page = BeautifulSoup(member.get(path).text, "html.parser")
            assert page.select_one("[data-member-of]").get_text() == "Class: Thursday lab", path
        assert BeautifulSoup(member.get("/course").text, "html.parser").select_one("[data-new-here]") is None
