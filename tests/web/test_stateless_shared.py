"""The endpoint's one 2026-07-28 instance, shared by every client of the endpoint, from the side of
clients that number their requests alike (app/relay/stateless.py): a subscription's notifications and
what the server says during a request reach the client they are for, and no other; a client that
closes its stream cancels its request on the server; a posted notifications/cancelled is refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from app.relay import stateless
from tests.support.inprocess import ServedApp

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("stateless"), warm_pool_size=1) as app:
        yield app


def endpoint(app: ServedApp, server: str) -> dict:
    with app.client() as page:
        page.get("/")
        made = page.post("/api/endpoints", json={"server": server})
    assert made.status_code == 201, made.text
    return made.json()


def request(id_: object, method: str, params: dict | None = None, **meta: object) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        "params": {**(params or {}), "_meta": {**META, **meta}},
    }


def headers(method: str, name: str | None = None) -> dict:
    found = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    return found | ({"Mcp-Name": name} if name else {})


class Stream:
    """A POSTed request's SSE response, read as it comes."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[dict] = asyncio.Queue()
        self.seen: list[dict] = []

    async def next(self, method: str | None = None) -> dict:
        """The next message (of `method`; None: the response), within the deadline."""
        async with asyncio.timeout(DEADLINE_S):
            while True:
                message = await self.messages.get()
                self.seen.append(message)
                if message.get("method") == method:
                    return message


@contextlib.asynccontextmanager
async def streaming(client: httpx.AsyncClient, url: str, body: dict, head: dict) -> AsyncIterator[Stream]:
    """The request's stream, open until the block ends (then closed: its client gone)."""
    stream = Stream()

    async def read() -> None:
        async with client.stream("POST", url, json=body, headers=head) as reply:
            assert reply.status_code == 200, await reply.aread()
            async for line in reply.aiter_lines():
                if line.startswith("data: "):
                    stream.messages.put_nowait(json.loads(line[6:]))

    reading = asyncio.create_task(read())
    try:
        yield stream
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def test_two_clients_listening_under_one_id_each_hear_their_own_subscription(app: ServedApp) -> None:
    """Both listen as id 1. The second reached the server as relay-N and its acknowledgment, and
    every notification on it, named relay-N, which its client could not match; a closed stream's
    listen stayed in use, so the next client's listen-1 was renamed too (the SDK's listen() hung)."""
    url = endpoint(app, "demo-inventory")["url"]
    listen = request(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    async with httpx.AsyncClient(timeout=DEADLINE_S) as a, httpx.AsyncClient(timeout=DEADLINE_S) as b:
        async with streaming(a, url, listen, headers("subscriptions/listen")) as first:
            acked = await first.next("notifications/subscriptions/acknowledged")
            assert acked["params"]["_meta"][SUBSCRIPTION_ID] == 1
            async with streaming(b, url, listen, headers("subscriptions/listen")) as second:
                acked = await second.next("notifications/subscriptions/acknowledged")
                assert acked["params"]["_meta"][SUBSCRIPTION_ID] == 1  # its own id, not the relay's
                opened = await b.post(url, json=request(1, "tools/call", {"name": "open_returns_desk"}),
                                      headers=headers("tools/call", "open_returns_desk"))  # fmt: skip
                assert opened.status_code == 200 and "returns desk is open" in opened.text
                for stream in (first, second):
                    changed = await stream.next("notifications/tools/list_changed")
                    assert changed["params"]["_meta"][SUBSCRIPTION_ID] == 1
        # Both streams closed: a new client's listen 1 is 1 all the way through.
        async with streaming(a, url, listen, headers("subscriptions/listen")) as third:
            acked = await third.next("notifications/subscriptions/acknowledged")
            assert acked["params"]["_meta"][SUBSCRIPTION_ID] == 1
            closed = await a.post(url, json=request(2, "tools/call", {"name": "close_returns_desk"}),
                                  headers=headers("tools/call", "close_returns_desk"))  # fmt: skip
            assert closed.status_code == 200
            changed = await third.next("notifications/tools/list_changed")
            assert changed["params"]["_meta"][SUBSCRIPTION_ID] == 1
    assert [m.get("method") for m in first.seen + second.seen].count("notifications/tools/list_changed") == 2


async def test_what_the_server_says_during_a_request_reaches_that_request_only(app: ServedApp) -> None:
    """Two clients call the same tool at once: each stream gets its own call's log messages (the
    server's stdio says nothing of whose they are, so calls take their turn), never the other's."""
    url = endpoint(app, "demo-monitor")["url"]
    head = headers("tools/call", "run_diagnostics")

    def diagnostics(steps: int) -> dict:
        return request(1, "tools/call", {"name": "run_diagnostics", "arguments": {"steps": steps, "step_seconds": 0.2}},
                       **{"io.modelcontextprotocol/logLevel": "info"})  # fmt: skip

    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        replies = await asyncio.gather(
            *(client.post(url, json=diagnostics(steps), headers=head) for steps in (2, 3))
        )
    for reply, steps in zip(replies, (2, 3), strict=True):
        assert reply.status_code == 200, reply.text
        events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
        logs = [event["params"]["data"] for event in events if event.get("method") == "notifications/message"]
        assert logs == [
            f"diagnostics started: {steps} steps",
            "diagnostics finished: all sensors answered",
        ], logs
        assert (
            events[-1]["id"] == 1
            and f"All {steps} sensors answered." in events[-1]["result"]["content"][0]["text"]
        )


async def test_a_client_that_closes_its_stream_cancels_its_request_on_the_server(app: ServedApp) -> None:
    """Its call went on to the end (and a cancel posted by anyone could stop any client's id 1)."""
    made = endpoint(app, "demo-monitor")
    url = made["url"]
    long_call = request(1, "tools/call", {"name": "run_diagnostics", "arguments": {"steps": 10, "step_seconds": 1}},
                        progressToken="p")  # fmt: skip
    head = headers("tools/call", "run_diagnostics")
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        async with streaming(client, url, long_call, head) as leaving:
            await leaving.next("notifications/progress")  # under way
        quick = request(
            2, "tools/call", {"name": "run_diagnostics", "arguments": {"steps": 1, "step_seconds": 0}}
        )
        after = await client.post(url, json=quick, headers=head)  # its turn comes once the first is over
        assert after.status_code == 200 and "All 1 sensors answered." in after.text
        posted = await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                              "params": {"requestId": 2, "_meta": META}},
                                   headers=headers("notifications/cancelled"))  # fmt: skip
        assert posted.status_code == 400, posted.text
        assert posted.json()["error"]["data"]["reason"] == "cancel by closing the stream"
    [shared] = app.state.http_sessions.of_endpoint(made["id"])
    told = [entry.message for entry in shared.session.transcript.client_messages()
            if entry.method == "notifications/cancelled"]  # fmt: skip
    assert [message["params"]["requestId"] for message in told] == [1]  # for the one that left, by the relay


