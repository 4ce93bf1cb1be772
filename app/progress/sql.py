"""The progress store on any SQL database: every query written once, each database a small dialect.

Subclasses open the connection (SQLite: a file in WAL mode; PostgreSQL: a server) and say how their
SQL differs; the schema lives in migrations.py.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from app.progress import migrations
from app.progress.store import (
    DEFAULT_CLASS_SIZE,
    EXPECTED_SIZE,
    JOIN_CODE_LENGTH,
    MAX_PENDING_JOINS,
    RESUME_CODE_LENGTH,
    SERVER_FILE_VERSIONS,
    SESSION_CAP,
    ClassInfo,
    EndpointInfo,
    JoinOutcome,
    JoinRequest,
    LearnerProgress,
    LiveSession,
    ProgressError,
    QuizRecord,
    ServerFile,
    clean_class_name,
    clean_class_number,
    clean_display_name,
    new_code,
    normalise_code,
)

# Attempts kept per quiz and learner: the latest ones, and the first right one besides.
QUIZ_ATTEMPTS_KEPT = 5
# A freshly drawn code clashes with an existing one about never; still, try a few times.
CODE_ATTEMPTS = 8


@dataclass(frozen=True)
class Dialect:
    placeholder: str  # what `?` becomes
    time_type: str  # a column of Unix timestamps with sub-second precision
    serial_type: str  # an auto-numbered integer primary key
    begin: str  # starts a write transaction


class SQLProgressStore:
    """A ProgressStore over one DB-API connection, serialised by a lock: every call is short."""

    dialect: Dialect
    name: str  # for error messages: the file or the server

    def __init__(self) -> None:
        self._db: Any = None
        self._lock = threading.Lock()

    # --- what a database must provide -------------------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def _is_integrity_error(self, exc: Exception) -> bool:
        raise NotImplementedError

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
        with self._lock:
            db = self._conn()
            self._exec(db, self.dialect.begin)
            try:
                yield db
            except BaseException:
                self._exec(db, "ROLLBACK")
                raise
            self._exec(db, "COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Any]:
        with self._lock:
            yield self._conn()

    def _touch(self, db: Any, learner_id: str, now: float) -> None:
        self._exec(
            db,
            "INSERT INTO learners (id, created_at, last_seen_at) VALUES (?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at",
            (learner_id, now, now),
        )

    # --- one learner -------------------------------------------------------------------------------

    def set_display_name(self, learner_id: str, name: str | None) -> None:
        name = clean_display_name(name)
        with self._write() as db:
            self._touch(db, learner_id, time.time())
            self._exec(db, "UPDATE learners SET display_name = ? WHERE id = ?", (name, learner_id))

    def record_seen(self, learner_id: str, step_slug: str) -> None:
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            self._exec(
                db,
                "INSERT INTO steps_seen (learner_id, step_slug, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (learner_id, step_slug) DO UPDATE SET last_seen_at = excluded.last_seen_at",
                (learner_id, step_slug, now, now),
            )

    def record_quiz_answer(
        self, learner_id: str, step_slug: str, quiz_id: str, choices: Sequence[str], correct: bool
    ) -> None:
        now = time.time()
        key = (learner_id, step_slug, quiz_id)
        same = "learner_id = ? AND step_slug = ? AND quiz_id = ?"
        with self._write() as db:
            self._touch(db, learner_id, now)
            self._exec(
                db,
                "INSERT INTO quiz_answers (learner_id, step_slug, quiz_id, choices, correct, answered_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*key, json.dumps(list(choices)), int(correct), now),
            )
            # Kept: the latest few attempts and the first right one; a learner clicking all day stores no more.
            self._exec(
                db,
                f"DELETE FROM quiz_answers WHERE {same} "
                f"AND id NOT IN (SELECT id FROM quiz_answers WHERE {same} ORDER BY id DESC LIMIT {QUIZ_ATTEMPTS_KEPT}) "
                f"AND id NOT IN (SELECT MIN(id) FROM quiz_answers WHERE {same} AND correct = 1)",
                (*key, *key, *key),
            )

    def record_check(self, learner_id: str, step_slug: str, check_name: str) -> None:
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            self._exec(
                db,
                "INSERT INTO checks_passed (learner_id, step_slug, check_name, passed_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (learner_id, step_slug, check_name, now),
            )

    def learner(self, learner_id: str) -> LearnerProgress:
        with self._read() as db:
            found = self._learners(db, "l.id = ?", (learner_id,))
        return found[0] if found else LearnerProgress(learner_id)

    def _learners(self, db: Any, where: str, args: Sequence[Any]) -> list[LearnerProgress]:
        rows = self._exec(
            db,
            f"SELECT l.id, l.display_name, l.class_id FROM learners l WHERE {where} ORDER BY l.created_at",
            args,
        ).fetchall()
        by_id = {row[0]: LearnerProgress(row[0], display_name=row[1], class_id=row[2]) for row in rows}
        if not by_id:
            return []
        join = f"JOIN learners l ON l.id = t.learner_id WHERE {where}"
        for learner_id, slug in self._exec(
            db, f"SELECT t.learner_id, t.step_slug FROM steps_seen t {join}", args
        ):
            by_id[learner_id].seen.add(slug)
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

    def learner_exists(self, learner_id: str) -> bool:
        with self._read() as db:
            return self._exec(db, "SELECT 1 FROM learners WHERE id = ?", (learner_id,)).fetchone() is not None

    def learner_class(self, learner_id: str) -> ClassInfo | None:
        columns = ", ".join(f"c.{name}" for name in self._CLASS_COLUMNS.split(", "))
        with self._read() as db:
            row = self._exec(
                db,
                f"SELECT {columns} FROM learners l JOIN classes c ON c.id = l.class_id WHERE l.id = ?",
                (learner_id,),
            ).fetchone()
        return self._class(row) if row else None

    def reset_learner(self, learner_id: str) -> None:
        with self._write() as db:
            for table in ("steps_seen", "quiz_answers", "checks_passed"):
                self._exec(db, f"DELETE FROM {table} WHERE learner_id = ?", (learner_id,))

    # --- classes -----------------------------------------------------------------------------------

    _CLASS_COLUMNS = "id, name, join_code, created_at, closed_at, max_sessions, expected_size"

    @staticmethod
    def _class(row: Sequence[Any]) -> ClassInfo:
        return ClassInfo(
            id=row[0],
            name=row[1],
            join_code=row[2],
            created_at=row[3],
            locked=row[4] is not None,  # closed_at: when joining was locked
            max_sessions=row[5],
            expected_size=row[6],
        )

    def create_class(
        self, name: str, max_sessions: int | None = None, expected_size: int = DEFAULT_CLASS_SIZE
    ) -> ClassInfo:
        name = clean_class_name(name)
        if max_sessions is not None:
            clean_class_number(max_sessions, SESSION_CAP)
        clean_class_number(expected_size, EXPECTED_SIZE)
        for _ in range(CODE_ATTEMPTS):
            info = ClassInfo(secrets.token_urlsafe(9), name, new_code(JOIN_CODE_LENGTH), time.time(), False,
                             max_sessions, expected_size)  # fmt: skip
            try:
                with self._write() as db:
                    self._exec(
                        db,
                        "INSERT INTO classes (id, name, join_code, max_sessions, expected_size, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (info.id, info.name, info.join_code, info.max_sessions, info.expected_size,
                         info.created_at),
                    )  # fmt: skip
                return info
            except Exception as exc:
                if not self._is_integrity_error(exc):
                    raise
        raise ProgressError("could not draw a free join code")

    def update_class(self, class_id: str, max_sessions: int | None, expected_size: int) -> None:
        if max_sessions is not None:
            clean_class_number(max_sessions, SESSION_CAP)
        clean_class_number(expected_size, EXPECTED_SIZE)
        with self._write() as db:
            self._lock_class(db, class_id)
            self._exec(
                db,
                "UPDATE classes SET max_sessions = ?, expected_size = ? WHERE id = ?",
                (max_sessions, expected_size, class_id),
            )

    def classes(self) -> list[ClassInfo]:
        with self._read() as db:
            rows = self._exec(db, f"SELECT {self._CLASS_COLUMNS} FROM classes ORDER BY created_at").fetchall()
        return [self._class(row) for row in rows]

    def get_class(self, class_id: str) -> ClassInfo | None:
        with self._read() as db:
            row = self._exec(
                db, f"SELECT {self._CLASS_COLUMNS} FROM classes WHERE id = ?", (class_id,)
            ).fetchone()
        return self._class(row) if row else None

    def class_by_code(self, join_code: str) -> ClassInfo | None:
        with self._read() as db:
            row = self._exec(
                db,
                f"SELECT {self._CLASS_COLUMNS} FROM classes WHERE join_code = ?",
                (normalise_code(join_code),),
            ).fetchone()
        return self._class(row) if row else None

    def lock_joining(self, class_id: str, locked: bool) -> None:
        with self._write() as db:
            self._lock_class(db, class_id)
            if locked:
                self._exec(
                    db,
                    "UPDATE classes SET closed_at = ? WHERE id = ? AND closed_at IS NULL",
                    (time.time(), class_id),
                )
            else:
                self._exec(db, "UPDATE classes SET closed_at = NULL WHERE id = ?", (class_id,))

    def delete_class(self, class_id: str) -> None:
        with self._write() as db:
            self._exec(db, "DELETE FROM join_requests WHERE class_id = ?", (class_id,))
            self._exec(db, "DELETE FROM learners WHERE class_id = ?", (class_id,))
            self._exec(db, "DELETE FROM classes WHERE id = ?", (class_id,))

    def join_class(self, learner_id: str, class_id: str, display_name: str | None) -> JoinOutcome:
        name = clean_display_name(display_name)
        now = time.time()
        with self._write() as db:
            self._lock_class(db, class_id)  # two joins for the last place: one gets it, one waits
            klass = self._exec(
                db, "SELECT closed_at, expected_size FROM classes WHERE id = ?", (class_id,)
            ).fetchone()
            if klass is None:
                raise ValueError("There is no such class (it may have been deleted).")
            member = self._exec(
                db, "SELECT 1 FROM learners WHERE id = ? AND class_id = ?", (learner_id, class_id)
            ).fetchone()
            if member is None and klass[0] is not None:
                return "locked"
            self._touch(db, learner_id, now)
            if member is None and self._members(db, class_id) >= klass[1]:
                waiting = self._exec(
                    db,
                    "SELECT COUNT(*) FROM join_requests WHERE class_id = ? AND denied_at IS NULL "
                    "AND learner_id <> ?",
                    (class_id, learner_id),
                ).fetchone()[0]
                if waiting >= MAX_PENDING_JOINS:
                    return "too_many_waiting"
                self._exec(
                    db,
                    "INSERT INTO join_requests (learner_id, class_id, display_name, requested_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (learner_id) DO UPDATE SET class_id = excluded.class_id, "
                    "display_name = excluded.display_name, requested_at = excluded.requested_at, "
                    "denied_at = NULL",
                    (learner_id, class_id, name, now),
                )
                return "pending"
            self._exec(
                db,
                "UPDATE learners SET class_id = ?, display_name = ? WHERE id = ?",
                (class_id, name, learner_id),
            )
            self._exec(db, "DELETE FROM join_requests WHERE learner_id = ?", (learner_id,))
        return "joined"

    def _members(self, db: Any, class_id: str) -> int:
        return int(
            self._exec(db, "SELECT COUNT(*) FROM learners WHERE class_id = ?", (class_id,)).fetchone()[0]
        )

    def class_learners(self, class_id: str) -> list[LearnerProgress]:
        with self._read() as db:
            return self._learners(db, "l.class_id = ?", (class_id,))

    def class_size(self, class_id: str) -> int:
        with self._read() as db:
            return self._members(db, class_id)

    _JOIN_COLUMNS = "learner_id, class_id, display_name, requested_at, denied_at"

    @staticmethod
    def _join_request(row: Sequence[Any]) -> JoinRequest:
        return JoinRequest(row[0], row[1], row[2], row[3], row[4] is not None)

    def pending_joins(self, class_id: str) -> list[JoinRequest]:
        with self._read() as db:
            rows = self._exec(
                db,
                f"SELECT {self._JOIN_COLUMNS} FROM join_requests WHERE class_id = ? AND denied_at IS NULL "
                "ORDER BY requested_at",
                (class_id,),
            ).fetchall()
        return [self._join_request(row) for row in rows]

    def decide_join(self, class_id: str, learner_id: str, approve: bool) -> bool:
        with self._write() as db:
            self._lock_class(db, class_id)
            row = self._exec(
                db,
                "SELECT display_name FROM join_requests WHERE learner_id = ? AND class_id = ? "
                "AND denied_at IS NULL",
                (learner_id, class_id),
            ).fetchone()
            if row is None:
                return False
            if approve:
                self._exec(
                    db,
                    "UPDATE learners SET class_id = ?, display_name = ? WHERE id = ?",
                    (class_id, row[0], learner_id),
                )
                self._exec(db, "DELETE FROM join_requests WHERE learner_id = ?", (learner_id,))
            else:
                self._exec(
                    db,
                    "UPDATE join_requests SET denied_at = ? WHERE learner_id = ?",
                    (time.time(), learner_id),
                )
        return True

    def join_request(self, learner_id: str) -> JoinRequest | None:
        with self._read() as db:
            row = self._exec(
                db, f"SELECT {self._JOIN_COLUMNS} FROM join_requests WHERE learner_id = ?", (learner_id,)
            ).fetchone()
        return self._join_request(row) if row else None

    # --- shared secrets ----------------------------------------------------------------------------

    def shared_secret(self, name: str) -> str:
        # The first replica to ask makes it; a second one racing it keeps the first one's value.
        with self._write() as db:
            self._exec(
                db,
                "INSERT INTO app_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
                (name, secrets.token_urlsafe(32), time.time()),
            )
            return self._exec(db, "SELECT value FROM app_secrets WHERE name = ?", (name,)).fetchone()[0]

    # --- instructor sign-in sessions ------------------------------------------------------------

    def start_instructor_session(self, id_hash: str, lifetime_s: float) -> None:
        now = time.time()
        with self._write() as db:
            self._exec(db, "DELETE FROM instructor_sessions WHERE expires_at < ?", (now,))
            self._exec(
                db,
                "INSERT INTO instructor_sessions (id_hash, created_at, expires_at) VALUES (?, ?, ?)",
                (id_hash, now, now + lifetime_s),
            )

    def instructor_session_valid(self, id_hash: str) -> bool:
        with self._read() as db:
            row = self._exec(
                db,
                "SELECT 1 FROM instructor_sessions WHERE id_hash = ? AND expires_at > ?",
                (id_hash, time.time()),
            ).fetchone()
        return row is not None

    def end_instructor_session(self, id_hash: str) -> None:
        with self._write() as db:
            self._exec(db, "DELETE FROM instructor_sessions WHERE id_hash = ?", (id_hash,))

    # --- Streamable HTTP endpoints ------------------------------------------------------------------

    _ENDPOINT_COLUMNS = "id, learner_id, server, created_at, expires_at, ended_at"

    @staticmethod
    def _endpoint(row: Sequence[Any]) -> EndpointInfo:
        return EndpointInfo(row[0], row[1], row[2], row[3], row[4], row[5] is not None)

    def create_endpoint(
        self, learner_id: str, server: str, token_hash: str, lifetime_s: float
    ) -> EndpointInfo:
        now = time.time()
        info = EndpointInfo(secrets.token_urlsafe(9), learner_id, server, now, now + lifetime_s)
        with self._write() as db:
            self._touch(db, learner_id, now)
            self._exec(
                db,
                "INSERT INTO endpoints (id, token_hash, learner_id, server, created_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (info.id, token_hash, learner_id, server, info.created_at, info.expires_at),
            )
        return info

    def endpoint_by_token_hash(self, token_hash: str) -> EndpointInfo | None:
        with self._read() as db:
            row = self._exec(
                db, f"SELECT {self._ENDPOINT_COLUMNS} FROM endpoints WHERE token_hash = ?", (token_hash,)
            ).fetchone()
        return self._endpoint(row) if row else None

    def learner_endpoints(self, learner_id: str) -> list[EndpointInfo]:
        with self._read() as db:
            rows = self._exec(
                db,
                f"SELECT {self._ENDPOINT_COLUMNS} FROM endpoints WHERE learner_id = ? AND ended_at IS NULL "
                "AND expires_at > ? ORDER BY created_at",
                (learner_id, time.time()),
            ).fetchall()
        return [self._endpoint(row) for row in rows]

    def end_endpoint(self, endpoint_id: str) -> None:
        with self._write() as db:
            self._exec(
                db,
                "UPDATE endpoints SET ended_at = ? WHERE id = ? AND ended_at IS NULL",
                (time.time(), endpoint_id),
            )

    # --- the learner's own server.py ---------------------------------------------------------------

    def save_server_file(self, learner_id: str, source: str) -> ServerFile:
        size = len(source.encode("utf-8"))
        for _ in range(CODE_ATTEMPTS):  # two saves at once (two replicas) may draw the same number
            try:
                now = time.time()
                with self._write() as db:
                    self._touch(db, learner_id, now)
                    row = self._exec(
                        db, "SELECT MAX(version) FROM server_files WHERE learner_id = ?", (learner_id,)
                    ).fetchone()
                    version = (row[0] or 0) + 1
                    self._exec(
                        db,
                        "INSERT INTO server_files (learner_id, version, source, saved_at) VALUES (?, ?, ?, ?)",
                        (learner_id, version, source, now),
                    )
                    self._exec(
                        db,
                        "DELETE FROM server_files WHERE learner_id = ? AND version <= ?",
                        (learner_id, version - SERVER_FILE_VERSIONS),
                    )
                return ServerFile(version, now, size)
            except Exception as exc:
                if not self._is_integrity_error(exc):
                    raise
        raise ProgressError("could not save the file: too many saves at once")

    def server_file(self, learner_id: str, version: int | None = None) -> ServerFile | None:
        query = "SELECT version, saved_at, source FROM server_files WHERE learner_id = ?"
        args: tuple[Any, ...] = (learner_id,)
        if version is None:
            query += " ORDER BY version DESC LIMIT 1"
        else:
            query, args = query + " AND version = ?", (learner_id, version)
        with self._read() as db:
            row = self._exec(db, query, args).fetchone()
        return ServerFile(row[0], row[1], len(row[2].encode("utf-8")), row[2]) if row else None

    def server_file_history(self, learner_id: str) -> list[ServerFile]:
        with self._read() as db:
            rows = self._exec(
                db,
                "SELECT version, saved_at, source FROM server_files WHERE learner_id = ? ORDER BY version DESC",
                (learner_id,),
            ).fetchall()
        # Sizes in bytes, as the limit counts them (SQL's LENGTH counts characters).
        return [ServerFile(row[0], row[1], len(row[2].encode("utf-8"))) for row in rows]

    # --- live sessions across replicas (used with PostgreSQL) ------------------------------------

    _LIVE_COLUMNS = "s.id, s.replica_id, s.learner_id, s.class_id, s.server, s.started_at, s.last_active_at"

    def _lock_class(self, db: Any, class_id: str) -> None:
        """Hold a lock on deciding for this class until the transaction ends. (SQLite's write
        transaction already excludes every other writer.)"""

    def register_replica(self, replica_id: str) -> None:
        now = time.time()
        with self._write() as db:
            self._exec(
                db,
                "INSERT INTO replicas (id, started_at, heartbeat_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                (replica_id, now, now),
            )

    def heartbeat(self, replica_id: str, active: Sequence[tuple[str, float]]) -> None:
        now = time.time()
        with self._write() as db:
            self._exec(db, "UPDATE replicas SET heartbeat_at = ? WHERE id = ?", (now, replica_id))
            for session_id, last_active in active:
                self._exec(
                    db,
                    "UPDATE live_sessions SET last_active_at = ? WHERE id = ? AND replica_id = ?",
                    (last_active, session_id, replica_id),
                )

    def add_live_session(
        self, replica_id: str, session: LiveSession, class_cap: int | None, fresh_s: float
    ) -> int | None:
        with self._write() as db:
            if session.class_id is not None and class_cap is not None:
                self._lock_class(db, session.class_id)
                row = self._exec(
                    db,
                    "SELECT COUNT(*) FROM live_sessions s JOIN replicas r ON r.id = s.replica_id "
                    "WHERE s.class_id = ? AND r.heartbeat_at > ?",
                    (session.class_id, time.time() - fresh_s),
                ).fetchone()
                if row[0] >= class_cap:
                    return int(row[0])
            self._exec(
                db,
                "INSERT INTO live_sessions (id, replica_id, learner_id, class_id, server, started_at, "
                "last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session.id, replica_id, session.learner_id, session.class_id, session.server,
                 session.started_at, session.last_active_at),
            )  # fmt: skip
        return None

    def end_live_sessions(self, session_ids: Sequence[str]) -> None:
        with self._write() as db:
            for session_id in session_ids:
                self._exec(db, "DELETE FROM live_sessions WHERE id = ?", (session_id,))
                self._exec(db, "DELETE FROM session_commands WHERE session_id = ?", (session_id,))

    def live_sessions(self, fresh_s: float, class_id: str | None = None) -> list[LiveSession]:
        query = (
            f"SELECT {self._LIVE_COLUMNS} FROM live_sessions s JOIN replicas r ON r.id = s.replica_id "
            "WHERE r.heartbeat_at > ?"
        )
        args: list[Any] = [time.time() - fresh_s]
        if class_id is not None:
            query += " AND s.class_id = ?"
            args.append(class_id)
        with self._read() as db:
            rows = self._exec(db, query + " ORDER BY s.started_at", args).fetchall()
        return [LiveSession(*row) for row in rows]

    def request_session_end(self, session_id: str, fresh_s: float) -> str | None:
        with self._write() as db:
            row = self._exec(
                db,
                "SELECT s.replica_id FROM live_sessions s JOIN replicas r ON r.id = s.replica_id "
                "WHERE s.id = ? AND r.heartbeat_at > ?",
                (session_id, time.time() - fresh_s),
            ).fetchone()
            if row is None:
                return None
            self._exec(
                db,
                "INSERT INTO session_commands (session_id, replica_id, command, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id, row[0], "end", time.time()),
            )
        return str(row[0])

    def take_session_commands(self, replica_id: str) -> list[tuple[str, str]]:
        with self._write() as db:
            rows = self._exec(
                db, "SELECT session_id, command FROM session_commands WHERE replica_id = ?", (replica_id,)
            ).fetchall()
            if rows:
                self._exec(db, "DELETE FROM session_commands WHERE replica_id = ?", (replica_id,))
        return [(row[0], row[1]) for row in rows]

    def retire_replica(self, replica_id: str) -> None:
        with self._write() as db:
            for table in ("live_sessions", "session_commands"):
                self._exec(db, f"DELETE FROM {table} WHERE replica_id = ?", (replica_id,))
            self._exec(db, "DELETE FROM replicas WHERE id = ?", (replica_id,))

    def drop_stale_replicas(self, older_than_s: float) -> int:
        cutoff = time.time() - older_than_s
        with self._write() as db:
            stale = [row[0] for row in self._exec(db, "SELECT id FROM replicas WHERE heartbeat_at < ?",
                                                  (cutoff,)).fetchall()]  # fmt: skip
            for replica_id in stale:
                for table in ("live_sessions", "session_commands"):
                    self._exec(db, f"DELETE FROM {table} WHERE replica_id = ?", (replica_id,))
                self._exec(db, "DELETE FROM replicas WHERE id = ?", (replica_id,))
        return len(stale)

    # --- resume codes ------------------------------------------------------------------------------

    def resume_code(self, learner_id: str) -> str:
        for _ in range(CODE_ATTEMPTS):
            try:
                with self._write() as db:
                    self._touch(db, learner_id, time.time())
                    row = self._exec(
                        db, "SELECT code FROM resume_codes WHERE learner_id = ?", (learner_id,)
                    ).fetchone()
                    if row:
                        return row[0]
                    code = new_code(RESUME_CODE_LENGTH)
                    self._exec(
                        db,
                        "INSERT INTO resume_codes (code, learner_id, created_at) VALUES (?, ?, ?)",
                        (code, learner_id, time.time()),
                    )
                    return code
            except Exception as exc:
                if not self._is_integrity_error(exc):
                    raise
        raise ProgressError("could not draw a free resume code")

    def learner_for_resume_code(self, code: str) -> str | None:
        with self._read() as db:
            row = self._exec(
                db, "SELECT learner_id FROM resume_codes WHERE code = ?", (normalise_code(code),)
            ).fetchone()
        return row[0] if row else None
