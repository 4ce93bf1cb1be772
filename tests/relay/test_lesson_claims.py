"""What the lessons say the relay answers, checked against the live relay (the expect blocks
check the demo servers; these claims are about the relay in front of them)."""

from __future__ import annotations

import json

import pytest

from tests.support.inprocess import ServedApp
from tests.support.lessons import course
from tests.support.wsclient import EnvelopeClient, McpClient

STEP = "errors-and-bad-input/silent-server"


@pytest.fixture(scope="module")
def step():
    catalog = course()
    found = catalog.step(STEP)
    assert found is not None and found.console is not None
    return found


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("lesson-claims"), warm_pool_size=1) as app:
        yield app


async def test_the_relay_answers_the_lessons_broken_message_exactly_as_the_lesson_shows(app, step) -> None:  # noqa: ANN001
    shown = [json.loads(e.text) for e in step.examples if '"from": "relay"' in e.text]
    assert shown, "lesson 7 shows the relay's answer to its broken message"
    client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
    try:
        await client.send(step.console.message)  # the broken ping the console starts with
        assert await client.recv() == shown[0]
    finally:
        await client.close()


async def test_the_steps_check_passes_once_the_message_is_fixed(app, step) -> None:  # noqa: ANN001
    console = await EnvelopeClient.connect(f"{app.ws_base}/ws/demo-orders?step={STEP}")
    try:
        await console.recv_type("state")
        await console.send_text(step.console.message)
        await console.recv_type("relay_error")
        verdict = await console.recv_type("check")
        while verdict["check"] != "relay-refused-bad-input":
            verdict = await console.recv_type("check")
        assert not verdict["passed"] and "fix the message" in verdict["reason"]
        await console.send_text(step.console.message.replace(",}", "}"))
        while True:
            verdict = await console.recv_type("check")
            if verdict["check"] == "relay-refused-bad-input" and verdict["passed"]:
                break
        assert "reached the server and was answered" in verdict["reason"]
    finally:
        await console.close()
