"""Learner identity: signed cookies, the client address behind proxies, and, against the served app as
an attacker meets it, when an identity is made, what a cookie proves, and the places one address may
hold across identities."""

from __future__ import annotations

import sqlite3

import pytest

from app.relay.rates import KeyedRate
from app.web.client import TrustedProxies, resolve_address, resolve_https
from app.web.learner import COOKIE, MINT_WINDOW_S, CookieSigner, new_id
from app.web.state import PROGRESS_DB
from tests.support.appserver import learner_id_of
from tests.support.inprocess import InProcessApp, ServedApp
from tests.support.wsclient import EnvelopeClient

STEP = "initialize-handshake/versions"
QUIZ = f"/api/course/{STEP}/quiz/unknown-revision"
MINTS = 3  # new identities per address in the module's app
PER_ADDRESS = 3  # live consoles outside classes per address in the module's app


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("identity"), warm_pool_size=1, new_learners_per_address=MINTS,
                   max_sessions_per_learner=2, max_sessions_per_address=PER_ADDRESS) as app:  # fmt: skip
        yield app


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):
    """The same settings, built in process: for what pages and actions answer over HTTP."""
    with InProcessApp(tmp_path_factory.mktemp("identity-in-process"), new_learners_per_address=MINTS,
                      max_sessions_per_learner=2, max_sessions_per_address=PER_ADDRESS) as site:  # fmt: skip
        yield site


def where(n: int) -> dict[str, str]:
    """A client address of its own for each test (the app trusts X-Forwarded-For from loopback)."""
    return {"X-Forwarded-For": f"198.51.100.{n}"}


def identity(app: ServedApp | InProcessApp, n: int) -> str:
    """A new learner's signed cookie, made from an address of its own (each address's allowance of new
    identities is small here)."""
    return app.post("/api/identity", headers={"X-Forwarded-For": f"192.0.2.{n}"}).cookies[COOKIE]


def learners(app: ServedApp | InProcessApp) -> int:
    with sqlite3.connect(app.data_dir / PROGRESS_DB) as db:
        return db.execute("SELECT COUNT(*) FROM learners").fetchone()[0]


def scope(peer: str, forwarded: str | None = None, proto: str | None = None, scheme: str = "http") -> dict:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    if proto:
        headers.append((b"x-forwarded-proto", proto.encode()))
    return {"type": "http", "client": (peer, 5555), "headers": headers, "scheme": scheme}


def test_a_signed_cookie_proves_its_learner_and_nothing_else_does() -> None:
    signer = CookieSigner("secret-one")
    learner = new_id()
    value = signer.sign(learner)
    assert signer.verify(value) == (learner, 0)
    later = signer.sign(learner, 3)  # signed in after three new resume codes
    assert signer.verify(later) == (learner, 3)
    body, _, signature = later.rpartition(".")
    assert signer.verify(body.replace("~3", "~4") + "." + signature) is None  # a generation is signed too
    assert signer.verify(f"{learner}~x.{signature}") is None
    assert signer.verify(f"{learner}~³.{signature}") is None  # a digit, but not one we write
    assert signer.verify(learner) is None  # a bare id is not proof
    assert signer.verify(value[:-1] + ("A" if value[-1] != "A" else "B")) is None
    assert signer.verify(new_id() + "." + value.rpartition(".")[2]) is None  # a signature is for one id
    assert CookieSigner("secret-two").verify(value) is None
    assert signer.verify("") is None and signer.verify(".") is None and signer.verify("é.é") is None


def test_forwarded_for_counts_only_from_a_trusted_proxy() -> None:
    loopback = TrustedProxies(["127.0.0.1", "::1"])
    assert resolve_address(scope("127.0.0.1", "198.51.100.9"), loopback) == "198.51.100.9"
    assert resolve_address(scope("203.0.113.5", "198.51.100.9"), loopback) == "203.0.113.5"
    assert resolve_address(scope("127.0.0.1", "198.51.100.9"), TrustedProxies([])) == "127.0.0.1"
    # A client's own made-up hop sits left of what the proxy appended: the rightmost untrusted one counts.
    assert resolve_address(scope("127.0.0.1", "10.9.9.9, 198.51.100.9"), loopback) == "198.51.100.9"
    assert resolve_address(scope("127.0.0.1", "198.51.100.9, 127.0.0.1"), loopback) == "198.51.100.9"
    assert resolve_address(scope("127.0.0.1", "not-an-address"), loopback) == "127.0.0.1"
    assert (
        resolve_address(scope("10.1.2.3", "198.51.100.9"), TrustedProxies(["10.0.0.0/8"])) == "198.51.100.9"
    )
    assert resolve_address(scope("127.0.0.1"), loopback) == "127.0.0.1"


def test_new_identities_per_address_are_limited_in_a_window() -> None:
    limiter = KeyedRate(3, MINT_WINDOW_S)
    assert [limiter.wait("198.51.100.9") for _ in range(3)] == [None, None, None]
    wait = limiter.wait("198.51.100.9")
    assert wait is not None and 0 < wait <= MINT_WINDOW_S
    assert limiter.wait("198.51.100.10") is None


def test_https_is_what_the_connection_or_a_trusted_proxy_says() -> None:
    loopback = TrustedProxies(["127.0.0.1"])
    assert resolve_https(scope("203.0.113.5", scheme="https"), loopback)
    assert resolve_https(scope("127.0.0.1", proto="https"), loopback)
    assert not resolve_https(scope("203.0.113.5", proto="https"), loopback)  # a stranger's word is not taken
    assert not resolve_https(scope("127.0.0.1", proto="http"), loopback)
    assert not resolve_https(scope("127.0.0.1"), loopback)


