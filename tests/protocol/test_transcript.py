"""The transcript: pairing replies with requests, learning the revision, bounded length."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from app.protocol.jsonrpc import Frame, parse_client_text, parse_json, to_line
from app.protocol.transcript import PARSED_KEEP_BYTES, Entry, Transcript, parsed_cost


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


def test_a_reply_whose_id_is_another_json_value_answers_nothing() -> None:
    t = Transcript("demo-orders")
    t.add_client("a", request(1))
    for other in (1.0, True, "1", [1], {"id": 1}, None):  # equal in Python, or unhashable: not the id 1
        assert t.add_server("r", {"jsonrpc": "2.0", "id": other, "result": {}}).answers is None, other
    assert t.add_server("r", {"jsonrpc": "2.0", "id": 1, "result": {}}).answers == 1


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


def test_a_byte_budget_lets_the_oldest_go_and_keeps_the_indexes_right() -> None:
    t = Transcript("demo-orders", max_bytes=10_000)
    big = "x" * 900
    for n in range(1, 60):
        t.add_client(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping", "params": {"pad": big}}),
                     {"jsonrpc": "2.0", "id": n, "method": "ping", "params": {"pad": big}})  # fmt: skip
        t.add_server(
            json.dumps({"jsonrpc": "2.0", "id": n, "result": {}}), {"jsonrpc": "2.0", "id": n, "result": {}}
        )
    assert t.size_bytes <= 10_000 and t.dropped > 0
    assert t.size_bytes == sum(len(e.line) for e in t.entries)
    kept_requests = t.client_messages()
    assert kept_requests and all(e.seq > t.dropped for e in kept_requests)
    assert all(t.response_to(r) is not None and t.response_to(r).answers == r.seq for r in kept_requests)
    assert t.entries[-1].seq == t.dropped + len(t.entries) == 118


def test_one_line_over_the_budget_is_still_kept_alone() -> None:
    t = Transcript("demo-orders", max_bytes=100)
    t.add_client("y" * 500, None)
    assert len(t.entries) == 1 and t.size_bytes == 500


def test_requests_never_answered_are_bounded() -> None:
    from app.protocol.transcript import MAX_OPEN_REQUESTS

    t = Transcript("demo-orders")
    for n in range(MAX_OPEN_REQUESTS + 50):
        t.add_client("{}", {"jsonrpc": "2.0", "id": n, "method": "ping"})
    waiting = t.unanswered()
    assert len(waiting) == MAX_OPEN_REQUESTS and waiting[0].message["id"] == 50


def test_an_export_comes_in_pages() -> None:
    t = Transcript("demo-orders")
    for n in range(25):
        t.add_client("{}", {"jsonrpc": "2.0", "id": n, "method": "ping"})
    first = t.to_json(0, 10)
    assert [e["seq"] for e in first["entries"]] == list(range(1, 11)) and first["next_after"] == 10
    last = t.to_json(20, 10)
    assert [e["seq"] for e in last["entries"]] == list(range(21, 26)) and last["next_after"] is None


def test_only_the_newest_entries_keep_their_parsed_message_and_older_ones_read_the_same() -> None:
    t = Transcript("demo-orders", max_bytes=16 << 20)
    sent = []
    for n in range(1000):  # about 2 KiB each: far more than PARSED_KEEP_BYTES together
        message = request(n, "tools/call", name="get_order_status", arguments={"pad": "p" * 2000})
        sent.append((t.add_client(to_line(message), message), message))
    newest, its_message = sent[-1]
    assert newest.message is its_message  # what the live relay reads right after: not parsed again
    oldest, first_message = sent[0]
    assert oldest.message == first_message and oldest.message is not first_message  # parsed again
    assert (oldest.kind, oldest.method, oldest.is_request) == ("request", "tools/call", True)
    kept = [entry for entry, message in sent if entry.message is message]
    assert kept == [entry for entry, _ in sent[-len(kept) :]]  # the newest, and only they
    assert 0 < sum(parsed_cost(entry) for entry in kept) <= PARSED_KEEP_BYTES


def test_a_relay_error_reads_its_reply_back_once_let_go() -> None:
    t = Transcript("demo-orders", max_bytes=16 << 20)
    reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": {}}}
    refused = t.add_relay_error("{not json", reply)
    for n in range(1000):
        message = request(n, pad="p" * 2000)
        t.add_client(to_line(message), message)
    assert refused.line == "{not json" and refused.message == reply and refused.message is not reply


def test_a_transcript_of_tiny_objects_holds_about_its_byte_cap_not_25_times_it() -> None:
    # From a client's side: valid messages whose params are 256 KiB of `{},{},...`, parsed as the
    # relay parses a frame. Every parsed copy kept would be about 6 MiB; only the lines may stay.
    # The relay refuses messages of so many values by default (`max_message_values`); the transcript
    # keeps its bound on its own, with that setting raised.
    cap = 2 * 1024 * 1024
    text = '{"jsonrpc":"2.0","method":"notifications/x","params":{"a":[' + ",".join(["{}"] * 87_000) + "]}}"
    t = Transcript("demo-orders", max_bytes=cap)
    tracemalloc.start()
    try:
        for _ in range(12):
            frame = parse_client_text(text, 1 << 20, max_items=1_000_000)
            assert isinstance(frame, Frame)
            t.add_client(frame.line, frame.message)
            del frame
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert t.dropped > 0 and t.size_bytes <= cap
    assert held < 2.5 * cap, f"{held / 2**20:.1f} MiB held for {t.size_bytes / 2**20:.1f} MiB of lines"
    assert len(t.entries[0].message["params"]["a"]) == 87_000  # still there, parsed when read
    assert all(entry.seq > t.dropped for entry, _ in t._parsed)  # nothing kept for entries let go


@pytest.mark.parametrize(
    "text",
    [
        "[" + ",".join(f'{{"k{i}":{i}}}' for i in range(20_000)) + "]",  # dicts with keys of their own
        "{" + ",".join(f'"key{i}":"v"' for i in range(20_000)) + "}",  # one big dict
        "[" + ",".join(["{}"] * 20_000) + "]",
        to_line(request(7, "tools/call", name="get_order_status", arguments={"order_id": "481516"})),
    ],
    ids=["dicts", "a big dict", "empty dicts", "tools/call"],
)
def test_the_parsed_cost_is_not_below_what_the_parsed_message_takes(text: str) -> None:
    tracemalloc.start()
    try:
        value, error = parse_json(text)
        taken, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error is None
    assert parsed_cost(Entry(1, "server", 0.0, text, value)) >= 0.95 * taken
