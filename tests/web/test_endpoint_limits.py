"""An endpoint's limits, on the app built in process: its owner's rate of new sessions, its lifetime,
an idle MCP session's end, and a client without cookies that never spends its address's allowance of
new learners. The transport itself, over a real uvicorn, is tests/web/test_endpoints.py."""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path

import httpx
import pytest

from app.relay.httpwire import MAX_ID_CHARS, MAX_WAITING
from app.web.learner import COOKIE
from tests.support.inprocess import InProcessApp, ServedApp
from tests.support.wsclient import init_request

ACCEPT = {"Accept": "application/json, text/event-stream"}
DEADLINE_S = 30.0


def make_endpoint(app: InProcessApp) -> dict:
    with app.client() as browser:
        browser.get("/")
        made = browser.post("/api/endpoints", json={"server": "demo-orders"})
    assert made.status_code == 201, made.text
    return made.json()


def initialize(app: InProcessApp, url: str) -> str:
    reply = app.request("POST", url, json=init_request(version="2025-11-25"), headers=ACCEPT)
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["protocolVersion"] == "2025-11-25"
    return reply.headers["Mcp-Session-Id"]


def live_sessions(app: InProcessApp) -> int:
    return app.get("/healthz").json()["sessions"]["live"]


def test_an_endpoint_owner_past_the_rate_of_new_sessions_gets_429(tmp_path: Path) -> None:
    """Sessions opened through an endpoint count against its owner's rate too; the refusal is 429."""
    with InProcessApp(tmp_path, new_sessions_per_min=2) as small:
        url = make_endpoint(small)["url"]
        for _ in range(2):
            session = initialize(small, url)
            small.request("DELETE", url, headers={"Mcp-Session-Id": session})
        refused = small.request("POST", url, json=init_request(), headers=ACCEPT)
        assert refused.status_code == 429, refused.text
        assert "You have started 2 sessions in the last minute" in refused.json()["error"]["message"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 60


@pytest.mark.slow  # waits out the lifetime on the real clock
def test_one_address_makes_at_most_its_hourly_count_of_endpoints_whatever_identities_it_uses(
    tmp_path: Path,
) -> None:
    """From the attacker's side: each identity holds three endpoints at a time, and identities and the
    end of an endpoint cost nothing, so the endpoints made from one address in an hour are counted."""
    with InProcessApp(tmp_path, new_endpoints_per_hour_per_address=2) as small:

        def make(learner: str, address: str = "10.0.3.1") -> httpx.Response:
            cookies = {COOKIE: small.learner_cookie(learner)}
            with small.client(address=address, cookies=cookies) as page:
                return page.post("/api/endpoints", json={"server": "demo-orders"})

        first = make("one")
        assert first.status_code == 201
        with small.client(address="10.0.3.1", cookies={COOKIE: small.learner_cookie("one")}) as page:
            assert page.delete(f"/api/endpoints/{first.json()['id']}").status_code == 200
        assert make("two").status_code == 201
        refused = make("three")
        assert refused.status_code == 429
        assert "made 2 endpoints in the last hour" in refused.json()["error"]["message"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 3600
        assert small.metric("playground_writes_capped_total", '{what="endpoints"}') == 1
        assert make("three", address="10.0.3.2").status_code == 201  # another address counts its own


def test_an_expired_endpoint_answers_404(tmp_path: Path) -> None:
    with InProcessApp(tmp_path, endpoint_lifetime_s=1.0) as short:
        endpoint = make_endpoint(short)
        deadline = time.monotonic() + DEADLINE_S
        while time.time() < endpoint["expires_at"] + 1:  # expires_at is whole seconds
            assert time.monotonic() < deadline
            time.sleep(0.1)
        gone = short.request("POST", endpoint["url"], json=init_request(), headers=ACCEPT)
        assert gone.status_code == 404 and "expired" in gone.json()["error"]["message"]


@pytest.mark.slow  # waits out the idle time on the real clock
def test_an_idle_mcp_session_ends_frees_its_place_and_answers_404(tmp_path: Path) -> None:
    with InProcessApp(tmp_path, idle_timeout_s=1.0) as quick:
        with quick.client() as browser:
            browser.get("/")
            url = browser.post("/api/endpoints", json={"server": "demo-orders"}).json()["url"]
            endpoint_id = browser.get("/api/endpoints").json()[0]["id"]
            session = initialize(quick, url)
            assert browser.get("/api/endpoints").json()[0]["live_sessions"] == 1
            deadline = time.monotonic() + DEADLINE_S
            while live_sessions(quick) != 0:  # the idle timer ends it, and its place is free
                assert time.monotonic() < deadline, "the idle MCP session was never ended"
                time.sleep(0.1)
            listed = [e for e in browser.get("/api/endpoints").json() if e["id"] == endpoint_id]
            assert listed[0]["live_sessions"] == 0  # and the endpoint no longer holds it
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        gone = quick.request("POST", url, json=ping, headers={**ACCEPT, "Mcp-Session-Id": session})
        assert gone.status_code == 404


def test_an_mcp_client_without_cookies_is_never_given_an_identity(tmp_path: Path) -> None:
    """A client with no cookie jar (curl, Node's fetch) must not spend its address's allowance of new
    learners, which a whole class behind one NAT address shares."""
    with InProcessApp(tmp_path, new_learners_per_address=3) as strict:
        url = make_endpoint(strict)["url"]
        for n in range(8):  # well past the allowance of 3
            body = init_request(id_=n + 1, version="2025-11-25")
            reply = strict.request("POST", url, json=body, headers=ACCEPT)  # a client of its own each time
            assert reply.status_code == 200, reply.text
            assert "set-cookie" not in reply.headers
            strict.request("DELETE", url, headers={"Mcp-Session-Id": reply.headers["Mcp-Session-Id"]})
        with strict.client() as visitor:  # the address can still welcome a new learner
            assert visitor.get("/course").status_code == 200


def test_requests_left_waiting_are_bounded_and_a_cancelled_one_stops_waiting(tmp_path: Path) -> None:
    """From the side of a client that starts long calls, closes each stream at once and cancels them:
    each stayed in the session's waiting list until the session's end (4 h), since the server answers
    a cancelled request nothing; 72,000 of them in each of four sessions took the web process's core."""
    with ServedApp(tmp_path, warm_pool_size=1, max_messages_per_10s=10_000) as app:
        with app.client() as browser:
            browser.get("/")
            made = browser.post("/api/endpoints", json={"server": "demo-monitor"})
        assert made.status_code == 201, made.text
        url = made.json()["url"]
        with httpx.Client(timeout=DEADLINE_S) as http:
            opened = http.post(url, json=init_request(version="2025-11-25"), headers=ACCEPT)
            headers = {**ACCEPT, "Mcp-Session-Id": opened.headers["Mcp-Session-Id"],
                       "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
            http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            listener = app.state.http_sessions.by_id[opened.headers["Mcp-Session-Id"]]

            def call(id_: object) -> dict:
                return {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                        "params": {"name": "run_diagnostics", "arguments": {"steps": 10, "step_seconds": 2}}}  # fmt: skip

            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                answer = pool.submit(http.post, url, json=call(1), headers=headers)
                deadline = time.monotonic() + DEADLINE_S
                while listener.waiting < 1 and time.monotonic() < deadline:
                    time.sleep(0.01)
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
                assert http.post(url, json=cancel, headers=headers).status_code == 202
                ended = answer.result(DEADLINE_S)  # at once, not when the call would have ended
            assert '"code":-32800' in ended.text.replace(" ", "") and listener.waiting == 0
            for n in range(MAX_WAITING):
                with http.stream("POST", url, json=call(100 + n), headers=headers) as started:
                    assert started.status_code == 200  # and the client goes at once
            refused = http.post(url, json=call(999), headers=headers)
            assert refused.status_code == 429 and "too many requests waiting" in refused.text
            long_id = http.post(url, json=call("x" * (MAX_ID_CHARS + 1)), headers=headers)
            assert long_id.status_code == 400 and "id too long" in long_id.text
            assert listener.waiting == MAX_WAITING
