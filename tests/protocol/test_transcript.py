"""The transcript: pairing replies with requests, learning the revision, bounded length."""

from __future__ import annotations

import gc
import json
import tracemalloc

import pytest

from app.protocol.jsonrpc import Frame, parse_client_text, parse_json, to_line
from app.protocol.transcript import (
    MAX_BYTES,
    PARSED_KEEP_BYTES,
    PARSED_KEEP_ENTRIES,
    Entry,
    Transcript,
    parsed_cost,
)


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
        message = {"jsonrpc": "2.0", "id": n, "method": "ping"}
        t.add_client(to_line(message), message)
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


TOOL_CALL = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_order_status","arguments":{"order_id":"481516"}}}'
TOOL_RESULT = (
    '{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"shipped"}],'
    '"structuredContent":{"order_id":"481516","status":"shipped"},"isError":false}}'
)


def tracked_after_calls(calls: int) -> int:
    """How many more objects the collector tracks once a transcript has seen `calls` tool calls."""
    gc.collect()
    before = len(gc.get_objects())
    t = Transcript("demo-orders", max_bytes=64 << 20, max_entries=100_000)
    for n in range(calls):
        for text, add in ((TOOL_CALL % n, t.add_client), (TOOL_RESULT % n, t.add_server)):
            add(text, parse_json(text)[0])
    gc.collect()  # what it keeps, as the collector sees it at its next pass
    added = len(gc.get_objects()) - before
    assert t.last_seq == 2 * calls and len(t.entries) == 2 * calls
    return added


def test_what_the_collector_walks_does_not_grow_with_the_entries_kept() -> None:
    # With thousands of sessions, an object per entry would make every collection walk what every
    # session has said: full collections of seconds, each a stall for every learner.
    few, many = tracked_after_calls(PARSED_KEEP_ENTRIES), tracked_after_calls(20 * PARSED_KEEP_ENTRIES)
    assert many <= few + 10, (few, many)
    assert many < 6 * PARSED_KEEP_ENTRIES, many  # the newest entries' parsed messages, and the indexes


def test_a_reader_parses_an_old_entry_once_while_it_reads_and_lets_it_go_after() -> None:
    t = Transcript("demo-orders")
    for n in range(3 * PARSED_KEEP_ENTRIES):
        t.add_client(TOOL_CALL % n, parse_json(TOOL_CALL % n)[0])
    old = t.entry(1)
    assert old is not None and old.message is not old.message  # parsed again at each read
    with t.reading():
        first = old.message
        assert t.client_messages()[0].message is first and first["id"] == 0  # once, for every view
        with t.reading():  # a reader within a reader shares the first's
            assert old.message is first
        assert old.message is first
    assert old.message is not first and old.message == first
    assert len(t._messages) == PARSED_KEEP_ENTRIES  # the reader's parses are let go


def test_entries_are_views_two_of_one_entry_are_equal() -> None:
    t = Transcript("demo-orders")
    sent = t.add_client(TOOL_CALL % 7, parse_json(TOOL_CALL % 7)[0])
    assert t.entry(1) == sent == t.client_messages()[0] and t.entry(1) is not sent
    assert sent != Transcript("demo-orders").add_client(sent.line, sent.message)  # another transcript's
    assert len({sent, t.entry(1)}) == 1


def test_a_request_let_go_while_unanswered_is_still_answered_and_timed() -> None:
    t = Transcript("demo-orders", max_entries=10)
    t.add_client(TOOL_CALL % 1, parse_json(TOOL_CALL % 1)[0])
    for n in range(30):
        t.add_client(json.dumps(request(f"x{n}")), request(f"x{n}"))
    assert t.entry(1) is None and [e.message["id"] for e in t.unanswered()][0] == 1
    reply = t.add_server(TOOL_RESULT % 1, parse_json(TOOL_RESULT % 1)[0])
    assert (
        reply.answers == 1 and reply.rtt_ms is not None and 1 not in [e.message["id"] for e in t.unanswered()]
    )


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
    assert all(seq > t.dropped for seq in t._parsed_seqs)  # nothing kept for entries let go


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


def test_the_apps_lane_and_the_hosts_own_requests_are_told_apart() -> None:
    """Host-app messages never pair with the server's replies; a request the console made as an Apps
    host is marked, in the export, in a replay's frames, and left out of the learner's requests."""
    from app.course.checks import requests
    from app.relay.wire import entry_frame

    t = Transcript("demo-orders")
    mine = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    t.add_client(json.dumps(mine), mine)
    app_init = {"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {}}
    lane = t.add_app("from_app", json.dumps(app_init), app_init)
    hosts = {"jsonrpc": "2.0", "id": "host-3", "method": "tools/list"}
    made = t.add_client(json.dumps(hosts), hosts, by="host")
    reply = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    answer = t.add_server(json.dumps(reply), reply)
    assert answer.answers == 1, "the learner's request, not the app's id 1"
    assert [e.seq for e in t.app_messages()] == [lane.seq] and t.made_by(made) == "host"
    assert [e.seq for e in requests(t, "tools/list")] == [1]
    assert [e.get("by") for e in t.to_json()["entries"]] == [None, None, "host", None]
    assert entry_frame(lane, t) == {"type": "app", "seq": 2, "at_ms": round(lane.at_ms, 3), "from": "app",
                                    "message": app_init}  # fmt: skip
    assert entry_frame(made, t)["by"] == "host" and "by" not in entry_frame(t.entry(1), t)


def test_requests_with_huge_ids_never_answered_hold_no_more_than_the_transcripts_bound() -> None:
    """From the side of a client sending pings with ids of half a megabyte to a server that never
    answers: the ids remembered as used, and the open requests, outlived the entries the transcript let
    go (36 MiB held in 35 s by one session, growing at the client's pace until the session ended)."""
    t = Transcript("demo-orders")
    message = {"jsonrpc": "2.0", "id": "x", "method": "ping"}
    t.add_client(to_line(message), message)  # before the memory is measured: the first entry's costs
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(40):
            message = {"jsonrpc": "2.0", "id": f"{n:04d}" + "i" * (512 * 1024), "method": "ping"}
            t.add_client(to_line(message), message)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert t.size_bytes <= MAX_BYTES + 600 * 1024
    assert held < 3 * MAX_BYTES, f"{held / 2**20:.1f} MiB held"  # its lines, and the newest parsed
    newest = message["id"]
    assert t.used_request_id(newest) and t.used_request_id("x") and not t.used_request_id("never")
    assert t.open_request(newest) is not None and t.open_request("x") is None  # the oldest open went
    assert sum(len(entry.line) for entry in t.unanswered()) <= MAX_BYTES


def test_a_page_ends_once_its_lines_pass_a_size_and_holds_at_least_one_entry() -> None:
    t = Transcript("demo-orders")
    for n in range(10):
        message = request(n, "ping", pad="p" * 1000)
        t.add_client(to_line(message), message)
    first = t.page(0, 100, max_chars=3500)
    assert [e.message["id"] for e in first] == [0, 1, 2]
    assert [e.message["id"] for e in t.page(first[-1].seq, 100, max_chars=10)] == [3]  # one, however big
    exported = t.to_json(0, 100, max_chars=3500)
    assert len(exported["entries"]) == 3 and exported["next_after"] == first[-1].seq
    assert t.to_json(0, 100)["next_after"] is None
