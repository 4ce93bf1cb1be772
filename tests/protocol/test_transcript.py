"""The transcript: pairing replies with requests, learning the revision, bounded length."""

from __future__ import annotations

from app.protocol.transcript import Transcript


def request(id_: object, method: str = "ping", **params: object) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})}


def test_replies_pair_with_requests_by_id_type_and_value() -> None:
    t = Transcript("demo-orders")
    t.add_client("a", request(1))
    t.add_client("b", request("1"))
    reply_to_string = t.add_server("c", {"jsonrpc": "2.0", "id": "1", "result": {}})
    reply_to_int = t.add_server("d", {"jsonrpc": "2.0", "id": 1, "result": {}})
    stray = t.add_server("e", {"jsonrpc": "2.0", "id": 1, "result": {}})  # already answered
    assert (reply_to_string.answers, reply_to_int.answers, stray.answers) == (2, 1, None)
    assert reply_to_int.rtt_ms is not None and reply_to_int.rtt_ms >= 0
    assert t.unanswered() == []


def test_the_revision_comes_from_the_initialize_reply_or_discover() -> None:
    t = Transcript("demo-orders")
    t.add_client("i", request(1, "initialize", protocolVersion="1999-01-01"))
    t.add_server("r", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}})
    assert t.revision == "2025-11-25"
    modern = Transcript("demo-stateless")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    modern.add_client("d", request(1, "server/discover", _meta=meta))
    modern.add_server("r", {"jsonrpc": "2.0", "id": 1, "result": {}})
    assert modern.revision == "2026-07-28"


def test_a_long_session_keeps_its_latest_entries_and_counts_on() -> None:
    t = Transcript("demo-orders", max_entries=100)
    opened = t.add_client("first", request("keep"))
    for i in range(300):
        t.add_client(f"n{i}", {"jsonrpc": "2.0", "method": "notifications/x"})
    assert len(t.entries) <= 100 and t.dropped + len(t.entries) == 301
    assert t.entry(1) is None and t.entry(301).line == "n299"
    answer = t.add_server("late", {"jsonrpc": "2.0", "id": "keep", "result": {}})
    assert answer.answers == opened.seq == 1  # still paired, though the request was let go
    assert answer.seq == 302
    assert t.to_json()["dropped"] == t.dropped
