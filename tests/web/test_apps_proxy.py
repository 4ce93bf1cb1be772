"""The MCP Apps sandbox proxy's origin (app/web/apps_proxy.py): it serves the proxy and nothing of the
site, the site serves no proxy, and the app's policy holds only what the resource declared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.websockets import WebSocketDisconnect

from app.config import Settings
from app.web.apps_proxy import MAX_DOMAINS, declared, origin_problem, policy
from tests.support.inprocess import InProcessApp

PROXY_HOST = {"Host": "localhost:8000"}  # the default proxy origin of a site on 127.0.0.1:8000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("apps-proxy")) as site:
        yield site


def directives(header: str) -> dict[str, str]:
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in header.split("; ")}


def test_the_proxy_host_serves_the_proxy_with_the_default_policy(site: InProcessApp) -> None:
    page = site.request("GET", "/apps/proxy", headers=PROXY_HOST)
    assert page.status_code == 200 and '<script src="/apps/proxy.js">' in page.text
    assert 'content="http://127.0.0.1:8000"' in page.text  # the one console that may talk to it
    csp = directives(page.headers["content-security-policy"])
    # The extension's restrictive default (MCP Apps 2026-01-26, UI Resource Format, Host Behavior).
    assert csp["default-src"] == "'none'" and csp["connect-src"] == "'none'"
    assert csp["script-src"] == "'self' 'unsafe-inline'" and csp["img-src"] == "'self' data:"
    assert csp["frame-src"] == "'none'" and csp["base-uri"] == "'self'" and csp["object-src"] == "'none'"
    assert csp["form-action"] == "'none'" and csp["frame-ancestors"] == "'self' http://127.0.0.1:8000"
    assert "x-frame-options" not in page.headers  # the site's DENY would stop the console framing it
    script = site.request("GET", "/apps/proxy.js", headers=PROXY_HOST)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")


def test_the_proxy_host_serves_nothing_of_the_site(site: InProcessApp) -> None:
    """An app runs as the proxy's origin: whatever that origin serves, an app can read."""
    cookie = {"playground_learner": site.learner_cookie()}
    moved = site.request("GET", "/api/progress", headers=PROXY_HOST, cookies=cookie)
    assert moved.status_code == 307 and moved.headers["location"] == "http://127.0.0.1:8000/api/progress"
    assert "set-cookie" not in moved.headers
    for method, path in (("POST", "/api/identity"), ("PUT", "/api/workspace/server.py"), ("POST", "/api/endpoints"),
                         ("DELETE", "/api/endpoints/x"), ("POST", "/mcp/anything")):  # fmt: skip
        refused = site.request(method, path, headers=PROXY_HOST, cookies=cookie)
        assert refused.status_code == 404 and "only the MCP Apps sandbox proxy" in refused.text, (
            method,
            path,
        )
    with pytest.raises(WebSocketDisconnect) as refused_socket:
        with site.plain_client().websocket_connect("/ws/demo-orders", headers=PROXY_HOST):
            pass
    assert refused_socket.value.code == 1008


def test_the_site_serves_no_proxy(site: InProcessApp) -> None:
    """On the site's own origin the proxy would hand an app the site's cookies and pages."""
    assert site.request("GET", "/apps/proxy").status_code == 404
    page = site.request("GET", "/course")
    assert "frame-src http://localhost:8000" in page.headers["content-security-policy"]


def test_declared_domains_widen_only_their_directives(site: InProcessApp) -> None:
    csp = {"connectDomains": ["https://api.example.com", "wss://live.example.com"],
           "resourceDomains": ["https://*.cdn.example.net"], "frameDomains": ["https://player.example.org"],
           "baseUriDomains": ["https://base.example.com"], "wasmUnsafeEval": True}  # fmt: skip
    page = site.request("GET", f"/apps/proxy?csp={quote(json.dumps(csp))}", headers=PROXY_HOST)
    got = directives(page.headers["content-security-policy"])
    assert got["connect-src"] == "https://api.example.com wss://live.example.com"
    assert got["script-src"] == "'self' 'unsafe-inline' https://*.cdn.example.net 'wasm-unsafe-eval'"
    assert got["style-src"] == "'self' 'unsafe-inline' https://*.cdn.example.net"
    assert got["frame-src"] == "https://player.example.org" and got["base-uri"] == "https://base.example.com"


def test_a_hostile_declaration_adds_nothing() -> None:
    """Not an origin (a keyword, a path, a directive smuggled after a `;`), or the site's own origin or
    the proxy's: left out, so the policy stays the restrictive default."""
    hostile = {"connectDomains": ["*", "'unsafe-eval'", "https://a.example.com; script-src *", "http://127.0.0.1:8000",
                                  "http://localhost:8000", "https://a.example.com/path", 7, "data:"],
               "resourceDomains": "https://not-a-list.example.com"}  # fmt: skip
    kept, wasm, left_out = declared(hostile)
    csp = directives(policy(kept, wasm, ["http://127.0.0.1:8000"], {"127.0.0.1", "localhost"}))
    assert csp["connect-src"] == "'none'" and csp["script-src"] == "'self' 'unsafe-inline'"
    assert len(left_out) == 6  # the two loopback origins are well formed, then dropped by name


