"""The /playground page as HTML: the server picker, `?server=`, and the console's hooks."""

from __future__ import annotations

import json

import httpx
from bs4 import BeautifulSoup

from tests.support.appserver import AppProcess


def soup(app: AppProcess, path: str) -> BeautifulSoup:
    reply = httpx.get(app.base + path, timeout=30)
    assert reply.status_code == 200
    return BeautifulSoup(reply.text, "html.parser")


def test_the_picker_lists_every_demo_server_and_server_selects_one(browser_app: AppProcess) -> None:
    names = [s["name"] for s in httpx.get(browser_app.base + "/api/servers", timeout=30).json()]
    page = soup(browser_app, "/playground?server=demo-stateless")
    assert [o["value"] for o in page.select("#server-picker option")] == names
    assert page.select_one("#server-picker option[selected]")["value"] == "demo-stateless"
    console = page.select_one("section.console")
    assert console["data-server"] == "demo-stateless"
    assert console["data-rev"] == "2026-07-28"
    assert not console.has_attr("data-step")
    assert (
        json.loads(console.select_one("textarea#console-message").get_text())["method"] == "server/discover"
    )
    assert page.select_one('script[type="module"][src="/static/console/console.js"]') is not None


def test_an_unknown_server_falls_back_to_demo_orders_and_says_so(browser_app: AppProcess) -> None:
    page = soup(browser_app, "/playground?server=../../bin/sh")
    assert page.select_one("section.console")["data-server"] == "demo-orders"
    assert "no demo server by that name" in page.select_one(".notice").get_text()
    assert json.loads(page.select_one("textarea#console-message").get_text())["method"] == "initialize"
