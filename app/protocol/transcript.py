"""A session's transcript: every message both ways, in order, timestamped, with the negotiated revision.

Lives here so that the relay writes it and the course's hands-on checks read it without importing
each other.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import deque
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_types import PROTOCOL_VERSION_META_KEY

from app.protocol.exchanges import Exchanges, HttpExchange
from app.protocol.jsonrpc import crude_items, parse_json, to_line

# "to_app" and "from_app": the console, as an MCP Apps host, and an app it renders (docs/websocket.md).
Direction = Literal["client", "server", "relay", "to_app", "from_app"]
Maker = Literal["host", "app"]
# Enough for any lesson many times over; bounds a console left running for hours.
MAX_ENTRIES = 5000
# The lines a transcript keeps, all together (UTF-8 bytes); the oldest go first. A setting overrides it.
MAX_BYTES = 2 * 1024 * 1024
# Client requests still waiting for a reply: a client that never reads its replies cannot grow this,
# in number nor, past the transcript's own bound, in bytes (an open request outlives its entry).
MAX_OPEN_REQUESTS = 1000
# Client request ids remembered as used in one run (for the finding "used before"), at most; each by its
# hash, since an id may be a string of a megabyte.
USED_IDS_KEPT = 4096


# Parsed messages a transcript keeps: the newest entries' (what the live relay and the checks read),
# at most PARSED_KEEP_ENTRIES of them while their estimated size (`parsed_cost`) stays within
# PARSED_KEEP_BYTES. A parsed message takes up to 25 times its line's memory (a line of 1 MiB of
# `{},{},...` holds 24 MiB as objects), so keeping every one would let a session's transcript hold far
# more than `max_bytes`; and each kept message is a few containers the collector walks, whose pauses
# with thousands of sessions live would be the p99. Older entries parse again on read.
PARSED_KEEP_BYTES = 1024 * 1024
PARSED_KEEP_ENTRIES = 16
# What each container and each element of parsed JSON is counted at, besides its text: an empty dict
# is 64 bytes, a dict's entry with a key of its own about 150. Measured against tracemalloc, the
# estimate came to 0.99-15 times the real size for lists of dicts, numbers and strings, big dicts
# and MCP messages.
PARSED_ITEM_BYTES = 128

_DROPPED: Any = object()  # no parsed message kept: `message` parses the line again


class Parsed(dict[int, Any]):
    """A transcript's parsed messages by seq: its newest entries', and while a reader holds
    `Transcript.reading()`, every one read meanwhile."""

    __slots__ = ("lent",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lent: list[int] | None = None  # seqs parsed again for a reader, let go once it is done

    def lend(self, seq: int, message: Any) -> None:
        if self.lent is not None:
            self[seq] = message
            self.lent.append(seq)


class Entry:
    """One line on the wire, with what the relay read from it: its kind, its method, and the parsed
    JSON itself (`message`, None when the line was not JSON). A transcript hands out entries as views
    of its columns, made when read: `message` is the transcript's kept parse while it keeps one."""

    __slots__ = ("seq", "direction", "at_ms", "line", "answers", "rtt_ms", "method", "kind", "_source",
                 "_kept")  # fmt: skip

    def __init__(self, seq: int, direction: Direction, at_ms: float, line: str, message: Any,
                 source: str | None = None) -> None:  # fmt: skip
        self._take(seq, direction, at_ms, line, None, None, _method(message), _kind(message),
                   line if source is None else source, Parsed({seq: message}))  # fmt: skip

    @classmethod
    def of(cls, seq: int, direction: Direction, at_ms: float, line: str, answers: int | None,
           rtt_ms: float | None, method: str | None, kind: str | None, source: str,
           kept: Parsed) -> Entry:  # fmt: skip
        entry = cls.__new__(cls)
        entry._take(seq, direction, at_ms, line, answers, rtt_ms, method, kind, source, kept)
        return entry

    def _take(self, seq: int, direction: Direction, at_ms: float, line: str, answers: int | None,
              rtt_ms: float | None, method: str | None, kind: str | None, source: str,
              kept: Parsed) -> None:  # fmt: skip
        self.seq = seq
        # "client": sent to the server; "server": written by the server; "relay": a bad client frame
        # the relay answered itself (`line` is what the client sent, `message` the relay's error reply,
        # kept as JSON text in `source`).
        self.direction = direction
        self.at_ms = at_ms  # since the transcript began
        self.line = line
        self.answers = answers  # for a server response: the seq of the client request it answers
        self.rtt_ms = rtt_ms
        self.method = method
        self.kind = kind
        self._source = source  # the JSON text `message` is parsed from
        self._kept = kept  # parsed messages by seq: the transcript's, for the newest of its entries

    @property
    def message(self) -> Any:
        message = self._kept.get(self.seq, _DROPPED)
        if message is _DROPPED:
            message = parse_json(self._source)[0]
            self._kept.lend(self.seq, message)
        return message

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

    def __eq__(self, other: object) -> bool:  # two views of one transcript's row are one entry
        return isinstance(other, Entry) and self.seq == other.seq and self._kept is other._kept

    def __hash__(self) -> int:
        return hash(self.seq)

    def __repr__(self) -> str:
        return (
            f"Entry(seq={self.seq}, direction={self.direction!r}, kind={self.kind!r}, method={self.method!r})"
        )


