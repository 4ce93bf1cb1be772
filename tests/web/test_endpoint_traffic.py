"""What a learner sees of an outside client on their endpoint: every HTTP exchange with its method,
status and MCP headers, the messages as console frames, and a lesson step's hands-on checks judged
on that traffic and recorded. A real uvicorn and the official Python SDK client."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp
from tests.support.wsclient import init_request

LESSONS = Path(__file__).resolve().parents[1] / "fixtures" / "build_lessons"
STEP = "over-http/connect"
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("traffic"), lessons_dir=str(LESSONS), warm_pool_size=1) as app:
        yield app


def page(app: ServedApp, name: str) -> httpx.Client:
    return app.client(cookies={COOKIE: app.learner_cookie(name)})


def traffic(browser: httpx.Client, endpoint: dict, **params: object) -> dict:
    reply = browser.get(f"/api/endpoints/{endpoint['id']}/traffic", params=params)
    assert reply.status_code == 200, reply.text
    return reply.json()


async def test_an_sdk_clients_traffic_shows_its_http_exchanges_and_messages(app: ServedApp) -> None:
    with page(app, "watcher") as browser:
        endpoint = browser.post("/api/endpoints", json={"server": "demo-orders"}).json()
        async with (
            streamable_http_client(endpoint["url"]) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.list_tools()
            seen = traffic(browser, endpoint)
        after = traffic(browser, endpoint)  # the client has gone (it DELETEd its session): still shown
    exchanges = seen["exchanges"]
    first = exchanges[0]
    assert (first["method"], first["status"], first["carried"]["method"]) == ("POST", 200, "initialize")
    assert "mcp-session-id" in first["response_headers"] and "mcp-session-id" not in first["request_headers"]
    later = [x for x in exchanges if x["number"] > 1 and x["method"] == "POST"]
    assert later and all(x["request_headers"]["mcp-session-id"] == first["response_headers"]["mcp-session-id"]
                         for x in later)  # fmt: skip
    assert {f["type"] for f in seen["frames"]} == {"sent", "received"}
    assert [f["message"].get("method") for f in seen["frames"] if f["type"] == "sent"][:3] == [
        "initialize", "notifications/initialized", "tools/list"]  # fmt: skip
    assert after["sessions"][-1]["ended"] is True
    assert after["exchanges"][-1]["method"] == "DELETE" and after["exchanges"][-1]["status"] == 204
    assert "cookie" not in str(after["exchanges"]).lower()  # no credential is ever kept


def test_a_steps_http_checks_pass_on_a_raw_clients_traffic_and_are_recorded(app: ServedApp) -> None:
    with page(app, "checker") as browser:
        browser.get(f"/course/{STEP}")  # seen
        endpoint = browser.post("/api/endpoints", json={"server": "demo-orders"}).json()
        before = {c["check"]: c["passed"] for c in traffic(browser, endpoint, step=STEP)["checks"]}
        assert before == dict.fromkeys(("http-session-opened", "http-session-reused", "http-version-header",
                                        "http-stream-opened"), False)  # fmt: skip
        with httpx.Client(timeout=30) as client:
            opened = client.post(endpoint["url"], json=init_request(version="2025-11-25"), headers=ACCEPT)
            session = {
                "Mcp-Session-Id": opened.headers["Mcp-Session-Id"],
                "MCP-Protocol-Version": "2025-11-25",
            }
            client.post(endpoint["url"], json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers={**ACCEPT, **session})  # fmt: skip
            no_version = client.post(endpoint["url"], json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                     headers={**ACCEPT, "Mcp-Session-Id": session["Mcp-Session-Id"]})  # fmt: skip
            assert no_version.status_code == 200
            checks = {c["check"]: c for c in traffic(browser, endpoint, step=STEP)["checks"]}
            assert checks["http-session-opened"]["passed"] and checks["http-session-reused"]["passed"]
            assert checks["http-version-header"]["passed"] is False
            assert "said no `MCP-Protocol-Version`" in checks["http-version-header"]["reason"]
            with client.stream(
                "GET", endpoint["url"], headers={**session, "Accept": "text/event-stream"}
            ) as stream:
                assert stream.status_code == 200
                checks = {c["check"]: c for c in traffic(browser, endpoint, step=STEP)["checks"]}
        assert checks["http-stream-opened"]["passed"]
        progress = browser.get("/api/progress").json()["steps"][STEP]["checks"]
    assert progress == {"http-session-opened": True, "http-session-reused": True, "http-version-header": False,
                        "http-stream-opened": True}  # fmt: skip


def test_the_step_page_shows_the_panel_with_its_checks(app: ServedApp) -> None:
    from bs4 import BeautifulSoup

    with page(app, "reader") as browser:
        soup = BeautifulSoup(browser.get(f"/course/{STEP}").text, "html.parser")
    panel = soup.select_one("[data-endpoint-panel]")
    assert panel["data-step"] == STEP and panel["data-server"] == "demo-orders"
    assert [li["data-check"] for li in panel.select("li.check")] == [
        "http-session-opened", "http-session-reused", "http-version-header", "http-stream-opened"]  # fmt: skip
    assert soup.select_one("section.console") is None