def test_reading_pages_makes_no_identity_and_is_never_refused(site: InProcessApp) -> None:
    """A crawler, or a class behind one NAT address reading lessons: before, every page view without a
    cookie made an identity (404s too), and past the address's allowance plain pages answered 429."""
    before = learners(site)
    pages = ("/", "/course", f"/course/{STEP}", "/api/progress", "/join", "/resume", "/playground",
             "/api/workspace", "/api/endpoints", "/no-such-page", "/course/no-such-lesson/step")  # fmt: skip
    for _ in range(MINTS * 3):
        for path in pages:
            reply = site.request("GET", path, headers=where(1))
            assert reply.status_code in (200, 404), (path, reply.status_code)
            assert "set-cookie" not in reply.headers, path
    step = site.request("GET", "/api/progress", headers=where(1)).json()["steps"][STEP]
    assert step["status"] == "new" and step["seen"] is False  # a fresh visitor's empty progress
    assert learners(site) == before
    # The same address's first actions do make identities, as many as its allowance, then 429.
    with site.client(headers=where(1)) as first:
        assert first.post(QUIZ, json={"choices": ["a"]}).status_code == 200
        assert COOKIE in first.cookies
    for _ in range(MINTS - 1):
        assert site.post("/api/identity", headers=where(1)).status_code == 204
    refused = site.post("/api/identity", headers=where(1))
    assert refused.status_code == 429 and "Too many new visitors" in refused.json()["error"]["message"]
    assert site.request("GET", "/course", headers=where(1)).status_code == 200  # reading still works


def test_the_first_action_makes_the_identity_and_a_failed_one_makes_none(site: InProcessApp) -> None:
    with site.client(headers=where(2)) as browser:
        assert browser.get(f"/course/{STEP}").status_code == 200 and COOKIE not in browser.cookies
        wrong = browser.post("/join", data={"code": "NO-SUCH-CODE", "display_name": "Ada"})
        assert wrong.status_code == 400 and COOKIE not in browser.cookies
        bad = browser.post(QUIZ, json={"choices": ["zz"]})
        assert bad.status_code == 422 and COOKIE not in browser.cookies
        answered = browser.post(QUIZ, json={"choices": ["a"]})
        assert answered.status_code == 200 and COOKIE in browser.cookies
        assert "HttpOnly" in answered.headers["set-cookie"]
        quiz = browser.get("/api/progress").json()["steps"][STEP]["quizzes"]["unknown-revision"]
        assert quiz == {"answered": True, "correct": True}  # the answer is the new identity's
        again = browser.post(QUIZ, json={"choices": ["a"]})
        assert "set-cookie" not in again.headers  # an identity is made once
    # Failed actions used none of the allowance: the address still has MINTS - 1 left.
    for _ in range(MINTS - 1):
        assert site.post("/api/identity", headers=where(2)).status_code == 204


def test_a_bare_learner_id_is_no_identity(site: InProcessApp) -> None:
    """The id inside a signed cookie, sent bare: before, it was accepted (and re-signed) for any learner
    the store knew, so the signature added nothing to the id's secrecy."""
    cookie = identity(site, 1)
    marker = "# the victim's secret: 7f3c9a\n"
    with site.client(cookies={COOKIE: cookie}) as victim:
        assert victim.put("/api/workspace/server.py", content=marker + "print('hi')\n").status_code == 200
        assert victim.get("/api/workspace/server.py").text.startswith(marker)  # the probe finds it
    bare = learner_id_of(cookie)
    for value in (bare, bare + ".", bare + ".not-the-signature"):
        reply = site.request("GET", "/api/workspace/server.py", cookies={COOKIE: value}, headers=where(3))  # fmt: skip
        assert reply.status_code == 200 and marker not in reply.text, value
        assert bare not in reply.headers.get("set-cookie", ""), value  # never re-issued signed
        acted = site.post("/api/identity", cookies={COOKIE: value}, headers=where(4))
        assert learner_id_of(acted.cookies[COOKIE]) != bare  # an action makes a new identity instead


async def test_one_address_cannot_take_every_place_across_identities(app: ServedApp) -> None:
    """Before, identities were free to make: 33 of them x 4 consoles from one address took all 125
    visitors' places. Now one address holds at most PLAYGROUND_MAX_SESSIONS_PER_ADDRESS of them."""
    url = app.ws_base + "/ws/demo-orders"
    held: list[EnvelopeClient] = []
    try:
        for n in range(PER_ADDRESS + 1):  # a new identity for every console
            headers = {**where(5), "Cookie": f"{COOKIE}={identity(app, 10 + n)}"}
            console = await EnvelopeClient.connect(url, additional_headers=headers)
            held.append(console)
            frame = await console.recv_type("state", "full")
            if n < PER_ADDRESS:
                assert frame["type"] == "state", frame
        assert frame["type"] == "full" and frame["reason"] == "address_full", frame
        assert (
            f"Your network address already has {PER_ADDRESS} consoles open outside a class"
            in frame["message"]
        )
        other = await EnvelopeClient.connect(
            url, additional_headers={**where(6), "Cookie": f"{COOKIE}={identity(app, 2)}"}
        )
        held.append(other)
        assert (await other.recv_type("state", "full"))["type"] == "state"  # another address gets a place
    finally:
        for console in held:
            await console.close()
