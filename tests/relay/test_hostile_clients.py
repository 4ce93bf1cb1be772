"""One client against the others, over a real uvicorn and real WebSockets: identities, caps, floods,
restarts, transcript size and dropped connections, each tried the way an attacker would.

Every test here speaks from its own client address: the app trusts X-Forwarded-For from 127.0.0.1
(the default, for a reverse proxy on the same machine), so tests do not share an owner's caps.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets
from bs4 import BeautifulSoup

from app.progress.sqlite import SQLiteProgressStore
from app.web.learner import COOKIE
from app.web.state import PROGRESS_DB
from tests.support.inprocess import ServedApp
from tests.support.procs import wait_until_async
from tests.support.wsclient import EnvelopeClient, McpClient

TOKEN = "instructor-token-for-hostile-tests"
STEP = "initialize-handshake/versions"  # a step with hands-on checks
LIMIT = 20  # frames per 10 s, for this app
NEW_PER_MIN = 6  # new sessions per owner per minute, for this app


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    settings = dict(instructor_token=TOKEN, warm_pool_size=1, max_sessions=8, max_sessions_per_learner=2,
                    outside_class_share=0.5, max_messages_per_10s=LIMIT, max_restarts_per_min=2,
                    transcript_max_bytes=20_000, reconnect_grace_s=1.0,
                    new_sessions_per_min=NEW_PER_MIN)  # fmt: skip
    with ServedApp(tmp_path_factory.mktemp("hostile"), **settings) as app:
        yield app


def headers(address: str, cookie: str | None = None) -> dict[str, str]:
    out = {"X-Forwarded-For": address}
    if cookie:
        out["Cookie"] = f"{COOKIE}={cookie}"
    return out


def mint(app: ServedApp, address: str) -> str:
    """A fresh learner identity, as a console's page gets one before it opens a WebSocket."""
    reply = app.post("/api/identity", headers={"X-Forwarded-For": address})
    reply.raise_for_status()
    return reply.cookies[COOKIE]


async def test_cookieless_and_forged_cookie_clients_share_their_address_cap(app: ServedApp) -> None:
    url = app.ws_base + "/ws/demo-orders"
    address = "198.51.100.1"
    held = [await McpClient.connect(url, additional_headers=headers(address)) for _ in range(2)]
    try:
        for forged in (None, "made-up-learner-0123456789", "made-up-learner-0123456789.forgedsignature"):
            with pytest.raises(websockets.InvalidStatus) as refused:
                await McpClient.connect(url, additional_headers=headers(address, forged))
            assert refused.value.response.status_code == 503
            assert "Your network address already has 2 consoles" in refused.value.response.body.decode()
            assert refused.value.response.headers["Retry-After"] == "10"
        other = await McpClient.connect(url, additional_headers=headers("198.51.100.2"))
        await other.close()
    finally:
        for client in held:
            await client.close()


async def test_minted_identities_cannot_lock_out_a_class_member(app: ServedApp) -> None:
    url = app.ws_base + "/ws/demo-orders"
    address = "198.51.100.3"
    consoles = []
    try:
        for _ in range(4):  # the visitors' share of 8 places: each identity well under its own cap
            console = await EnvelopeClient.connect(
                url, additional_headers=headers(address, mint(app, address))
            )
            assert (await console.recv())["status"] == "ready"
            consoles.append(console)
        refused = await EnvelopeClient.connect(url, additional_headers=headers(address, mint(app, address)))
        full = await refused.recv()
        assert full["type"] == "full" and full["reason"] == "visitors_full"
        assert "kept for classes" in full["message"] and full["retry_after_s"] == 60
        await refused.ws.wait_closed()
        assert refused.ws.close_code == 1013

        with app.client() as teacher:
            assert teacher.post("/instructor/login", data={"token": TOKEN}).status_code == 303
            made = teacher.post("/instructor/classes", data={"name": "Friday", "max_sessions": ""})
            page = BeautifulSoup(teacher.get(made.headers["location"]).text, "html.parser")
            code = page.select_one("[data-join-code]").get_text()
        with app.client(headers={"X-Forwarded-For": "198.51.100.4"}) as grace:
            grace.get("/course")
            assert grace.post("/join", data={"code": code, "display_name": "Grace"}).status_code == 303
            cookie = grace.cookies[COOKIE]
        member = await EnvelopeClient.connect(url, additional_headers=headers("198.51.100.4", cookie))
        try:
            assert (await member.recv())["status"] == "ready"
        finally:
            await member.close()
    finally:
        for console in consoles:
            await console.close()


