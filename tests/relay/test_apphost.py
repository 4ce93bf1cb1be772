"""The console's Apps host: the fresh id the relay gives a request made for the host or an app."""

from __future__ import annotations

import json

from app.protocol.jsonrpc import Frame, parse_client_text, to_line
from app.protocol.transcript import Transcript
from app.relay.apphost import host_request


def _frame(message: dict) -> Frame:
    frame = parse_client_text(json.dumps(message), 1 << 20)
    assert isinstance(frame, Frame)
    return frame


def _send(transcript: Transcript, message: dict) -> None:
    transcript.add_client(to_line(message), message)


def test_the_fresh_id_skips_the_ids_the_client_used_for_its_own_requests() -> None:
    t = Transcript("demo-orders")
    _send(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    # The learner takes the ids the relay would try first: this request's seq (3) and the next.
    _send(t, {"jsonrpc": "2.0", "id": "host-3", "method": "ping"})
    _send(t, {"jsonrpc": "2.0", "id": "host-4", "method": "ping"})
    call = host_request(_frame({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), "host", t)
    assert isinstance(call, Frame) and call.message["id"] == "host-5"
    assert json.loads(call.line)["id"] == "host-5"


def test_ids_nested_in_a_hostile_learners_messages_cost_nothing_and_take_no_number() -> None:
    # A learner fills the transcript with requests whose params hold thousands of objects reading
    # `"id":"host-N"` for the numbers the relay would try: a search of the lines for each candidate
    # held the web process for seconds a `call` frame. Only request ids are ids.
    t = Transcript("demo-orders")
    for start in range(0, 12 * 4_900, 4_900):
        decoys = [{"id": f"host-{n}"} for n in range(start, start + 4_900)]
        _send(t, {"jsonrpc": "2.0", "id": f"pad-{start}", "method": "ping", "params": {"d": decoys}})
    seq = t.last_seq + 1
    call = host_request(_frame({"jsonrpc": "2.0", "id": 7, "method": "ping"}), "host", t)
    assert isinstance(call, Frame) and call.message["id"] == f"host-{seq}"


def test_an_open_request_keeps_its_id_once_the_set_of_used_ids_is_full(monkeypatch) -> None:
    import app.protocol.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "USED_IDS_KEPT", 1)
    t = Transcript("demo-orders")
    _send(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"})  # fills the set
    _send(t, {"jsonrpc": "2.0", "id": "app-3", "method": "tools/call"})  # open, past the set
    assert t.used_request_id("app-3")
    call = host_request(_frame({"jsonrpc": "2.0", "id": 1, "method": "ping"}), "app", t)
    assert isinstance(call, Frame) and call.message["id"] == "app-4"
