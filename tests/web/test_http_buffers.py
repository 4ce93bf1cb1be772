"""What a learner's endpoint keeps for its owner and its clients, from the attacker's side: a server
that writes big notifications while a plain JSON request waits (nobody reads a GET stream), and a
client that sends long headers on every request. Each is kept within bytes, not only a count."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import httpx

from app.protocol.exchanges import HEADER_CHARS, MAX_EXCHANGE_BYTES
from app.relay.httpwire import STREAM_KEPT_BYTES
from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp
from tests.support.wsclient import init_request, tool_call
from tests.web.test_endpoints import NOTIFIER

# A server that answers a tools/call with notifications for ever, each of 300 KB.
CHATTY = NOTIFIER.replace('"n" * 2000', '"n" * 300000')
BOTH = {"Accept": "application/json, text/event-stream"}


def endpoint(app: ServedApp, source: str) -> str:
    with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as page:
        page.get("/")
        assert page.put("/api/workspace/server.py", content=source).status_code == 200
        made = page.post("/api/endpoints", json={"server": "my-server"})
        assert made.status_code == 201, made.text
        return made.json()["url"]


def test_what_waits_for_a_get_stream_nobody_opened_is_kept_within_bytes(tmp_path: Path) -> None:
    with ServedApp(tmp_path, warm_pool_size=0) as app:
        url = endpoint(app, CHATTY)
        opened = httpx.post(url, json=init_request(version="2025-11-25"), headers=BOTH, timeout=30)
        session = opened.headers["Mcp-Session-Id"]
        body = json.dumps(tool_call(2, "anything", {})).encode()
        with socket.create_connection(("127.0.0.1", app.port), timeout=30) as waiting:
            # A plain JSON request that waits for its answer: the session is heard, so read on.
            waiting.sendall((f"POST {url.removeprefix(app.base)} HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n"
                             "Accept: application/json\r\nContent-Type: application/json\r\n"
                             f"Mcp-Session-Id: {session}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)  # fmt: skip
            listener = app.state.http_sessions.by_id[session]
            deadline = time.monotonic() + 60
            while listener.session.transcript.last_seq < 20 and time.monotonic() < deadline:  # 5 MB written
                time.sleep(0.05)
            assert listener.session.transcript.last_seq >= 20
            kept = list(listener._stream)  # noqa: SLF001 - what the process holds is the point
            assert 0 < sum(map(len, kept)) <= STREAM_KEPT_BYTES
            assert listener._stream_bytes == sum(map(len, kept))  # noqa: SLF001


def test_long_headers_on_every_request_are_kept_cut_and_within_bytes(tmp_path: Path) -> None:
    with ServedApp(tmp_path, warm_pool_size=0) as app:
        with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as page:
            page.get("/")
            made = page.post("/api/endpoints", json={"server": "demo-orders"}).json()
        opened = httpx.post(made["url"], json=init_request(version="2025-11-25"), headers=BOTH, timeout=30)
        session = opened.headers["Mcp-Session-Id"]
        long = "x" * 20_000
        with httpx.Client(timeout=30) as client:
            for n in range(150):  # refused (406: no text/event-stream), and recorded
                headers = {"Mcp-Session-Id": session, "Accept": f"text/html;{long}{n}", "Last-Event-ID": long}
                assert client.get(made["url"], headers=headers).status_code == 406
        transcript = app.state.http_sessions.by_id[session].session.transcript
        kept = list(transcript.exchanges)
        assert kept[-1].number == transcript.exchanges_seen  # the newest are kept
        assert all(len(value) <= HEADER_CHARS for x in kept for value in x.request_headers.values())
        assert sum(len(json.dumps(x.to_json())) for x in kept) <= MAX_EXCHANGE_BYTES * 1.2
        with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as page:
            traffic = page.get(f"/api/endpoints/{made['id']}/traffic")
        assert traffic.status_code == 200 and len(traffic.content) < 2 * MAX_EXCHANGE_BYTES


async def test_first_stateless_requests_at_once_start_one_instance(tmp_path: Path) -> None:
    """From the side of a client with the URL: 2026-07-28 requests sent at the same moment, before the
    endpoint has an instance for them, started one each; all but one ran on unseen, holding the
    owner's places after the endpoint was ended."""
    with ServedApp(tmp_path, warm_pool_size=0) as app:
        with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as page:
            page.get("/")
            made = page.post("/api/endpoints", json={"server": "demo-modern"}).json()
        version = "2026-07-28"
        headers = {"Accept": "application/json", "MCP-Protocol-Version": version, "Mcp-Method": "ping"}
        async with httpx.AsyncClient(timeout=60) as client:
            replies = await asyncio.gather(*(
                client.post(made["url"], headers=headers, json={"jsonrpc": "2.0", "id": n, "method": "ping",
                            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": version}}})
                for n in range(6)))  # fmt: skip
        assert [reply.status_code for reply in replies] == [200] * 6, [r.text for r in replies]
        live = httpx.get(app.base + "/healthz", timeout=30).json()["sessions"]["live"]
        assert live == 1 and len(app.state.http_sessions.of_endpoint(made["id"])) == 1
