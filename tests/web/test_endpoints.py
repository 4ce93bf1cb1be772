"""Streamable HTTP endpoints over a real uvicorn: the official Python SDK client end to end (server
requests included), and the transport's rules tried with raw HTTP the way a careless or hostile
client would."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, TextContent

from app.relay.session import LINE_BYTES, READ_BYTES_PER_S, UNHEARD_BYTES
from app.web.learner import COOKIE
from tests.support.appserver import Pages
from tests.support.inprocess import ServedApp
from tests.support.procs import wait_until, wait_until_async
from tests.support.wsclient import EnvelopeClient, init_request, tool_call

ACCEPT = {"Accept": "application/json, text/event-stream"}
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("endpoints"), warm_pool_size=1, max_sessions_per_learner=3) as app:
        yield app


def make_endpoint(app: Pages, server: str = "demo-orders", browser: httpx.Client | None = None) -> dict:
    if browser is None:
        with app.client() as fresh:
            fresh.get("/")
            return make_endpoint(app, server, fresh)
    made = browser.post("/api/endpoints", json={"server": server})
    assert made.status_code == 201, made.text
    return made.json()


def live_sessions(app: ServedApp) -> int:
    return httpx.get(app.base + "/healthz", timeout=30).json()["sessions"]["live"]


def initialize(url: str) -> str:
    reply = httpx.post(url, json=init_request(version="2025-11-25"), headers=ACCEPT, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["protocolVersion"] == "2025-11-25"
    return reply.headers["Mcp-Session-Id"]


async def test_the_python_sdk_client_uses_an_endpoint_and_ends_its_session(app: ServedApp) -> None:
    endpoint = make_endpoint(app)
    assert endpoint["url"].startswith(app.base + "/mcp/") and endpoint["expires_at"] > time.time()
    before = live_sessions(app)
    async with streamable_http_client(endpoint["url"]) as (read, write), ClientSession(read, write) as client:
        result = await client.initialize()
        assert result.protocol_version == "2025-11-25" and result.server_info.name == "demo-orders"
        assert [tool.name for tool in (await client.list_tools()).tools] == ["show_order", "get_order_status"]
        call = await client.call_tool("get_order_status", {"order_id": "481516"})
        assert not call.is_error and "shipped" in call.content[0].text
        policy = await client.read_resource("policy://refunds")
        assert policy.contents[0].text.startswith("Refunds above")
        prompt = await client.get_prompt("triage", {"ticket": "warm"})
        assert len(prompt.messages) == 1
        await client.send_ping()
        assert live_sessions(app) == before + 1
    deadline = time.monotonic() + DEADLINE_S
    while live_sessions(app) != before:  # the client's DELETE ends the session and its server
        assert time.monotonic() < deadline, "the session outlived the client's DELETE"
        time.sleep(0.05)


async def test_the_servers_own_requests_reach_an_sdk_client(app: ServedApp) -> None:
    endpoint = make_endpoint(app, "demo-assistant")
    asked: list[str] = []

    async def sampling(context, params):  # noqa: ANN001, ANN202
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Walk the old town."),
                                   model="test-model")  # fmt: skip

    async with (
        streamable_http_client(endpoint["url"]) as (read, write),
        ClientSession(read, write, sampling_callback=sampling) as client,
    ):
        await client.initialize()
        call = await client.call_tool("suggest_trip", {"city": "Lisbon"})
    assert asked == ["Suggest a one-day trip in Lisbon."]
    assert "written by test-model: Walk the old town." in call.content[0].text


def test_the_transports_rules(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert httpx.post(url, json=ping, headers=ACCEPT, timeout=30).status_code == 400  # no session id yet
    session = initialize(url)
    headers = {**ACCEPT, "Mcp-Session-Id": session}
    unknown = httpx.post(url, json=ping, headers={**ACCEPT, "Mcp-Session-Id": "no-such-session"}, timeout=30)
    assert unknown.status_code == 404
    notified = httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers,
                          timeout=30)  # fmt: skip
    assert notified.status_code == 202 and notified.content == b""
    as_json = httpx.post(
        url, json=ping, headers={"Accept": "application/json", "Mcp-Session-Id": session}, timeout=30
    )
    assert as_json.headers["content-type"].startswith("application/json") and as_json.json()["id"] == 2
    as_sse = httpx.post(url, json={**ping, "id": 3}, headers=headers, timeout=30)
    assert as_sse.headers["content-type"].startswith("text/event-stream")
    assert as_sse.headers["x-accel-buffering"] == "no"  # a proxy in front passes each event on at once
    data = [line[6:] for line in as_sse.text.splitlines() if line.startswith("data: ")]
    assert [json.loads(d)["id"] for d in data] == [3]
    wrong_version = httpx.post(url, json={**ping, "id": 4}, headers={**headers, "MCP-Protocol-Version": "2025-03-26"},
                               timeout=30)  # fmt: skip
    assert wrong_version.status_code == 400 and "negotiated" in wrong_version.json()["error"]["message"]
    right_version = httpx.post(url, json={**ping, "id": 5}, headers={**headers, "MCP-Protocol-Version": "2025-11-25",
                                                                      "Accept": "application/json"}, timeout=30)  # fmt: skip
    assert right_version.json()["id"] == 5
    assert httpx.get(url, headers={"Mcp-Session-Id": session}, timeout=30).status_code == 406
    for method in ("GET", "DELETE"):  # the version rule holds for every method of the session
        wrong = httpx.request(
            method, url, headers={**headers, "MCP-Protocol-Version": "1999-01-01"}, timeout=30
        )
        assert wrong.status_code == 400 and "negotiated" in wrong.text, method
    for method in ("PUT", "PATCH", "OPTIONS", "HEAD"):  # the transport has three methods, and says so
        other = httpx.request(method, url, headers=headers, timeout=30)
        assert other.status_code == 405 and other.headers["allow"] == "POST, GET, DELETE", method
    assert httpx.delete(url, headers={"Mcp-Session-Id": session}, timeout=30).status_code == 204
    assert httpx.post(url, json={**ping, "id": 6}, headers=headers, timeout=30).status_code == 404


def test_bad_input_gets_a_jsonrpc_error_and_the_session_goes_on(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    session = initialize(url)
    headers = {"Accept": "application/json", "Mcp-Session-Id": session, "Content-Type": "application/json"}
    for body, code in (("{bad", -32700), ('{"jsonrpc": "2.0", "id": 9, "method": "ping",}', -32700),
                       ("[1, 2]", -32600), ('{"jsonrpc": "1.0", "id": 9, "method": "ping"}', -32600)):  # fmt: skip
        reply = httpx.post(url, content=body, headers=headers, timeout=30)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == code, body
    fine = httpx.post(url, json={"jsonrpc": "2.0", "id": 10, "method": "ping"}, headers=headers, timeout=30)
    assert fine.status_code == 200 and fine.json() == {"jsonrpc": "2.0", "id": 10, "result": {}}


def test_origin_token_and_ownership(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    foreign = httpx.post(
        url, json=init_request(), headers={**ACCEPT, "Origin": "https://evil.example"}, timeout=30
    )
    assert foreign.status_code == 403
    wrong = httpx.post(url[:-3] + "abc", json=init_request(), headers=ACCEPT, timeout=30)
    assert wrong.status_code == 404
    with app.client() as alice, app.client() as bob:
        alice.get("/")
        bob.get("/")
        made = make_endpoint(app, browser=alice)
        assert [e["id"] for e in alice.get("/api/endpoints").json()] == [made["id"]]
        assert "url" not in alice.get("/api/endpoints").json()[0]  # the token was shown once, not kept
        assert bob.get("/api/endpoints").json() == []
        assert bob.delete(f"/api/endpoints/{made['id']}").status_code == 404
        session = initialize(made["url"])
        assert alice.delete(f"/api/endpoints/{made['id']}").status_code == 200
        gone = httpx.post(made["url"], json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                          headers={**ACCEPT, "Mcp-Session-Id": session}, timeout=30)  # fmt: skip
        assert gone.status_code == 404
        for _ in range(3):
            make_endpoint(app, browser=alice)
        capped = alice.post("/api/endpoints", json={"server": "demo-orders"})
        assert capped.status_code == 409 and "already have 3 endpoints" in capped.json()["error"]["message"]
        assert alice.post("/api/endpoints", json={"server": "../../bin/sh"}).status_code == 404
    assert "/mcp/…" in app.log_path.read_text() and url.rsplit("/", 1)[1] not in app.log_path.read_text()


async def test_endpoint_sessions_count_against_the_owners_cap(app: ServedApp) -> None:
    with app.client() as browser:
        browser.post("/api/identity")  # as the console's page does before it opens a WebSocket
        cookie = browser.cookies["playground_learner"]
        endpoint = make_endpoint(app, browser=browser)
        sessions = [initialize(endpoint["url"]) for _ in range(2)]
        console = await EnvelopeClient.connect(app.ws_base + "/ws/demo-orders",
                                               additional_headers={"Cookie": f"playground_learner={cookie}"})  # fmt: skip
        try:
            assert (await console.recv())["status"] == "ready"  # the owner's third place
            refused = httpx.post(endpoint["url"], json=init_request(), headers=ACCEPT, timeout=30)
            assert refused.status_code == 503 and "3 consoles open" in refused.json()["error"]["message"]
        finally:
            await console.close()
        for session in sessions:
            httpx.delete(endpoint["url"], headers={"Mcp-Session-Id": session}, timeout=30)


async def test_the_sdk_client_speaks_2026_07_28_statelessly_to_one_instance(app: ServedApp) -> None:
    from mcp import Client

    endpoint = make_endpoint(app)
    before = live_sessions(app)
    async with Client(endpoint["url"]) as client:  # the SDK's own choice: server/discover first
        assert client.protocol_version == "2026-07-28"
        assert [tool.name for tool in (await client.list_tools()).tools] == ["show_order", "get_order_status"]
        call = await client.call_tool("get_order_status", {"order_id": "481516"})
        assert "shipped" in call.content[0].text
    assert live_sessions(app) == before + 1  # one instance served every stateless request


async def test_clients_of_one_endpoint_share_its_stateless_instance_without_mixing(app: ServedApp) -> None:
    """Two clients of one endpoint (an IDE and the Inspector, say) number their requests alike, the
    SDK's way, and ask at the same moment: each gets its own answer under its own id, with the
    progress of its own request only. The relay gave the second "id in use" (400), and the SDK's
    second client fell back to an older revision."""
    from mcp import Client

    url = make_endpoint(app, "demo-monitor")["url"]
    version = "2026-07-28"
    headers = {
        **ACCEPT,
        "MCP-Protocol-Version": version,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "run_diagnostics",
    }

    def diagnostics(steps: int) -> dict:
        meta = {"io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": 0}  # fmt: skip
        return {"jsonrpc": "2.0", "id": 0, "method": "tools/call",
                "params": {"name": "run_diagnostics", "arguments": {"steps": steps, "step_seconds": 0.5},
                           "_meta": meta}}  # fmt: skip

    async with httpx.AsyncClient(timeout=60) as client:
        replies = await asyncio.gather(*(client.post(url, json=diagnostics(steps), headers=headers)
                                         for steps in (2, 4)))  # fmt: skip
    for reply, steps in zip(replies, (2, 4), strict=True):
        assert reply.status_code == 200, reply.text
        events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
        progress = [event["params"] for event in events if event.get("method") == "notifications/progress"]
        assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
            (0, n, steps) for n in range(1, steps + 1)
        ]
        assert events[-1]["id"] == 0 and f"All {steps} sensors" in events[-1]["result"]["content"][0]["text"]

    async def sdk_client(steps: int) -> tuple[str | None, list[float], str]:
        heard: list[float] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            heard.append(done)

        async with Client(url) as client:
            call = await client.call_tool("run_diagnostics", {"steps": steps, "step_seconds": 0.3},
                                          progress_callback=progress)  # fmt: skip
            return client.protocol_version, heard, call.content[0].text

    both = await asyncio.gather(sdk_client(2), sdk_client(3))
    assert both == [
        (version, [1, 2], "All 2 sensors answered."),
        (version, [1, 2, 3], "All 3 sensors answered."),
    ]


def test_stateless_headers_must_say_what_the_body_says(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "get_order_status", "arguments": {"order_id": "481516"}, "_meta": meta}}  # fmt: skip
    right = {
        **ACCEPT,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "get_order_status",
    }
    for wrong in (
        {"MCP-Protocol-Version": "2025-11-25"},
        {"Mcp-Method": "tools/list"},
        {"Mcp-Name": "other"},
    ):
        reply = httpx.post(
            url, json=body, headers={**right, **wrong, "Accept": "application/json"}, timeout=30
        )
        assert reply.status_code == 400, wrong
        assert reply.json()["error"]["code"] == -32020 and reply.json()["id"] == 7, wrong  # HeaderMismatch
    fine = httpx.post(url, json=body, headers={**right, "Accept": "application/json"}, timeout=30)
    assert fine.status_code == 200 and "Mcp-Session-Id" not in fine.headers
    assert "shipped" in fine.json()["result"]["content"][0]["text"]


def test_an_oversize_body_is_refused_and_the_session_goes_on(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    session = initialize(url)
    headers = {"Accept": "application/json", "Mcp-Session-Id": session, "Content-Type": "application/json"}
    padded = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": {"pad": "x" * 1_100_000}}}
    )
    reply = httpx.post(url, content=padded, headers=headers, timeout=30)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32600 and reply.json()["id"] == 3
    assert "limit" in reply.json()["error"]["data"]["reason"]
    huge = httpx.post(url, content=b"x" * (5 * 1024 * 1024), headers=headers, timeout=30)
    assert huge.status_code == 413
    fine = httpx.post(url, json={"jsonrpc": "2.0", "id": 4, "method": "ping"}, headers=headers, timeout=30)
    assert fine.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}


@pytest.mark.slow  # the client read pace, on the real clock
async def test_big_requests_side_by_side_are_read_at_the_sessions_pace(app: ServedApp) -> None:
    # Eight valid 512 KiB pings sent at once on one session: each waits for its turn before it is read
    # (1 MiB at once, then 1 MiB a second), so the last is answered 2.5 s after the first at the
    # earliest. Every one is answered, and another session's ping meanwhile.
    browser = app.client()
    browser.get("/")
    endpoint = make_endpoint(app, browser=browser)
    url = endpoint["url"]
    sender, other = initialize(url), initialize(url)
    base = {"Accept": "application/json", "Content-Type": "application/json"}

    async def ping(client: httpx.AsyncClient, session: str, id_: int, pad: int) -> tuple[dict, float]:
        body = json.dumps(
            {"jsonrpc": "2.0", "id": id_, "method": "ping", "params": {"_meta": {"pad": "x" * pad}}}
        )
        reply = await client.post(url, content=body, headers={**base, "Mcp-Session-Id": session})
        assert reply.status_code == 200, reply.text
        return reply.json(), time.monotonic() - began

    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=20)) as client:
        began = time.monotonic()
        big = [asyncio.create_task(ping(client, sender, n, 512 * 1024)) for n in range(1, 9)]
        small, small_at = await ping(client, other, 1, 0)
        answered = await asyncio.gather(*big)
    assert small == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert sorted(reply["id"] for reply, _ in answered) == list(range(1, 9))
    last = max(at for _, at in answered)
    assert last >= 2.4, f"8 x 512 KiB read in {last:.2f} s: not paced"
    assert small_at < last

    # Showing the session's traffic sends its lines back (the transcript keeps three of the pings, 1.5
    # MiB), at the same pace: the second look waits for the first.
    began = time.monotonic()
    try:
        for _ in range(2):
            traffic = browser.get(f"/api/endpoints/{endpoint['id']}/traffic", params={"session": sender})
            assert traffic.status_code == 200
            assert sum(len(entry["line"]) for entry in traffic.json()["entries"]) >= 1.5 * 1024 * 1024
    finally:
        browser.close()
    took = time.monotonic() - began
    assert took >= 2.8, f"two looks at 1.5 MiB of traffic in {took:.2f} s: not paced"


async def test_an_id_still_waiting_for_its_answer_is_not_taken_by_another_request(app: ServedApp) -> None:
    # Two requests with one id would share one answer: the second is refused, the first is answered.
    with app.client() as browser:
        browser.get("/")
        endpoint = make_endpoint(app, "demo-flaky", browser)
        url = endpoint["url"]
        session = initialize(url)
        headers = {"Accept": "application/json", "Mcp-Session-Id": session}
        slow = tool_call(5, "slow_reply", {"seconds": 2})
        async with httpx.AsyncClient(timeout=60, headers=headers) as client:
            first = asyncio.create_task(client.post(url, json=slow))

            def sent() -> bool:
                traffic = browser.get(
                    f"/api/endpoints/{endpoint['id']}/traffic", params={"session": session}
                ).json()
                return any(entry["message"].get("id") == 5 for entry in traffic["entries"])

            assert await wait_until_async(sent, interval=0.05), "the slow call never reached the server"
            again = await client.post(url, json={"jsonrpc": "2.0", "id": 5, "method": "ping"})
            assert again.status_code == 400
            assert again.json()["id"] == 5 and "still waiting" in again.json()["error"]["data"]["reason"]
            answered = await first
        assert answered.status_code == 200 and answered.json()["id"] == 5 and "result" in answered.json()
        later = httpx.post(
            url, json={"jsonrpc": "2.0", "id": 5, "method": "ping"}, headers=headers, timeout=30
        )
        assert later.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}  # answered ids may come again


def test_a_body_of_too_many_values_is_refused_unread_and_the_session_goes_on(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    session = initialize(url)
    headers = {"Accept": "application/json", "Mcp-Session-Id": session, "Content-Type": "application/json"}
    many = {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": {"rows": [[]] * 20_000}}}
    reply = httpx.post(url, json=many, headers=headers, timeout=30)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32600
    assert reply.json()["error"]["data"]["reason"] == "message holds more than 10000 JSON values"
    # Commas and brackets inside a string are one value: forwarded and answered.
    text = {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": {"csv": "a,[b],{c}," * 20_000}}}
    fine = httpx.post(url, json=text, headers=headers, timeout=30)
    assert fine.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}


# A learner's server that answers initialize, and answers a tools/call with notifications for ever.
NOTIFIER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "n", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif message.get("method") == "tools/call":
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "n" * 2000}}
        while True:
            sys.stdout.write(json.dumps(note) + "\\n")
            sys.stdout.flush()
"""
NOTIFIER_LINE_BYTES = 2100  # about: its notification, 2000 "n"s in a JSON-RPC message


