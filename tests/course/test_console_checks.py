"""A step's console end to end: the lesson's starting message, live `check` frames, progress on the page."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp
from tests.support.lessons import course
from tests.support.wsclient import EnvelopeClient

CATALOG = course()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    with ServedApp(tmp_path_factory.mktemp("console-checks")) as app:
        yield app


async def connect(app: ServedApp, step: str) -> EnvelopeClient:
    return await EnvelopeClient.connect(
        f"{app.ws_base}/ws/demo-orders?step={step}",
        additional_headers={"Cookie": f"{COOKIE}={app.learner_cookie('console')}"},
    )


async def check_frame(client: EnvelopeClient, name: str, passed: bool) -> dict[str, Any]:
    while True:
        frame = await client.recv_type("check")
        if frame["check"] == name and frame["passed"] is passed:
            return frame


async def test_the_versions_console_passes_its_check_and_the_page_shows_it(app) -> None:
    step = CATALOG.step("initialize-handshake/versions")
    assert step is not None and step.console is not None
    client = await connect(app, step.slug)
    try:
        await client.recv_type("state")
        await client.send_text(step.console.message)  # exactly what the editor starts with
        frame = await check_frame(client, "version-counter-offer", True)
        assert frame["step"] == step.slug
        assert "'1999-01-01'" in frame["reason"] and "'2025-11-25'" in frame["reason"]
    finally:
        await client.close()
    page = httpx.get(app.base + step.url, cookies={COOKIE: app.learner_cookie("console")}, timeout=30)
    soup = BeautifulSoup(page.text, "html.parser")
    assert soup.select_one('li.check[data-check="version-counter-offer"]')["data-passed"] == "true"


async def test_initialized_check_fails_with_a_reason_then_passes(app) -> None:
    step = CATALOG.step("initialize-handshake/initialized")
    assert step is not None and step.console is not None
    client = await connect(app, step.slug)
    try:
        await client.recv_type("state")
        await client.send_text(step.console.message)
        await client.recv_type("received")  # the initialize result
        waiting = await check_frame(client, "initialized-after-reply", False)
        assert "now send `notifications/initialized`" in waiting["reason"]
        await client.send_text(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        done = await check_frame(client, "initialized-after-reply", True)
        assert "after the server's reply" in done["reason"]
    finally:
        await client.close()


def test_a_steps_checks_run_on_a_console_of_its_own_server_only(app) -> None:
    """From the side of a learner whose own server.py answers whatever a check looks for: a console of
    my-server on a demo server's step gets no checks, so it records nothing."""
    from app.web.ws import step_checks

    versions = "initialize-handshake/versions"
    assert step_checks(app.state, versions, "someone", "demo-orders") is not None
    assert step_checks(app.state, versions, "someone", "my-server") is None
    own = next(
        s for s in CATALOG.steps() if s.checks and s.console is not None and s.console.server == "my-server"
    )
    assert step_checks(app.state, own.slug, "someone", "my-server") is not None
    assert step_checks(app.state, "no-such/step", "someone", "demo-orders") is None


async def test_rounds_of_checks_that_hold_the_loop_long_are_spaced_out(
    app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the side of a console whose transcript is costly to check (thousands of entries of many
    values each, 90 ms a round): each round waits CHECK_SPACING times as long as the last took, so
    its pings keep the event loop busy a tenth of the time at most, not all of it."""
    from app.course.checks import StepChecker
    from app.relay.wire import CHECK_SPACING

    cost_s = 0.02
    starts: list[float] = []
    real = StepChecker.run

    def costly(self: StepChecker, transcript: Any) -> Any:
        starts.append(time.perf_counter())
        time.sleep(cost_s)  # holds the loop, as a costly round does
        return real(self, transcript)

    monkeypatch.setattr(StepChecker, "run", costly)
    client = await connect(app, "initialize-handshake/versions")
    try:
        await client.recv_type("state")
        began = time.perf_counter()
        deadline = began + 60
        n = 0
        while len(starts) < 4 and time.perf_counter() < deadline:
            rounds = len(starts)
            for _ in range(5):  # a burst, answered as fast as it can be
                n += 1
                await client.send({"jsonrpc": "2.0", "id": n, "method": "ping"})
                await client.recv_type("received")
            while len(starts) == rounds and time.perf_counter() < deadline:  # the round it asked for
                await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - began
    finally:
        await client.close()
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    assert len(starts) >= 4 and min(gaps) >= cost_s * CHECK_SPACING * 0.95, gaps
    assert n > 2 * len(starts)  # many messages, few rounds
    assert len(starts) <= 2 + elapsed / (cost_s * CHECK_SPACING)
