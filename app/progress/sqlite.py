"""Progress in one SQLite file on disk: WAL journal, a schema version table and migrations."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from app.progress.migrations import MIGRATIONS, SCHEMA_VERSION
from app.progress.store import LearnerProgress, ProgressError, QuizRecord, clean_display_name

# How long a writer waits for another connection's lock before failing.
BUSY_TIMEOUT_MS = 5000


class SQLiteProgressStore:
    """A ProgressStore on one SQLite file. One connection, serialised by a lock: every call is short."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE in _write).
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            db.close()
            raise ProgressError(f"{self.path}: SQLite would not use the WAL journal (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")  # durable across app crashes; WAL makes it safe
        db.execute("PRAGMA foreign_keys = ON")
        self._db = db
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

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise ProgressError("the progress store is not open")
        return self._db

    @staticmethod
    def _version(db: sqlite3.Connection) -> int:
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT version FROM schema_version").fetchone()
        return row[0] if row else 0

    def _migrate(self) -> None:
        with self._write() as db:
            version = self._version(db)
            if version > SCHEMA_VERSION:
                raise ProgressError(
                    f"{self.path} has schema version {version}, newer than this app's {SCHEMA_VERSION}: "
                    "a newer version of the playground wrote it"
                )
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    db.execute(statement)
            if version == 0:
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            else:
                db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._conn()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @staticmethod
    def _touch(db: sqlite3.Connection, learner_id: str, now: float) -> None:
        db.execute(
            "INSERT INTO learners (id, created_at, last_seen_at) VALUES (?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at",
            (learner_id, now, now),
        )

    def set_display_name(self, learner_id: str, name: str | None) -> None:
        name = clean_display_name(name)
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            db.execute("UPDATE learners SET display_name = ? WHERE id = ?", (name, learner_id))

    def record_seen(self, learner_id: str, step_slug: str) -> None:
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            db.execute(
                "INSERT INTO steps_seen (learner_id, step_slug, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (learner_id, step_slug) DO UPDATE SET last_seen_at = excluded.last_seen_at",
                (learner_id, step_slug, now, now),
            )

    def record_quiz_answer(
        self, learner_id: str, step_slug: str, quiz_id: str, choices: Sequence[str], correct: bool
    ) -> None:
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            db.execute(
                "INSERT INTO quiz_answers (learner_id, step_slug, quiz_id, choices, correct, answered_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (learner_id, step_slug, quiz_id, json.dumps(list(choices)), int(correct), now),
            )

    def record_check(self, learner_id: str, step_slug: str, check_name: str) -> None:
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            db.execute(
                "INSERT INTO checks_passed (learner_id, step_slug, check_name, passed_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (learner_id, step_slug, check_name, now),
            )

    def learner(self, learner_id: str) -> LearnerProgress:
        progress = LearnerProgress(learner_id)
        with self._lock:
            db = self._conn()
            row = db.execute("SELECT display_name FROM learners WHERE id = ?", (learner_id,)).fetchone()
            if row is None:
                return progress
            progress.display_name = row[0]
            for (slug,) in db.execute("SELECT step_slug FROM steps_seen WHERE learner_id = ?", (learner_id,)):
                progress.seen.add(slug)
            for slug, name in db.execute(
                "SELECT step_slug, check_name FROM checks_passed WHERE learner_id = ?", (learner_id,)
            ):
                progress.checks.setdefault(slug, set()).add(name)
            rows = db.execute(
                "SELECT step_slug, quiz_id, choices, correct FROM quiz_answers WHERE learner_id = ? ORDER BY id",
                (learner_id,),
            ).fetchall()
        for slug, quiz_id, choices, correct in rows:
            before = progress.quizzes.get((slug, quiz_id))
            progress.quizzes[(slug, quiz_id)] = QuizRecord(
                choices=tuple(json.loads(choices)),
                correct=bool(correct),
                attempts=(before.attempts if before else 0) + 1,
                ever_correct=bool(correct) or (before is not None and before.ever_correct),
            )
        return progress
