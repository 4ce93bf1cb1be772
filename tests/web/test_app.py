"""The app's pages and API: /healthz through the real process (the sandbox's layers), the rest on the
app built in process."""

from __future__ import annotations

import httpx
from bs4 import BeautifulSoup


def test_healthz_reports_ready_with_every_sandbox_layer(live_app) -> None:
    reply = httpx.get(live_app.base + "/healthz", timeout=10)
    assert reply.status_code == 200
    body = reply.json()
    assert body["status"] == "ok"
    assert body["sandbox"]["complete"] is True
    assert set(body["sandbox"]["layers"]) >= {"filesystem", "namespaces", "uid", "seccomp", "rlimits"}


def test_the_app_in_process_reports_every_sandbox_layer_off_never_ok(app_in_process) -> None:
    body = app_in_process.get("/healthz").json()
    assert body["status"] == "degraded" and body["sandbox"]["complete"] is False
    layers = body["sandbox"]["layers"]
    assert set(layers) >= {"filesystem", "namespaces", "uid", "seccomp", "rlimits"}
    assert all(why.startswith("off: tests") for why in layers.values()), layers


def test_api_servers_lists_the_registry(app_in_process) -> None:
    servers = app_in_process.get("/api/servers").json()
    orders = next(s for s in servers if s["name"] == "demo-orders")
    assert set(orders) == {"name", "title", "description", "samples"}
    assert orders["title"] and orders["description"]
    # The console's templates come from here: the tool, resource and prompt demo-orders declares.
    assert [s["method"] for s in orders["samples"]] == ["tools/call", "resources/read", "prompts/get"]
    assert orders["samples"][0]["params"]["name"] == "get_order_status"


def test_home_page_renders(app_in_process) -> None:
    page = app_in_process.get("/")
    assert page.status_code == 200
    soup = BeautifulSoup(page.text, "html.parser")
    assert soup.select_one("h1").get_text().startswith("Learn the Model Context Protocol")
    assert soup.select_one('link[rel="stylesheet"]')["href"] == "/static/style.css"
    assert app_in_process.get("/static/style.css").status_code == 200


def test_unknown_page_is_an_html_404_and_unknown_api_is_json(app_in_process) -> None:
    page = app_in_process.get("/no/such/page")
    assert page.status_code == 404
    assert BeautifulSoup(page.text, "html.parser").select_one("h1").get_text() == "404"
    api = app_in_process.get("/api/no-such")
    assert api.status_code == 404
    assert api.json()["error"]["status"] == 404
