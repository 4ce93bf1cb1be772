"""Inputs a hostile learner (or a careless script) sends on purpose: numbers too large for the store,
a string no UTF-8 can hold, a junk Bearer header beside the learner's cookie. Each gets a clear 4xx
and changes nothing; none reaches the catch-all 500. Tried against the app built in process."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from bs4 import BeautifulSoup

from app.web.learner import COOKIE
from tests.support.inprocess import InProcessApp

TOKEN = "instructor-token-for-hostile-inputs-01"
TOO_BIG = str(2**70)  # past SQLite's INTEGER and PostgreSQL's bigint
FIRST = "print('first')\n"
SECOND = "print('second')\n"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("hostile-inputs"), instructor_token=TOKEN) as app:
        yield app


@pytest.fixture(scope="module")
def learner(app: InProcessApp) -> Iterator[httpx.Client]:
    """A learner with two saved versions of server.py, as the browser holds them."""
    with app.client(cookies={COOKIE: app.learner_cookie("hostile")}) as client:
        for source in (FIRST, SECOND):
            client.put("/api/workspace/server.py", content=source.encode()).raise_for_status()
        yield client


def saved_source(client: httpx.Client) -> str:
    return client.get("/api/workspace").json()["source"]


@pytest.mark.parametrize(("method", "path"), [
    ("GET", f"/api/workspace/history/{TOO_BIG}"),
    ("POST", f"/api/workspace/history/{TOO_BIG}/restore"),
    ("GET", f"/api/workspace/history/-{TOO_BIG}"),
])  # fmt: skip
def test_a_version_number_too_large_to_store_is_refused_clearly(learner: httpx.Client, method: str,
                                                                path: str) -> None:  # fmt: skip
    reply = learner.request(method, path)
    assert reply.status_code in (404, 422), reply.text
    assert reply.json()["error"]["status"] == reply.status_code
    assert saved_source(learner) == SECOND  # nothing restored


def test_an_ordinary_version_number_still_works(learner: httpx.Client) -> None:
    """The positive control: the same routes with a version that exists."""
    history = learner.get("/api/workspace").json()["history"]
    first = min(v["version"] for v in history)
    assert learner.get(f"/api/workspace/history/{first}").text == FIRST
    assert learner.post(f"/api/workspace/history/{first}/restore").status_code == 200
    assert saved_source(learner) == FIRST
    learner.put("/api/workspace/server.py", content=SECOND.encode()).raise_for_status()


@pytest.mark.parametrize("cap", [TOO_BIG, "9223372036854775808", "1000001"])
def test_a_class_cap_too_large_is_refused_and_makes_no_class(app: InProcessApp, cap: str) -> None:
    teacher = {"Authorization": f"Bearer {TOKEN}"}
    reply = app.request("POST", "/instructor/classes", data={"name": f"Huge {cap}", "max_sessions": cap},
                       headers=teacher)  # fmt: skip
    assert reply.status_code == 400, reply.text
    assert "session cap is at most" in reply.text
    dashboard = app.request("GET", "/instructor", headers=teacher)
    assert f"Huge {cap}" not in dashboard.text
    made = app.request("POST", "/instructor/classes", data={"name": "Fine", "max_sessions": "30"},
                      headers=teacher)  # fmt: skip
    assert made.status_code == 303  # the positive control


def test_a_version_too_large_for_the_instructors_view_is_refused(app: InProcessApp) -> None:
    teacher = {"Authorization": f"Bearer {TOKEN}"}
    made = app.request("POST", "/instructor/classes", data={"name": "Viewers"}, headers=teacher)
    class_url = made.headers["location"]
    page = BeautifulSoup(app.request("GET", class_url, headers=teacher).text, "html.parser")
    code = page.select_one("[data-join-code]").get_text()
    with app.client() as member:
        member.get("/course").raise_for_status()
        assert member.post("/join", data={"code": code, "display_name": "Member"}).status_code == 303
        member.put("/api/workspace/server.py", content=FIRST.encode()).raise_for_status()
    page = BeautifulSoup(app.request("GET", class_url, headers=teacher).text, "html.parser")
    row = page.select_one("tr[data-learner]")["data-learner"]
    url = f"{class_url}/learners/{row}/server.py"
    assert "first" in app.request("GET", url, headers=teacher).text  # the positive control
    huge = app.request("GET", url, params={"version": TOO_BIG}, headers=teacher)
    assert huge.status_code in (404, 422), huge.status_code


@pytest.mark.parametrize("body", [
    b'{"server": ["\\ud800"]}',  # a lone surrogate inside the value that fails validation
    b'{"server": {"\\udfff": 1}}',  # and as a key
    b'{"\\ud800": 1}',  # beside a missing field
])  # fmt: skip
def test_the_validation_answer_survives_a_lone_surrogate(learner: httpx.Client, body: bytes) -> None:
    reply = learner.post("/api/endpoints", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["status"] == 422 and error["details"]


def test_a_junk_bearer_header_does_not_carry_the_learners_cookie_past_the_cross_site_check(
    app: InProcessApp, learner: httpx.Client
) -> None:
    """A request with the learner's cookie and a made-up Bearer header, from no page of this site:
    the Bearer exemption is for scripts that send no cookie, so this one is refused and saves nothing."""
    cookie = {COOKIE: learner.cookies[COOKIE]}
    junk = {"Authorization": "Bearer junk"}
    saved = app.request("PUT", "/api/workspace/server.py", content=b"print('mallory')\n", headers=junk,
                      cookies=cookie)  # fmt: skip
    assert saved.status_code == 403, saved.text
    assert saved_source(learner) == SECOND
    opened = app.request("POST", "/api/endpoints", json={"server": "demo-orders"}, headers=junk, cookies=cookie)  # fmt: skip
    assert opened.status_code == 403, opened.text
    assert learner.get("/api/endpoints").json() == []
    # The same request from a page of this site goes through: only the missing proof was refused.
    same_site = app.request("PUT", "/api/workspace/server.py", content=SECOND.encode(),
                          headers={**junk, "Origin": app.base}, cookies=cookie)  # fmt: skip
    assert same_site.status_code == 200, same_site.text
