"""Progress is kept on disk: it survives stopping and starting the real app."""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup

from app.progress import SQLiteProgressStore
from app.web.learner import COOKIE
from app.web.state import PROGRESS_DB
from tests.support.appserver import AppProcess, learner_id_of

STEP = "initialize-handshake/versions"


def test_progress_survives_an_app_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with AppProcess(data, warm_pool_size=1) as first, first.client() as client:
        client.get("/").raise_for_status()  # the first page gives an identity; it records nothing
        assert client.get(f"/course/{STEP}").status_code == 200
        cookie = client.cookies[COOKIE]
        client.put("/api/progress/name", json={"display_name": "Ada"}).raise_for_status()
        answer = client.post(f"/api/course/{STEP}/quiz/unknown-revision", json={"choices": ["a"]})
        assert answer.json()["correct"] is True
    # While the app is down, a hands-on check passes (as the WebSocket route records it).
    store = SQLiteProgressStore(data / PROGRESS_DB)
    store.open()
    store.record_check(learner_id_of(cookie), STEP, "version-counter-offer")
    store.close()

    with AppProcess(data, warm_pool_size=1) as second:
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
