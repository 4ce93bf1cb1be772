"""Replicas sharing one PostgreSQL act as one playground for live sessions: a class cap and a learner's
cap hold across replicas, the class page and /metrics on either replica count every console, an
instructor on one replica ends a console held by the other, a replica the others forgot is back at its
next heartbeat, and a replica killed with SIGKILL drops out of the counts within the silence bound.
Real replicas (uvicorn, the sandbox) and a real PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import signal
import time

import httpx
import pytest
from bs4 import BeautifulSoup

from app.fleet.store import FleetStore
from app.progress.postgres import PostgresProgressStore
from app.web.learner import COOKIE
from tests.support.appserver import AppProcess
from tests.support.wsclient import EnvelopeClient

TOKEN = "fleet-instructor-token"
SILENCE_S = 3.0  # a replica silent this long counts for nothing (production: 15 s)
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory, postgres_server):  # noqa: ANN001, ANN201
    """One pair for the module: each test makes its own class and learners, and the test that kills
    replica A comes last."""
    root = tmp_path_factory.mktemp("fleet")
    with postgres_server.fresh_database() as url:
        common = {"database_url": url, "instructor_token": TOKEN, "warm_pool_size": 1,
                  "replica_silence_s": SILENCE_S, "max_sessions_per_learner": 3}  # fmt: skip
        with AppProcess(root / "a", **common) as a, AppProcess(root / "b", **common) as b:
            yield a, b, url


def teacher(app: AppProcess) -> httpx.Client:
    return httpx.Client(base_url=app.base, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"})


def make_class(app: AppProcess, cap: int) -> tuple[str, str]:
    with teacher(app) as client:
        made = client.post("/instructor/classes", data={"name": "Fleet", "max_sessions": str(cap)})
        class_id = made.headers["location"].rsplit("/", 1)[1]
        page = BeautifulSoup(client.get(made.headers["location"]).text, "html.parser")
        return class_id, page.select_one("[data-join-code]").get_text()


def join(app: AppProcess, code: str, name: str) -> str:
    with app.client() as client:
        client.get("/")
        assert client.post("/join", data={"code": code, "display_name": name}).status_code == 303
        return client.cookies[COOKIE]


async def console(app: AppProcess, cookie: str) -> EnvelopeClient:
    return await EnvelopeClient.connect(app.ws_base + "/ws/demo-orders", origin=app.base,
                                        additional_headers={"Cookie": f"{COOKIE}={cookie}"})  # fmt: skip


def live_on_class_page(app: AppProcess, class_id: str) -> int:
    with teacher(app) as client:
        grid = BeautifulSoup(client.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
    return int(grid.select_one("[data-class-live]").get_text())


def class_metric(app: AppProcess, class_id: str) -> float:
    text = httpx.get(app.base + "/metrics", timeout=30).text
    found = re.search(rf'playground_class_live_sessions{{class_id="{class_id}"}} ([0-9.]+)', text)
    return float(found.group(1)) if found else 0.0


def wait_for(check, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


async def test_a_class_cap_the_class_page_and_metrics_hold_across_replicas(replicas) -> None:  # noqa: ANN001
    a, b, _ = replicas
    class_id, code = make_class(a, cap=2)
    ada, bob, cy = join(a, code, "Ada"), join(b, code, "Bob"), join(b, code, "Cy")
    first = await console(a, ada)
    second = await console(b, bob)
    try:
        assert (await first.recv_type("state"))["status"] == "ready"
        assert (await second.recv_type("state"))["status"] == "ready"
        third = await console(b, cy)  # one on A and one on B: the class of 2 is full on every replica
        refused = await third.recv_type("full")
        assert refused["reason"] == "class_full" and refused["retry_after_s"] > 0
        await third.close()
        assert live_on_class_page(a, class_id) == 2 and live_on_class_page(b, class_id) == 2
        assert class_metric(a, class_id) == 2 and class_metric(b, class_id) == 2
        with teacher(b) as client:
            grid = BeautifulSoup(client.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
        # B follows its own console; A's is shown as held elsewhere, and can still be ended from B.
        assert len(grid.select("a[data-session]")) == 1 and len(grid.select("[data-remote-session]")) == 1
    finally:
        await first.close()
        await second.close()
    wait_for(lambda: live_on_class_page(b, class_id) == 0, "closed consoles still counted")


async def test_an_instructor_on_one_replica_ends_a_console_held_by_the_other(replicas) -> None:  # noqa: ANN001
    a, b, _ = replicas
    class_id, code = make_class(a, cap=5)
    ada = join(a, code, "Ada")
    held = await console(a, ada)
    try:
        session = (await held.recv_type("state"))["session"]
        with teacher(b) as client:
            ended = client.post(f"/instructor/sessions/{session}/end", data={"class_id": class_id},
                                follow_redirects=False)  # fmt: skip
            assert (
                ended.status_code == 303
                and ended.headers["location"] == f"/instructor/classes/{class_id}?done=ended"
            )
            assert client.post("/instructor/sessions/no-such-session/end").status_code == 404
        while (frame := await held.recv_type("state", timeout=DEADLINE_S))["status"] != "exited":
            pass
        assert frame["reason"] == "your instructor ended this console"
    finally:
        await held.close()


async def test_one_learners_consoles_count_once_across_replicas(replicas) -> None:  # noqa: ANN001
    """nginx routes by a cookie it cannot check, so a learner may reach each replica in turn: the
    per-learner cap (3 here) holds for the replicas together, in a class or not."""
    a, b, _ = replicas
    cookie = a.learner_cookie("everywhere")  # one identity: the replicas share its signing secret
    held = [await console(a, cookie), await console(a, cookie), await console(b, cookie)]
    try:
        for client in held:
            assert (await client.recv_type("state"))["status"] == "ready"
        for app in (b, a):
            refused = await console(app, cookie)
            assert (await refused.recv_type("full"))["reason"] == "owner_full"
            await refused.close()
        for app in (a, b):  # each replica counts the refusals it made on the others' count
            text = httpx.get(app.base + "/metrics", timeout=30).text
            assert re.search(r'^playground_refusals_total\{reason="owner_full"\} [1-9]', text, re.M), text
        other = await console(b, b.learner_cookie("someone else"))
        assert (await other.recv_type("state"))["status"] == "ready"
        await other.close()
    finally:
        for client in held:
            await client.close()


async def test_a_replica_the_others_forgot_is_back_with_its_consoles(replicas) -> None:  # noqa: ANN001
    """The others forget a replica silent for FORGET_S (cut off from the database, say): once it beats
    again, its row and its live consoles are back in the register, so its class's cap counts them."""
    a, b, url = replicas
    store = PostgresProgressStore(url)
    store.open()
    try:
        fleet = FleetStore(store)
        class_id, code = make_class(a, cap=1)
        held = await console(a, join(a, code, "Ada"))
        try:
            session = (await held.recv_type("state"))["session"]
            replica = next(s.replica_id for s in fleet.live_sessions(SILENCE_S) if s.id == session)
            with store.writing() as db:  # silent that long, as the others see it: they forget it
                store.execute(db, "UPDATE replicas SET heartbeat_at = 0 WHERE id = ?", (replica,))
            assert fleet.drop_stale_replicas(300) == 1
            await asyncio.to_thread(
                wait_for, lambda: any(s.id == session for s in fleet.live_sessions(SILENCE_S)),
                "the forgotten replica's console is not back",
            )  # fmt: skip
            refused = await console(b, join(b, code, "Bob"))
            assert (await refused.recv_type("full"))["reason"] == "class_full"
            await refused.close()
        finally:
            await held.close()
        assert "was forgotten by the others" in a.log()
    finally:
        store.close()


async def test_a_killed_replica_drops_out_of_the_counts_within_the_bound(replicas) -> None:  # noqa: ANN001
    a, b, _ = replicas
    class_id, code = make_class(a, cap=1)
    ada, bob = join(a, code, "Ada"), join(b, code, "Bob")
    doomed = await console(a, ada)
    assert (await doomed.recv_type("state"))["status"] == "ready"
    refused = await console(b, bob)
    assert (await refused.recv_type("full"))["reason"] == "class_full"
    await refused.close()
    a.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    await asyncio.to_thread(
        wait_for, lambda: live_on_class_page(b, class_id) == 0, "the dead replica still counts"
    )
    assert time.monotonic() - killed_at < SILENCE_S + DEADLINE_S / 3
    admitted = await console(b, bob)  # the place the dead replica held is free again
    try:
        assert (await admitted.recv_type("state"))["status"] == "ready"
    finally:
        await admitted.close()
        await doomed.close()
