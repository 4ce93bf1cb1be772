"""Prometheus metrics of one app, in a registry of its own (served at /metrics)."""

from __future__ import annotations

import collections
import gc
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Session start: a warm instance answers in milliseconds, a cold fork in tens, a stuck one in seconds.
START_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# A collection of the young generations takes well under a millisecond; a full one, hundreds with
# thousands of sessions live.
GC_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.live_sessions = Gauge("playground_live_sessions", "Demo-server sessions live now.", registry=r)
        self.warm_pool = Gauge("playground_warm_pool", "Sandboxed instances started ahead of demand.", ["server"],
                               registry=r)  # fmt: skip
        self.warm_pool_target = Gauge("playground_warm_pool_target", "Warm instances each pool is keeping: "
                                      "its size, or more after a burst grew it.", ["server"], registry=r)  # fmt: skip
        self.sessions_started = Counter(
            "playground_sessions_started", "Sessions started.", ["server"], registry=r
        )
        self.sessions_ended = Counter(
            "playground_sessions_ended", "Sessions ended, by why.", ["reason"], registry=r
        )
        self.session_start_seconds = Histogram(
            "playground_session_start_seconds", "From the WebSocket handshake to a ready instance.",
            buckets=START_BUCKETS, registry=r,
        )  # fmt: skip
        self.relay_messages = Counter(
            "playground_relay_messages",
            "Messages through the relay, by direction.",
            ["direction"],
            registry=r,
        )
        # Counted on every message: the labelled children are looked up once, here, not per message.
        self.client_messages = self.relay_messages.labels("client")
        self.server_messages = self.relay_messages.labels("server")
        self.relay_errors = Counter(
            "playground_relay_errors", "Frames the relay answered with an error itself, by JSON-RPC code.", ["code"],
            registry=r,
        )  # fmt: skip
        self.refusals = Counter("playground_refusals", "Sessions refused, by why.", ["reason"], registry=r)
        # The whole playground, whichever replica is scraped (with one replica: the same as above).
        self.all_live_sessions = Gauge("playground_all_live_sessions",
                                       "Live sessions on every replica sharing the database.", registry=r)  # fmt: skip
        self.class_live_sessions = Gauge("playground_class_live_sessions",
                                         "Live sessions of each class, on every replica.", ["class_id"], registry=r)  # fmt: skip
        self.sandbox_layer = Gauge(
            "playground_sandbox_layer",
            "1 when a sandbox layer is in force, 0 when it is missing.",
            ["layer"],
            registry=r,
        )
        self.connections_open = Gauge("playground_connections_open",
                                      "TCP connections open now (pages, API, consoles, MCP clients).", registry=r)  # fmt: skip
        self.connections_refused = Counter(
            "playground_connections_refused", "Connections closed at once, by the cap they were over.", ["reason"],
            registry=r,
        )  # fmt: skip
        self.connections_cut = Counter(
            "playground_connections_cut",
            "Connections closed for a request head too slow or too big, or a body that stalled.", ["phase"],
            registry=r,
        )  # fmt: skip
        self.writes_capped = Counter(
            "playground_writes_capped", "Saves, endpoints and new OAuth clients refused at an address's hourly cap.",
            ["what"], registry=r,
        )  # fmt: skip
        self.requests_paced = Counter(
            "playground_requests_paced", "HTTP requests that waited their turn at their address's pace.",
            registry=r,
        )  # fmt: skip
        self.gc_pause_seconds = Histogram(
            "playground_gc_pause_seconds",
            "Collections by the web process's garbage collector, by generation: each stops every session.",
            ["generation"], buckets=GC_BUCKETS, registry=r,
        )  # fmt: skip
        self.gc_frozen_objects = Gauge(
            "playground_gc_frozen_objects",
            "Objects kept out of the collector's reach since start-up.",
            registry=r,
        )
        # Filled by the collector's callback, folded into the histogram when /metrics is read: the
        # callback runs inside any allocation, so it takes no lock (a deque append is atomic).
        self._gc_pauses: collections.deque[tuple[int, float]] = collections.deque(maxlen=10_000)
        self._gc_began: float | None = None

    def watch_gc(self) -> None:
        """Time every collection of this process (until unwatch_gc)."""
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def unwatch_gc(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_began = time.perf_counter()
        elif self._gc_began is not None:
            self._gc_pauses.append((info["generation"], time.perf_counter() - self._gc_began))
            self._gc_began = None

    def count_live(self, class_ids: list[str | None]) -> None:
        """Set the whole playground's gauges from every live session's class (None: in no class)."""
        self.all_live_sessions.set(len(class_ids))
        self.class_live_sessions.clear()
        for class_id in set(class_ids) - {None}:
            self.class_live_sessions.labels(class_id).set(class_ids.count(class_id))

    def render(self) -> bytes:
        while self._gc_pauses:
            generation, seconds = self._gc_pauses.popleft()
            self.gc_pause_seconds.labels(str(generation)).observe(seconds)
        return generate_latest(self.registry)
