"""The console's envelope mode over a real uvicorn: typed frames, pairing, findings, state, reconnects."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.support.inprocess import ServedApp
from tests.support.wsclient import EnvelopeClient, init_request


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("envelope-app")) as app:
        yield app


async def connect(app: ServedApp, server: str = "demo-orders", query: str = "", learner: str | None = None,
                  subprotocol: str | None = "playground.v1") -> EnvelopeClient:  # fmt: skip
    headers = {"Cookie": f"playground_learner={learner}"} if learner else None
    return await EnvelopeClient.connect(
        f"{app.ws_base}/ws/{server}{query}", subprotocol=subprotocol, additional_headers=headers
    )


@pytest.mark.parametrize("subprotocol", ["playground.v1", None])
async def test_state_then_sent_and_received_paired_with_round_trip(
    app: ServedApp, subprotocol: str | None
) -> None:
    client = await connect(app, subprotocol=subprotocol)
    try:
        state = await client.recv()
        assert state["type"] == "state" and state["status"] == "ready" and state["server"] == "demo-orders"
        assert state["session"] and state["exit_status"] is None
        typed = json.dumps(init_request(), indent=2)
        await client.send_text(typed)
        sent = await client.recv_type("sent")
        assert sent["seq"] == 1
        assert sent["line"] == json.dumps(json.loads(typed), separators=(",", ":"))
        assert sent["message"] == json.loads(typed)
        received = await client.recv_type("received")
        assert received["answers"] == 1 and received["seq"] == 2
        assert received["rtt_ms"] > 0
        assert received["message"]["result"]["serverInfo"]["name"] == "demo-orders"
        assert received["raw"].startswith('{"jsonrpc":"2.0","id":1,"result"')
        assert any("Now send notifications/initialized" in f["text"] for f in received["findings"])
    finally:
        await client.close()


async def test_bad_input_gets_a_relay_error_and_nothing_is_sent(app: ServedApp) -> None:
    client = await connect(app, learner=app.learner_cookie("a"))
    try:
        session = (await client.recv_type("state"))["session"]
        await client.send_text('{"jsonrpc": "2.0", "id": 1, "method": "ping",}')
        error = await client.recv_type("relay_error")
        assert error["error"]["code"] == -32700 and error["seq"] == 1
        assert "line 1" in error["explanation"] and "Nothing was sent" in error["explanation"]
        await client.ws.send("not even an envelope")  # the console's own mistakes are not the learner's
        not_envelope = await client.recv_type("relay_error")
        assert (
            not_envelope["explanation"].startswith("The console speaks frames")
            and not_envelope["seq"] is None
        )
        await client.ws.send(json.dumps({"type": "send"}))
        assert "needs" in (await client.recv_type("relay_error"))["explanation"]
        await client.ws.send(b"\x01\x02")
        binary = await client.recv_type("relay_error")
        assert binary["error"]["data"]["reason"] == "binary frame" and binary["seq"] == 2
        await client.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert (await client.recv_type("sent"))["seq"] == 3
        assert (await client.recv_type("received"))["message"] == {"jsonrpc": "2.0", "id": 5, "result": {}}
        transcript = httpx.get(
            f"{app.base}/api/sessions/{session}/transcript",
            cookies={"playground_learner": app.learner_cookie("a")},
        ).json()
        kinds = [(e["direction"], e["line"][:12]) for e in transcript["entries"]]
        # The refused frames are on record, marked as the relay's; only the ping reached the server.
        assert kinds[0] == ("relay", '{"jsonrpc": ') and kinds[1] == ("relay", "(a binary fr")
        assert [e["direction"] for e in transcript["entries"]][2:] == ["client", "server"]
        assert transcript["entries"][0]["message"]["error"]["code"] == -32700
    finally:
        await client.close()


async def test_a_console_frame_of_many_values_is_not_read_and_the_console_goes_on(app: ServedApp) -> None:
    # 3.7 MiB of `[],[],...` beside the frame's type, under the 4 MiB frame cap: parsing it took the web
    # process 92 ms, so ten a second from one console took almost a core.
    client = await connect(app, learner=app.learner_cookie("many-values"))
    try:
        await client.recv_type("state")
        await client.ws.send('{"type":"send","x":[' + ",".join(["[]"] * 1_300_000) + "]}")
        refused = await client.recv_type("relay_error")
        assert refused["explanation"].startswith("The console speaks frames") and refused["seq"] is None
        # A message full of commas and brackets is one string in its frame: read, sent and answered.
        await client.send(
            {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": {"csv": ",[{" * 9000}}}
        )
        assert (await client.recv_type("sent"))["message"]["id"] == 5
        assert (await client.recv_type("received"))["message"] == {"jsonrpc": "2.0", "id": 5, "result": {}}
    finally:
        await client.close()


async def test_findings_explain_the_message(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.recv_type("state")
        bad_init = init_request()
        del bad_init["params"]["clientInfo"]
        await client.send(bad_init)
        sent = await client.recv_type("sent")
        assert {
            "level": "error",
            "text": "params.clientInfo is required in 2025-06-18.",
            "ref": "spec 2025-06-18",
        } in sent["findings"]
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        note = await client.recv_type("sent")
        assert any("no id" in f["text"] for f in note["findings"])
        await client.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
        note = await client.recv_type("sent")
        assert any("ignores notifications it does not know" in f["text"] for f in note["findings"])
    finally:
        await client.close()


async def test_counter_offer_is_explained(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.recv_type("state")
        await client.send(init_request(version="1999-01-01"))
        received = await client.recv_type("received")
        assert received["message"]["result"]["protocolVersion"] == "2025-11-25"
        assert any("counter-offered 2025-11-25" in f["text"] for f in received["findings"])
    finally:
        await client.close()


async def test_non_json_server_line_stderr_and_exit(app: ServedApp) -> None:
    client = await connect(app, server="demo-flaky")
    try:
        await client.recv_type("state")
        await client.send(init_request())
        await client.recv_type("received")
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.start_tool(2, "garbled_line")
        garbled = await client.recv_type("received")
        assert garbled["message"] is None and garbled["answers"] is None
        assert (
            garbled["findings"][0]["level"] == "error"
            and "not a JSON-RPC message" in garbled["findings"][0]["text"]
        )
        await client.start_tool(3, "crash", status=4)
        stderr = await client.recv_type("stderr")
        assert "crashing on purpose" in stderr["text"]
        state = await client.recv_type("state")
        assert state["status"] == "exited"
        assert state["exit_status"]["code"] == 4 and "exited with status 4" in state["reason"]
    finally:
        await client.close()


async def test_restart_gives_a_fresh_server(app: ServedApp) -> None:
    client = await connect(app)
    try:
        await client.recv_type("state")
        await client.send(init_request())
        await client.recv_type("received")
        await client.ws.send(json.dumps({"type": "restart"}))
        assert (await client.recv_type("state"))["status"] == "starting"
        assert (await client.recv_type("state"))["status"] == "ready"
        await client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert (await client.recv_type("sent"))["seq"] == 1  # a fresh transcript
        assert (await client.recv_type("received"))["message"]["error"]["code"] == -32602  # not initialized
    finally:
        await client.close()


async def test_reconnect_within_grace_finds_the_transcript_and_only_its_owner_reads_it(
    app: ServedApp,
) -> None:
    first = await connect(app, learner=app.learner_cookie("a"))
    state = await first.recv_type("state")
    session = state["session"]
    await first.send(init_request())
    await first.recv_type("received")
    first.ws.transport.abort()  # a Wi-Fi blip: the connection drops without a goodbye
    await first.ws.wait_closed()

    again = await connect(app, query=f"?session={session}&last_seq=0", learner=app.learner_cookie("a"))
    try:
        resumed = await again.recv_type("state")
        assert resumed["session"] == session and resumed["resumed"] is True
        replayed = [await again.recv_type("sent"), await again.recv_type("received")]
        assert [f["seq"] for f in replayed] == [1, 2] and all(f["replayed"] for f in replayed)
        await again.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await again.recv_type("sent"))["seq"] == 3

        owner = httpx.get(
            f"{app.base}/api/sessions/{session}/transcript",
            cookies={"playground_learner": app.learner_cookie("a")},
        )
        assert owner.status_code == 200
        body = owner.json()
        assert body["revision"] == "2025-06-18"
        assert [e["direction"] for e in body["entries"]][:2] == ["client", "server"]
        stranger = httpx.get(
            f"{app.base}/api/sessions/{session}/transcript",
            cookies={"playground_learner": app.learner_cookie("b")},
        )
        assert stranger.status_code == 404
        nobody = httpx.get(f"{app.base}/api/sessions/{session}/transcript")
        assert nobody.status_code == 404
    finally:
        await again.close()


@pytest.mark.slow  # the replay pace, on the real clock
async def test_whole_replays_and_exports_in_a_loop_wait_their_turn(app: ServedApp) -> None:
    # Sending 1.5 MiB of a transcript back costs what reading it did, and is paced the same way (1 MiB
    # at once, then 1 MiB a second): unpaced, a client reconnecting in a loop for the whole replay
    # took the web process's core, and so did a loop of exports. Each still gets all of it.
    cookie = app.learner_cookie("replayer")
    headers = {"Cookie": f"playground_learner={cookie}"}
    url = f"{app.ws_base}/ws/demo-orders"
    first = await EnvelopeClient.connect(url, additional_headers=headers, max_size=None)
    session = (await first.recv_type("state"))["session"]
    pad = "x" * (256 * 1024)
    for _ in range(6):
        await first.send_text(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"p": pad}})
        )
        await first.recv_type("sent")
    first.ws.transport.abort()
    await first.ws.wait_closed()

    began = time.monotonic()
    replayed_at = []
    for _ in range(3):
        again = await EnvelopeClient.connect(f"{url}?session={session}&last_seq=0", additional_headers=headers,
                                             max_size=None)  # fmt: skip
        assert (await again.recv_type("state"))["resumed"] is True
        frames = [await again.recv_type("sent") for _ in range(6)]
        replayed_at.append(time.monotonic() - began)
        assert [f["seq"] for f in frames] == [1, 2, 3, 4, 5, 6] and all(f["replayed"] for f in frames)
        again.ws.transport.abort()
        await again.ws.wait_closed()
    # The first replay leaves the session 0.5 MiB past its pace at least, the second 1.5 MiB more.
    assert replayed_at[2] >= 1.9, f"three whole replays in {replayed_at[2]:.2f} s: not paced"

    began = time.monotonic()
    with httpx.Client(cookies={"playground_learner": cookie}, timeout=60) as browser:
        for _ in range(3):  # each whole, page after page (a page ends past 256 KiB of lines)
            entries, after = [], 0
            while after is not None:
                export = browser.get(f"{app.base}/api/sessions/{session}/transcript", params={"after": after})
                assert export.status_code == 200
                entries += export.json()["entries"]
                after = export.json()["next_after"]
            assert [entry["seq"] for entry in entries] == [1, 2, 3, 4, 5, 6]
    took = time.monotonic() - began
    assert took >= 3.2, f"three exports of 1.5 MiB in {took:.2f} s: not paced"


async def test_another_learner_cannot_take_over_a_session(app: ServedApp) -> None:
    first = await connect(app, learner=app.learner_cookie("a"))
    session = (await first.recv_type("state"))["session"]
    first.ws.transport.abort()
    await first.ws.wait_closed()
    thief = await connect(app, query=f"?session={session}", learner=app.learner_cookie("b"))
    try:
        state = await thief.recv_type("state")
        assert state["session"] != session and state["resumed"] is False
    finally:
        await thief.close()


async def test_a_full_relay_sends_full_then_closes_1013(tmp_path) -> None:  # noqa: ANN001
    with ServedApp(tmp_path, max_sessions=1, outside_class_share=1.0) as small:  # the global cap alone
        first = await connect(small)
        try:
            await first.recv_type("state")
            second = await connect(small)
            full = await second.recv()
            assert full["type"] == "full" and full["retry_after_s"] > 0
            await second.ws.wait_closed()
            assert second.ws.close_code == 1013
        finally:
            await first.close()


async def test_a_goodbye_ends_the_session_at_once_and_frees_its_place(app: ServedApp) -> None:
    first = await connect(app, learner=app.learner_cookie("a"))
    session = (await first.recv_type("state"))["session"]
    await first.close()  # close code 1000: the page was left on purpose
    again = await connect(app, query=f"?session={session}", learner=app.learner_cookie("a"))
    try:
        state = await again.recv_type("state")
        assert state["session"] != session and state["resumed"] is False
    finally:
        await again.close()
    gone = httpx.get(
        f"{app.base}/api/sessions/{session}/transcript",
        cookies={"playground_learner": app.learner_cookie("a")},
    )
    assert gone.status_code == 404


async def test_odd_values_where_the_explanations_look_things_up_are_explained_not_fatal(
    app: ServedApp,
) -> None:
    # Each passes the relay's JSON-RPC checks and reaches the server; explaining it must not end the
    # connection (a list or an object cannot be looked up in a table of known values).
    client = await connect(app)
    try:
        await client.recv_type("state")
        for request_id, version in enumerate((["2025-11-25"], {"v": 1}), start=1):
            params = {"protocolVersion": version}
            await client.send({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params})
            sent = await client.recv_type("sent")
            assert sent["message"]["params"] == params and isinstance(sent["findings"], list)
            assert (await client.recv_type("received"))["message"]["id"] == request_id
        await client.send(init_request(id_=9))
        assert (await client.recv_type("received"))["message"]["result"]["protocolVersion"] == "2025-06-18"
    finally:
        await client.close()


# --- the console as an MCP Apps host (docs/websocket.md, "MCP Apps") ------------------------------


async def test_app_messages_are_recorded_and_an_apps_call_goes_under_a_fresh_id(app: ServedApp) -> None:
    learner = app.learner_cookie("apps")
    client = await connect(app, learner=learner)
    try:
        session = (await client.recv_type("state"))["session"]
        await client.send(init_request())
        await client.recv_type("received")
        app_init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "ui/initialize",
            "params": {"protocolVersion": "2026-01-26"},
        }
        await client.ws.send(json.dumps({"type": "app", "from": "app", "text": json.dumps(app_init)}))
        heard = await client.recv_type("app")
        assert heard["from"] == "app" and heard["message"] == app_init and heard["seq"] == 3
        reply = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2026-01-26"}}
        await client.ws.send(json.dumps({"type": "app", "from": "host", "text": json.dumps(reply)}))
        assert (await client.recv_type("app"))["from"] == "host"
        # The learner takes the id the relay would try first for the next call (the seq it will have).
        await client.send({"jsonrpc": "2.0", "id": "app-7", "method": "ping"})
        await client.recv_type("received")
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "get_order_status", "arguments": {"order_id": "123456"}}}  # fmt: skip
        await client.ws.send(json.dumps({"type": "call", "by": "app", "text": json.dumps(call)}))
        sent = await client.recv_type("sent")
        assert sent["by"] == "app" and sent["seq"] == 7
        assert sent["message"]["id"] == "app-8", "an id the session's client never used, not the app's 1"
        answer = await client.recv_type("received")
        assert answer["answers"] == 7 and "shipped" in json.dumps(answer["message"]["result"])
        transcript = httpx.get(
            f"{app.base}/api/sessions/{session}/transcript", cookies={"playground_learner": learner}
        ).json()
        rows = [(e["direction"], e.get("by")) for e in transcript["entries"]]
        assert rows == [("client", None), ("server", None), ("from_app", None), ("to_app", None),
                        ("client", None), ("server", None), ("client", "app"), ("server", None)]  # fmt: skip
    finally:
        await client.close()


async def test_the_host_frames_refuse_what_is_not_theirs(app: ServedApp) -> None:
    client = await connect(app, learner=app.learner_cookie("apps-bad"))
    try:
        await client.recv_type("state")
        await client.send(init_request())
        await client.recv_type("received")
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        refusals = [
            ({"type": "app", "from": "app", "text": "{not json"}, "Parse error"),
            ({"type": "app", "from": "someone", "text": ping}, 'says who sent it'),
            ({"type": "app", "from": "app"}, "needs"),
            ({"type": "call", "text": ping}, "names who makes it"),
            ({"type": "call", "by": "app", "text": json.dumps({"jsonrpc": "2.0", "method": "notifications/x"})},
             "carries a request"),
            ({"type": "call", "by": "app", "text": json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize"})},
             "never sends that method"),
            ({"type": "call", "by": "app", "text": "x" * (1024 * 1024 + 1)}, "over the"),
        ]  # fmt: skip
        for frame, words in refusals:
            await client.ws.send(json.dumps(frame))
            error = await client.recv_type("relay_error")
            assert (
                words in error["explanation"]
                or words in error["error"]["message"]
                or words in json.dumps(error["error"])
            ), (frame, error)
        await client.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})  # the session goes on
        assert (await client.recv_type("received"))["message"]["id"] == 9
    finally:
        await client.close()
