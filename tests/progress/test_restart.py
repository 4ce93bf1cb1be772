"""Progress is kept on disk: it survives stopping the app and starting it again on the same data folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bs4 import BeautifulSoup

from app.protocol import messages
from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp
from tests.support.procs import wait_until
from tests.support.wsclient import EnvelopeClient

STEP = "initialize-handshake/versions"


def test_progress_survives_an_app_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServedApp(data, warm_pool_size=1) as first, first.client() as client:
        client.post("/api/identity").raise_for_status()  # an identity, as a console page asks
        assert client.get(f"/course/{STEP}").status_code == 200
        cookie = client.cookies[COOKIE]
        client.put("/api/progress/name", json={"display_name": "Ada"}).raise_for_status()
        answer = client.post(f"/api/course/{STEP}/quiz/unknown-revision", json={"choices": ["a"]})
        assert answer.json()["correct"] is True
        # A hands-on check passes in the step's console, and the WebSocket route records it.
        asyncio.run(pass_the_versions_check(first, cookie))
        # The pass is recorded off the event loop, moments after its frame.
        assert wait_until(lambda: client.get("/api/progress").json()["steps"][STEP]["checks"] != {}, 30)

    with ServedApp(data, warm_pool_size=1) as second:
        with second.client(cookies={COOKIE: cookie}) as client:
            progress = client.get("/api/progress").json()
            assert progress["display_name"] == "Ada"
            assert progress["steps"][STEP]["seen"] is True
            assert progress["steps"][STEP]["quizzes"]["unknown-revision"] == {
                "answered": True,
                "correct": True,
            }
            assert progress["steps"][STEP]["checks"] == {"version-counter-offer": True}
            soup = BeautifulSoup(client.get(f"/course/{STEP}").text, "html.parser")
            assert soup.select_one('li.check[data-check="version-counter-offer"]')["data-passed"] == "true"
            assert "right" in soup.select_one("form#quiz-unknown-revision .quiz-verdict")["class"]


async def pass_the_versions_check(app: ServedApp, cookie: str) -> None:
    client = await EnvelopeClient.connect(
        f"{app.ws_base}/ws/demo-orders?step={STEP}", additional_headers={"Cookie": f"{COOKIE}={cookie}"}
    )
    try:
        await client.recv_type("state")
        await client.send(messages.initialize(1, "1999-01-01"))  # the server counter-offers its own
        while not (
            (frame := await client.recv_type("check"))["check"] == "version-counter-offer" and frame["passed"]
        ):
            pass
    finally:
        await client.close()
