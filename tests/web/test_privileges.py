"""Privilege separation: the real app drops root once the fork server is up (app/privileges.py).

Checked from the host's /proc (the web process's uid, capabilities; the fork server still root), by
walking every kind of request once (pages, forms, API, WebSocket, /metrics, both progress stores)
against an app that has dropped: on this machine the interpreter lives in root's home, so a module
the web process imports late fails there, and the watch logs every such import on any host.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import shutil
import signal
import tempfile
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from app.demos import MY_SERVER
from app.privileges import WATCH_MESSAGE, _check_as, drop, take_over
from app.web.learner import COOKIE
from tests.support.appserver import AppProcess
from tests.support.postgres import PostgresServer
from tests.support.procs import descendants, processes_in_uid_range, wait_until
from tests.support.wsclient import EnvelopeClient, McpClient, init_request

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the privilege drop needs the app started as root")

NOBODY = pwd.getpwnam("nobody")
STEP = "initialize-handshake/versions"
WALK_TOKEN = "t0ken-for-the-walk"
STATIC = Path(__file__).resolve().parents[2] / "static"


def status_of(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as handle:
        return dict(line.split(":\t", 1) for line in handle.read().splitlines() if ":\t" in line)


def forkserver_of(app: AppProcess) -> int:
    assert app.proc is not None
    servers = [p for p in descendants(app.proc.pid) if int(p.status["PPid"]) == app.proc.pid]
    assert len(servers) == 1, servers
    return servers[0].pid


@contextmanager
def folder_nobody_reaches() -> Iterator[Path]:
    """A folder `nobody` can reach (pytest's own tmp folder is root's, mode 700: there the drop
    refuses, as it should)."""
    root = Path(tempfile.mkdtemp(prefix="playground-priv-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def reachable_dir() -> Iterator[Path]:
    with folder_nobody_reaches() as root:
        yield root


def full_log(app: AppProcess) -> str:
    return app.log_path.read_text(errors="replace")  # app.log() is only the tail


def late_imports(app: AppProcess) -> list[str]:
    return [line for line in full_log(app).splitlines() if WATCH_MESSAGE in line]


def assert_ended_cleanly(app: AppProcess) -> None:
    """After stop(): a clean shutdown, and no module imported after the drop."""
    assert "Application shutdown complete." in app.log(), app.log()
    assert not late_imports(app), "\n".join(late_imports(app))


@pytest.fixture(scope="module")
def dropped() -> Iterator[AppProcess]:
    """One app that has dropped root, for the checks that only look at it and talk to it; at its end
    it must have shut down cleanly, with no module imported after the drop."""
    with folder_nobody_reaches() as root:
        data = root / "data"
        data.mkdir()
        (data / "left-by-an-older-version").write_text("x")  # owned by root, as an older app left it
        with AppProcess(data, warm_pool_size=1, instructor_token=WALK_TOKEN) as app:
            yield app
        assert_ended_cleanly(app)


def test_web_process_drops_root_and_the_fork_server_keeps_it(dropped: AppProcess) -> None:
    app, data = dropped, dropped.data_dir
    assert app.proc is not None
    health = httpx.get(app.base + "/healthz", timeout=30).json()
    assert health["privileges"] == "ok", health
    web = status_of(app.proc.pid)
    assert [int(x) for x in web["Uid"].split()] == [NOBODY.pw_uid] * 4
    assert [int(x) for x in web["Gid"].split()] == [NOBODY.pw_gid] * 4
    assert int(web["CapEff"], 16) == 0 and int(web["CapPrm"], 16) == 0 and int(web["CapBnd"], 16) == 0
    assert web["Groups"].strip() == ""
    assert web["NoNewPrivs"].strip() == "1"
    forkserver = status_of(forkserver_of(app))
    assert forkserver["Uid"].split()[0] == "0"
    # The data folder and everything in it now belong to nobody.
    for path in [data, *data.iterdir()]:
        if path.name.startswith("app-"):
            continue  # the test's own log file, opened before the app started
        assert path.stat().st_uid == NOBODY.pw_uid, path

    # A session works end to end: the fork server spawns for the unprivileged web process.
    async def one_session() -> None:
        client = await McpClient.connect(f"{app.ws_base}/ws/demo-orders")
        reply = await client.initialize()
        assert "result" in reply, reply
        await client.close()

    asyncio.run(one_session())


def test_sigkill_of_the_unprivileged_web_process_takes_the_fork_server_and_instances(
    reachable_dir: Path,
) -> None:
    app = AppProcess(reachable_dir / "data", warm_pool_size=1).start()
    try:
        assert app.proc is not None
        assert status_of(app.proc.pid)["Uid"].split()[0] == str(NOBODY.pw_uid)
        forkserver = forkserver_of(app)
        low, high = app.uid_base, app.uid_base + 1000
        assert wait_until(lambda: len(processes_in_uid_range(low, high)) > 0, 60)
        app.stop(signal.SIGKILL)
        assert wait_until(lambda: not os.path.exists(f"/proc/{forkserver}"), 30)
        assert wait_until(lambda: not processes_in_uid_range(low, high), 30), processes_in_uid_range(
            low, high
        )
    finally:
        app.stop()


def test_restarted_and_ended_instances_go_away(dropped: AppProcess) -> None:
    """The unprivileged web process cannot signal an instance's uid itself: a restart and a session's
    end still leave only the warm pool (tests/sandbox/test_forkserver_requests.py checks the signals)."""
    app = dropped

    async def restart_then_leave() -> None:
        console = await EnvelopeClient.connect(f"{app.ws_base}/ws/demo-orders")
        await console.recv_type("state")
        await console.send(init_request())
        await console.recv_type("received")
        await console.ws.send(json.dumps({"type": "restart"}))
        await console.recv_type("state")
        await console.close()

    asyncio.run(restart_then_leave())
    low, high = app.uid_base, app.uid_base + 1000

    def only_the_warm_pools() -> bool:
        """One process (the server) per warm instance, nothing else, once each pool holds what it is
        keeping: one of each demo server (warm_pool_size=1; a learner's own is never warm), or one
        more where the restart found its pool empty and grew it."""
        health = httpx.get(app.base + "/healthz", timeout=30).json()
        kept = health["warm_pool_target"]
        assert kept[MY_SERVER] == 0 and all(
            kept[name] >= 1 for name in health["servers"] if name != MY_SERVER
        )
        full = health["warm_pool"] == kept
        return full and len(processes_in_uid_range(low, high)) == sum(kept.values())

    assert wait_until(only_the_warm_pools, 60), processes_in_uid_range(low, high)
    assert "Traceback" not in full_log(app), full_log(app)


def walk_every_request(app: AppProcess, token: str) -> list[str]:
    """One of each kind of request the app serves; returns what went wrong (a 5xx, a broken page)."""
    problems: list[str] = []

    def check(response: httpx.Response, *ok: int) -> httpx.Response:
        if response.status_code >= 500 or (ok and response.status_code not in ok):
            problems.append(f"{response.request.method} {response.request.url.path}: {response.status_code}")
        return response

    # As a browser on one of the site's own pages sends them.
    same_site = {"Origin": app.base, "Sec-Fetch-Site": "same-origin"}
    with httpx.Client(base_url=app.base, timeout=60, headers=same_site) as client:
        for path in ("/", "/playground", "/course", "/course/initialize-handshake", f"/course/{STEP}",
                     "/join", "/resume", "/access", "/api/servers", "/api/progress", "/metrics", "/healthz",
                     "/api/docs", "/openapi.json", "/static/no-such-file.css", "/no-such-page"):  # fmt: skip
            check(client.get(path))
        for asset in sorted(STATIC.rglob("*")):
            if asset.is_file():
                check(client.get("/static/" + asset.relative_to(STATIC).as_posix()), 200)
        check(client.post(f"/course/{STEP}/quiz/unknown-revision", data={"choices": "a"}))
        check(client.post(f"/api/course/{STEP}/quiz/unknown-revision", json={"choices": ["a"]}))
        check(client.post(f"/api/course/{STEP}/quiz/unknown-revision", content=b"{not json",
                          headers={"Content-Type": "application/json"}), 422)  # fmt: skip
        check(client.put("/api/progress/name", json={"name": "Ada ünïcode"}))
        check(client.post("/course/name", data={"name": "Ada"}))
        check(client.post("/course/name", files={"name": ("a.txt", b"x" * 10)}))  # multipart
        check(client.post("/join", data={"code": "NOPE", "display_name": "A"}))
        check(client.post("/resume", data={"code": "NOPE"}))
        check(client.post("/access", data={"code": "x", "next": "/"}))
        check(client.get("/instructor"))
        check(client.post("/instructor/login", data={"token": "wrong"}))
        check(client.post("/instructor/login", data={"token": token}), 303)
        created = check(
            client.post("/instructor/classes", data={"name": "Class ä", "max_sessions": "5"}), 303
        )
        class_page = created.headers.get("location", "/instructor/classes/0")
        code = re.search(r"/join/([A-Za-z0-9_-]+)", check(client.get(class_page), 200).text)
        if code:
            check(client.get(f"/join/{code.group(1)}"))
            check(client.post("/join", data={"code": code.group(1), "display_name": "Bea"}))
        check(client.get(class_page + "/progress.csv"), 200)
        check(client.get(class_page + "/grid"), 200)
        check(client.get("/instructor"), 200)
        learner = client.cookies.get(COOKIE, "")
        check(client.post(f"/instructor/learners/{learner.rpartition('.')[0]}/reset"))
        check(client.get("/instructor/sessions/no-such-session"))
        check(client.get("/api/instructor/sessions/no-such-session/transcript"))
        check(client.get("/api/instructor/sessions/no-such-session/frames"))
        check(client.get("/api/sessions/no-such-session/transcript"))
        check(client.post(class_page + "/close"))
        check(client.post(class_page + "/delete"))
        check(client.post("/instructor/logout"))
        check(client.get("/resume"))
        check(client.request("DELETE", "/api/progress"))  # 405
        # A Streamable HTTP endpoint (docs/http.md): made with the learner cookie, used without it.
        made = check(client.post("/api/endpoints", json={"server": "demo-orders"}), 201)
        check(client.get("/api/endpoints"), 200)
        if made.status_code == 201:
            endpoint = made.json()
            mcp = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
            with httpx.Client(timeout=60) as outside:
                opened = check(outside.post(endpoint["url"], headers=mcp, json=init_request()), 200)
                session = {**mcp, "Mcp-Session-Id": opened.headers.get("mcp-session-id", "")}
                check(outside.post(endpoint["url"], headers=session,
                                   json={"jsonrpc": "2.0", "method": "notifications/initialized"}), 202)  # fmt: skip
                listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
                check(outside.post(endpoint["url"], headers=session, json=listed), 200)
                sse = {**session, "Accept": "text/event-stream, application/json"}
                check(outside.post(endpoint["url"], headers=sse, json={**listed, "id": 3}), 200)
                check(outside.post(endpoint["url"], headers=session, content=b"{not json"))
                check(outside.delete(endpoint["url"], headers=session))
            check(client.get(f"/api/endpoints/{endpoint['id']}/traffic"))
            check(client.delete(f"/api/endpoints/{endpoint['id']}"))

    async def sockets() -> None:
        headers = {"Cookie": f"{COOKIE}={learner}"}
        console = await EnvelopeClient.connect(f"{app.ws_base}/ws/demo-orders?step={STEP}",
                                               additional_headers=headers)  # fmt: skip
        await console.recv_type("state")
        await console.send(init_request(version="1999-01-01"))
        await console.recv_type("received")
        await console.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        await console.recv_type("received")
        await console.send_text("{bad json")
        await console.recv_type("relay_error")
        await console.ws.send("not a frame")
        await console.ws.send(json.dumps({"type": "restart"}))
        await console.recv_type("state")
        await console.close()
        client = await McpClient.connect(f"{app.ws_base}/ws/demo-assistant")
        await client.initialize()
        await client.call(2, "tools/list")
        await client.send('{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "\\ud800"}}')
        await client.recv()
        await client.close()
        try:
            bad = await McpClient.connect(f"{app.ws_base}/ws/no-such-server")
            await bad.closed()
        except Exception:
            pass  # refused before the upgrade: also fine

    asyncio.run(sockets())
    with httpx.Client(base_url=app.base, timeout=60) as client:
        check(client.get("/metrics"), 200)
    return problems


def problems_in_log(app: AppProcess) -> list[str]:
    """What a web process that may no longer read the interpreter or root's files runs into."""
    log = full_log(app)
    signs = ("ImportError", "ModuleNotFoundError", "unknown encoding", "PermissionError")
    return [sign for sign in signs if sign in log]


def test_every_request_works_after_the_drop(dropped: AppProcess) -> None:
    """With SQLite (the default store); the fixture checks the clean shutdown and late imports."""
    assert httpx.get(dropped.base + "/healthz", timeout=30).json()["privileges"] == "ok"
    assert walk_every_request(dropped, WALK_TOKEN) == [], full_log(dropped)
    assert problems_in_log(dropped) == [], full_log(dropped)


def test_every_request_works_after_the_drop_with_postgresql(
    reachable_dir: Path, postgres_server: PostgresServer
) -> None:
    with postgres_server.fresh_database() as url:
        with AppProcess(reachable_dir / "data", warm_pool_size=1, instructor_token=WALK_TOKEN,
                        database_url=url) as app:  # fmt: skip
            assert httpx.get(app.base + "/healthz", timeout=30).json()["privileges"] == "ok"
            problems = walk_every_request(app, WALK_TOKEN)
        assert_ended_cleanly(app)
        assert not problems, (problems, full_log(app))
        assert problems_in_log(app) == [], full_log(app)


def test_the_setting_names_the_user_and_empty_keeps_root(reachable_dir: Path) -> None:
    """The app passes the setting to the drop and reports its answer (one start is enough for that);
    the drop's answer to an empty name is checked in a child."""
    with AppProcess(reachable_dir / "unknown", warm_pool_size=1, run_as_user="no-such-user-here") as app:
        health = httpx.get(app.base + "/healthz", timeout=30).json()
        assert health["privileges"] == "not in force: no user 'no-such-user-here' on this host"
    answer, uid = drop_in_a_child(reachable_dir / "empty", user="")
    assert answer.startswith("off: PLAYGROUND_RUN_AS_USER is empty") and uid == 0


def test_take_over_gives_root_owned_entries_and_leaves_others(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "file").write_text("x")
    (folder / "theirs").write_text("y")
    os.chown(folder / "theirs", 12345, 12345)
    os.symlink("/etc/passwd", folder / "link")
    assert take_over(folder, NOBODY.pw_uid, NOBODY.pw_gid) == 4  # folder, sub, file, link itself
    assert (folder / "sub" / "file").stat().st_uid == NOBODY.pw_uid
    assert (folder / "theirs").stat().st_uid == 12345
    assert os.lstat(folder / "link").st_uid == NOBODY.pw_uid
    assert Path("/etc/passwd").stat().st_uid == 0  # never the target of a link


def test_check_as_reports_what_the_user_cannot_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0o600)
    assert "Permission denied" in _check_as(NOBODY.pw_uid, NOBODY.pw_gid, [secret], [])
    assert _check_as(NOBODY.pw_uid, NOBODY.pw_gid, [Path("/etc/hostname")], [Path("/")]) == ""