def server_messages(app: ServedApp) -> int:
    text = httpx.get(app.base + "/metrics", timeout=30).text
    found = re.search(r'^playground_relay_messages_total\{direction="server"\} (\S+)$', text, re.MULTILINE)
    assert found, "the relay's message counter"
    return int(float(found.group(1)))


@pytest.mark.slow  # the server read pace, on the real clock
def test_an_sse_client_that_reads_nothing_holds_back_its_server_not_the_web_process(app: ServedApp) -> None:
    # Kept for the response stream, every notification would grow the web process 3 MiB a second for
    # as long as the server writes, and on after the client has gone.
    with app.client(cookies={COOKIE: app.learner_cookie("slow-reader")}) as browser:
        browser.get("/")
        assert browser.put("/api/workspace/server.py", content=NOTIFIER).status_code == 200
        url = make_endpoint(app, "my-server", browser)["url"]
    session = initialize(url)
    body = json.dumps(tool_call(2, "anything", {})).encode()
    with socket.create_connection(("127.0.0.1", app.port), timeout=30) as sock:
        sock.sendall(
            (f"POST {url.removeprefix(app.base)} HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n"
             f"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
             f"Mcp-Session-Id: {session}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        )  # fmt: skip
        seen: list[int] = []

        def steady() -> bool:  # the same count over four looks, 1.5 s: not a busy moment of the machine
            seen.append(server_messages(app))
            return len(seen) >= 4 and len(set(seen[-4:])) == 1

        # The server writes for ever and the client reads nothing: soon nothing more is read from it.
        assert wait_until(steady, timeout=60, interval=0.5), f"still reading the server: {seen[-1]} messages"
        held = seen[-1]
        assert not wait_until(lambda: server_messages(app) > held + 10, timeout=3, interval=0.5)
        # The client reads on (what the buffers on the way hold first): so does the session.
        received = 0
        while received < 64 * 1024 * 1024 and server_messages(app) <= held + 100:
            chunk = 0
            while chunk < 512 * 1024:
                chunk += len(sock.recv(65536))
            received += chunk
        assert server_messages(app) > held + 100, f"{received} bytes read"
    # The client goes away: nothing more is kept for its stream, and nobody hears the session now
    # (no request waits, no GET stream is open): its server is read no further than a small buffer,
    # and what the pace let through while the web process learnt that the client had gone (it
    # reads on at the pace until then: up to half a second of it is allowed, on a busy machine).
    gone = server_messages(app)
    seen.clear()
    assert wait_until(steady, timeout=60, interval=0.5), f"still reading the server: {seen[-1]} messages"
    lag_lines = READ_BYTES_PER_S * 0.5 / (LINE_BYTES + NOTIFIER_LINE_BYTES)
    assert seen[-1] - gone <= UNHEARD_BYTES / LINE_BYTES + 10 + lag_lines, seen[-1] - gone
    # A GET stream hears it again: the server is read on.
    stream_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    with httpx.stream("GET", url, headers=stream_headers, timeout=30) as stream:
        assert stream.status_code == 200
        for _ in stream.iter_bytes():
            if server_messages(app) > seen[-1] + 100:
                break
    assert server_messages(app) > seen[-1] + 100


def padded(id_: int, method: str) -> dict:
    """A valid request of 768 KiB: four of them take the default pace 2 s past its first 1 MiB."""
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": {"_meta": {"pad": "x" * 786_432}}}


def test_requests_past_the_rate_limit_get_429_with_their_id(app: ServedApp) -> None:
    url = make_endpoint(app)["url"]
    session = initialize(url)  # the initialize counts too
    headers = {"Accept": "application/json", "Mcp-Session-Id": session}
    limited = None
    with httpx.Client(timeout=30) as client:
        for n in range(2, 150):  # the default limit is 100 frames in 10 s
            reply = client.post(url, json={"jsonrpc": "2.0", "id": n, "method": "ping"}, headers=headers)
            if reply.status_code != 200:
                limited = (n, reply)
                break
    assert limited is not None, "no request was ever limited"
    n, reply = limited
    assert n == 101 and reply.status_code == 429
    assert reply.json()["error"]["code"] == -32001 and reply.json()["id"] == n

    # The limit spent with small requests, big ones are still read at the session's pace before
    # they are refused: four of 768 KiB, the fourth read 2 s after the first at the earliest.
    began = time.monotonic()
    with httpx.Client(timeout=60) as client:
        for n in range(200, 204):
            reply = client.post(url, json=padded(n, "ping"), headers=headers)
            assert reply.status_code == 429 and reply.json()["id"] == n, reply.text[:200]
    took = time.monotonic() - began
    assert took >= 1.9, f"4 x 768 KiB refused in {took:.2f} s: not paced"


def test_requests_naming_no_session_are_counted_and_paced_per_endpoint(app: ServedApp) -> None:
    # Before there is a session, an endpoint's requests are read under its own rate limit and pace:
    # unlimited, one client posting 1 MiB initialize bodies back to back took 82% of the web process.
    limited_url, paced_url, other_url = (make_endpoint(app)["url"] for _ in range(3))
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    with httpx.Client(timeout=60, headers=headers) as client:
        for n in range(1, 101):  # the default limit is 100 frames in 10 s; these are read, then refused
            reply = client.post(limited_url, json={"jsonrpc": "2.0", "id": n, "method": "tools/list"})
            assert reply.status_code == 400 and "Start with an initialize" in reply.json()["error"]["message"]
        limited = client.post(limited_url, json={"jsonrpc": "2.0", "id": 101, "method": "tools/list"})
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == -32001 and limited.json()["id"] == 101
        assert client.post(other_url, json=init_request(version="2025-11-25")).status_code == 200

        # Four 768 KiB bodies: the fourth is read 2 s after the first at the earliest (1 MiB at once,
        # then 1 MiB a second). Each is answered, and a session starts after them.
        began = time.monotonic()
        for n in range(1, 5):
            assert client.post(paced_url, json=padded(n, "tools/list")).status_code == 400
        took = time.monotonic() - began
        assert took >= 1.9, f"4 x 768 KiB read in {took:.2f} s: not paced"
        assert client.post(paced_url, json=init_request(version="2025-11-25")).status_code == 200


@pytest.mark.parametrize("first", ["initialize", "stateless"])
async def test_a_session_starting_as_its_endpoint_is_deleted_does_not_outlive_it(
    app: ServedApp, first: str
) -> None:
    """From the side of a learner who makes an endpoint, sends its first request and deletes it at
    once, in a loop: the session starting meanwhile was kept after the delete had ended the others,
    reachable by nobody and holding the owner's place until the idle timer (10 minutes)."""
    with app.client() as page:
        page.get("/")
        made = page.post("/api/endpoints", json={"server": "demo-orders"}).json()
        before = live_sessions(app)
        sessions = app.state.sessions
        opening, proceed = threading.Event(), threading.Event()  # the app runs on a loop of its own
        real_open = sessions.open

        async def held_open(server, owner):  # noqa: ANN001, ANN202 - the real open, held at its end
            opened = await real_open(server, owner)
            opening.set()
            await asyncio.to_thread(proceed.wait, DEADLINE_S)
            return opened

        sessions.open = held_open
        try:
            if first == "initialize":
                body, headers = init_request(version="2025-11-25"), ACCEPT
            else:
                meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
                headers = {**ACCEPT, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
            async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
                asked = asyncio.create_task(client.post(made["url"], json=body, headers=headers))
                assert await asyncio.to_thread(opening.wait, DEADLINE_S)
                deleted = await asyncio.to_thread(page.delete, f"/api/endpoints/{made['id']}")
                assert deleted.status_code == 200
                proceed.set()
                answer = await asyncio.wait_for(asked, DEADLINE_S)
        finally:
            sessions.open = real_open
    assert answer.status_code == 404, answer.text
    assert await wait_until_async(lambda: live_sessions(app) == before, DEADLINE_S), "the session ended"
    assert app.state.http_sessions.of_endpoint(made["id"]) == []