async def test_a_flood_is_answered_then_closed_and_others_keep_their_answers(app: ServedApp) -> None:
    flooder = await EnvelopeClient.connect(f"{app.ws_base}/ws/demo-orders?step={STEP}",
                                           additional_headers=headers("198.51.100.5"))  # fmt: skip
    bystander = await McpClient.connect(
        app.ws_base + "/ws/demo-orders", additional_headers=headers("198.51.100.6")
    )
    try:
        await flooder.recv_type("state")
        for n in range(1, 3 * LIMIT + 1):  # the limit, then as many again refused, then one too many
            try:
                await flooder.ws.send(json.dumps({"type": "send", "text": json.dumps({"jsonrpc": "2.0", "id": n,
                                                                                      "method": "ping"})}))  # fmt: skip
            except websockets.ConnectionClosed:
                break
        limited = []
        with pytest.raises(websockets.ConnectionClosed):
            while True:
                frame = await flooder.recv()
                if frame["type"] == "relay_error" and frame["error"]["code"] == -32001:
                    limited.append(frame)
        assert flooder.ws.close_code == 1008 and "rate limit" in flooder.ws.close_reason
        assert len(limited) == LIMIT
        assert [f["id"] for f in limited] == list(range(LIMIT + 1, 2 * LIMIT + 1))  # each error names its id
        await bystander.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        assert (await bystander.recv())["id"] == 1
    finally:
        await flooder.close()
        await bystander.close()


