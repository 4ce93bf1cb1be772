"""Secrets people type, tried as an attacker would: any bytes, guessing, sign-in sessions, the logs,
and what a visitor without an identity can make the store keep."""

from __future__ import annotations

import sqlite3

import httpx
import pytest
import websockets
from bs4 import BeautifulSoup

from app.config import Settings, unknown_settings
from app.web.credentials import FailureThrottle
from app.web.learner import COOKIE
from app.web.state import PROGRESS_DB
from tests.support.appserver import AppProcess, learner_id_of
from tests.support.inprocess import InProcessApp, ServedApp
from tests.support.wsclient import EnvelopeClient

TOKEN = "instructor-token-for-credential-tests"
STEP = "initialize-handshake/versions"
LIMIT = 3


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("credentials"), instructor_token=TOKEN, warm_pool_size=1,
                   failed_attempts_per_address=LIMIT) as app:  # fmt: skip
        yield app


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):
    """The same settings, built in process: for what the forms and the API answer."""
    with InProcessApp(tmp_path_factory.mktemp("credentials-in-process"), instructor_token=TOKEN,
                      failed_attempts_per_address=LIMIT) as site:  # fmt: skip
        yield site


def where(n: int) -> dict[str, str]:
    """A client address of its own for each test (the app trusts X-Forwarded-For from loopback)."""
    return {"X-Forwarded-For": f"203.0.113.{n}"}


def rows(app: ServedApp | InProcessApp, table: str) -> int:
    with sqlite3.connect(app.data_dir / PROGRESS_DB) as db:
        return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


@pytest.mark.parametrize("token", ["jalapeño", "\u202e", "x" * 100_000, "tok\x00en", "😀" * 10])
def test_a_token_of_any_bytes_is_refused_not_a_crash(site: InProcessApp, token: str) -> None:
    raw = token.encode("utf-8")
    bearer = site.request("GET", "/instructor", headers=[(b"authorization", b"Bearer " + raw), *where(1).items()]) if b"\x00" not in raw else None  # fmt: skip
    if bearer is not None:
        assert bearer.status_code in (401, 429)
    if b"\x00" not in raw:  # a NUL cannot travel in a header at all
        cookie = site.request("GET", "/instructor/classes/x", headers=[(b"cookie", b"playground_instructor=" + raw)])  # fmt: skip
        assert cookie.status_code == 401
    with site.client(headers=where(2)) as client:
        login = client.post("/instructor/login", data={"token": token})
        assert login.status_code in (401, 429)
        if b"\x00" not in raw:
            learner = client.get("/course", headers=[(b"cookie", b"playground_learner=" + raw)])
            assert learner.status_code == 200


def test_wrong_tokens_are_throttled_per_address(site: InProcessApp) -> None:
    with site.client(headers=where(3)) as client:
        for _ in range(LIMIT):
            assert client.post("/instructor/login", data={"token": "guess"}).status_code == 401
        refused = client.post("/instructor/login", data={"token": "guess"})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
        assert "Too many wrong instructor tokens" in refused.text
        bearer = client.get("/instructor", headers={"Authorization": "Bearer guess"})
        assert bearer.status_code == 429
    with site.client(headers=where(4)) as other:  # another address is not affected
        assert other.post("/instructor/login", data={"token": "guess"}).status_code == 401


def class_code(app: ServedApp | InProcessApp, name: str) -> str:
    with app.client(headers={"Authorization": f"Bearer {TOKEN}", **where(250)}) as teacher:
        made = teacher.post("/instructor/classes", data={"name": name})
        page = BeautifulSoup(teacher.get(made.headers["location"]).text, "html.parser")
        return page.select_one("[data-join-code]").get_text()


def resume_code_of(app: ServedApp | InProcessApp, address: dict[str, str]) -> str:
    """A learner's resume code, as they read it on /resume (after a first action made them a learner)."""
    with app.client(headers=address) as learner:
        learner.post("/api/identity")
        return (
            BeautifulSoup(learner.get("/resume").text, "html.parser")
            .select_one("[data-resume-code]")
            .get_text()
        )


