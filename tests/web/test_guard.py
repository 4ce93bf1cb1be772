"""Cross-site requests change nothing, and every response carries the security headers: tried the way
a hostile page (or a careless client) would, on the app built in process; over real HTTP where the
socket matters (a WebSocket's upgrade, a body's bytes as they come)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from app.web.guard import SITE_BODY_BYTES
from app.web.learner import COOKIE
from tests.support.inprocess import InProcessApp, ServedApp

TOKEN = "instructor-token-for-guard-tests-0123"
EVIL = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("guard"), instructor_token=TOKEN, warm_pool_size=1) as app:
        yield app


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    """The same settings, built in process: for what the rules answer over HTTP."""
    with InProcessApp(tmp_path_factory.mktemp("guard-in-process"), instructor_token=TOKEN) as site:
        yield site


@contextmanager
def victim(site: InProcessApp) -> Iterator[httpx.Client]:
    with site.client() as client:
        client.get("/course").raise_for_status()
        client.put("/api/progress/name", json={"display_name": "Victim"}).raise_for_status()
        yield client


@pytest.mark.parametrize(
    ("method", "path", "form"),
    [
        ("POST", "/resume", {"code": "ATTACKER23"}),
        ("POST", "/join", {"code": "ABCDEF", "display_name": "Mallory"}),
        ("POST", "/course/name", {"display_name": "Mallory"}),
        ("POST", "/access", {"code": "x", "next": "/"}),
        ("POST", "/instructor/login", {"token": TOKEN}),
        ("POST", "/instructor/classes", {"name": "Evil"}),
        ("PUT", "/api/progress/name", None),
    ],
)
def test_a_cross_site_state_change_is_refused_and_changes_nothing(site: InProcessApp, method: str, path: str,
                                                                  form: dict | None) -> None:  # fmt: skip
    with victim(site) as browser:
        before = browser.cookies[COOKIE]
        kwargs = {"data": form} if form is not None else {"json": {"display_name": "Mallory"}}
        reply = browser.request(method, path, headers=EVIL, **kwargs)
        assert reply.status_code == 403
        assert "did not come from a page of this site" in reply.text
        assert "set-cookie" not in reply.headers
        assert browser.cookies[COOKIE] == before
        assert browser.get("/api/progress").json()["display_name"] == "Victim"


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no word at all
        {"Origin": "null"},  # a sandboxed frame
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://sub.127.0.0.1"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_without_proof_of_this_site_a_post_is_refused(site: InProcessApp, headers: dict) -> None:
    reply = site.request("POST", "/course/name", data={"display_name": "X"}, headers=headers)
    assert reply.status_code == 403 and "set-cookie" not in reply.headers
    api = site.request("PUT", "/api/progress/name", json={"display_name": "X"}, headers=headers)
    assert api.status_code == 403 and api.json()["error"]["status"] == 403


def test_this_sites_pages_and_bearer_clients_may_change_state(site: InProcessApp) -> None:
    same = site.request("PUT", "/api/progress/name", json={"display_name": "Ada"},
                     headers={"Sec-Fetch-Site": "same-origin"})  # fmt: skip
    assert same.status_code == 200
    assert site.post("/course/name", data={"display_name": "Ada"}).status_code == 303
    made = site.request("POST", "/instructor/classes", data={"name": "By script"},
                      headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
    assert made.status_code == 303


@pytest.mark.parametrize("path", ["/", "/course", "/api/servers", "/api/progress", "/static/style.css",
                                  "/no-such-page", "/healthz"])  # fmt: skip
def test_every_response_carries_the_security_headers(site: InProcessApp, path: str) -> None:
    reply = site.request("GET", path)
    csp = reply.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["referrer-policy"] == "no-referrer"
    assert "strict-transport-security" not in reply.headers  # plain HTTP: HSTS would mean nothing


def test_hsts_only_over_https_as_a_trusted_proxy_says(site: InProcessApp) -> None:
    secure = site.post("/api/identity", headers={"X-Forwarded-Proto": "https"})
    assert secure.headers["strict-transport-security"].startswith("max-age=")
    assert "secure" in secure.headers["set-cookie"].lower()


def test_no_page_loads_anything_from_elsewhere(site: InProcessApp) -> None:
    assert site.request("GET", "/api/docs").status_code == 404
    for path in ("/", "/course", "/playground", "/course/initialize-handshake/versions"):
        soup = BeautifulSoup(site.request("GET", path).text, "html.parser")
        for tag, attr in (("script", "src"), ("link", "href"), ("img", "src")):
            for element in soup.find_all(tag):
                value = element.get(attr) or ""
                assert not value.startswith(("http:", "https:", "//")), (path, value)
        assert not [s for s in soup.find_all("script") if not s.get("src")], path  # no inline script


def test_links_a_learner_copies_say_https_behind_a_trusted_proxy_that_ends_tls(site: InProcessApp) -> None:
    """Behind a TLS-ending proxy the app sees plain HTTP; an endpoint URL must still be https."""
    with site.client(headers={"X-Forwarded-Proto": "https"}) as browser:
        browser.get("/course")
        made = browser.post("/api/endpoints", json={"server": "demo-orders"}, headers={"Origin": site.base})
        assert made.status_code == 201, made.text
        assert made.json()["url"].startswith("https://127.0.0.1:")
    with site.client() as plain:
        plain.get("/course")
        assert (
            plain.post("/api/endpoints", json={"server": "demo-orders"}).json()["url"].startswith("http://")
        )


REBOUND = {"Host": "attacker.example:8000", "Origin": "http://attacker.example:8000"}


def test_a_page_moved_onto_this_machine_by_dns_rebinding_is_refused(site: InProcessApp) -> None:
    """Its Host and Origin agree with each other, so only the Host's name gives it away."""
    page = site.request("GET", "/course", headers=REBOUND)
    assert page.status_code == 421 and "does not answer to that name" in page.text
    assert "set-cookie" not in page.headers  # refused before any identity is minted
    assert "script-src 'self'" in page.headers["content-security-policy"]  # the site's headers, as ever
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    made = site.request("POST", "/api/endpoints", json={"server": "demo-orders"}, headers=REBOUND)
    assert made.status_code == 421
    assert site.request("GET", "/healthz", headers=REBOUND).status_code == 200  # probes name pods
    port = site.base.rsplit(":", 1)[1]
    for name in ("127.0.0.1", "[::1]"):
        assert site.request("GET", "/course", headers={"Host": f"{name}:{port}"}).status_code == 200
    # localhost:PORT is the MCP Apps sandbox proxy's host: a page there is sent to the site's own name.
    moved = site.request("GET", "/course", headers={"Host": f"localhost:{port}"})
    assert moved.status_code == 307 and moved.headers["location"] == f"http://127.0.0.1:{port}/course"