def test_a_data_folder_the_user_cannot_reach_keeps_root_and_hosting_mode_needs_consent(
    reachable_dir: Path,
) -> None:
    """Under a folder only root may enter (as pytest's own tmp folders are), the drop would cut the
    app off from its data: it does not happen, and the app says why. In hosting mode it refuses to
    start so, unless the operator accepts a weaker sandbox."""
    hidden = reachable_dir / "root-only"
    hidden.mkdir(mode=0o700)
    token = "a-long-enough-instructor-token-for-hosting"
    refused = AppProcess(hidden / "refused", host="0.0.0.0", instructor_token=token, warm_pool_size=1)
    try:
        with pytest.raises(RuntimeError, match="the app exited"):
            refused.start()
    finally:
        refused.stop()
    assert "Refusing to start: the web process cannot drop root" in full_log(refused), full_log(refused)
    accepted = AppProcess(hidden / "accepted", host="0.0.0.0", instructor_token=token, warm_pool_size=1,
                          accept_weak_sandbox=True)  # fmt: skip
    with accepted:
        assert accepted.proc is not None
        health = httpx.get(accepted.base + "/healthz", timeout=30).json()
        assert health["privileges"].startswith("not in force: nobody cannot reach"), health
        assert status_of(accepted.proc.pid)["Uid"].split()[0] == "0"
        assert "WARNING: the web process stays root" in full_log(accepted)
    assert (hidden / "accepted").stat().st_uid == 0  # not given away either