def test_a_guesser_behind_a_shared_address_locks_nobody_out(site: InProcessApp) -> None:
    """A school's NAT address: one guesser sends 20+ wrong tokens and codes. Before, the right instructor
    token, join codes and resume codes from that address then answered 429 for 10 minutes."""
    nat = where(20)
    code = class_code(site, "Behind the NAT")
    resume = resume_code_of(site, where(21))
    guesses = 25
    with site.client(headers=nat) as guesser:
        for n in range(guesses):
            guesser.post("/instructor/login", data={"token": f"guess-{n}"})
            guesser.get("/instructor", headers={"Authorization": f"Bearer guess-{n}"})
            guesser.post("/join", data={"code": f"WRONG{n:04d}", "display_name": "Mallory"})
            guesser.post("/resume", data={"code": f"WRONGCODE{n:04d}"})
        for attempt in (
            lambda: guesser.post("/instructor/login", data={"token": "guess-again"}),
            lambda: guesser.get("/instructor", headers={"Authorization": "Bearer guess-again"}),
            lambda: guesser.post("/join", data={"code": "WRONGAGAIN", "display_name": "Mallory"}),
            lambda: guesser.post("/resume", data={"code": "WRONGCODEAGAIN"}),
            lambda: guesser.get("/resume/WRONGCODEAGAIN"),
        ):
            refused = attempt()
            assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
            assert refused.elapsed.total_seconds() < 5  # answered at once, nothing held open
    # The right credentials from the same address pass, each from a browser of its own.
    with site.client(headers=nat) as teacher:
        assert teacher.post("/instructor/login", data={"token": TOKEN}).status_code == 303
        assert teacher.get("/instructor").status_code == 200
    assert site.request("GET", "/instructor", headers={"Authorization": f"Bearer {TOKEN}", **nat}).status_code == 200  # fmt: skip
    with site.client(headers=nat) as learner:
        joined = learner.post("/join", data={"code": code, "display_name": "Grace"})
        assert joined.status_code == 303 and joined.headers["location"].startswith("/course")
    with site.client(headers=nat) as moving:
        assert moving.get(f"/resume/{resume}").status_code == 200  # asks first
        switched = moving.post("/resume", data={"code": resume})
        assert switched.status_code == 303 and switched.headers["location"] == "/course?resumed=1"


def test_the_sign_in_cookie_is_a_session_not_the_token_and_signing_out_ends_it(site: InProcessApp) -> None:
    with site.client(headers=where(5)) as client:
        signed_in = client.post("/instructor/login", data={"token": TOKEN})
        assert signed_in.status_code == 303
        cookie_header = signed_in.headers["set-cookie"]
        assert TOKEN not in cookie_header
        assert "httponly" in cookie_header.lower() and "samesite=strict" in cookie_header.lower()
        assert "path=/" in cookie_header.lower()
        session = client.cookies["playground_instructor"]
        assert client.get("/instructor").status_code == 200
        assert client.post("/instructor/logout").status_code == 303
    replay = site.request("GET", "/instructor", cookies={"playground_instructor": session})
    assert replay.status_code == 401  # the old cookie signs nobody in


def test_a_changed_token_ends_every_sign_in_made_with_the_old_one(tmp_path) -> None:  # noqa: ANN001
    """From the side of someone who signed in with a leaked token: the instructor sets a new one and
    restarts; the old sign-in no longer opens anything. The same token kept keeps sign-ins."""
    with InProcessApp(tmp_path, instructor_token=TOKEN) as first, first.client(headers=where(6)) as client:
        assert client.post("/instructor/login", data={"token": TOKEN}).status_code == 303
        session = {"playground_instructor": client.cookies["playground_instructor"]}
    with InProcessApp(tmp_path, instructor_token=TOKEN) as same:
        assert same.request("GET", "/instructor", cookies=session).status_code == 200
    with InProcessApp(tmp_path, instructor_token=TOKEN + "-new") as changed:
        assert changed.request("GET", "/instructor", cookies=session).status_code == 401
        with changed.client(headers=where(6)) as client:
            assert client.post("/instructor/login", data={"token": TOKEN + "-new"}).status_code == 303
            assert client.get("/instructor").status_code == 200