async def test_a_rebound_page_cannot_open_a_console(app: ServedApp) -> None:
    import websockets

    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(app.ws_base + "/ws/demo-orders", origin=REBOUND["Origin"],
                                 additional_headers={"Host": REBOUND["Host"]}, open_timeout=30)  # fmt: skip
    assert refused.value.response.status_code == 403


def test_an_operator_names_the_hosts_it_answers_to(tmp_path: Path) -> None:
    with InProcessApp(tmp_path, allowed_hosts=["playground.example"]) as named:
        assert named.request("GET", "/course", headers={"Host": "playground.example"}).status_code == 200
        assert named.request("GET", "/course").status_code == 421  # 127.0.0.1 is not a name it has


def test_a_body_without_a_length_is_refused_as_soon_as_it_passes_the_limit(app: ServedApp) -> None:
    # Chunked, and never finished: the answer comes while the body is still coming.
    cookie = app.learner_cookie("chunked-body")
    with socket.create_connection(("127.0.0.1", app.port), timeout=30) as sock:
        sock.sendall(
            (f"PUT /api/progress/name HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\nTransfer-Encoding: chunked\r\n"
             f"Content-Type: application/json\r\nSec-Fetch-Site: same-origin\r\nCookie: {COOKIE}={cookie}\r\n\r\n"
             ).encode()
        )  # fmt: skip
        chunk = b" " * 65536
        for _ in range(SITE_BODY_BYTES // len(chunk) + 2):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = sock.recv(65536)
            assert data, f"the connection closed without an answer: {answer!r}"
            answer += data
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


def test_thousands_of_fields_are_refused_before_anything_parses_them(site: InProcessApp) -> None:
    """From the side of a visitor with no cookie: /authorize with a 50 KiB query of 6,000 fields, or
    /revoke and /token with a form of as many, took the event loop for seconds at 20-90 requests a
    second (the query or the form parsed up to three times each). Past a few KiB or 64 fields, 400."""
    many = "&".join(f"a{n}=1" for n in range(6000))
    assert site.request("GET", f"/authorize?{many}").status_code == 400
    assert site.request("GET", f"/course?{many}").status_code == 400  # any page: none takes such a query
    assert site.request("GET", "/authorize?" + "a&" * 70).status_code == 400  # fields, however short
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for path in ("/revoke", "/token"):
        few_kib = "&".join(f"a{n}=1" for n in range(2000))  # 15 KiB: under the body's limit, not its fields'
        assert site.request("POST", path, content=few_kib, headers=form).status_code == 400, path
        assert site.request("POST", path, content="a=" + "x" * 20_000, headers=form).status_code == 413, path
    ordinary = site.request("POST", "/token", content="grant_type=authorization_code&code=nope", headers=form)
    assert ordinary.status_code in (400, 401) and "error" in ordinary.json()  # the SDK's own answer
    assert site.request("GET", "/course?step=1&x=2").status_code == 200  # a query of a few fields is fine
