"""A session's transcript: every message both ways, in order, timestamped, with the negotiated revision.

Lives here so that the relay writes it and the course's hands-on checks read it without importing
each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

Direction = Literal["client", "server", "relay"]
# Enough for any lesson many times over; bounds a console left running for hours.
MAX_ENTRIES = 5000


@dataclass
class Entry:
    """One line on the wire. `message` is the parsed JSON (None when the line was not JSON)."""

    seq: int
    # "client": sent to the server; "server": written by the server; "relay": a bad client frame the
    # relay answered itself (`line` is what the client sent, `message` the relay's error reply).
    direction: Direction
    at_ms: float  # since the transcript began
    line: str
    message: Any
    answers: int | None = None  # for a server response: the seq of the client request it answers
    rtt_ms: float | None = None

    @property
    def method(self) -> str | None:
        return self.message.get("method") if isinstance(self.message, dict) else None

    @property
    def is_request(self) -> bool:
        return isinstance(self.message, dict) and "method" in self.message and "id" in self.message

    @property
    def is_notification(self) -> bool:
        return isinstance(self.message, dict) and "method" in self.message and "id" not in self.message

    @property
    def is_response(self) -> bool:
        return (
            isinstance(self.message, dict)
            and "method" not in self.message
            and ("result" in self.message or "error" in self.message)
        )

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


@dataclass
class Transcript:
    server: str
    started_at: float = field(default_factory=time.time)  # wall clock, for the export
    revision: str | None = None  # the protocol revision in force, once known
    entries: list[Entry] = field(default_factory=list)
    # A session that runs for hours keeps only its latest entries; seq numbers go on counting.
    max_entries: int = MAX_ENTRIES
    dropped: int = 0  # entries let go from the front
    _t0: float = field(default_factory=time.perf_counter, repr=False)
    # Open client requests by JSON-RPC id (as JSON text, so 1 and "1" differ).
    _open_client: dict[str, Entry] = field(default_factory=dict, repr=False)

    def now_ms(self) -> float:
        """Milliseconds since the transcript began."""
        return (time.perf_counter() - self._t0) * 1000

    def _next(self) -> tuple[int, float]:
        return self.dropped + len(self.entries) + 1, self.now_ms()

    def _append(self, entry: Entry) -> None:
        self.entries.append(entry)
        if len(self.entries) > self.max_entries:
            cut = max(self.max_entries // 10, 1)
            del self.entries[:cut]
            self.dropped += cut

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
        return entry

    def add_relay_error(self, text: str, reply: dict[str, Any]) -> Entry:
        """A frame the relay refused: it never reached the server; `reply` is what the client got."""
        seq, at_ms = self._next()
        entry = Entry(seq, "relay", at_ms, text, reply)
        self._append(entry)
        return entry

    def relay_errors(self) -> list[Entry]:
        return [e for e in self.entries if e.direction == "relay"]

    def add_server(self, line: str, message: Any) -> Entry:
        seq, at_ms = self._next()
        entry = Entry(seq, "server", at_ms, line, message)
        if entry.is_response:
            request = self._open_client.pop(_id_key(message.get("id")), None)
            if request is not None:
                entry.answers = request.seq
                entry.rtt_ms = at_ms - request.at_ms
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
            version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
            if isinstance(version, str):
                self.revision = version

    def unanswered(self) -> list[Entry]:
        """Client requests that have had no response yet, oldest first."""
        return list(self._open_client.values())

    def client_messages(self) -> list[Entry]:
        return [e for e in self.entries if e.direction == "client"]

    def server_messages(self) -> list[Entry]:
        return [e for e in self.entries if e.direction == "server"]

    def response_to(self, request: Entry) -> Entry | None:
        return next((e for e in self.entries if e.answers == request.seq), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "started_at": self.started_at,
            "revision": self.revision,
            "dropped": self.dropped,
            "entries": [e.to_json() for e in self.entries],
        }


def _id_key(value: Any) -> str:
    import json

    return json.dumps(value)
