"""The progress store's classes: making, joining (with approval when joining is locked), caps and
expected sizes, on the SQL database (database.py)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from app.progress.database import CODE_ATTEMPTS, SQLDatabase
from app.progress.names import clean_display_name
from app.progress.store import (
    DEFAULT_CLASS_SIZE,
    EXPECTED_SIZE,
    JOIN_CODE_LENGTH,
    MAX_PENDING_JOINS,
    SESSION_CAP,
    ClassInfo,
    JoinOutcome,
    JoinRequest,
    LearnerProgress,
    ProgressError,
    Seat,
    clean_class_name,
    clean_class_number,
    new_code,
    normalise_code,
    seat_key,
)


class SQLClasses(SQLDatabase):
    # --- classes -----------------------------------------------------------------------------------

    _CLASS_COLUMNS = "id, name, join_code, created_at, closed_at, max_sessions, expected_size, message"

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
            message=row[7],
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

    def new_join_code(self, class_id: str) -> str:
        for _ in range(CODE_ATTEMPTS):
            code = new_code(JOIN_CODE_LENGTH)
            try:
                with self._write() as db:
                    self._exec(db, "UPDATE classes SET join_code = ? WHERE id = ?", (code, class_id))
                return code
            except Exception as exc:
                if not self._is_integrity_error(exc):
                    raise
        raise ProgressError("could not draw a free join code")

    def update_class(self, class_id: str, max_sessions: int | None, expected_size: int) -> None:
        if max_sessions is not None:
            clean_class_number(max_sessions, SESSION_CAP)
        clean_class_number(expected_size, EXPECTED_SIZE)
        with self._write() as db:
            self.lock_class(db, class_id)
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

    def set_class_message(self, class_id: str, message: str | None) -> None:
        with self._write() as db:
            self._exec(db, "UPDATE classes SET message = ? WHERE id = ?", (message or None, class_id))

    def rename_learner(self, learner_id: str, name: str | None) -> None:
        with self._write() as db:
            self._exec(
                db,
                "UPDATE learners SET display_name = ? WHERE id = ?",
                (clean_display_name(name), learner_id),
            )

    def set_student_id(self, learner_id: str, student_id: str | None) -> None:
        with self._write() as db:
            self._exec(
                db, "UPDATE learners SET student_id = ? WHERE id = ?", (student_id or None, learner_id)
            )

    def remove_from_class(self, class_id: str, learner_id: str) -> bool:
        with self._write() as db:
            self.lock_class(db, class_id)
            member = self._exec(db, "SELECT display_name FROM learners WHERE id = ? AND class_id = ?",
                                (learner_id, class_id)).fetchone()  # fmt: skip
            if member is None:
                return False
            self._exec(db, "UPDATE learners SET class_id = NULL WHERE id = ?", (learner_id,))
            seat = self._exec(db, "SELECT student_id FROM roster_seats WHERE class_id = ? AND learner_id = ?",
                              (class_id, learner_id)).fetchone()  # fmt: skip
            if seat is not None:  # free again, and its identifier is no longer theirs
                self._exec(db, "UPDATE roster_seats SET learner_id = NULL WHERE class_id = ? AND learner_id = ?",
                           (class_id, learner_id))  # fmt: skip
                if seat[0]:
                    self._exec(db, "UPDATE learners SET student_id = NULL WHERE id = ? AND student_id = ?",
                               (learner_id, seat[0]))  # fmt: skip
            self._turn_away(db, class_id, learner_id, member[0])
            return True

    def _turn_away(self, db: Any, class_id: str, learner_id: str, name: str | None) -> None:
        self._exec(db, "INSERT INTO turned_away (class_id, learner_id, display_name, turned_away_at) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (class_id, learner_id) DO NOTHING",
                   (class_id, learner_id, name, time.time()))  # fmt: skip

    def turned_away(self, class_id: str) -> list[JoinRequest]:
        with self._read() as db:
            rows = self._exec(db, "SELECT learner_id, class_id, display_name, turned_away_at FROM turned_away "
                                  "WHERE class_id = ? ORDER BY turned_away_at", (class_id,)).fetchall()  # fmt: skip
        return [JoinRequest(row[0], row[1], row[2], row[3], denied=True) for row in rows]

    def let_in_again(self, class_id: str, learner_id: str) -> bool:
        with self._write() as db:
            self.lock_class(db, class_id)
            done = self._exec(db, "DELETE FROM turned_away WHERE class_id = ? AND learner_id = ?",
                              (class_id, learner_id))  # fmt: skip
            self._exec(db, "DELETE FROM join_requests WHERE learner_id = ? AND class_id = ? AND denied_at IS NOT NULL",
                       (learner_id, class_id))  # fmt: skip
            return bool(done.rowcount)

    def add_seats(self, class_id: str, seats: Sequence[tuple[str, str | None]]) -> int:
        made = 0
        with self._write() as db:
            self.lock_class(db, class_id)
            for name, student_id in seats:
                key = seat_key(name)
                if self._exec(db, "SELECT 1 FROM roster_seats WHERE class_id = ? AND name_key = ?",
                              (class_id, key)).fetchone():  # fmt: skip
                    continue
                self._exec(db, "INSERT INTO roster_seats (class_id, name_key, name, student_id) VALUES (?, ?, ?, ?)",
                           (class_id, key, " ".join(name.split()), student_id or None))  # fmt: skip
                made += 1
        return made

    def seats(self, class_id: str) -> list[Seat]:
        with self._read() as db:
            rows = self._exec(db, "SELECT name, student_id, learner_id FROM roster_seats WHERE class_id = ? "
                                  "ORDER BY name_key", (class_id,)).fetchall()  # fmt: skip
        return [Seat(row[0], row[1], row[2] is not None) for row in rows]

    def _take_seat(self, db: Any, class_id: str, learner_id: str, name: str | None) -> None:
        """A member who joined under a seat's name takes it (if nobody has), and its identifier."""
        if not name:
            return
        seat = self._exec(db, "SELECT student_id FROM roster_seats WHERE class_id = ? AND name_key = ? "
                              "AND learner_id IS NULL", (class_id, seat_key(name))).fetchone()  # fmt: skip
        if seat is None:
            return
        self._exec(db, "UPDATE roster_seats SET learner_id = ? WHERE class_id = ? AND name_key = ?",
                   (learner_id, class_id, seat_key(name)))  # fmt: skip
        if seat[0]:
            self._exec(db, "UPDATE learners SET student_id = ? WHERE id = ?", (seat[0], learner_id))

    def lock_joining(self, class_id: str, locked: bool) -> None:
        with self._write() as db:
            self.lock_class(db, class_id)
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
            self._exec(db, "DELETE FROM turned_away WHERE class_id = ?", (class_id,))
            self._exec(db, "DELETE FROM roster_seats WHERE class_id = ?", (class_id,))
            self._exec(db, "DELETE FROM learners WHERE class_id = ?", (class_id,))
            self._exec(db, "DELETE FROM classes WHERE id = ?", (class_id,))

    def join_class(self, learner_id: str, class_id: str, display_name: str | None) -> JoinOutcome:
        name = clean_display_name(display_name)
        now = time.time()
        with self._write() as db:
            self.lock_class(db, class_id)  # two joins for the last place: one gets it, one waits
            klass = self._exec(
                db, "SELECT closed_at, expected_size FROM classes WHERE id = ?", (class_id,)
            ).fetchone()
            if klass is None:
                raise ValueError("There is no such class (it may have been deleted).")
            turned_away = self._exec(db, "SELECT 1 FROM turned_away WHERE class_id = ? AND learner_id = ?",
                                     (class_id, learner_id)).fetchone()  # fmt: skip
            if turned_away is not None:  # the instructor's answer stands, whatever the code
                return "denied"
            member = self._exec(
                db, "SELECT 1 FROM learners WHERE id = ? AND class_id = ?", (learner_id, class_id)
            ).fetchone()
            if member is None and klass[0] is not None:
                return "locked"
            self._check_name_free(db, class_id, learner_id, name)
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
            if member is None:
                self._take_seat(db, class_id, learner_id, name)
        return "joined"

    def _check_name_free(self, db: Any, class_id: str, learner_id: str, name: str | None) -> None:
        """A learner's own name may not be another member's (as seats compare names): the instructor
        tells members apart by name, and one learner could otherwise show up as a classmate."""
        if not name:
            return
        others = self._exec(db, "SELECT display_name FROM learners WHERE class_id = ? AND id <> ? "
                                "AND display_name IS NOT NULL", (class_id, learner_id)).fetchall()  # fmt: skip
        if any(seat_key(row[0]) == seat_key(name) for row in others):
            raise ValueError(f"Another member of the class is already called “{name}”. Add something your "
                             "instructor can tell you apart by: a surname, an initial.")  # fmt: skip

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
            self.lock_class(db, class_id)
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
                self._take_seat(db, class_id, learner_id, row[0])
            else:
                self._exec(
                    db,
                    "UPDATE join_requests SET denied_at = ? WHERE learner_id = ?",
                    (time.time(), learner_id),
                )
                self._turn_away(db, class_id, learner_id, row[0])
        return True

    def join_request(self, learner_id: str) -> JoinRequest | None:
        with self._read() as db:
            row = self._exec(
                db, f"SELECT {self._JOIN_COLUMNS} FROM join_requests WHERE learner_id = ?", (learner_id,)
            ).fetchone()
        return self._join_request(row) if row else None