def drop_in_a_child(data_dir: Path, threads: int = 0, user: str = "nobody") -> tuple[str, int]:
    """privileges.drop() in a forked child (the test process itself must stay root): its answer and
    the uid the child had afterwards."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            stop = threading.Event()
            for _ in range(threads):
                threading.Thread(target=stop.wait, daemon=True).start()
            answer = drop(user, data_dir)
            os.write(write_end, f"{answer}|{os.getuid()}".encode())
            stop.set()
        except BaseException:  # said to the parent, whose assertion then shows it
            os.write(write_end, f"the child failed: {traceback.format_exc()}|-1".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        answer, _, uid = reader.read().decode().rpartition("|")
    os.waitpid(pid, 0)
    return answer, int(uid)


def test_the_drop_refuses_while_other_threads_run(reachable_dir: Path) -> None:
    """no_new_privs, the bounding set and capset(2) hold per thread: a thread started before the drop
    would keep what the others lose."""
    answer, uid = drop_in_a_child(reachable_dir / "data", threads=1)
    assert answer == "not in force: the web process runs 2 threads; the drop needs it to have one"
    assert uid == 0


def test_a_data_folder_of_another_owner_that_the_user_cannot_write_keeps_root(reachable_dir: Path) -> None:
    data = reachable_dir / "data"
    data.mkdir(mode=0o755)
    os.chown(data, 12345, 12345)  # not root's, so not taken over; nobody may enter but not write
    answer, uid = drop_in_a_child(data)
    assert answer.startswith("not in force: nobody cannot write the data folder"), answer
    assert uid == 0
    os.chown(data, 0, 0)
    (data / "progress.sqlite3").write_bytes(b"")
    answer, uid = drop_in_a_child(data)  # root's: taken over, and then the drop goes through
    assert (answer, uid) == ("ok", NOBODY.pw_uid)
    assert (data / "progress.sqlite3").stat().st_uid == NOBODY.pw_uid
