"""A session's transcript: every message both ways, in order, timestamped, with the negotiated revision.

Lives here so that the relay writes it and the course's hands-on checks read it without importing
each other.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_types import PROTOCOL_VERSION_META_KEY

from app.protocol.jsonrpc import crude_items, parse_json, to_line

Direction = Literal["client", "server", "relay"]
# Enough for any lesson many times over; bounds a console left running for hours.
MAX_ENTRIES = 5000
# The lines a transcript keeps, all together (UTF-8 bytes); the oldest go first. A setting overrides it.
MAX_BYTES = 2 * 1024 * 1024
# Client requests still waiting for a reply: a client that never reads its replies cannot grow this.
MAX_OPEN_REQUESTS = 1000


# Parsed messages a transcript keeps: the newest entries' (what the live relay and the checks read),
# while their estimated size (`parsed_cost`) stays within this. A parsed message takes up to 25 times
# its line's memory (a line of 1 MiB of `{},{},...` holds 24 MiB as objects), so keeping every one
# would let a session's transcript hold far more than `max_bytes`; older entries parse again on read.
# A tools/call and its answer count about 2.9 KB: a learner's session of 350 calls stays parsed.
PARSED_KEEP_BYTES = 1024 * 1024
# What each container and each element of parsed JSON is counted at, besides its text: an empty dict
# is 64 bytes, a dict's entry with a key of its own about 150. Measured against tracemalloc, the
# estimate came to 0.99-15 times the real size for lists of dicts, numbers and strings, big dicts
# and MCP messages.
PARSED_ITEM_BYTES = 128

_DROPPED: Any = object()  # an entry's parsed message, let go: `message` parses its line again


class Entry:
    """One line on the wire, with what the relay read from it: its kind, its method, and (for the
    newest entries) the parsed JSON itself; `message` is None when the line was not JSON."""

    __slots__ = ("seq", "direction", "at_ms", "line", "answers", "rtt_ms", "method", "kind", "_source",
                 "_message")  # fmt: skip

    def __init__(self, seq: int, direction: Direction, at_ms: float, line: str, message: Any,
                 source: str | None = None) -> None:  # fmt: skip
        self.seq = seq
        # "client": sent to the server; "server": written by the server; "relay": a bad client frame
        # the relay answered itself (`line` is what the client sent, `message` the relay's error reply,
        # kept as JSON text in `source`).
        self.direction = direction
        self.at_ms = at_ms  # since the transcript began
        self.line = line
        self.answers: int | None = None  # for a server response: the seq of the client request it answers
        self.rtt_ms: float | None = None
        method = message.get("method") if isinstance(message, dict) else None
        self.method: str | None = method if isinstance(method, str) else None
        self.kind = _kind(message)
        self._source = line if source is None else source  # the JSON text `message` is parsed from
        self._message = message

    @property
    def message(self) -> Any:
        if self._message is not _DROPPED:
            return self._message
        return parse_json(self._source)[0]

    def forget_message(self) -> None:
        """Let go of the parsed message; `message` parses the line again when read."""
        self._message = _DROPPED

    @property
    def is_request(self) -> bool:
        return self.kind == "request"

    @property
    def is_notification(self) -> bool:
        return self.kind == "notification"

    @property
    def is_response(self) -> bool:
        return self.kind == "response"

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "direction": self.direction,
            "at_ms": round(self.at_ms, 3),
            "line": self.line,
            "message": self.message,
            "answers": self.answers,
            "rtt_ms": None if self.rtt_ms is None else round(self.rtt_ms, 3),
        }

    def __repr__(self) -> str:
        return (
            f"Entry(seq={self.seq}, direction={self.direction!r}, kind={self.kind!r}, method={self.method!r})"
        )


def _kind(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if "method" in message:
        return "request" if "id" in message else "notification"
    if "result" in message or "error" in message:
        return "response"
    return None


@dataclass(frozen=True)
class HttpExchange:
    """One HTTP request on a Streamable HTTP endpoint's session and the answer it got: what the
    learner watches besides the messages (method, status, the MCP headers), and what HTTP checks read."""

    number: int  # 1, 2, ... per transcript
    at_ms: float
    method: str  # POST, GET, DELETE
    status: int
    request_headers: dict[str, str]  # only the ones that matter to MCP (see HTTP_HEADERS_SHOWN)
    response_headers: dict[str, str]
    carried: dict[str, Any] | None = None  # the JSON-RPC message's method and id, for a POST

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "at_ms": round(self.at_ms, 3), "method": self.method,
                "status": self.status, "request_headers": self.request_headers,
                "response_headers": self.response_headers, "carried": self.carried}  # fmt: skip


# HTTP exchanges kept per transcript (the oldest go first), and the headers worth showing.
MAX_EXCHANGES = 500
HTTP_HEADERS_SHOWN = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "mcp-method",
                      "mcp-name", "last-event-id", "origin")  # fmt: skip


@dataclass
class Transcript:
    """Entries in order, with indexes so that a reader's cost does not grow with the whole session:
    entries by direction, and each response by the seq of the request it answers."""

    server: str
    started_at: float = field(default_factory=time.time)  # wall clock, for the export
    revision: str | None = None  # the protocol revision in force, once known
    entries: list[Entry] = field(default_factory=list)
    # A session that runs for hours keeps only its latest entries; seq numbers go on counting.
    max_entries: int = MAX_ENTRIES
    max_bytes: int = MAX_BYTES
    dropped: int = 0  # entries let go from the front
    size_bytes: int = 0  # the kept entries' lines
    _t0: float = field(default_factory=time.perf_counter, repr=False)
    # Open client requests by JSON-RPC id (keyed by `_id_key`, so 1 and "1" differ), oldest first.
    _open_client: dict[Hashable, Entry] = field(default_factory=dict, repr=False)
    _by_direction: dict[str, list[Entry]] = field(
        default_factory=lambda: {"client": [], "server": [], "relay": []}, repr=False
    )
    _responses: dict[int, Entry] = field(default_factory=dict, repr=False)  # request seq -> response
    # A Streamable HTTP session's requests and answers (empty for a console's WebSocket session).
    exchanges: deque[HttpExchange] = field(default_factory=lambda: deque(maxlen=MAX_EXCHANGES))
    exchanges_seen: int = 0
    # The newest entries still holding their parsed message, oldest first, each with its `parsed_cost`.
    _parsed: deque[tuple[Entry, int]] = field(default_factory=deque, repr=False)
    _parsed_bytes: int = 0

    def add_exchange(self, method: str, status: int, request_headers: dict[str, str],
                     response_headers: dict[str, str], carried: dict[str, Any] | None = None) -> HttpExchange:  # fmt: skip
        self.exchanges_seen += 1
        exchange = HttpExchange(self.exchanges_seen, self.now_ms(), method, status, request_headers,
                                response_headers, carried)  # fmt: skip
        self.exchanges.append(exchange)
        return exchange

    def exchanges_after(self, number: int) -> list[HttpExchange]:
        return [x for x in self.exchanges if x.number > number]

    def now_ms(self) -> float:
        """Milliseconds since the transcript began."""
        return (time.perf_counter() - self._t0) * 1000

    def _next(self) -> tuple[int, float]:
        return self.dropped + len(self.entries) + 1, self.now_ms()

    def _append(self, entry: Entry) -> None:
        self.entries.append(entry)
        self._by_direction[entry.direction].append(entry)
        self.size_bytes += _size(entry.line)
        self._keep_parsed(entry)
        if len(self.entries) > self.max_entries:
            self._drop(max(self.max_entries // 10, 1))
        while self.size_bytes > self.max_bytes and len(self.entries) > 1:
            self._drop(max(len(self.entries) // 10, 1))

    def _keep_parsed(self, entry: Entry) -> None:
        """Keep `entry`'s parsed message among the newest ones, within PARSED_KEEP_BYTES."""
        cost = parsed_cost(entry)
        if cost > PARSED_KEEP_BYTES:
            entry.forget_message()
            return
        self._parsed.append((entry, cost))
        self._parsed_bytes += cost
        while self._parsed_bytes > PARSED_KEEP_BYTES:
            oldest, its_cost = self._parsed.popleft()
            oldest.forget_message()
            self._parsed_bytes -= its_cost

    def _drop(self, count: int) -> None:
        """Let go of the `count` oldest entries, and of everything that indexes them."""
        count = min(count, len(self.entries) - 1)
        gone, self.entries = self.entries[:count], self.entries[count:]
        self.dropped += len(gone)
        last = gone[-1].seq
        for direction, entries in self._by_direction.items():
            keep = bisect.bisect_right(entries, last, key=lambda e: e.seq)
            if keep:
                self._by_direction[direction] = entries[keep:]
        for entry in gone:
            self.size_bytes -= _size(entry.line)
            self._responses.pop(entry.seq, None)
        while self._parsed and self._parsed[0][0].seq <= last:  # nothing kept for entries let go
            self._parsed_bytes -= self._parsed.popleft()[1]

    def entry(self, seq: int) -> Entry | None:
        """The entry numbered `seq`, unless it was let go."""
        index = seq - 1 - self.dropped
        return self.entries[index] if 0 <= index < len(self.entries) else None

    def add_client(self, line: str, message: Any) -> Entry:
        seq, at_ms = self._next()
        entry = Entry(seq, "client", at_ms, line, message)
        self._append(entry)
        if entry.is_request:
            self._open_client[_id_key(message["id"])] = entry
            if len(self._open_client) > MAX_OPEN_REQUESTS:
                del self._open_client[next(iter(self._open_client))]
        return entry

    def add_relay_error(self, text: str, reply: dict[str, Any]) -> Entry:
        """A frame the relay refused: it never reached the server; `reply` is what the client got."""
        seq, at_ms = self._next()
        entry = Entry(seq, "relay", at_ms, text, reply, source=to_line(reply))
        self._append(entry)
        return entry

    def relay_errors(self) -> list[Entry]:
        return list(self._by_direction["relay"])

    def add_server(self, line: str, message: Any) -> Entry:
        seq, at_ms = self._next()
        entry = Entry(seq, "server", at_ms, line, message)
        if entry.is_response:
            request = self._open_client.pop(_id_key(message.get("id")), None)
            if request is not None:
                entry.answers = request.seq
                entry.rtt_ms = at_ms - request.at_ms
                self._responses[request.seq] = entry
                self._learn_revision(request, entry)
        self._append(entry)
        return entry

    def _learn_revision(self, request: Entry, response: Entry) -> None:
        result = response.message.get("result")
        if not isinstance(result, dict):
            return
        if request.method == "initialize" and isinstance(result.get("protocolVersion"), str):
            self.revision = result["protocolVersion"]
        elif request.method == "server/discover":
            params = request.message.get("params") or {}
            meta = params.get("_meta") if isinstance(params, dict) else None
            version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
            if isinstance(version, str):
                self.revision = version

    def unanswered(self) -> list[Entry]:
        """Client requests that have had no response yet, oldest first."""
        return list(self._open_client.values())

    def client_messages(self) -> list[Entry]:
        return list(self._by_direction["client"])

    def server_messages(self) -> list[Entry]:
        return list(self._by_direction["server"])

    def response_to(self, request: Entry) -> Entry | None:
        return self._responses.get(request.seq)

    def page(self, after_seq: int = 0, limit: int | None = None) -> list[Entry]:
        """Kept entries numbered above `after_seq`, at most `limit` of them."""
        start = max(after_seq - self.dropped, 0)
        return self.entries[start : None if limit is None else start + limit]

    def page_bytes(self, after_seq: int = 0, limit: int | None = None) -> int:
        """What sending `page(after_seq, limit)` back costs, in the bytes of its lines."""
        return sum(len(entry.line) for entry in self.page(after_seq, limit))

    def to_json(self, after_seq: int = 0, limit: int | None = None) -> dict[str, Any]:
        entries = self.page(after_seq, limit)
        last = self.dropped + len(self.entries)
        more = bool(entries) and entries[-1].seq < last
        return {
            "server": self.server,
            "started_at": self.started_at,
            "revision": self.revision,
            "dropped": self.dropped,
            "entries": [e.to_json() for e in entries],
            "next_after": entries[-1].seq if more else None,
        }


def parsed_cost(entry: Entry) -> int:
    """An upper estimate of the memory `entry`'s parsed message takes: its text, and for each
    container and each element beyond the first a Python object or a pointer."""
    text = entry._source
    return len(text) + PARSED_ITEM_BYTES * crude_items(text)


def _size(line: str) -> int:
    return len(line) if line.isascii() else len(line.encode("utf-8", errors="replace"))


def _id_key(value: Any) -> Hashable:
    """A key under which a request and the response echoing its id meet: equal only for the same JSON
    value (1, 1.0, "1" and true are four ids). Strings and integers, the ids MCP allows, are keyed as
    they are, without serializing each one."""
    kind = type(value)
    if kind is str or kind is int:
        return (kind, value)
    return json.dumps(value)
