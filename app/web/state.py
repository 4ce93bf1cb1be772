"""Everything the app holds while it runs, built in create_app() and started in its lifespan."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sys
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
from fastapi import Request

from app import workspace
from app.config import Settings, token_problem
from app.course.catalog import Catalog
from app.course.models import LessonError
from app.demos import DemoServer
from app.fleet import Fleet, FleetStore
from app.metrics import Metrics
from app.progress import ProgressStore, open_store
from app.protocol.transcript import Transcript
from app.relay.admission import Admission, Caps, Owner
from app.relay.httpwire import HttpSessions
from app.relay.rates import KeyedBudget, KeyedRate
from app.relay.session import RelaySession, SessionLimits
from app.relay.sessions import Sessions
from app.sandbox.confine import LAYERS
from app.sandbox.errors import SandboxError
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool
from app.sandbox.process import ProcessSource
from app.web import heap
from app.web.apps_proxy import origin_problem
from app.web.client import TrustedProxies
from app.web.connections import ConnectionLimits, Connections
from app.web.credentials import FailureThrottle
from app.web.endpoint_cache import EndpointCache
from app.web.file_checks import FileChecks
from app.web.learner import SECRET_NAME, Identity
from app.web.oauth_log import FlowLog
from app.workspace import typescript

log = logging.getLogger("app")

# server.ts files turned into JavaScript at once, as consoles start (the editor's checks run one at a
# time of their own: app/web/file_checks.py).
TRANSPILES_AT_ONCE = 2

PROGRESS_DB = "progress.sqlite3"  # in settings.data_dir
HOUR_S = 3600.0  # the window of the per-hour settings (saves, endpoints) per address
# The end of a learner's own server's stderr kept with the record of how it ended (its traceback).
OWN_EXIT_STDERR = 4000
# Every layer's state when a test hands the app its processes (plain ones, no sandbox at all).
TEST_SOURCE_LAYER = "off: tests (the app was given a process source, no sandbox)"


@dataclass
class AppState:
    settings: Settings
    demos: dict[str, DemoServer]
    pool: InstancePool | None = None
    # Given by in-process tests (create_app(process_source=...)): processes from here, no InstancePool.
    process_source: ProcessSource | None = None
    sessions: Sessions | None = None
    identity: Identity | None = None
    ready: bool = False
    instructor_token: str | None = None
    # Empty until start() loads lessons/, unless given parsed (create_app(catalog=...)): in-process
    # tests build many apps over the same lessons.
    catalog: Catalog = field(default_factory=Catalog)
    progress: ProgressStore = field(init=False)
    metrics: Metrics = field(default_factory=Metrics)
    throttle: FailureThrottle = field(init=False)  # wrong secrets, per kind and client address
    http_sessions: HttpSessions = field(default_factory=HttpSessions)  # MCP sessions on endpoints
    endpoint_cache: EndpointCache = field(default_factory=EndpointCache)  # endpoints by token, briefly
    fleet: Fleet | None = None  # replicas sharing PostgreSQL: every replica's live sessions
    connections: Connections = field(init=False)  # every TCP connection, counted by address
    saves: KeyedBudget = field(init=False)  # bytes of workspace files saved, by address
    endpoint_starts: KeyedRate = field(init=False)  # endpoints made, by address
    file_checks: FileChecks = field(default_factory=FileChecks)  # the editor's syntax checks
    # Set by `python -m app` (the real server process), never by in-process tests: become
    # settings.run_as_user once the fork server is up. `privileges` is the layer's state for /healthz.
    drop_privileges: bool = False
    privileges: str = "off: the app runs in-process (a test), the web process keeps its user"
    # Also set by `python -m app` only: the heap settled after start-up, and trimmed (app/web/heap.py).
    tend_heap: bool = False
    _heap_trim: asyncio.Task | None = None
    _transpiles: anyio.CapacityLimiter | None = None  # made in the event loop, at the first start

    def __post_init__(self) -> None:
        self.progress = open_store(self.settings.database_url, self.settings.data_dir / PROGRESS_DB)
        self.flows = FlowLog(self.progress)  # protected endpoints' authorization flows, as owners watch them
        self.throttle = FailureThrottle(self.settings.failed_attempts_per_address)
        self.saves = KeyedBudget(self.settings.saved_kib_per_hour_per_address * 1024, HOUR_S)
        self.endpoint_starts = KeyedRate(self.settings.new_endpoints_per_hour_per_address, HOUR_S)
        self.connections = Connections(ConnectionLimits.from_settings(self.settings),
                                       TrustedProxies(self.settings.trusted_proxies), self.metrics)  # fmt: skip

    async def own_source(self, owner: Owner, name: str = workspace.FILE_NAME) -> str:
        """The file of `owner`'s workspace that runs (server.py, which my-server runs, by default):
        their latest saved version, else the starter."""
        learner = owner.learner
        if learner is not None:
            saved = await anyio.to_thread.run_sync(lambda: self.progress.server_file(learner, name=name))
            if saved is not None:
                return saved.source
        return workspace.starter(name)

    async def own_language(self, owner: Owner) -> str:
        """The language `owner` writes their own server in (the workspace's setting; python unless set)."""
        learner = owner.learner
        if learner is None:
            return workspace.DEFAULT_LANGUAGE
        chosen = await anyio.to_thread.run_sync(self.progress.server_language, learner)
        return chosen if chosen in workspace.LANGUAGES else workspace.DEFAULT_LANGUAGE

    async def own_program(self, owner: Owner) -> workspace.Program:
        """What my-server runs for `owner`: their file in the language they chose, as a program."""
        language = await self.own_language(owner)
        source = await self.own_source(owner, workspace.LANGUAGES[language])
        if language != "typescript":
            return await anyio.to_thread.run_sync(workspace.program, language, source)
        if typescript.cached(source) is not None:  # saved, and so checked, already: no esbuild run
            return await anyio.to_thread.run_sync(workspace.program, language, source)
        # esbuild may take seconds of a core on a hostile file: a few at a time in all, waiting here
        # rather than in the threads every page and query of the app needs.
        if self._transpiles is None:
            self._transpiles = anyio.CapacityLimiter(TRANSPILES_AT_ONCE)
        return await anyio.to_thread.run_sync(workspace.program, language, source, limiter=self._transpiles)

    async def own_server_exited(self, session: RelaySession) -> None:
        """Keep how a learner's own server ended by itself, for the instructor's view of them."""
        learner = session.owner.learner
        if learner is None:
            return
        status = session.exit_status
        report = json.dumps({"at": time.time(), "exit": str(status or "stopped"),
                             "failed": status is None or status.code != 0, "reason": session.reason,
                             "stderr": "\n".join(session.stderr_tail)[-OWN_EXIT_STDERR:]})  # fmt: skip
        await anyio.to_thread.run_sync(self.progress.record_server_exit, learner, report)

    async def start(self) -> None:
        s = self.settings
        # Lessons first: a bad file stops the app before any server process starts.
        try:
            if not self.catalog.lessons:
                self.catalog = Catalog.load(s.lessons_dir, servers=self.demos.keys())
        except LessonError as exc:
            print(f"Refusing to start: a lesson file is wrong: {exc}", file=sys.stderr, flush=True)
            raise
        self.progress.open()
        if s.database_url:  # several replicas may share this database: share live sessions too
            self.fleet = Fleet(FleetStore(self.progress), s.replica_silence_s)
        if (problem := origin_problem(s)) is not None:
            print(f"Refusing to start: {problem}", file=sys.stderr, flush=True)
            raise ValueError(problem)
        self.instructor_token = s.instructor_token
        if (problem := token_problem(s)) is not None:
            print(f"Refusing to start: {problem}", file=sys.stderr, flush=True)
            raise ValueError(problem)
        if not self.instructor_token:  # the dashboard is never open to anyone who finds it
            self.instructor_token = secrets.token_urlsafe(24)
            print(f"Instructor dashboard token: {self.instructor_token}", file=sys.stderr, flush=True)
        self.identity = Identity(
            s.cookie_secret or self.progress.shared_secret(SECRET_NAME), s.new_learners_per_address,
            self.progress.sign_in_generation,
        )  # fmt: skip
        if self.process_source is not None:
            source: ProcessSource = self.process_source
        else:
            source = await self._start_pool()
        admission = Admission(
            Caps.from_share(
                s.max_sessions,
                s.max_sessions_per_learner,
                s.outside_class_share,
                new_per_owner_per_min=s.new_sessions_per_min,
                per_address_outside=s.max_sessions_per_address,
            ),
            memory=self.pool.launcher.memory if self.pool is not None else None,
        )
        self.sessions = Sessions(
            source, admission, grace_s=s.reconnect_grace_s, idle_timeout_s=s.idle_timeout_s,
            max_session_s=s.max_session_s, metrics=self.metrics,
            new_transcript=lambda server: Transcript(server=server, max_bytes=s.transcript_max_bytes),
            own_source=self.own_program, own_exited=self.own_server_exited, shared=self.fleet,
            session_limits=SessionLimits(s.max_message_values, s.server_read_bytes_per_s,
                                         s.client_read_bytes_per_s),
        )  # fmt: skip
        self.sessions.start()
        if self.fleet is not None:
            self.fleet.start(self.sessions)
        self._bind_metrics()
        if self.drop_privileges:
            self._drop_privileges()
            if self.privileges.startswith("not in force") and not s.weak_sandbox_allowed:
                await self.stop()
                raise SandboxError(
                    "Refusing to start: the web process cannot drop root and hosting mode needs it "
                    "(set PLAYGROUND_ACCEPT_WEAK_SANDBOX=true to accept it).",
                    reason="weak_sandbox",
                )
        self.metrics.watch_gc()
        if self.tend_heap:
            self.metrics.gc_frozen_objects.set(heap.settle_heap())
            self._heap_trim = asyncio.create_task(heap.HeapTrim().run(), name="heap-trim")
        self.ready = True

    async def _start_pool(self) -> InstancePool:
        """The fork server and its warm instances; refuses a weak sandbox unless it is accepted."""
        s = self.settings
        pool = self.pool = InstancePool(
            servers=list(self.demos),
            limits=Limits.from_settings(s),
            sandbox=s.sandbox,
            extra_modules=s.extra_demo_modules,
            capacity=s.max_sessions,
            pool_sizes=warm_pool_sizes(s, self.demos),
            growth=s.warm_pool_growth,
            uid_base=s.uid_base,
            max_line_bytes=s.server_max_line_bytes,
            max_output_bytes=s.server_max_output_bytes,
            rootless=s.rootless_sandbox,
        )
        await pool.start()
        self.connections.fit_open_files(pool.open_files_needed)
        missing = pool.missing_layers()
        if missing:
            lines = "\n".join(f"  - {name}: {why}" for name, why in missing.items())
            banner = f"WARNING: the sandbox is incomplete on this machine:\n{lines}"
            print(banner, file=sys.stderr, flush=True)
            log.warning(banner)
            if not s.weak_sandbox_allowed:
                await pool.stop()
                raise SandboxError(
                    "Refusing to start: a sandbox layer is missing and hosting mode needs them all "
                    "(set PLAYGROUND_ACCEPT_WEAK_SANDBOX=true to accept it).",
                    reason="weak_sandbox",
                )
        return pool

    def _drop_privileges(self) -> None:
        from app import privileges

        assert self.pool is not None
        reserved = range(self.settings.uid_base, self.pool.uid_range.stop)
        self.privileges = privileges.drop(self.settings.run_as_user, self.settings.data_dir, reserved)
        if self.privileges.startswith("not in force"):
            banner = f"WARNING: the web process stays root: {self.privileges}"
            print(banner, file=sys.stderr, flush=True)
            log.warning(banner)

    async def stop(self) -> None:
        self.ready = False
        self.metrics.unwatch_gc()
        if self._heap_trim is not None:
            self._heap_trim.cancel()
        if self.sessions is not None:
            await self.sessions.close_all()
        if self.fleet is not None:
            await self.fleet.stop()
        if self.pool is not None:
            await self.pool.stop()
        self.progress.close()

    def sandbox_layers(self) -> dict[str, str]:
        return self.pool.layers if self.pool is not None else dict.fromkeys(LAYERS, TEST_SOURCE_LAYER)

    def missing_layers(self) -> dict[str, str]:
        return self.pool.missing_layers() if self.pool is not None else self.sandbox_layers()

    def warm_pool_size(self, server: str) -> int:
        return self.pool.pool_size(server) if self.pool is not None else 0

    def warm_pool_target(self, server: str) -> int:
        return self.pool.pool_target(server) if self.pool is not None else 0

    def _bind_metrics(self) -> None:
        sessions = self.sessions
        assert sessions is not None
        self.metrics.live_sessions.set_function(lambda: sessions.live)
        self.metrics.connections_open.set_function(lambda: self.connections.open)
        for name in self.demos:
            self.metrics.warm_pool.labels(name).set_function(partial(self.warm_pool_size, name))
            self.metrics.warm_pool_target.labels(name).set_function(partial(self.warm_pool_target, name))
        for layer, why in self.sandbox_layers().items():
            self.metrics.sandbox_layer.labels(layer).set(1 if why == "ok" else 0)

    async def owner_of(self, scope: MutableMapping[str, Any]) -> Owner:
        """Who a new session is for, as admission counts it: one small query, off the event loop."""
        from app.web.client import client_key

        learner = scope.get("learner_id")
        address = client_key(scope)
        if not learner:
            return Owner(None, address)
        klass = await anyio.to_thread.run_sync(self.progress.learner_class, learner)
        if klass is None:
            return Owner(learner, address)
        return Owner(learner, address, klass.id, klass.max_sessions or self.settings.max_sessions_per_class)

    def health(self) -> dict:
        sessions = self.sessions
        if not self.ready or sessions is None:
            return {"status": "starting"}
        missing = self.missing_layers()
        admission = sessions.admission
        away_since = self.progress.unavailable_since()
        return {
            "status": "degraded" if missing or away_since is not None else "ok",
            "sandbox": {"layers": self.sandbox_layers(), "complete": not missing},
            "privileges": self.privileges,
            "store": store_health(away_since),
            "sessions": {
                "live": sessions.live,
                "max": admission.caps.total,
                "outside_classes": admission.outside_classes,
                "max_outside_classes": admission.caps.outside_classes,
            },  # fmt: skip
            "warm_pool": {name: self.warm_pool_size(name) for name in self.demos},
            "warm_pool_target": {name: self.warm_pool_target(name) for name in self.demos},
            "servers": list(self.demos),
        }


def store_health(away_since: float | None) -> dict[str, str]:
    """The progress database as the app's last calls found it: a replica that cannot reach it serves
    pages but saves nothing, and the health page says since when."""
    if away_since is None:
        return {"status": "ok"}
    return {"status": "unavailable", "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(away_since))}


def warm_pool_sizes(settings: Settings, demos: dict[str, DemoServer]) -> dict[str, int]:
    """Instances started ahead of demand, per server: PLAYGROUND_WARM_POOL_SIZE for demo-orders, one
    for each other demo, none of a learner's own server (each runs the file its learner saved last)."""
    size = settings.warm_pool_size
    return {name: size if name == "demo-orders" else min(1, size)
            for name, demo in demos.items() if not demo.learners_own}  # fmt: skip


def get_state(request: Request) -> AppState:
    return request.app.state.playground
