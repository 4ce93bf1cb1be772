"""The progress store on any SQL database: every query written once, each database a small dialect
(database.py); the classes' queries are in classes_sql.py.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from typing import Any

from app.progress.classes_sql import SQLClasses
from app.progress.database import CODE_ATTEMPTS
from app.progress.errors import SavedSince
from app.progress.names import clean_display_name
from app.progress.oauth_sql import SQLOAuth
from app.progress.store import (
    ENDPOINT_KEPT_S,
    RESUME_CODE_LENGTH,
    SERVER_FILE_VERSIONS,
    ClassInfo,
    EndpointInfo,
    ExerciseRun,
    LearnerProgress,
    ProgressError,
    ServerFile,
    new_code,
    normalise_code,
)

# Attempts kept per quiz and learner: the latest ones, and the first right one besides.
QUIZ_ATTEMPTS_KEPT = 5


class SQLProgressStore(SQLClasses, SQLOAuth):
    """A ProgressStore over one SQL database (SQLite or PostgreSQL)."""

    # --- one learner -------------------------------------------------------------------------------

    def set_display_name(self, learner_id: str, name: str | None) -> None:
        name = clean_display_name(name)
        with self._write() as db:
            member = self._exec(db, "SELECT class_id FROM learners WHERE id = ?", (learner_id,)).fetchone()
            if member is not None and member[0] is not None:
                self.lock_class(db, member[0])  # two members taking one name at once: one gets it
                self._check_name_free(db, member[0], learner_id, name)
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

    _ENDPOINT_COLUMNS = "id, learner_id, server, created_at, expires_at, ended_at, auth, tool_scopes"

    @staticmethod
    def _endpoint(row: Sequence[Any]) -> EndpointInfo:
        return EndpointInfo(row[0], row[1], row[2], row[3], row[4], row[5] is not None, row[6], row[7])

    def set_tool_scopes(self, endpoint_id: str, tool_scopes: str) -> None:
        with self._write() as db:
            self._exec(db, "UPDATE endpoints SET tool_scopes = ? WHERE id = ?", (tool_scopes, endpoint_id))

    def create_endpoint(
        self, learner_id: str, server: str, token_hash: str, lifetime_s: float, auth: str = "none"
    ) -> EndpointInfo:
        now = time.time()
        info = EndpointInfo(secrets.token_urlsafe(9), learner_id, server, now, now + lifetime_s, auth=auth)
        with self._write() as db:
            # Endpoints gone for a while go as new ones come; an expired one's flow and grants at once
            # (nobody can read them: its owner's panel lists live endpoints only).
            self._exec(
                db,
                "DELETE FROM endpoints WHERE COALESCE(ended_at, expires_at) < ?",
                (now - ENDPOINT_KEPT_S,),
            )
            for table in ("oauth_events", "oauth_grants"):
                self._exec(db, f"DELETE FROM {table} WHERE endpoint_id IN "
                               "(SELECT id FROM endpoints WHERE expires_at < ?)", (now,))  # fmt: skip
            self._touch(db, learner_id, now)
            self._exec(
                db,
                "INSERT INTO endpoints (id, token_hash, learner_id, server, created_at, expires_at, auth) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (info.id, token_hash, learner_id, server, info.created_at, info.expires_at, auth),
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
            # Its flow and grants go with it: only its owner read the one, and nobody may use the other.
            self._exec(db, "DELETE FROM oauth_events WHERE endpoint_id = ?", (endpoint_id,))
            self._exec(db, "DELETE FROM oauth_grants WHERE endpoint_id = ?", (endpoint_id,))

    # --- the learner's workspace: server.py and the files beside it --------------------------------

    def save_server_file(
        self, learner_id: str, source: str, name: str = "server.py", after: int | None = None
    ) -> ServerFile:
        size = len(source.encode("utf-8"))
        for _ in range(CODE_ATTEMPTS):  # two saves at once (two replicas) may draw the same number
            try:
                now = time.time()
                with self._write() as db:
                    self._touch(db, learner_id, now)
                    row = self._exec(
                        db,
                        "SELECT version, saved_at FROM workspace_files WHERE learner_id = ? AND name = ? "
                        "ORDER BY version DESC LIMIT 1",
                        (learner_id, name),
                    ).fetchone()
                    newest = row[0] if row else 0
                    if after is not None and newest != after:
                        raise SavedSince(newest, row[1] if row else 0.0)
                    version = newest + 1
                    self._exec(
                        db,
                        "INSERT INTO workspace_files (learner_id, name, version, source, saved_at)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (learner_id, name, version, source, now),
                    )
                    self._exec(
                        db,
                        "DELETE FROM workspace_files WHERE learner_id = ? AND name = ? AND version <= ?",
                        (learner_id, name, version - SERVER_FILE_VERSIONS),
                    )
                return ServerFile(version, now, size)
            except Exception as exc:
                if not self._is_integrity_error(exc):
                    raise
        raise ProgressError("could not save the file: too many saves at once")

    def server_file(
        self, learner_id: str, version: int | None = None, name: str = "server.py"
    ) -> ServerFile | None:
        query = "SELECT version, saved_at, source FROM workspace_files WHERE learner_id = ? AND name = ?"
        args: tuple[Any, ...] = (learner_id, name)
        if version is None:
            query += " ORDER BY version DESC LIMIT 1"
        else:
            query, args = query + " AND version = ?", (*args, version)
        with self._read() as db:
            row = self._exec(db, query, args).fetchone()
        return ServerFile(row[0], row[1], len(row[2].encode("utf-8")), row[2]) if row else None

    def server_file_history(self, learner_id: str, name: str = "server.py") -> list[ServerFile]:
        with self._read() as db:
            rows = self._exec(
                db,
                "SELECT version, saved_at, source FROM workspace_files WHERE learner_id = ? AND name = ?"
                " ORDER BY version DESC",
                (learner_id, name),
            ).fetchall()
        # Sizes in bytes, as the limit counts them (SQL's LENGTH counts characters).
        return [ServerFile(row[0], row[1], len(row[2].encode("utf-8"))) for row in rows]

    # --- resume codes ------------------------------------------------------------------------------

    def resume_code(self, learner_id: str, touch: bool = True) -> str:
        for _ in range(CODE_ATTEMPTS):
            try:
                with self._write() as db:
                    if touch:
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

    # --- exercise runs ------------------------------------------------------------------------------

    def record_exercise_run(self, learner_id: str, step_slug: str, passed: bool, report: str) -> None:
        now = time.time()
        with self._write() as db:
            self._touch(db, learner_id, now)
            self._exec(
                db,
                "INSERT INTO exercise_runs (learner_id, step_slug, at, passed, report) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (learner_id, step_slug) DO UPDATE SET at = excluded.at, passed = excluded.passed, "
                "report = excluded.report",
                (learner_id, step_slug, now, int(passed), report),
            )

    def exercise_runs(self, learner_id: str) -> list[ExerciseRun]:
        with self._read() as db:
            rows = self._exec(
                db,
                "SELECT step_slug, at, passed, report FROM exercise_runs WHERE learner_id = ? ORDER BY at DESC",
                (learner_id,),
            ).fetchall()
        return [ExerciseRun(row[0], row[1], bool(row[2]), row[3]) for row in rows]

    def record_server_exit(self, learner_id: str, report: str) -> None:
        with self._write() as db:
            self._exec(db, "UPDATE learners SET last_server_exit = ? WHERE id = ?", (report, learner_id))

    def server_exit(self, learner_id: str) -> str | None:
        with self._read() as db:
            row = self._exec(
                db, "SELECT last_server_exit FROM learners WHERE id = ?", (learner_id,)
            ).fetchone()
        return row[0] if row else None

    def set_server_language(self, learner_id: str, language: str) -> None:
        with self._write() as db:
            self._touch(db, learner_id, time.time())
            self._exec(db, "UPDATE learners SET server_language = ? WHERE id = ?", (language, learner_id))

    def server_language(self, learner_id: str) -> str | None:
        with self._read() as db:
            row = self._exec(
                db, "SELECT server_language FROM learners WHERE id = ?", (learner_id,)
            ).fetchone()
        return row[0] if row else None

    def failing_exercises(self, class_id: str) -> set[tuple[str, str]]:
        with self._read() as db:
            rows = self._exec(
                db,
                "SELECT r.learner_id, r.step_slug FROM exercise_runs r JOIN learners l ON l.id = r.learner_id "
                "WHERE l.class_id = ? AND r.passed = 0",
                (class_id,),
            ).fetchall()
        return {(row[0], row[1]) for row in rows}

    def new_resume_code(self, learner_id: str) -> str:
        with self._write() as db:
            self._exec(db, "DELETE FROM resume_codes WHERE learner_id = ?", (learner_id,))
            self._exec(db, "UPDATE learners SET sign_in_generation = sign_in_generation + 1 WHERE id = ?",
                       (learner_id,))  # fmt: skip
        return self.resume_code(learner_id, touch=False)

    def sign_in_generation(self, learner_id: str) -> int:
        with self._read() as db:
            row = self._exec(
                db, "SELECT sign_in_generation FROM learners WHERE id = ?", (learner_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def learner_for_resume_code(self, code: str) -> str | None:
        with self._read() as db:
            row = self._exec(
                db, "SELECT learner_id FROM resume_codes WHERE code = ?", (normalise_code(code),)
            ).fetchone()
        return row[0] if row else None