def _method(message: Any) -> str | None:
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def _kind(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if "method" in message:
        return "request" if "id" in message else "notification"
    if "result" in message or "error" in message:
        return "response"
    return None


@dataclass
class Transcript:
    """Entries in order, with indexes so that a reader's cost does not grow with the whole session:
    entries by direction, and each response by the seq of the request it answers.

    Entries are kept in columns, one list per field, and read as `Entry` views made on demand.
    Appending a string or a number to a list makes no object the collector tracks, where an object
    per entry (and its parsed message) would make millions of them at a class's scale: each
    collection would walk what every session has said, and a full one stop every session for
    seconds."""

    server: str
    started_at: float = field(default_factory=time.time)  # wall clock, for the export
    revision: str | None = None  # the protocol revision in force, once known
    # A session that runs for hours keeps only its latest entries; seq numbers go on counting.
    max_entries: int = MAX_ENTRIES
    max_bytes: int = MAX_BYTES
    dropped: int = 0  # entries let go from the front; the kept entry at index i is numbered dropped + i + 1
    size_bytes: int = 0  # the kept entries' lines
    _t0: float = field(default_factory=time.perf_counter, repr=False)
    # The kept entries' fields, one list each (see Entry).
    _direction: list[Direction] = field(default_factory=list, repr=False)
    _at_ms: list[float] = field(default_factory=list, repr=False)
    _line: list[str] = field(default_factory=list, repr=False)
    _answers: list[int | None] = field(default_factory=list, repr=False)
    _rtt_ms: list[float | None] = field(default_factory=list, repr=False)
    _method: list[str | None] = field(default_factory=list, repr=False)
    _kinds: list[str | None] = field(default_factory=list, repr=False)
    _source: list[str] = field(default_factory=list, repr=False)
    # Open client requests by JSON-RPC id (keyed by `_id_key`, so 1 and "1" differ), oldest first;
    # each lives until its response, even past its entry's being let go; their lines' length in all.
    _open_client: dict[Hashable, Entry] = field(default_factory=dict, repr=False)
    _open_chars: int = field(default=0, repr=False)
    # The hashes of every client request id of this run (the first USED_IDS_KEPT), keyed alike.
    _used_ids: set[int] = field(default_factory=set, repr=False)
    # The seqs of the kept entries by direction, and each response's seq by its request's.
    _by_direction: dict[str, list[int]] = field(
        default_factory=lambda: {"client": [], "server": [], "relay": [], "to_app": [], "from_app": []},
        repr=False,
    )
    # Client requests the console made as an Apps host, by seq: itself ("host": the UI resource it
    # reads) or for an app whose call the learner allowed ("app"). The rest are the learner's own.
    _made_by: dict[int, Maker] = field(default_factory=dict, repr=False)
    _responses: dict[int, int] = field(default_factory=dict, repr=False)
    # A Streamable HTTP session's requests and answers (empty for a console's WebSocket session).
    exchanges: Exchanges = field(default_factory=Exchanges)  # on a Streamable HTTP endpoint
    # The newest entries' parsed messages by seq; their seqs oldest first, and each one's parsed cost.
    _messages: Parsed = field(default_factory=Parsed, repr=False)
    _parsed_seqs: deque[int] = field(default_factory=deque, repr=False)
    _parsed_costs: deque[int] = field(default_factory=deque, repr=False)
    _parsed_bytes: int = 0

    def add_exchange(self, method: str, status: int, request_headers: dict[str, str],
                     response_headers: dict[str, str], carried: dict[str, Any] | None = None) -> HttpExchange:  # fmt: skip
        return self.exchanges.add(self.now_ms(), method, status, request_headers, response_headers, carried)

    @property
    def exchanges_seen(self) -> int:
        return self.exchanges.seen

    def exchanges_after(self, number: int) -> list[HttpExchange]:
        return self.exchanges.after(number)

    def now_ms(self) -> float:
        """Milliseconds since the transcript began."""
        return (time.perf_counter() - self._t0) * 1000

    @property
    def entries(self) -> list[Entry]:
        """Every kept entry, oldest first."""
        return self.page()

    @property
    def last_seq(self) -> int:
        return self.dropped + len(self._line)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Keep each message parsed meanwhile until the end: a round of hands-on checks reads the same
        old entries many times over, and so parses each once."""
        if self._messages.lent is not None:
            yield
            return
        self._messages.lent = []
        try:
            yield
        finally:
            lent, self._messages.lent = self._messages.lent, None
            for seq in lent:
                self._messages.pop(seq, None)

    def _view(self, seq: int) -> Entry:
        i = seq - 1 - self.dropped
        return Entry.of(seq, self._direction[i], self._at_ms[i], self._line[i], self._answers[i],
                        self._rtt_ms[i], self._method[i], self._kinds[i], self._source[i], self._messages)  # fmt: skip

    def _views(self, seqs: list[int] | range) -> list[Entry]:
        return [self._view(seq) for seq in seqs]

    def _add(self, direction: Direction, line: str, message: Any, source: str | None = None,
             request: Entry | None = None) -> Entry:  # fmt: skip
        """Append an entry (`request`: the one a server response answers) and let the oldest go past
        the bounds."""
        seq, at_ms = self.last_seq + 1, self.now_ms()
        method = _method(message)
        answers = rtt_ms = None
        if request is not None:
            answers, rtt_ms = request.seq, at_ms - request.at_ms
            self._responses[answers] = seq
        kind, source = _kind(message), line if source is None else source
        self._direction.append(direction)
        self._at_ms.append(at_ms)
        self._line.append(line)
        self._answers.append(answers)
        self._rtt_ms.append(rtt_ms)
        self._method.append(method)
        self._kinds.append(kind)
        self._source.append(source)
        self._by_direction[direction].append(seq)
        self.size_bytes += _size(line)
        self._keep_parsed(seq, message, source)
        entry = Entry.of(seq, direction, at_ms, line, answers, rtt_ms, method, kind, source, self._messages)
        if len(self._line) > self.max_entries:
            self._drop(max(self.max_entries // 10, 1))
        while self.size_bytes > self.max_bytes and len(self._line) > 1:
            self._drop(max(len(self._line) // 10, 1))
        return entry

    def _keep_parsed(self, seq: int, message: Any, source: str) -> None:
        """Keep the parsed message of entry `seq` (parsed from `source`) among the newest ones, within
        PARSED_KEEP_ENTRIES and PARSED_KEEP_BYTES."""
        cost = _parsed_cost(source)
        if cost > PARSED_KEEP_BYTES:
            return
        self._messages[seq] = message
        self._parsed_seqs.append(seq)
        self._parsed_costs.append(cost)
        self._parsed_bytes += cost
        while self._parsed_bytes > PARSED_KEEP_BYTES or len(self._parsed_seqs) > PARSED_KEEP_ENTRIES:
            self._forget_oldest_parsed()

    def _forget_oldest_parsed(self) -> None:
        del self._messages[self._parsed_seqs.popleft()]
        self._parsed_bytes -= self._parsed_costs.popleft()

    def _drop(self, count: int) -> None:
        """Let go of the `count` oldest entries, and of everything that indexes them."""
        count = min(count, len(self._line) - 1)
        last = self.dropped + count
        for line in self._line[:count]:
            self.size_bytes -= _size(line)
        for column in (self._direction, self._at_ms, self._line, self._answers, self._rtt_ms, self._method,
                       self._kinds, self._source):  # fmt: skip
            del column[:count]
        for seq in range(self.dropped + 1, last + 1):
            self._responses.pop(seq, None)
            self._made_by.pop(seq, None)
        self.dropped = last
        for seqs in self._by_direction.values():
            keep = bisect.bisect_right(seqs, last)
            if keep:
                del seqs[:keep]
        while self._parsed_seqs and self._parsed_seqs[0] <= last:  # nothing kept for entries let go
            self._forget_oldest_parsed()

    def entry(self, seq: int) -> Entry | None:
        """The entry numbered `seq`, unless it was let go."""
        return self._view(seq) if self.dropped < seq <= self.last_seq else None

    def add_client(self, line: str, message: Any, by: Maker | None = None) -> Entry:
        entry = self._add("client", line, message)
        if by is not None:
            self._made_by[entry.seq] = by
        if entry.is_request:
            key = _id_key(message["id"])
            self._close_request(key)
            self._open_client[key] = entry
            self._open_chars += len(line)
            if len(self._used_ids) < USED_IDS_KEPT:
                self._used_ids.add(hash(key))
            while len(self._open_client) > 1 and (
                len(self._open_client) > MAX_OPEN_REQUESTS or self._open_chars > self.max_bytes
            ):
                self._close_request(next(iter(self._open_client)))
        return entry

    def _close_request(self, key: Hashable) -> Entry | None:
        """The open request with this key, no longer open (None if none was)."""
        request = self._open_client.pop(key, None)
        if request is not None:
            self._open_chars -= len(request.line)
        return request

    def add_relay_error(self, text: str, reply: dict[str, Any]) -> Entry:
        """A frame the relay refused: it never reached the server; `reply` is what the client got."""
        return self._add("relay", text, reply, source=to_line(reply))

    def made_by(self, entry: Entry) -> Maker | None:
        """Who made a client request: the console as an Apps host, an app, or (None) the learner."""
        return self._made_by.get(entry.seq)

    def add_app(self, direction: Literal["to_app", "from_app"], line: str, message: Any) -> Entry:
        """A message between the console (an MCP Apps host) and an app it renders: it never reaches
        the server, and answers nothing of the server's."""
        return self._add(direction, line, message)

    def app_messages(self) -> list[Entry]:
        """Host-to-app and app-to-host messages, oldest first."""
        return self._views(sorted(self._by_direction["to_app"] + self._by_direction["from_app"]))

    def relay_errors(self) -> list[Entry]:
        return self._views(self._by_direction["relay"])

    def add_server(self, line: str, message: Any) -> Entry:
        request = None
        if _kind(message) == "response":
            request = self._close_request(_id_key(message.get("id")))
        entry = self._add("server", line, message, request=request)
        if request is not None:
            self._learn_revision(request, message)
        return entry

    def _learn_revision(self, request: Entry, response: Any) -> None:
        result = response.get("result")
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

    def open_request(self, request_id: Any) -> Entry | None:
        """The client request with this id that still waits for its response, if one does."""
        return self._open_client.get(_id_key(request_id))

    def used_request_id(self, request_id: Any) -> bool:
        """Whether a client request of this run (of this MCP session) had this id already (one still
        open counts once the set is full)."""
        key = _id_key(request_id)
        return hash(key) in self._used_ids or key in self._open_client

    def unanswered(self) -> list[Entry]:
        """Client requests that have had no response yet, oldest first."""
        return list(self._open_client.values())

    def client_messages(self) -> list[Entry]:
        return self._views(self._by_direction["client"])

    def server_messages(self) -> list[Entry]:
        return self._views(self._by_direction["server"])

    def response_to(self, request: Entry) -> Entry | None:
        seq = self._responses.get(request.seq)
        return None if seq is None else self._view(seq)

    def _page_seqs(self, after_seq: int, limit: int | None, max_chars: int | None = None) -> range:
        first = max(after_seq, self.dropped) + 1
        end = self.last_seq + 1 if limit is None else min(self.last_seq + 1, first + max(limit, 0))
        if max_chars is not None:  # the first entry always, then while the lines fit
            chars, i = 0, first - 1 - self.dropped
            for seq in range(first, end):
                chars += len(self._line[i])
                i += 1
                if chars > max_chars and seq > first:
                    return range(first, seq)
        return range(first, end)

    def page(self, after_seq: int = 0, limit: int | None = None, max_chars: int | None = None) -> list[Entry]:
        """Kept entries numbered above `after_seq`, at most `limit` of them, and (`max_chars`) those of
        them whose lines fit in so many characters, the first one always."""
        return self._views(self._page_seqs(after_seq, limit, max_chars))

    def page_bytes(self, after_seq: int = 0, limit: int | None = None, max_chars: int | None = None) -> int:
        """What sending `page(after_seq, limit, max_chars)` back costs, in the bytes of its lines."""
        seqs = self._page_seqs(after_seq, limit, max_chars)
        first, end = seqs.start - 1 - self.dropped, seqs.stop - 1 - self.dropped
        return sum(len(line) for line in self._line[first:end])

    def _entry_json(self, entry: Entry) -> dict[str, Any]:
        data = entry.to_json()
        if (by := self._made_by.get(entry.seq)) is not None:
            data["by"] = by
        return data

    def to_json(
        self, after_seq: int = 0, limit: int | None = None, max_chars: int | None = None
    ) -> dict[str, Any]:
        entries = self.page(after_seq, limit, max_chars)
        more = bool(entries) and entries[-1].seq < self.last_seq
        with self.reading():
            listed = [self._entry_json(e) for e in entries]
        return {
            "server": self.server,
            "started_at": self.started_at,
            "revision": self.revision,
            "dropped": self.dropped,
            "entries": listed,
            "next_after": entries[-1].seq if more else None,
        }


def parsed_cost(entry: Entry) -> int:
    """An upper estimate of the memory `entry`'s parsed message takes: its text, and for each
    container and each element beyond the first a Python object or a pointer."""
    return _parsed_cost(entry._source)


def _parsed_cost(text: str) -> int:
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