def padded_ping(id_: int, size: int) -> str:
    """A valid ping carrying `size` bytes of padding: costly to read, echo and record, never refused."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": "ping", "params": {"_meta": {"pad": "x" * size}}}
    )


async def test_big_messages_are_read_at_the_sessions_pace_and_nobody_else_waits(app: ServedApp) -> None:
    # Eight valid 512 KiB messages, 4 MiB, from one client at once. The default pace reads a second's
    # worth (1 MiB) at once, then 1 MiB a second: the eighth is read 2.5 s after the first at the
    # earliest. Each is answered; another client is answered meanwhile.
    sender = await McpClient.connect(app.ws_base + "/ws/demo-orders", max_size=None,
                                     additional_headers=headers("198.51.100.50"))  # fmt: skip
    bystander = await McpClient.connect(
        app.ws_base + "/ws/demo-orders", additional_headers=headers("198.51.100.51")
    )
    try:
        began = time.monotonic()
        sends = asyncio.create_task(sender_sends(sender, [padded_ping(n, 512 * 1024) for n in range(1, 9)]))
        assert await bystander.call(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
        bystander_answered = time.monotonic() - began
        replies = [await sender.recv() for _ in range(8)]
        last_answered = time.monotonic() - began
        await sends
        assert replies == [{"jsonrpc": "2.0", "id": n, "result": {}} for n in range(1, 9)]
        assert last_answered >= 2.4, f"8 x 512 KiB read in {last_answered:.2f} s: not paced"
        assert bystander_answered < last_answered
    finally:
        await sender.close()
        await bystander.close()


async def test_reconnecting_does_not_reset_the_pace(app: ServedApp) -> None:
    # Four 768 KiB messages leave the session 2 MiB past its first second's worth: whatever comes
    # next is read 2 s after the first at the earliest, on this connection or on the next.
    address = "198.51.100.52"
    cookie = mint(app, address)
    first = await McpClient.connect(app.ws_base + "/ws/demo-orders", max_size=None,
                                    additional_headers=headers(address, cookie))  # fmt: skip
    session = first.ws.response.headers["x-playground-session"]
    began = time.monotonic()
    await sender_sends(first, [padded_ping(n, 768 * 1024) for n in range(1, 5)])
    assert [(await first.recv())["id"] for _ in range(4)] == [1, 2, 3, 4]
    first.ws.transport.abort()  # dropped, to come back at once with a fresh connection
    await first.ws.wait_closed()
    again = await McpClient.connect(app.ws_base + f"/ws/demo-orders?session={session}",
                                    additional_headers=headers(address, cookie))  # fmt: skip
    try:
        assert again.ws.response.headers["x-playground-session"] == session
        assert await again.call(5, "ping") == {"jsonrpc": "2.0", "id": 5, "result": {}}
        answered = time.monotonic() - began
        assert answered >= 1.9, f"read {answered:.2f} s after the first: the reconnect reset the pace"
    finally:
        await again.close()


async def sender_sends(client: McpClient, texts: list[str]) -> None:
    for text in texts:
        await client.send(text)  # waits while the relay leaves the socket unread


async def test_a_message_of_too_many_values_is_refused_unread_in_both_modes_and_each_goes_on(
    app: ServedApp,
) -> None:
    # 20,000 empty arrays: 60 KB, and a tenth of what a 1 MiB frame of them would cost the relay to read.
    many = json.dumps(
        {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": {"rows": [[]] * 20_000}}}
    )
    console = await EnvelopeClient.connect(
        app.ws_base + "/ws/demo-orders", additional_headers=headers("198.51.100.30")
    )
    client = await McpClient.connect(
        app.ws_base + "/ws/demo-orders", additional_headers=headers("198.51.100.31")
    )
    try:
        await console.recv_type("state")
        await console.send_text(many)
        refused = await console.recv_type("relay_error")
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"]["reason"] == "message holds more than 10000 JSON values"
        assert "at most 10000" in refused["explanation"] and refused["id"] == 5
        # A string of commas and brackets is one value: sent and answered.
        await console.send(
            {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"_meta": {"csv": ",[{" * 20_000}}}
        )
        assert (await console.recv_type("sent"))["message"]["id"] == 6
        assert (await console.recv_type("received"))["message"] == {"jsonrpc": "2.0", "id": 6, "result": {}}

        await client.send(many)
        reply = await client.recv()
        assert reply["error"]["code"] == -32600 and "10000 JSON values" in reply["error"]["data"]["reason"]
        assert reply["id"] == 5
        assert await client.call(7, "ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    finally:
        await console.close()
        await client.close()


async def test_restarts_have_their_own_smaller_budget(app: ServedApp) -> None:
    console = await EnvelopeClient.connect(
        app.ws_base + "/ws/demo-orders", additional_headers=headers("198.51.100.7")
    )
    try:
        first = (await console.recv_type("state"))["session"]
        for _ in range(2):
            await console.ws.send(json.dumps({"type": "restart"}))
            while (state := await console.recv_type("state"))["status"] != "ready":
                pass
            assert state["session"] == first
        await console.ws.send(json.dumps({"type": "restart"}))
        refused = await console.recv_type("relay_error")
        assert (
            refused["error"]["code"] == -32001
            and "At most 2 restarts in 60 seconds" in refused["explanation"]
        )
        await console.send_text(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
        assert (await console.recv_type("received"))["message"]["id"] == 5  # the session goes on
    finally:
        await console.close()


async def test_a_transcript_keeps_to_its_byte_budget(app: ServedApp) -> None:
    cookie = mint(app, "198.51.100.8")
    console = await EnvelopeClient.connect(app.ws_base + "/ws/demo-orders",
                                           additional_headers=headers("198.51.100.8", cookie))  # fmt: skip
    try:
        session = (await console.recv_type("state"))["session"]
        pad = "x" * 3000
        for _ in range(12):  # about 36 kB of notifications the server ignores
            await console.send_text(
                json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"p": pad}})
            )
            await console.recv_type("sent")
        export = httpx.get(f"{app.base}/api/sessions/{session}/transcript", timeout=30,
                           headers=headers("198.51.100.8", cookie)).json()  # fmt: skip
        assert export["dropped"] > 0
        assert sum(len(e["line"]) for e in export["entries"]) <= 20_000
        assert export["entries"][-1]["seq"] == 12
    finally:
        await console.close()


@pytest.mark.slow  # the grace timer, on the real clock
async def test_a_dropped_connection_ends_its_server_when_the_grace_period_passes(app: ServedApp) -> None:
    address = "198.51.100.9"
    cookie = mint(app, address)
    console = await EnvelopeClient.connect(
        app.ws_base + "/ws/demo-orders", additional_headers=headers(address, cookie)
    )
    session = (await console.recv_type("state"))["session"]
    live_before = httpx.get(app.base + "/healthz", timeout=30).json()["sessions"]["live"]
    console.ws.transport.abort()  # the Wi-Fi went: no close frame
    transcript = f"{app.base}/api/sessions/{session}/transcript"

    def gone() -> bool:
        return httpx.get(transcript, headers=headers(address, cookie), timeout=30).status_code == 404

    assert not gone()  # kept for a reconnect at first
    assert await wait_until_async(gone, interval=0.1), "the grace period to end the dropped session"
    live = httpx.get(app.base + "/healthz", timeout=30).json()["sessions"]["live"]
    assert live == live_before - 1


def live_sessions(app: ServedApp) -> int:
    return httpx.get(app.base + "/healthz", timeout=30).json()["sessions"]["live"]


async def test_opening_and_closing_in_a_loop_is_refused_past_the_rate(app: ServedApp) -> None:
    """Each new session starts a server: one client opening and closing as fast as it can (1300
    sessions in 10 s before this limit) took the machine's CPU from every other learner."""
    url = app.ws_base + "/ws/demo-orders"
    address = "198.51.100.40"
    live_before = live_sessions(app)
    for _ in range(NEW_PER_MIN):
        client = await McpClient.connect(url, additional_headers=headers(address))
        await client.close()
        # Each place is given back before the next open: only the rate can refuse below.
        assert await wait_until_async(lambda: live_sessions(app) == live_before, interval=0.05)
    with pytest.raises(websockets.InvalidStatus) as refused:
        await McpClient.connect(url, additional_headers=headers(address))
    response = refused.value.response
    assert response.status_code == 429
    assert (
        f"Your network address has started {NEW_PER_MIN} sessions in the last minute"
        in response.body.decode()
    )
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert live_sessions(app) == live_before

    # A learner from the same address is another owner, with a rate of their own; a console over its
    # rate is told in a `full` frame, as the browser cannot read the status of a refused handshake.
    cookie = mint(app, address)
    for _ in range(NEW_PER_MIN):
        console = await EnvelopeClient.connect(url, additional_headers=headers(address, cookie))
        assert (await console.recv_type("state"))["status"] == "ready"
        await console.close()
        assert await wait_until_async(lambda: live_sessions(app) == live_before, interval=0.05)
    over = await EnvelopeClient.connect(url, additional_headers=headers(address, cookie))
    full = await over.recv()
    assert full["type"] == "full" and full["reason"] == "too_often" and 1 <= full["retry_after_s"] <= 60
    assert "You have started" in full["message"]
    await over.ws.wait_closed()
    assert over.ws.close_code == 1013


