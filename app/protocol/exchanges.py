"""The HTTP exchanges of a session on a Streamable HTTP endpoint, kept beside its transcript: what the
learner watches besides the messages (method, status, the MCP headers), and what HTTP checks read.
The newest are kept, within a count and within bytes: a client's headers are its own to make long
(59 KB of Accept on each of 500 requests would hold 30 MB a session)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from app.protocol.text import clip


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


# Exchanges kept per session (the oldest go first, also past MAX_EXCHANGE_BYTES of what they hold), and
# the headers worth showing, each value cut at HEADER_CHARS.
MAX_EXCHANGES = 500
MAX_EXCHANGE_BYTES = 256 * 1024
HEADER_CHARS = 200
HTTP_HEADERS_SHOWN = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "mcp-method",
                      "mcp-name", "last-event-id", "origin")  # fmt: skip


class Exchanges:
    """A session's exchanges, numbered from 1, the newest kept."""

    def __init__(self) -> None:
        self._kept: deque[HttpExchange] = deque()
        self._bytes = 0
        self.seen = 0

    def add(self, at_ms: float, method: str, status: int, request_headers: dict[str, str],
            response_headers: dict[str, str], carried: dict[str, Any] | None = None) -> HttpExchange:  # fmt: skip
        self.seen += 1
        if carried is not None:
            carried = {
                key: clip(value, HEADER_CHARS) if isinstance(value, str) else value
                for key, value in carried.items()
            }
        exchange = HttpExchange(self.seen, at_ms, method, status, _clipped(request_headers),
                                _clipped(response_headers), carried)  # fmt: skip
        cost = _cost(exchange)
        while self._kept and (len(self._kept) >= MAX_EXCHANGES or self._bytes + cost > MAX_EXCHANGE_BYTES):
            self._bytes -= _cost(self._kept.popleft())
        self._kept.append(exchange)
        self._bytes += cost
        return exchange

    def after(self, number: int) -> list[HttpExchange]:
        return [x for x in self._kept if x.number > number]

    def __iter__(self) -> Iterator[HttpExchange]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)


def _clipped(headers: dict[str, str]) -> dict[str, str]:
    return {name: clip(value, HEADER_CHARS) for name, value in headers.items()}


def _cost(exchange: HttpExchange) -> int:
    """What an exchange holds, about: its headers' text and what its message carried."""
    headers = (*exchange.request_headers.items(), *exchange.response_headers.items())
    return 64 + sum(len(name) + len(value) for name, value in headers) + len(str(exchange.carried or ""))