def test_a_new_resume_code_signs_out_whoever_used_the_old_one(tmp_path) -> None:  # noqa: ANN001
    """From the side of someone who saw a learner's resume code and used it: the instructor gives the
    learner a new code; the old code opens nothing, and the device it signed in is signed out."""
    with InProcessApp(tmp_path, instructor_token=TOKEN) as site:
        with site.client(headers=where(11)) as teacher:
            made = teacher.post(
                "/instructor/classes", data={"name": "Codes"}, headers={"Authorization": f"Bearer {TOKEN}"}
            )
            class_id = made.headers["location"].rsplit("/", 1)[1]
        with site.client(headers=where(12)) as alice, site.client(headers=where(13)) as mallory:
            join_code = BeautifulSoup(site.request("GET", f"/instructor/classes/{class_id}",
                                                   headers={"Authorization": f"Bearer {TOKEN}"}).text,
                                      "html.parser").select_one("[data-join-code]").get_text()  # fmt: skip
            assert alice.post("/join", data={"code": join_code, "display_name": "Alice"}).status_code == 303
            code = (
                BeautifulSoup(alice.get("/resume").text, "html.parser")
                .select_one("[data-resume-code]")
                .get_text()
            )
            assert mallory.post("/resume", data={"code": code}).status_code == 303  # Mallory is Alice now
            assert mallory.put("/api/progress/name", json={"display_name": "pwned"}).status_code == 200
            teacher_page = site.request(
                "GET", f"/instructor/classes/{class_id}", headers={"Authorization": f"Bearer {TOKEN}"}
            )
            row = BeautifulSoup(teacher_page.text, "html.parser").select_one("tr[data-learner]")[
                "data-learner"
            ]
            renewed = site.request("POST", f"/instructor/classes/{class_id}/learners/{row}/resume-code",
                                   headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
            assert renewed.status_code == 303
            # Mallory's cookie proves nobody now: no name, no code, no renaming Alice.
            assert (
                BeautifulSoup(mallory.get("/resume").text, "html.parser").select_one("[data-resume-code]")
                is None
            )
            assert mallory.put("/api/progress/name", json={"display_name": "again"}).status_code in (200, 429)
            assert site.state.progress.learner(learner_id_of(alice.cookies[COOKIE])).display_name == "pwned"
            assert (
                mallory.post("/resume", data={"code": code}).status_code == 404
            )  # the old code opens nothing
            # Alice, given the new code by the instructor, is back in.
            new = site.state.progress.resume_code(learner_id_of(alice.cookies[COOKIE]))
            assert alice.post("/resume", data={"code": new}).status_code == 303
            assert (
                BeautifulSoup(alice.get("/resume").text, "html.parser")
                .select_one("[data-resume-code]")
                .get_text()
                == new
            )


def test_a_class_behind_one_address_gets_in_with_a_few_typos(tmp_path) -> None:  # noqa: ANN001
    with InProcessApp(tmp_path, instructor_token=TOKEN) as defaults:  # the default throttle
        with defaults.client(headers={"Authorization": f"Bearer {TOKEN}"}) as teacher:
            made = teacher.post("/instructor/classes", data={"name": "Big class"})
            page = BeautifulSoup(teacher.get(made.headers["location"]).text, "html.parser")
            code = page.select_one("[data-join-code]").get_text()
        joined = 0
        for n in range(100):
            with defaults.client(headers=where(200)) as learner:
                learner.get("/")
                if n % 10 == 0:
                    assert (
                        learner.post("/join", data={"code": "WRONG9", "display_name": f"L{n}"}).status_code
                        == 400
                    )
                reply = learner.post("/join", data={"code": code, "display_name": f"L{n}"})
                joined += reply.status_code == 303
        assert joined == 100


def test_wrong_join_and_resume_codes_are_throttled(site: InProcessApp) -> None:
    with site.client(headers=where(6)) as client:
        client.get("/")
        for _ in range(LIMIT):
            assert client.post("/join", data={"code": "NOPE22", "display_name": "X"}).status_code == 400
        assert client.post("/join", data={"code": "NOPE22", "display_name": "X"}).status_code == 429
        for _ in range(LIMIT):
            assert client.post("/resume", data={"code": "WRONGCODE1"}).status_code == 404
        throttled = client.get("/resume/WRONGCODE2")
        assert throttled.status_code == 429 and throttled.headers["Retry-After"]


def test_wrong_access_codes_are_throttled_and_the_right_one_passes(tmp_path) -> None:  # noqa: ANN001
    with InProcessApp(tmp_path, access_code="open sesame", failed_attempts_per_address=2) as guarded:
        with guarded.client() as visitor:
            for _ in range(2):
                assert visitor.post("/access", data={"code": "nope", "next": "/"}).status_code == 403
            refused = visitor.post("/access", data={"code": "nope", "next": "/"})
            assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
            assert visitor.post("/access", data={"code": "open sesame", "next": "/"}).status_code == 303
            odd = guarded.post("/access", data={"code": "ñ" * 50, "next": "/"}, headers=where(9))
            assert odd.status_code == 403


def test_a_visitor_without_an_identity_makes_no_rows(site: InProcessApp) -> None:
    before = rows(site, "learners"), rows(site, "resume_codes")
    for path in ("/resume", f"/course/{STEP}", "/course", "/join", "/resume/ABCDEFGH23"):
        assert site.request("GET", path, headers=where(7)).status_code in (200, 404)
    assert (rows(site, "learners"), rows(site, "resume_codes")) == before
    page = BeautifulSoup(site.request("GET", "/resume", headers=where(7)).text, "html.parser")
    assert page.select_one("[data-no-progress]") is not None and page.select_one("[data-resume-code]") is None


def test_quiz_attempts_are_capped_but_the_first_right_one_is_kept(site: InProcessApp) -> None:
    url = f"/api/course/{STEP}/quiz/unknown-revision"
    with site.client(headers=where(8)) as client:
        client.get("/")
        assert client.post(url, json={"choices": ["a"]}).json()["correct"] is True
        for _ in range(12):
            client.post(url, json={"choices": ["b"]})
        quiz = client.get("/api/progress").json()["steps"][STEP]["quizzes"]["unknown-revision"]
        assert quiz == {"answered": True, "correct": True}
    with sqlite3.connect(site.data_dir / PROGRESS_DB) as db:
        kept = db.execute(
            "SELECT correct FROM quiz_answers WHERE quiz_id = 'unknown-revision' ORDER BY id"
        ).fetchall()
    assert len(kept) <= 6 and kept[0] == (1,)


async def test_codes_and_session_ids_stay_out_of_the_log(app: ServedApp) -> None:
    httpx.get(app.base + "/resume/SECRETCODE9", headers=where(10), timeout=30)
    httpx.get(app.base + "/api/sessions/secret-session-id/transcript", timeout=30)
    console = await EnvelopeClient.connect(app.ws_base + "/ws/demo-orders?session=another-secret-id&last_seq=0",
                                           additional_headers=where(11))  # fmt: skip
    await console.recv_type("state")
    await console.close()
    # An accepted WebSocket is not logged by uvicorn (app/logs.py); a refused one is, redacted.
    with pytest.raises(websockets.InvalidStatus):
        await EnvelopeClient.connect(app.ws_base + "/ws/no-such-server?session=third-secret-id")
    log = app.log_path.read_text(errors="replace")
    for secret in ("SECRETCODE9", "secret-session-id", "another-secret-id", "third-secret-id"):
        assert secret not in log
    assert "/resume/…" in log and '"WebSocket /ws/no-such-server?session=…" 404' in log


def test_hosting_mode_is_explicit_or_any_non_loopback_bind() -> None:
    assert Settings(hosting_mode=True).hosting
    for host in ("", "0.0.0.0", "::", "192.0.2.10", "example.org"):
        assert Settings(host=host).hosting, host
    for host in ("127.0.0.1", "::1", "localhost"):
        assert not Settings(host=host).hosting, host


def test_hosting_mode_refuses_a_short_instructor_token(tmp_path) -> None:  # noqa: ANN001
    app = AppProcess(tmp_path, hosting_mode=True, instructor_token="short", accept_weak_sandbox=True)
    with pytest.raises(RuntimeError) as refused:
        app.start()
    assert "at least 24 characters" in str(refused.value)
    assert "Traceback" not in str(refused.value)  # said plainly, before anything starts


def test_wrong_guesses_from_more_addresses_than_are_kept_grow_nothing_and_count_the_newest() -> None:
    """From the attacker's side: wrong codes from more addresses than the throttle keeps (an IPv6 /48
    holds 65,536 /64s) neither grow its table nor make each new address cost a look at every other;
    the addresses that failed last are still counted."""
    throttle = FailureThrottle(2, kept=100)
    for n in range(5_000):
        throttle.failed("join", f"2001:db8:{n:x}::")
    assert len(throttle) == 100
    newest = "2001:db8:1387::"  # the 5,000th
    assert throttle.failed("join", newest) is None  # its second
    assert throttle.failed("join", newest) is not None  # past its budget: still counted


def test_a_playground_variable_that_names_no_setting_is_reported_not_passed_over() -> None:
    """An operator who set the setting before its rename (PLAYGROUND_CLIENT_REGISTRATIONS_PER_HOUR)
    got nothing: pydantic-settings ignores unknown variables without a word. Start-up warns of each."""
    environ = {"PLAYGROUND_CLIENT_REGISTRATIONS_PER_HOUR": "5", "PLAYGROUND_PORT": "8001", "HOME": "/root",
               "PLAYGROUND_INSTRUCTER_TOKEN": "typo"}  # fmt: skip
    assert unknown_settings(environ) == [
        "PLAYGROUND_CLIENT_REGISTRATIONS_PER_HOUR",
        "PLAYGROUND_INSTRUCTER_TOKEN",
    ]
