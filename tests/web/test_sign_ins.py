"""Switching and ending sign-ins, from the side of whoever would abuse them: a resume link planted by
someone else, and a resume code that leaked (the consoles and endpoints made with it)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from bs4 import BeautifulSoup

from app.web.learner import COOKIE
from app.web.roster import SIGNED_OUT
from tests.support.inprocess import ServedApp
from tests.support.wsclient import EnvelopeClient
from tests.web.test_hosting import TOKEN, instructor, learner, make_class

STEP = "initialize-handshake/versions"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("sign-ins"), instructor_token=TOKEN, warm_pool_size=1) as app:
        yield app


def resume_code_of(client) -> str:  # noqa: ANN001
    return (
        BeautifulSoup(client.get("/resume").text, "html.parser").select_one("[data-resume-code]").get_text()
    )


def test_a_planted_resume_link_cannot_take_a_learners_own_progress_away(app: ServedApp) -> None:
    with app.client() as attacker, app.client() as victim:
        attacker.put("/api/progress/name", json={"display_name": "Your own progress"}).raise_for_status()
        planted = resume_code_of(attacker)
        victim.put("/api/workspace/server.py", content="# the victim's work\n").raise_for_status()
        mine = victim.get("/api/progress").json()

        asked = BeautifulSoup(victim.get(f"/resume/{planted}").text, "html.parser")
        warning = " ".join(asked.select_one("section").get_text(" ").split())
        assert "whatever you do here is saved to their progress, and they see it" in warning
        assert asked.select_one("[data-resume-keeps-own]") is not None
        switched = victim.post("/resume", data={"code": planted})  # the one click the page asks for
        assert (
            switched.status_code == 200
            and victim.get("/api/progress").json()["display_name"] == "Your own progress"
        )
        earlier = (
            BeautifulSoup(switched.text, "html.parser").select_one("[data-earlier-resume-code]").get_text()
        )

        back = BeautifulSoup(victim.post("/resume", data={"code": earlier}).text, "html.parser")
        assert back.select_one("[data-earlier-resume-code]").get_text() == planted  # what it leaves
        assert victim.get("/api/progress").json() == mine
        assert victim.get("/api/workspace/server.py").text == "# the victim's work\n"


def test_a_fresh_browser_switches_without_a_code_of_its_own(app: ServedApp) -> None:
    with app.client() as laptop, app.client() as phone:
        laptop.put("/api/progress/name", json={"display_name": "Katherine"}).raise_for_status()
        code = resume_code_of(laptop)
        asked = BeautifulSoup(phone.get(f"/resume/{code}").text, "html.parser")
        assert asked.select_one("[data-resume-keeps-own]") is None  # nothing here to keep
        assert phone.post("/resume", data={"code": code}, follow_redirects=False).status_code == 303


async def test_a_new_resume_code_ends_the_consoles_opened_with_the_leaked_one(app: ServedApp) -> None:
    class_id, join_code = make_class(app, "Leaky")
    with learner(app, join_code, "Grace") as grace, instructor(app) as teacher, app.client() as thief:
        leaked = resume_code_of(grace)
        assert thief.post("/resume", data={"code": leaked}).status_code == 303
        made = thief.post("/api/endpoints", json={"server": "demo-orders"})  # runs as Grace, in her places
        assert made.status_code == 201, made.text
        endpoint = made.json()["url"]
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        accept = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(endpoint, json=hello, headers=accept, timeout=30).status_code == 200
        console = await EnvelopeClient.connect(
            f"{app.ws_base}/ws/demo-orders?step={STEP}", origin=app.base,
            additional_headers={"Cookie": f"{COOKIE}={thief.cookies[COOKIE]}"},
        )  # fmt: skip
        try:
            assert (await console.recv_type("state"))["status"] == "ready"
            page = BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
            row = page.select_one("tr[data-learner]")["data-learner"]
            assert (
                teacher.post(f"/instructor/classes/{class_id}/learners/{row}/resume-code").status_code == 303
            )
            while (state := await console.recv_type("state"))["status"] != "exited":
                pass
            assert state["reason"] == SIGNED_OUT
            assert httpx.post(endpoint, json=hello, headers=accept, timeout=30).status_code == 404
            await asyncio.wait_for(console.ws.wait_closed(), 10)
        finally:
            await console.close()
        # The old sign-in opens nothing more: a new console is a stranger's.
        again = await EnvelopeClient.connect(
            f"{app.ws_base}/ws/demo-orders?step={STEP}", origin=app.base,
            additional_headers={"Cookie": f"{COOKIE}={thief.cookies[COOKIE]}"},
        )  # fmt: skip
        await again.close()
        assert thief.get("/api/progress").json()["display_name"] is None
        # Grace's own browser was signed out too: its pages say so, and where her new code goes.
        told = BeautifulSoup(grace.get("/course").text, "html.parser").select_one("[data-signed-out]")
        assert (
            told is not None and "new resume code" in told.text and told.select_one("a")["href"] == "/resume"
        )
    # A cookie that never proved anyone (forged, or of another site) is no sign-out to speak of.
    with app.client(cookies={COOKIE: "x" * 24 + ".forged"}) as stranger:
        assert (
            BeautifulSoup(stranger.get("/course").text, "html.parser").select_one("[data-signed-out]") is None
        )
