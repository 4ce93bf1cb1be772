"""The progress schema, one migration per version. Append new ones; never edit a released one."""

from __future__ import annotations

# MIGRATIONS[n] takes the database from version n to n + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE learners (
            id TEXT PRIMARY KEY,
            display_name TEXT,
            created_at REAL NOT NULL,
            last_seen_at REAL NOT NULL
        )""",
        """CREATE TABLE steps_seen (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            first_seen_at REAL NOT NULL,
            last_seen_at REAL NOT NULL,
            PRIMARY KEY (learner_id, step_slug)
        )""",
        # Every attempt is kept: an instructor's view of a class wants to see the wrong ones too.
        """CREATE TABLE quiz_answers (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            quiz_id TEXT NOT NULL,
            choices TEXT NOT NULL,
            correct INTEGER NOT NULL,
            answered_at REAL NOT NULL
        )""",
        "CREATE INDEX quiz_answers_learner ON quiz_answers (learner_id, step_slug, quiz_id)",
        """CREATE TABLE checks_passed (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            check_name TEXT NOT NULL,
            passed_at REAL NOT NULL,
            PRIMARY KEY (learner_id, step_slug, check_name)
        )""",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
