"""When the progress database cannot take a write (here: another process holds its lock past the
wait, as a full or read-only disk would refuse it): a clear 503 that says nothing was saved, nothing
counted against the address for it, a hands-on check passed meanwhile recorded once it can be, and
service again without a restart."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from websockets.exceptions import InvalidStatus

from app.web.errors import STORE_UNAVAILABLE
from app.web.learner import COOKIE
from app.web.state import PROGRESS_DB
from tests.support.appserver import learner_id_of
from tests.support.inprocess import ServedApp
from tests.support.wsclient import EnvelopeClient

STEP = "transports/stdio"
FILE = "x = 1\n" + "#" * 40_000 + "\n"  # 40 KB of the address's 64 KiB an hour


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("store-failures"), warm_pool_size=1,
                   saved_kib_per_hour_per_address=64) as app:  # fmt: skip
        yield app


@contextmanager
def database_locked(app: ServedApp) -> Iterator[None]:
    """Another process's write transaction on the app's SQLite file, held until the block ends."""
    other = sqlite3.connect(app.data_dir / PROGRESS_DB, isolation_level=None)
    try:
        other.execute("BEGIN EXCLUSIVE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_save_the_database_refuses_says_so_and_costs_nothing(app: ServedApp) -> None:
    with app.client(cookies={COOKIE: app.learner_cookie("ada")}) as page:
        with database_locked(app):
            refused = page.put("/api/workspace/server.py", content=FILE)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        assert refused.json()["error"]["message"] == STORE_UNAVAILABLE
        assert "nothing of this was saved" in STORE_UNAVAILABLE
        store = page.get("/healthz").json()["store"]  # what an instructor's monitoring reads
        assert store["status"] == "unavailable" and store["since"].endswith("Z")
        # The refused save spent none of the address's hour: this one fits, a second would not.
        saved = page.put("/api/workspace/server.py", content=FILE)
        assert saved.status_code == 200 and saved.json()["version"] == 1
        assert page.get("/healthz").json()["store"] == {"status": "ok"}
        assert page.put("/api/workspace/server.py", content=FILE + "y = 2\n").status_code == 429


async def test_a_check_passed_while_the_database_refuses_is_recorded_once_it_can_be(app: ServedApp) -> None:
    learner = app.learner_cookie("grace")
    console = await EnvelopeClient.connect(
        f"{app.ws_base}/ws/demo-orders?step={STEP}", origin=app.base,
        additional_headers={"Cookie": f"{COOKIE}={learner}"},
    )  # fmt: skip
    try:
        await console.recv_type("state")
        with database_locked(app):
            await console.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            while not (check := await console.recv_type("check", timeout=30))["passed"]:
                pass
            assert check["check"] == "round-trip-measured"
        with app.client(cookies={COOKIE: learner}) as page:
            checks = page.get("/api/progress").json()["steps"][STEP]["checks"]
            assert checks == {"round-trip-measured": False}  # not yet
            await console.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})  # the next round
            deadline = time.monotonic() + 30
            while not page.get("/api/progress").json()["steps"][STEP]["checks"]["round-trip-measured"]:
                assert time.monotonic() < deadline, "the passed check was never recorded"
                await asyncio.sleep(0.05)
            assert page.get("/api/progress").json()["steps"][STEP]["checks"] == {"round-trip-measured": True}
    finally:
        await console.close()


async def test_the_app_answers_503_while_postgresql_is_away_and_serves_again_once_back(
    tmp_path_factory: pytest.TempPathFactory, postgres_server
) -> None:  # noqa: ANN001
    with (
        postgres_server.fresh_database() as url,
        ServedApp(tmp_path_factory.mktemp("pg-away"), database_url=url, warm_pool_size=1) as app,
        app.client(cookies={COOKIE: app.learner_cookie("ada")}) as page,
    ):
        assert page.put("/api/workspace/server.py", content="x = 1\n").status_code == 200
        postgres_server.stop_for_now()
        try:
            # A cookie last checked long ago (here: never on this replica) cannot be checked now.
            app.state.identity.forget(learner_id_of(app.learner_cookie("ada")))
            assert page.get("/static/style.css").status_code == 200  # what needs no identity goes on
            for method, path in (("PUT", "/api/workspace/server.py"), ("GET", "/api/progress")):
                away = page.request(method, path, content="x = 2\n" if method == "PUT" else None)
                assert away.status_code == 503 and away.json()["error"]["message"] == STORE_UNAVAILABLE
            with pytest.raises(InvalidStatus) as refused:  # a console's handshake: the same answer
                await EnvelopeClient.connect(f"{app.ws_base}/ws/demo-orders", origin=app.base,
                                             additional_headers={"Cookie": f"{COOKIE}={app.learner_cookie('ada')}"})  # fmt: skip
            assert refused.value.response.status_code == 503
            assert json.loads(refused.value.response.body)["error"]["message"] == STORE_UNAVAILABLE
            health = page.get("/healthz")
            assert health.status_code == 200 and health.json()["status"] == "degraded"
            assert health.json()["store"]["status"] == "unavailable"
        finally:
            postgres_server.start_again()
        deadline = time.monotonic() + 30
        while (saved := page.put("/api/workspace/server.py", content="x = 3\n")).status_code == 503:
            assert time.monotonic() < deadline, "the app never served again"  # with no restart of it
            time.sleep(0.1)
        assert saved.status_code == 200 and saved.json()["version"] == 2
        assert page.get("/api/workspace/server.py").text == "x = 3\n"
        assert page.get("/healthz").json()["store"] == {"status": "ok"}
