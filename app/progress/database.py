"""One SQL database behind the progress store: the connection, the schema and its migrations, and
transactions, with every query written once for SQLite and PostgreSQL (each a small `Dialect`).

Subclasses open the connection (SQLite: a file in WAL mode; PostgreSQL: a server) and say how their
SQL differs; the schema lives in migrations.py. The progress store's queries build on this
(classes_sql.py, sql.py), and so does the register of replicas (app/fleet/store.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from app.progress import migrations
from app.progress.errors import StoreUnavailable
from app.progress.store import LearnerProgress, ProgressError, QuizRecord

# A freshly drawn code clashes with an existing one about never; still, try a few times.
CODE_ATTEMPTS = 8
# After an attempt to connect again has failed, calls fail at once for this long: with the server
# unreachable (not refusing), each attempt waits out the connect time-out, holding every other call.
RECONNECT_BACKOFF_S = 2.0


@dataclass(frozen=True)
class Dialect:
    placeholder: str  # what `?` becomes
    time_type: str  # a column of Unix timestamps with sub-second precision
    serial_type: str  # an auto-numbered integer primary key
    begin: str  # starts a write transaction


class SQLDatabase:
    """One DB-API connection, serialised by a lock: every call is short."""

    dialect: Dialect
    name: str  # for error messages: the file or the server

    def __init__(self) -> None:
        self._db: Any = None
        self._lock = threading.Lock()
        self._next_connect = 0.0  # monotonic: no attempt to connect again before it
        self._away_since: float | None = None  # wall clock: a call found the database away, none worked since

    # --- what a database must provide -------------------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def _is_integrity_error(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _is_unavailable(self, exc: BaseException) -> bool:
        """An error of the database's state (unreachable, full, locked), not of the statement."""
        raise NotImplementedError

    def _is_lost(self, db: Any) -> bool:
        """Whether the connection is gone (a server restarted): the next call connects again."""
        return False

    # --- connection and schema -------------------------------------------------------------------

    def open(self) -> None:
        self._db = self._connect()
        try:
            self._migrate()
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    @property
    def schema_version(self) -> int:
        with self._lock:
            return self._version(self._conn())

    def _conn(self) -> Any:
        if self._db is None:
            raise ProgressError("the progress store is not open")
        if self._is_lost(self._db):
            if time.monotonic() < self._next_connect:
                raise StoreUnavailable(
                    f"{self.name} cannot be reached (tried less than {RECONNECT_BACKOFF_S:g} s ago)"
                )
            try:
                self._db, self._next_connect = self._connect(), 0.0
            except Exception as exc:
                self._next_connect = time.monotonic() + RECONNECT_BACKOFF_S
                if self._is_unavailable(exc):
                    raise StoreUnavailable(f"{self.name} cannot be reached: {exc}") from exc
                raise
        return self._db

    def _sql(self, statement: str) -> str:
        statement = statement.replace("{time}", self.dialect.time_type).replace(
            "{serial}", self.dialect.serial_type
        )
        return statement.replace("?", self.dialect.placeholder)

    def _exec(self, db: Any, statement: str, args: Sequence[Any] = ()) -> Any:
        cursor = db.cursor()
        cursor.execute(self._sql(statement), tuple(args))
        return cursor

    def _version(self, db: Any) -> int:
        self._exec(db, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = self._exec(db, "SELECT version FROM schema_version").fetchone()
        return row[0] if row else 0

    def _migrate(self) -> None:
        with self._write() as db:
            version = self._version(db)
            if version > migrations.SCHEMA_VERSION:
                raise ProgressError(
                    f"{self.name} has schema version {version}, newer than this app's {migrations.SCHEMA_VERSION}: "
                    "a newer version of the playground wrote it"
                )
            for statements in migrations.MIGRATIONS[version:]:
                for statement in statements:
                    self._exec(db, statement)
            if version == 0:
                self._exec(
                    db, "INSERT INTO schema_version (version) VALUES (?)", (migrations.SCHEMA_VERSION,)
                )
            else:
                self._exec(db, "UPDATE schema_version SET version = ?", (migrations.SCHEMA_VERSION,))

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._lock, self._unavailable_as_such():
            db = self._conn()
            try:
                self._exec(db, self.dialect.begin)
            except Exception:
                if not self._is_lost(db):
                    raise
                db = self._conn()  # lost while idle (nothing was done yet): once more, connected again
                self._exec(db, self.dialect.begin)
            try:
                yield db
            except BaseException:
                if not self._is_lost(db):  # a lost connection's transaction is gone with it
                    self._exec(db, "ROLLBACK")
                raise
            self._exec(db, "COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Any]:
        with self._lock, self._unavailable_as_such():
            yield self._conn()

    @contextmanager
    def _unavailable_as_such(self) -> Iterator[None]:
        """The database's own errors of state become StoreUnavailable, which the pages answer with 503
        and a sentence saying nothing was saved, rather than a bare 500."""
        try:
            yield
        except StoreUnavailable:
            self._away_since = self._away_since or time.time()
            raise
        except Exception as exc:
            if not self._is_unavailable(exc):
                raise
            self._away_since = self._away_since or time.time()
            raise StoreUnavailable(f"{self.name} is unavailable: {exc}") from exc
        self._away_since = None

    def unavailable_since(self) -> float | None:
        """When a call first found the database away (Unix time), if no call has worked since. Known
        from calls made anyway (a replica of a fleet makes one every few seconds), never probed: who
        asks the health page must not be able to make the app wait on an unreachable server."""
        return self._away_since

    def _touch(self, db: Any, learner_id: str, now: float) -> None:
        self._exec(
            db,
            "INSERT INTO learners (id, created_at, last_seen_at) VALUES (?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at",
            (learner_id, now, now),
        )

    def _learners(self, db: Any, where: str, args: Sequence[Any]) -> list[LearnerProgress]:
        rows = self._exec(
            db,
            "SELECT l.id, l.display_name, l.class_id, l.last_seen_at, l.student_id, l.last_server_exit "
            f"FROM learners l WHERE {where} "
            "ORDER BY l.created_at",
            args,
        ).fetchall()
        by_id = {row[0]: LearnerProgress(row[0], display_name=row[1], class_id=row[2], last_seen_at=row[3],
                                         student_id=row[4], server_exit=row[5]) for row in rows}  # fmt: skip
        if not by_id:
            return []
        join = f"JOIN learners l ON l.id = t.learner_id WHERE {where}"
        for learner_id, slug, first, last in self._exec(
            db,
            f"SELECT t.learner_id, t.step_slug, t.first_seen_at, t.last_seen_at FROM steps_seen t {join}",
            args,
        ):
            learner = by_id[learner_id]
            learner.seen.add(slug)
            if learner.current_step is None or last > learner.current_step[2]:
                learner.current_step = (slug, first, last)
        for learner_id, slug, name in self._exec(
            db, f"SELECT t.learner_id, t.step_slug, t.check_name FROM checks_passed t {join}", args
        ):
            by_id[learner_id].checks.setdefault(slug, set()).add(name)
        answers = self._exec(
            db,
            f"SELECT t.learner_id, t.step_slug, t.quiz_id, t.choices, t.correct FROM quiz_answers t {join} ORDER BY t.id",
            args,
        ).fetchall()
        for learner_id, slug, quiz_id, choices, correct in answers:
            progress = by_id[learner_id]
            before = progress.quizzes.get((slug, quiz_id))
            progress.quizzes[(slug, quiz_id)] = QuizRecord(
                choices=tuple(json.loads(choices)),
                correct=bool(correct),
                attempts=(before.attempts if before else 0) + 1,
                ever_correct=bool(correct) or (before is not None and before.ever_correct),
            )
        return list(by_id.values())

    # --- for the stores that share this database (app/fleet/store.py) ---------------------------

    def writing(self) -> AbstractContextManager[Any]:
        """A write transaction, as every write here takes: `execute` statements on what it yields."""
        return self._write()

    def reading(self) -> AbstractContextManager[Any]:
        return self._read()

    def execute(self, db: Any, statement: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement written with `?` placeholders (and `{time}`, `{serial}`) on this database."""
        return self._exec(db, statement, args)

    def lock_class(self, db: Any, class_id: str) -> None:
        """Hold a lock on deciding for this class until the transaction ends. (SQLite's write
        transaction already excludes every other writer.)"""

    def lock_learner(self, db: Any, learner_id: str) -> None:
        """Hold a lock on deciding for this learner until the transaction ends (as `lock_class`)."""
