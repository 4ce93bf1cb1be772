"""The live sessions of every replica sharing one PostgreSQL database, with its replicas' heartbeats
and the commands one replica leaves for another (an instructor's "End" for a session held elsewhere).

The tables are part of the progress database's schema (app/progress/migrations.py, version 7); their
queries live here, run on the progress store's connection. A replica's sessions count only while its
heartbeat is younger than `fresh_s`. SQLite holds the same tables, unused outside the tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.progress.database import SQLDatabase
from app.progress.store import ProgressStore

# Which cap across replicas a new session would pass.
Full = Literal["class", "learner"]


@dataclass(frozen=True)
class LiveSession:
    """A console or MCP session live on some replica (PostgreSQL deployments)."""

    id: str
    replica_id: str
    learner_id: str | None
    class_id: str | None
    server: str
    started_at: float
    last_active_at: float


class FleetStore:
    """The replicas' shared register, on the progress store's database."""

    def __init__(self, progress: ProgressStore) -> None:
        if not isinstance(progress, SQLDatabase):
            raise TypeError("replicas share their sessions through a SQL progress store")
        self.db = progress

    _LIVE_COLUMNS = "s.id, s.replica_id, s.learner_id, s.class_id, s.server, s.started_at, s.last_active_at"

    def register_replica(self, replica_id: str) -> None:
        """This replica is alive (again): its row, made or refreshed."""
        now = time.time()
        with self.db.writing() as db:
            self.db.execute(
                db,
                "INSERT INTO replicas (id, started_at, heartbeat_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                (replica_id, now, now),
            )

    def heartbeat(self, replica_id: str, live: Sequence[LiveSession]) -> bool:
        """The replica is alive and holds `live`: its row and theirs made or refreshed (their last
        activity). False when the others had forgotten it (silent for FORGET_S: stopped, or cut off
        from the database): its row and its sessions are back from now on."""
        now = time.time()
        with self.db.writing() as db:
            known = self.db.execute(db, "SELECT 1 FROM replicas WHERE id = ?", (replica_id,)).fetchone()
            self.db.execute(
                db,
                "INSERT INTO replicas (id, started_at, heartbeat_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                (replica_id, now, now),
            )
            for s in live:
                self.db.execute(
                    db,
                    "INSERT INTO live_sessions (id, replica_id, learner_id, class_id, server, started_at, "
                    "last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET last_active_at = excluded.last_active_at",
                    (s.id, replica_id, s.learner_id, s.class_id, s.server, s.started_at, s.last_active_at),
                )
        return known is not None

    def add_live_session(
        self, replica_id: str, session: LiveSession, class_cap: int | None, fresh_s: float,
        learner_cap: int | None = None,
    ) -> Full | None:  # fmt: skip
        """Record a new session unless it would pass a cap across replicas: `class_cap` (its class's
        live sessions) or `learner_cap` (its learner's). One class and one learner decide at a time.
        None when recorded, else which cap is full."""
        fresh_after = time.time() - fresh_s
        caps: tuple[tuple[Full, str, str | None, int | None, Callable[[Any, str], None]], ...] = (
            ("class", "class_id", session.class_id, class_cap, self.db.lock_class),
            ("learner", "learner_id", session.learner_id, learner_cap, self.db.lock_learner),
        )
        with self.db.writing() as db:
            for full, column, value, cap, lock in caps:
                if value is None or cap is None:
                    continue
                lock(db, value)
                row = self.db.execute(
                    db,
                    "SELECT COUNT(*) FROM live_sessions s JOIN replicas r ON r.id = s.replica_id "
                    f"WHERE s.{column} = ? AND r.heartbeat_at > ?",
                    (value, fresh_after),
                ).fetchone()
                if row[0] >= cap:
                    return full
            self.db.execute(
                db,
                "INSERT INTO live_sessions (id, replica_id, learner_id, class_id, server, started_at, "
                "last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session.id, replica_id, session.learner_id, session.class_id, session.server,
                 session.started_at, session.last_active_at),
            )  # fmt: skip
        return None

    def end_live_sessions(self, session_ids: Sequence[str]) -> None:
        with self.db.writing() as db:
            for session_id in session_ids:
                self.db.execute(db, "DELETE FROM live_sessions WHERE id = ?", (session_id,))
                self.db.execute(db, "DELETE FROM session_commands WHERE session_id = ?", (session_id,))

    def live_sessions(self, fresh_s: float, class_id: str | None = None) -> list[LiveSession]:
        query = (
            f"SELECT {self._LIVE_COLUMNS} FROM live_sessions s JOIN replicas r ON r.id = s.replica_id "
            "WHERE r.heartbeat_at > ?"
        )
        args: list[Any] = [time.time() - fresh_s]
        if class_id is not None:
            query += " AND s.class_id = ?"
            args.append(class_id)
        with self.db.reading() as db:
            rows = self.db.execute(db, query + " ORDER BY s.started_at", args).fetchall()
        return [LiveSession(*row) for row in rows]

    def request_session_end(self, session_id: str, fresh_s: float) -> str | None:
        """Ask the replica holding the session to end it; its id, or None when no live one holds it."""
        with self.db.writing() as db:
            row = self.db.execute(
                db,
                "SELECT s.replica_id FROM live_sessions s JOIN replicas r ON r.id = s.replica_id "
                "WHERE s.id = ? AND r.heartbeat_at > ?",
                (session_id, time.time() - fresh_s),
            ).fetchone()
            if row is None:
                return None
            self.db.execute(
                db,
                "INSERT INTO session_commands (session_id, replica_id, command, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id, row[0], "end", time.time()),
            )
        return str(row[0])

    def take_session_commands(self, replica_id: str) -> list[tuple[str, str]]:
        """(session id, command) pairs waiting for this replica, removed as they are read."""
        with self.db.writing() as db:
            rows = self.db.execute(
                db, "SELECT session_id, command FROM session_commands WHERE replica_id = ?", (replica_id,)
            ).fetchall()
            if rows:
                self.db.execute(db, "DELETE FROM session_commands WHERE replica_id = ?", (replica_id,))
        return [(row[0], row[1]) for row in rows]

    def retire_replica(self, replica_id: str) -> None:
        """A replica stopping: its sessions and its row go."""
        with self.db.writing() as db:
            for table in ("live_sessions", "session_commands"):
                self.db.execute(db, f"DELETE FROM {table} WHERE replica_id = ?", (replica_id,))
            self.db.execute(db, "DELETE FROM replicas WHERE id = ?", (replica_id,))

    def drop_stale_replicas(self, older_than_s: float) -> int:
        """Forget replicas silent for `older_than_s` and their sessions; how many replicas went."""
        cutoff = time.time() - older_than_s
        with self.db.writing() as db:
            stale = [row[0] for row in self.db.execute(db, "SELECT id FROM replicas WHERE heartbeat_at < ?",
                                                  (cutoff,)).fetchall()]  # fmt: skip
            for replica_id in stale:
                for table in ("live_sessions", "session_commands"):
                    self.db.execute(db, f"DELETE FROM {table} WHERE replica_id = ?", (replica_id,))
                self.db.execute(db, "DELETE FROM replicas WHERE id = ?", (replica_id,))
        return len(stale)
