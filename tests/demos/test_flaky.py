"""demo-flaky: misbehaves on request, and only then."""

from __future__ import annotations

import json
import time

import pytest

from app.protocol import messages
from tests.support.rawclient import Message, RawClient


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
    # The call and its cancel go in one write, so the server reads them together and the cancel is
    # handled before the reply falls due, however slow the machine. A second slow reply sent after
    # them falls due no sooner, so an uncancelled first reply always comes before it.
    def first_reply(cancel: bool) -> Message:
        lines = [json.dumps(slow_call("first"))]
        if cancel:
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                     "params": {"requestId": "first", "reason": "test"}}))  # fmt: skip
        client.send_line("\n".join(lines))
        client.send(slow_call("second"))
        return client.read()

    assert first_reply(cancel=False)["id"] == "first"  # the control
    assert client.read()["id"] == "second"
    assert first_reply(cancel=True)["id"] == "second"  # cancelled: never sent


def slow_call(id_: str) -> Message:
    return messages.request(id_, "tools/call", {"name": "slow_reply", "arguments": {"seconds": 0}})


def test_slow_reply_is_bounded(client: RawClient) -> None:
    reply = client.call("tools/call", {"name": "slow_reply", "arguments": {"seconds": 60}})
    assert reply["result"]["isError"] is True


def test_crash_exits_with_the_status_and_says_so_on_stderr(client: RawClient) -> None:
    call_tool(client, "crash", {"status": 7})
    assert "exit status 7" in client.stderr_line()
    assert client.wait_exit() == 7
