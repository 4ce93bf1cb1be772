"""What a TCP connection may hold before the app sees a request, and how many one address may hold.

uvicorn accepts every connection and waits for its request for as long as the client likes, and it
gathers a request line or header of any length (measured: one 200 MB URL took the web process 50 s
of CPU and 290 MB; about 20,000 idle connections, the open-file limit, and nobody else could connect,
nor could a sandboxed server start, since its pipes need descriptors too). One visitor could stop
every learner. So, before the app sees a request (app/web/wsprotocol.py's HttpProtocol asks this
module; uvicorn's settings have no such limits):

- a connection must send a whole request head within `request_head_timeout_s` of opening, or of
  its first byte after a response, and the head may be at most `max_request_head_bytes`;
- a request's body may stall for at most `request_body_idle_s` while we are reading it (a body we
  do not read yet, past what uvicorn buffers while the app has not asked, is not the client's stall);
- one address holds at most `max_connections_per_address` connections at once (pages, API,
  consoles and MCP clients alike), everybody together `max_connections`, which also fits the
  open-file limit beside what the sandboxed servers need;
- one address's requests (WebSocket handshakes included) start at `requests_per_s_per_address` on
  average, past a first 10 seconds' worth; past it the next one waits before the app sees it
  (`RequestPacing`, an ASGI middleware; measured: one address sending cheap requests on 256
  connections took the web process's whole core, and another learner's ping waited 64-86 ms at
  the median, 110-174 ms at the 99th percentile). Behind a trusted proxy, the address is the one its
  X-Forwarded-For names, as everywhere else (app/web/client.py).

A trusted proxy's own address is not capped per address: its clients are all behind it, and the
proxy keeps its own limits (deploy/nginx/playground.conf). It still counts in the total.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from app.relay.rates import KEYS_KEPT, MONOTONIC, Clock, Pace
from app.sandbox.pool import raise_open_file_limit
from app.web.client import TrustedProxies, address_key, resolve_address

log = logging.getLogger("app.connections")

# The fewest connections the total may be lowered to by a small open-file limit.
MIN_CONNECTIONS = 64
# Refused connections are logged once, then summed up at most this often (a flood of refusals must
# not become a flood of log lines).
REFUSAL_REPORT_S = 60.0
# An address may start this many seconds' worth of requests at once, before its pace holds.
REQUEST_BURST_S = 10.0


@dataclass(frozen=True)
class ConnectionLimits:
    total: int
    per_address: int
    head_timeout_s: float
    body_idle_s: float
    max_head_bytes: int
    requests_per_s: float  # per address

    @classmethod
    def from_settings(cls, settings: Any) -> ConnectionLimits:  # app.config.Settings
        total = settings.max_connections
        if total is None:  # a console's WebSocket and a few keep-alive page connections per learner
            total = max(1024, 4 * settings.max_sessions)
        return cls(total, settings.max_connections_per_address, settings.request_head_timeout_s,
                   settings.request_body_idle_s, settings.max_request_head_bytes,
                   settings.requests_per_s_per_address)  # fmt: skip


class Connections:
    """Every open connection of this process, counted by address; one per app (AppState)."""

    def __init__(self, limits: ConnectionLimits, trusted: TrustedProxies, metrics: Any = None,
                 clock: Clock = MONOTONIC) -> None:  # fmt: skip
        self.limits = limits
        self.clock = clock  # the requests' paces, and the waits they make
        self.total = limits.total  # lowered by fit_open_files when descriptors are short
        self.trusted = trusted
        self.metrics = metrics  # app.metrics.Metrics, or None (a protocol test)
        self._held: dict[object, str | None] = {}  # transport -> its address key (None: not capped)
        self._by_key: Counter[str] = Counter()
        self._refused: Counter[str] = Counter()  # by reason, since the last report
        self._refused_keys: Counter[str] = Counter()
        self._reported_at = -REFUSAL_REPORT_S
        self._paces: dict[str, Pace] = {}  # by address key: how fast its requests start
        self._first_refused_at = 0.0

    @property
    def open(self) -> int:
        return len(self._held)

    def held_by(self, address: str) -> int:
        return self._by_key.get(address_key(address), 0)

    def fit_open_files(self, reserved: int) -> None:
        """Raise the open-file limit for `reserved` descriptors (the sandboxed servers' pipes, files)
        and the total's connections; when the hard limit is lower, lower the total to what fits."""
        got = raise_open_file_limit(reserved + self.limits.total)
        if got < reserved + self.limits.total:
            self.total = max(MIN_CONNECTIONS, got - reserved)
            log.warning("the open-file limit (%d) leaves room for %d connections, not %d "
                        "(PLAYGROUND_MAX_CONNECTIONS): at most %d are accepted at once",
                        got, self.total, self.limits.total, self.total)  # fmt: skip

    def admit(self, transport: object, peer: str) -> str | None:
        """Count a new connection from `peer`, or say why it is refused ("total", "address")."""
        key = None if peer in self.trusted else address_key(peer)
        if len(self._held) >= self.total:
            return self._refuse("total", key or peer)
        if key is not None:
            if self._by_key[key] >= self.limits.per_address:
                return self._refuse("address", key)
            self._by_key[key] += 1
        self._held[transport] = key
        return None

    def request_wait(self, scope: Any) -> float:
        """Count a request whose head has come (`scope`: an ASGI scope, with the client and the
        headers); the seconds it must wait before it starts (0.0: none). Requests waiting side by side
        queue."""
        key = address_key(scope.get("client_address") or resolve_address(scope, self.trusted))
        pace = self._paces.get(key)
        if pace is None:
            if len(self._paces) >= KEYS_KEPT:  # forget the addresses whose pace is back to a new one's
                kept = [(k, p) for k, p in self._paces.items() if not p.rested]
                self._paces = dict(kept[-KEYS_KEPT // 2 :])  # and, with that many busy, the oldest
            rate = self.limits.requests_per_s
            pace = self._paces[key] = Pace(rate, burst=rate * REQUEST_BURST_S, clock=self.clock)
        wait = pace.charge(1)
        if wait and self.metrics is not None:
            self.metrics.requests_paced.inc()
        return wait

    def release(self, transport: object) -> None:
        """The connection ended (called by each protocol that held it; only the first counts)."""
        if transport not in self._held:
            return
        key = self._held.pop(transport)
        if key is not None:
            left = self._by_key[key] - 1
            if left:
                self._by_key[key] = left
            else:
                del self._by_key[key]

    def cut(self, phase: str) -> None:
        """A connection was closed for stalling or for an oversized head (`phase`)."""
        if self.metrics is not None:
            self.metrics.connections_cut.labels(phase).inc()

    def _refuse(self, reason: str, key: str) -> str:
        if self.metrics is not None:
            self.metrics.connections_refused.labels(reason).inc()
        now = time.monotonic()
        if not self._refused:
            self._first_refused_at = now
        self._refused[reason] += 1
        self._refused_keys[key] += 1
        if now - self._reported_at >= REFUSAL_REPORT_S:
            worst, count = self._refused_keys.most_common(1)[0]
            log.warning("refused %d connection(s) over %.0f s (over one address's cap of %d: %d; over the "
                        "total of %d: %d); most from %s (%d)",
                        sum(self._refused.values()), now - self._first_refused_at, self.limits.per_address,
                        self._refused["address"], self.total, self._refused["total"], worst, count)  # fmt: skip
            self._reported_at = now
            self._refused.clear()
            self._refused_keys.clear()
        return reason


class RequestPacing:
    """ASGI middleware: each address's requests and WebSocket handshakes start at its pace
    (`Connections.request_wait`); one past it waits here before the app sees it. Inside
    ClientMiddleware, whose resolved address it counts."""

    def __init__(self, app: ASGIApp, connections: Connections) -> None:
        self.app = app
        self.connections = connections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and (wait := self.connections.request_wait(scope)):
            await self.connections.clock.sleep(wait)
        await self.app(scope, receive, send)
