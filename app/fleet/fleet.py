"""Replicas sharing one PostgreSQL act as one playground: each registers its live sessions there.

Only where the progress store is PostgreSQL (several replicas behind a load balancer); on one machine
(SQLite) no Fleet exists and nothing here runs.

- A new session is recorded before its server starts; a class member's is recorded only if the class
  holds fewer live sessions than its cap across every replica (one class decides at a time: a lock
  in the database, app/progress/postgres.py; the queries: app/fleet/store.py), else it is refused as a full class.
- Several times per `silence_s` the replica says it is alive and how recently each of its sessions
  was active. A replica that stops (killed, cut off) drops out of every count once its heartbeat is
  `silence_s` old; whoever notices forgets it after FORGET_S.
- An instructor on any replica can end any console: the replica holding it reads the request within
  COMMANDS_S and ends it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import time

import anyio

from app.fleet.store import FleetStore, LiveSession
from app.relay.admission import class_full, owner_full
from app.relay.session import RelaySession
from app.relay.sessions import NORMAL_CLOSURE, Sessions

log = logging.getLogger(__name__)

# A replica whose heartbeat is older than `silence_s` (PLAYGROUND_REPLICA_SILENCE_S, at most 30 s)
# counts for nothing; each says it is alive three times within that.
BEATS_PER_SILENCE = 3
COMMANDS_S = 1.0
# Silent this long, a replica's rows are removed by whichever replica notices.
FORGET_S = 300.0
ENDED_BY_INSTRUCTOR = "your instructor ended this console"
# /metrics is open to anyone: its count of every replica's sessions is read at most once this often,
# however many scrapes come (each read holds the replica's one database connection a moment).
EVERYWHERE_FRESH_S = 1.0


class Fleet:
    def __init__(self, store: FleetStore, silence_s: float) -> None:
        self.store = store
        self.fresh_s = silence_s
        self.heartbeat_s = silence_s / BEATS_PER_SILENCE
        self.replica_id = f"{socket.gethostname()[:40]}-{secrets.token_hex(4)}"
        self.sessions: Sessions | None = None
        self._ended: list[str] = []
        self._task: asyncio.Task | None = None
        self._everywhere: tuple[float, list[LiveSession]] | None = None  # (read at, sessions)
        self._reading_everywhere = asyncio.Lock()

    def start(self, sessions: Sessions) -> None:
        """Register this replica and start beating. Called once at start-up, before the web process
        drops root: on this thread, since the drop needs the process to have no other."""
        self.sessions = sessions
        self.store.register_replica(self.replica_id)
        self._task = asyncio.create_task(self._loop(), name="fleet")
        log.info("replica %s: live sessions shared through the progress database", self.replica_id)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        try:
            await anyio.to_thread.run_sync(self.store.retire_replica, self.replica_id)
        except Exception as exc:  # the database may be gone first; the others forget us by time
            log.warning("replica %s could not retire: %s", self.replica_id, exc)

    # --- what Sessions tells (SharedSessions) -------------------------------------------------------

    async def admitted(self, session: RelaySession) -> None:
        """Record a session this replica admitted; refused (CapacityError) when its class, or its
        learner, already holds its cap of live sessions on the replicas together."""
        assert self.sessions is not None
        owner = session.owner
        per_learner = self.sessions.admission.caps.per_owner
        full = await anyio.to_thread.run_sync(
            self.store.add_live_session,
            self.replica_id,
            self._live(session),
            owner.class_cap if owner.class_id else None,
            self.fresh_s,
            per_learner if owner.learner else None,
        )
        if full == "class":
            assert owner.class_cap is not None
            raise class_full(owner.class_cap)
        if full == "learner":
            raise owner_full(per_learner, owner)

    def ended(self, session: RelaySession) -> None:
        self._ended.append(session.id)  # removed at the next tick, off the event loop

    # --- what the pages ask ------------------------------------------------------------------------

    def live(self, class_id: str | None = None) -> list[LiveSession]:
        """Every replica's live sessions (of one class). Blocking: call it off the event loop."""
        return self.store.live_sessions(self.fresh_s, class_id)

    async def live_everywhere(self) -> list[LiveSession]:
        """Every replica's live sessions as read at most EVERYWHERE_FRESH_S ago (one read at a time)."""
        async with self._reading_everywhere:
            if self._everywhere is None or time.monotonic() - self._everywhere[0] >= EVERYWHERE_FRESH_S:
                self._everywhere = (
                    time.monotonic(),
                    await anyio.to_thread.run_sync(self.store.live_sessions, self.fresh_s),
                )
            return self._everywhere[1]

    def request_end(self, session_id: str) -> str | None:
        """Ask the replica holding the session to end it; that replica's id, or None. Blocking."""
        return self.store.request_session_end(session_id, self.fresh_s)

    # --- the loop ----------------------------------------------------------------------------------

    async def _loop(self) -> None:
        last_beat = 0.0
        while True:
            try:
                await self._flush_ended()
                await self._follow_commands()
                if time.monotonic() - last_beat >= self.heartbeat_s:
                    last_beat = time.monotonic()
                    known = await anyio.to_thread.run_sync(
                        self.store.heartbeat, self.replica_id, self._live_now()
                    )
                    if not known:
                        log.warning("replica %s was forgotten by the others (silent for %.0f s): back in the "
                                    "fleet with its live sessions", self.replica_id, FORGET_S)  # fmt: skip
                    gone = await anyio.to_thread.run_sync(self.store.drop_stale_replicas, FORGET_S)
                    if gone:
                        log.info("forgot %d silent replica(s) and their sessions", gone)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database hiccuped: local sessions go on; try again
                log.warning("replica %s: fleet tick failed: %s", self.replica_id, exc)
            await asyncio.sleep(min(COMMANDS_S, self.heartbeat_s))

    def _live(self, session: RelaySession) -> LiveSession:
        """What the register holds of a session: its times turned from the sessions' clock to the wall's."""
        assert self.sessions is not None
        wall_minus_clock = time.time() - self.sessions.clock.now()
        owner = session.owner
        return LiveSession(session.id, self.replica_id, owner.learner, owner.class_id, session.server,
                           session.started_at + wall_minus_clock, session.last_active + wall_minus_clock)  # fmt: skip

    def _live_now(self) -> list[LiveSession]:
        assert self.sessions is not None
        return [self._live(s) for s in list(self.sessions.sessions.values())]

    async def _flush_ended(self) -> None:
        if self._ended:
            ended, self._ended = self._ended, []
            try:
                await anyio.to_thread.run_sync(self.store.end_live_sessions, ended)
            except Exception:
                self._ended = ended + self._ended  # next tick
                raise

    async def _follow_commands(self) -> None:
        assert self.sessions is not None
        commands = await anyio.to_thread.run_sync(self.store.take_session_commands, self.replica_id)
        for session_id, command in commands:
            session = self.sessions.sessions.get(session_id)
            if command == "end" and session is not None:
                log.info("session %s: ended at an instructor's request from another replica", session_id)
                self.sessions.end_soon(session, NORMAL_CLOSURE, ENDED_BY_INSTRUCTOR)
