"""Everything the app holds while it runs, built in create_app() and started in its lifespan."""

from __future__ import annotations

import logging
import secrets
import sys
from dataclasses import dataclass, field
from functools import partial

from fastapi import Request

from app.config import Settings
from app.course.catalog import Catalog
from app.course.models import LessonError
from app.demos import DemoServer
from app.metrics import Metrics
from app.progress import ProgressStore, open_store
from app.relay.hub import Hub
from app.sandbox.errors import SandboxError
from app.sandbox.limits import Limits
from app.sandbox.manager import SessionManager

log = logging.getLogger("app")

PROGRESS_DB = "progress.sqlite3"  # in settings.data_dir


@dataclass
class AppState:
    settings: Settings
    demos: dict[str, DemoServer]
    manager: SessionManager | None = None
    hub: Hub | None = None
    ready: bool = False
    instructor_token: str | None = None
    catalog: Catalog = field(default_factory=Catalog)  # empty until start() loads lessons/
    progress: ProgressStore = field(init=False)
    metrics: Metrics = field(default_factory=Metrics)

    def __post_init__(self) -> None:
        self.progress = open_store(self.settings.database_url, self.settings.data_dir / PROGRESS_DB)

    async def start(self) -> None:
        s = self.settings
        # Lessons first: a bad file stops the app before any server process starts.
        try:
            self.catalog = Catalog.load(s.lessons_dir, servers=self.demos.keys())
        except LessonError as exc:
            print(f"Refusing to start: a lesson file is wrong: {exc}", file=sys.stderr, flush=True)
            raise
        self.progress.open()
        self.instructor_token = s.instructor_token
        if not self.instructor_token:  # the dashboard is never open to anyone who finds it
            self.instructor_token = secrets.token_urlsafe(24)
            print(f"Instructor dashboard token: {self.instructor_token}", file=sys.stderr, flush=True)
        pool_sizes = {name: (s.warm_pool_size if name == "demo-orders" else min(1, s.warm_pool_size))
                      for name in self.demos}  # fmt: skip
        self.manager = SessionManager(
            servers=list(self.demos),
            limits=Limits.from_settings(s),
            sandbox=s.sandbox,
            extra_modules=s.extra_demo_modules,
            max_sessions=s.max_sessions,
            max_per_learner=s.max_sessions_per_learner,
            pool_sizes=pool_sizes,
            idle_timeout_s=s.idle_timeout_s,
            max_session_s=s.max_session_s,
            uid_base=s.uid_base,
            max_line_bytes=s.server_max_line_bytes,
            max_output_bytes=s.server_max_output_bytes,
            rootless=s.rootless_sandbox,
        )
        await self.manager.start()
        missing = self.manager.missing_layers()
        if missing:
            lines = "\n".join(f"  - {name}: {why}" for name, why in missing.items())
            banner = f"WARNING: the sandbox is incomplete on this machine:\n{lines}"
            print(banner, file=sys.stderr, flush=True)
            log.warning(banner)
            if not s.weak_sandbox_allowed:
                await self.manager.stop()
                raise SandboxError(
                    "Refusing to start: a sandbox layer is missing and hosting mode needs them all "
                    "(set PLAYGROUND_ACCEPT_WEAK_SANDBOX=true to accept it).",
                    reason="weak_sandbox",
                )
        self.hub = Hub(self.manager, s.reconnect_grace_s, self.metrics)
        self._bind_metrics()
        self.ready = True

    async def stop(self) -> None:
        self.ready = False
        if self.hub is not None:
            await self.hub.close_all()
        if self.manager is not None:
            await self.manager.stop()
        self.progress.close()

    def _bind_metrics(self) -> None:
        manager = self.manager
        assert manager is not None
        self.metrics.live_sessions.set_function(lambda: len(manager.live))
        for name in self.demos:
            self.metrics.warm_pool.labels(name).set_function(partial(manager.pool_size, name))
        for layer, why in manager.layers.items():
            self.metrics.sandbox_layer.labels(layer).set(1 if why == "ok" else 0)

    def class_of(self, learner: str) -> tuple[str | None, int | None]:
        """The learner's class and its session cap, for the capacity check."""
        class_id = self.progress.learner(learner).class_id
        if class_id is None:
            return None, None
        info = self.progress.get_class(class_id)
        if info is None:
            return None, None
        return class_id, info.max_sessions or self.settings.max_sessions_per_class

    def health(self) -> dict:
        manager = self.manager
        if not self.ready or manager is None:
            return {"status": "starting"}
        missing = manager.missing_layers()
        return {
            "status": "degraded" if missing else "ok",
            "sandbox": {"layers": manager.layers, "complete": not missing},
            "sessions": {"live": len(manager.live), "max": manager.max_sessions},
            "warm_pool": {name: manager.pool_size(name) for name in self.demos},
            "servers": list(self.demos),
        }


def get_state(request: Request) -> AppState:
    return request.app.state.playground