async def test_a_request_whose_turn_does_not_come_is_told_to_try_again(
    app: ServedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client keeping a long call's stream open holds the instance: another's request waits for its
    turn at most as long as a reply may take (here shortened), then gets 503 with Retry-After."""
    monkeypatch.setattr(stateless, "TURN_WAIT_S", 0.2)
    url = endpoint(app, "demo-monitor")["url"]
    head = headers("tools/call", "run_diagnostics")
    holding = request(1, "tools/call", {"name": "run_diagnostics", "arguments": {"steps": 10, "step_seconds": 1}},
                      progressToken="hold")  # fmt: skip
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        async with streaming(client, url, holding, head) as held:
            await held.next("notifications/progress")
            quick = request(
                1, "tools/call", {"name": "run_diagnostics", "arguments": {"steps": 1, "step_seconds": 0}}
            )
            waited = await client.post(url, json=quick, headers=head)
            assert waited.status_code == 503 and waited.headers["retry-after"] == "10", waited.text
            assert "Another request has had this endpoint's instance" in waited.text


async def test_errors_with_an_http_status_of_their_own_get_it(app: ServedApp) -> None:
    """2026-07-28 transports §Protocol Version Header: a method the server does not implement is 404
    with -32601; a version it does not implement is 400 with -32022 and what it does; a version in the
    header and none in the body is a header mismatch. Answered 200, or as a handshake request ("start
    with initialize"), a client could not tell, nor fall back as the spec has it."""
    url = endpoint(app, "demo-orders")["url"]
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        for accept in ("application/json", "application/json, text/event-stream"):
            unknown = await client.post(
                url, json=request(3, "no/such"), headers={**headers("no/such"), "Accept": accept}
            )
            assert unknown.status_code == 404, (accept, unknown.text)
            assert unknown.json()["error"]["code"] == -32601 and unknown.json()["id"] == 3
        listed = await client.post(url, json=request(4, "tools/list"), headers=headers("tools/list"))
        assert listed.status_code == 200 and listed.headers["content-type"].startswith("text/event-stream")
        future = {
            **request(5, "tools/list"),
            "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
        }
        newer = await client.post(
            url, json=future, headers={**headers("tools/list"), "MCP-Protocol-Version": "2099-01-01"}
        )
        assert newer.status_code == 400, newer.text
        error = newer.json()["error"]
        assert error["code"] == -32022 and error["data"]["requested"] == "2099-01-01"
        assert error["data"]["supported"][0] == VERSION and "2025-11-25" in error["data"]["supported"]
        bare = {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}
        mismatched = await client.post(url, json=bare, headers=headers("tools/list"))
        assert mismatched.status_code == 400 and mismatched.json()["error"]["code"] == -32020