@pytest.fixture(scope="module")
def strict_app(tmp_path_factory: pytest.TempPathFactory):
    """No trusted proxy, and few new identities per address."""
    with ServedApp(tmp_path_factory.mktemp("strict"), trusted_proxies=[], new_learners_per_address=3,
                   warm_pool_size=1) as app:  # fmt: skip
        yield app


def test_new_identities_per_address_are_limited_and_forwarded_for_is_ignored_from_strangers(
    strict_app,
) -> None:  # noqa: ANN001
    made = [strict_app.post("/api/identity", headers={"X-Forwarded-For": f"203.0.113.{n}"}) for n in range(3)]
    assert all(reply.status_code == 204 and COOKIE in reply.cookies for reply in made)
    refused = strict_app.post("/api/identity", headers={"X-Forwarded-For": "203.0.113.99"})
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "Too many new visitors" in refused.json()["error"]["message"]
    form = strict_app.post("/course/name", data={"display_name": "Eve"})
    assert form.status_code == 429
    assert "Too many new visitors" in BeautifulSoup(form.text, "html.parser").get_text()
    assert httpx.get(strict_app.base + "/course", timeout=30).status_code == 200  # reading makes no identity
    with strict_app.client(cookies={COOKIE: made[0].cookies[COOKIE]}) as learner:
        named = learner.put("/api/progress/name", json={"display_name": "Ada"})
        assert named.status_code == 200  # a learner who has an identity is not affected
    assert httpx.get(strict_app.base + "/static/style.css", timeout=30).status_code == 200


def test_an_unsigned_cookie_is_no_identity_even_for_a_known_learner(app: ServedApp) -> None:
    old = "an-old-learner-id-0123456789"
    store = SQLiteProgressStore(app.data_dir / PROGRESS_DB)
    store.open()
    store.record_seen(old, STEP)
    store.close()
    where = {"X-Forwarded-For": "198.51.100.10"}
    for value in (old, "made-up-learner-0123456789"):
        reply = httpx.get(app.base + "/api/progress", cookies={COOKIE: value}, headers=where, timeout=30)
        assert reply.status_code == 200 and reply.json()["steps"][STEP]["seen"] is False
        assert COOKIE not in reply.cookies  # nothing re-issued, nothing made by a read