def test_a_wildcard_over_the_sites_name_or_a_trailing_newline_is_left_out(site: InProcessApp) -> None:
    """From the side of a hostile app's declaration: `https://*.uni.edu` covers a site at
    playground.uni.edu; a newline after a domain would end up in a response header."""
    kept, wasm, left_out = declared({"connectDomains": ["https://a.example\n", "https://*.uni.edu",
                                                         "https://*.edu", "https://*.other.edu"]})  # fmt: skip
    assert left_out == ["connectDomains: https://a.example\n"]
    csp = directives(
        policy(kept, wasm, ["https://playground.uni.edu"], {"playground.uni.edu", "apps.example"})
    )
    assert csp["connect-src"] == "https://*.other.edu"
    newline = quote(json.dumps({"connectDomains": ["https://a.example\n"]}))
    page = site.request("GET", f"/apps/proxy?csp={newline}", headers=PROXY_HOST)
    assert page.status_code == 200 and "a.example" not in page.headers["content-security-policy"]


def test_a_declaration_of_many_domains_keeps_only_the_first_ones() -> None:
    many = {"connectDomains": [f"https://d{n}.example.com" for n in range(MAX_DOMAINS + 8)]}
    kept, _, _ = declared(many)
    assert kept["connectDomains"] == many["connectDomains"][:MAX_DOMAINS]


def test_a_malformed_or_oversized_declaration_is_refused(site: InProcessApp) -> None:
    assert site.request("GET", "/apps/proxy?csp={oops", headers=PROXY_HOST).status_code == 400
    # Nested past Python's limit (2,000 `[` in 4,000 characters): a 500 and a traceback logged each time.
    assert (
        site.request("GET", "/apps/proxy?csp=" + "[" * 2000 + "]" * 2000, headers=PROXY_HOST).status_code
        == 400
    )
    long = quote(json.dumps({"connectDomains": ["https://a.example.com"] * 400}))
    assert site.request("GET", f"/apps/proxy?csp={long}", headers=PROXY_HOST).status_code == 414


def test_when_the_start_refuses_and_when_apps_are_off() -> None:
    assert origin_problem(Settings()) is None and Settings().apps_proxy == ("http://localhost:8000", "")
    assert Settings(host="localhost").apps_proxy[0] == "http://127.0.0.1:8000"  # the reverse
    hosted = Settings(host="0.0.0.0", allowed_hosts=["mcp.school.example"])
    assert hosted.apps_proxy[0] is None and "PLAYGROUND_APPS_ORIGIN" in hosted.apps_proxy[1]
    assert origin_problem(hosted) is None  # auto: off, and the console says why
    assert "PLAYGROUND_APPS_ORIGIN" in (origin_problem(hosted.model_copy(update={"apps": "on"})) or "")
    same_domain = hosted.model_copy(update={"apps_origin": "https://apps.school.example"})
    assert "shares the site's domain" in (origin_problem(same_domain) or "")
    elsewhere = hosted.model_copy(update={"apps_origin": "https://school-apps.example-usercontent.net"})
    assert origin_problem(elsewhere) is None
    not_origin = hosted.model_copy(update={"apps_origin": "https://x.example-usercontent.net/proxy"})
    assert "must be an origin" in (origin_problem(not_origin) or "")
    assert Settings(apps="off").apps_proxy[0] is None


@pytest.mark.parametrize(
    ("site", "apps", "shared"),
    [
        # Under a public suffix of two labels: a sibling name is another registrable domain ...
        ("playground.cs.uni.ac.uk", "uni-apps.ac.uk", False),
        ("mcp.school.co.uk", "apps.other-school.co.uk", False),
        # ... and a deeper name under the site's own is not, however many labels the suffix has.
        ("playground.cs.uni.ac.uk", "apps.uni.ac.uk", True),
        ("mcp.school.co.uk", "evil.school.co.uk", True),
        # A private suffix: projects on one hosting domain cannot set each other's cookies.
        ("class.github.io", "class-apps.github.io", False),
        ("class.github.io", "apps.class.github.io", True),
        # A name under no known suffix: its last two labels, as a browser takes it.
        ("mcp.school.internal", "apps.school.internal", True),
        # One name written in Unicode, the other as the browser sends it.
        ("mcp.bücher.de", "apps.xn--bcher-kva.de", True),
        ("mcp.xn--bcher-kva.de", "apps.bücher.de", True),
    ],
)
def test_an_apps_origin_may_not_share_the_sites_registrable_domain(
    site: str, apps: str, shared: bool
) -> None:
    settings = Settings(host="0.0.0.0", allowed_hosts=[site], apps_origin=f"https://{apps}")
    problem = origin_problem(settings) or ""
    assert ("shares the site's domain" in problem) is shared, problem


def test_a_console_without_a_second_origin_says_why(tmp_path_factory: pytest.TempPathFactory) -> None:
    with InProcessApp(tmp_path_factory.mktemp("apps-off"), apps="off") as off:
        page = off.request("GET", "/playground")
        assert 'data-apps-off="MCP Apps are turned off' in page.text and "data-apps-origin" not in page.text
        assert "frame-src" not in page.headers["content-security-policy"]
        assert off.request("GET", "/apps/proxy", headers=PROXY_HOST).status_code == 404  # no proxy at all
