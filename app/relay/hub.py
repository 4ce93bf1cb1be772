"""Every relay session by id: reattach after a dropped connection, export, and ending on time."""

from __future__ import annotations

import asyncio
import logging
import time

from app.metrics import Metrics
from app.relay.session import RelaySession
from app.sandbox.errors import CapacityError
from app.sandbox.manager import SessionManager

log = logging.getLogger(__name__)


class Hub:
    def __init__(self, manager: SessionManager, grace_s: float, metrics: Metrics | None = None) -> None:
        self.manager = manager
        self.grace_s = grace_s
        self.metrics = metrics or Metrics()
        self.sessions: dict[str, RelaySession] = {}
        self._timers: dict[str, asyncio.Task] = {}

    async def open(
        self, server: str, learner: str, class_id: str | None = None, class_cap: int | None = None
    ) -> RelaySession:
        began = time.perf_counter()
        session = RelaySession(
            self.manager, server, learner, self.metrics, class_id=class_id, class_cap=class_cap
        )
        try:
            await session.open()
        except CapacityError as exc:
            self.metrics.refusals.labels(exc.reason).inc()
            raise
        self.metrics.session_start_seconds.observe(time.perf_counter() - began)
        self.metrics.sessions_started.labels(server).inc()
        self.sessions[session.id] = session
        log.info(
            "session %s started: %s", session.id, server, extra={"session": session.id, "server": server}
        )
        return session

    def find(self, session_id: str, learner: str) -> RelaySession | None:
        """The learner's own session, or None (another learner's id is as good as unknown)."""
        session = self.sessions.get(session_id)
        if session is None or session.learner != learner:
            return None
        return session

    def reattach(self, session_id: str, learner: str, server: str) -> RelaySession | None:
        session = self.find(session_id, learner)
        if session is None or session.server != server or session.closed or session.listener is not None:
            return None
        timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()
        return session

    def detach(self, session: RelaySession, *, deliberate: bool = False) -> None:
        """The connection ended. A drop keeps the session for the grace period; a deliberate close
        (the client said goodbye with 1000) ends it at once, so its place is free for the next page."""
        session.listener = None
        if session.closed:
            self.sessions.pop(session.id, None)
            return
        if deliberate:
            self.sessions.pop(session.id, None)
            task = asyncio.create_task(session.close(), name=f"close-{session.id}")
            self._timers[session.id] = task
            task.add_done_callback(lambda _: self._timers.pop(session.id, None))
            return
        self._timers[session.id] = asyncio.create_task(self._expire(session), name=f"grace-{session.id}")

    async def _expire(self, session: RelaySession) -> None:
        try:
            await asyncio.sleep(self.grace_s)
        except asyncio.CancelledError:
            return
        self._timers.pop(session.id, None)
        if session.listener is None:
            self.sessions.pop(session.id, None)
            await session.close()
            log.info("session %s ended", session.id, extra={"session": session.id, "server": session.server})

    async def close_all(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        await asyncio.gather(*(s.close() for s in self.sessions.values()), return_exceptions=True)
        self.sessions.clear()
