"""demo-flaky: misbehaves on request, and only then."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.rawclient import RawClient


@pytest.fixture
def client():
    with RawClient("app.demos.flaky") as c:
        c.initialize()
        yield c


def call_tool(client: RawClient, name: str, arguments: dict | None = None) -> int:
    return client.request("tools/call", {"name": name, "arguments": arguments or {}})


def test_garbled_line_then_a_normal_reply(client: RawClient) -> None:
    call = call_tool(client, "garbled_line")
    with pytest.raises(json.JSONDecodeError):
        json.loads(client.read_line())
    assert client.read()["id"] == call


def test_a_response_nobody_asked_for_comes_first(client: RawClient) -> None:
    call = call_tool(client, "unknown_id")
    stray = client.read()
    assert stray["id"] == "stray-1" and "result" in stray
    assert client.read()["id"] == call


def test_slow_reply_keeps_the_server_answering_meanwhile(client: RawClient) -> None:
    started = time.monotonic()
    slow = call_tool(client, "slow_reply", {"seconds": 0.5})
    assert client.call("ping")["result"] == {}  # answered before the slow reply
    assert client.read()["id"] == slow
    assert time.monotonic() - started >= 0.5


def test_a_cancelled_slow_reply_is_never_sent(client: RawClient) -> None:
    # The cancelled reply would be due first; the cancel has 1.5 s to arrive, which a busy machine
    # needs far less than (the test used to race 0.2 s against 0.4 s).
    cancelled = call_tool(client, "slow_reply", {"seconds": 1.5})
    client.notify("notifications/cancelled", {"requestId": cancelled, "reason": "test"})
    later = call_tool(client, "slow_reply", {"seconds": 2.0})
    assert client.read()["id"] == later  # the cancelled one, due earlier, never came


def test_slow_reply_is_bounded(client: RawClient) -> None:
    reply = client.call("tools/call", {"name": "slow_reply", "arguments": {"seconds": 60}})
    assert reply["result"]["isError"] is True


def test_crash_exits_with_the_status_and_says_so_on_stderr(client: RawClient) -> None:
    call_tool(client, "crash", {"status": 7})
    assert "exit status 7" in client.stderr_line()
    assert client.wait_exit() == 7
