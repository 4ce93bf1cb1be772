"""The SQLite progress store: records, WAL, schema version and migrations."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from app.progress import SQLiteProgressStore
from app.progress.migrations import SCHEMA_VERSION
from app.progress.store import ProgressError

LEARNER = "learner-aaaaaaaaaaaaaaaa"


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteProgressStore(tmp_path / "progress.sqlite3")
    s.open()
    yield s
    s.close()


def test_an_unknown_learner_has_no_progress(store: SQLiteProgressStore) -> None:
    progress = store.learner("nobody-xxxxxxxxxxxx")
    assert progress.seen == set() and progress.checks == {} and progress.quizzes == {}
    assert progress.display_name is None


def test_records_seen_steps_checks_and_quiz_answers(store: SQLiteProgressStore) -> None:
    store.record_seen(LEARNER, "l/a")
    store.record_seen(LEARNER, "l/a")  # twice is harmless
    store.record_check(LEARNER, "l/a", "ping-answered")
    store.record_check(LEARNER, "l/a", "ping-answered")
    store.record_quiz_answer(LEARNER, "l/b", "q", ["c"], False)
    store.record_quiz_answer(LEARNER, "l/b", "q", ["a"], True)
    store.record_quiz_answer(LEARNER, "l/b", "q", ["a", "d"], False)
    progress = store.learner(LEARNER)
    assert progress.seen == {"l/a"}
    assert progress.checks_passed("l/a") == {"ping-answered"}
    record = progress.quiz("l/b", "q")
    assert record is not None
    assert (record.choices, record.correct, record.attempts, record.ever_correct) == (
        ("a", "d"),
        False,
        3,
        True,
    )
    assert store.learner("someone-else-xxxxxxx").seen == set()


def test_display_name_is_cleaned_and_can_be_cleared(store: SQLiteProgressStore) -> None:
    store.set_display_name(LEARNER, "  Ada   Lovelace ")
    assert store.learner(LEARNER).display_name == "Ada Lovelace"
    store.set_display_name(LEARNER, "   ")
    assert store.learner(LEARNER).display_name is None
    with pytest.raises(ValueError, match="at most 40"):
        store.set_display_name(LEARNER, "x" * 41)
    with pytest.raises(ValueError, match="control characters"):
        store.set_display_name(LEARNER, "a\x07b")


@pytest.mark.parametrize(
    "blank",
    ["\u3164\u3164\u3164", "\u2800", "\u115f\u1160", "\uffa0", "...", "\u2800 \u3164", "A" + "\u0301" * 39],
)
def test_a_name_that_shows_as_nothing_or_spills_over_is_refused(
    store: SQLiteProgressStore, blank: str
) -> None:
    """From the side of a learner hiding on the class page: fillers, a braille blank or punctuation
    alone look empty (or like the page's own "(no name)"); stacked accents spill over other rows."""
    with pytest.raises(ValueError, match="letter or a digit that shows|accents on one letter"):
        store.set_display_name(LEARNER, blank)


@pytest.mark.parametrize("name", ["Nguyễn Thị Ánh", "李小龍", "שָׁלוֹם", "Zoë 2", "श्रुति", "7"])
def test_names_of_every_script_are_kept(store: SQLiteProgressStore, name: str) -> None:
    store.set_display_name(LEARNER, name)
    assert store.learner(LEARNER).display_name == name


def test_the_database_uses_wal_and_records_its_schema_version(
    tmp_path: Path, store: SQLiteProgressStore
) -> None:
    store.record_seen(LEARNER, "l/a")
    assert store.schema_version == SCHEMA_VERSION
    with closing(sqlite3.connect(store.path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_progress_survives_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    first = SQLiteProgressStore(path)
    first.open()
    first.record_check(LEARNER, "l/a", "initialize-answered")
    first.close()
    second = SQLiteProgressStore(path)
    second.open()  # migrating an up-to-date database changes nothing
    assert second.learner(LEARNER).checks_passed("l/a") == {"initialize-answered"}
    assert second.schema_version == SCHEMA_VERSION
    second.close()


def test_a_database_from_a_newer_app_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    store = SQLiteProgressStore(path)
    with pytest.raises(ProgressError, match="newer than this app"):
        store.open()


def test_migrations_run_in_order_from_any_older_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.progress import migrations

    path = tmp_path / "p.sqlite3"
    old = SQLiteProgressStore(path)
    old.open()
    old.record_seen(LEARNER, "l/a")
    old.close()
    extra = ("ALTER TABLE learners ADD COLUMN colour TEXT",)
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, extra))
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    new = SQLiteProgressStore(path)
    new.open()
    assert new.schema_version == SCHEMA_VERSION + 1
    assert new.learner(LEARNER).seen == {"l/a"}
    new.close()
    with closing(sqlite3.connect(path)) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(learners)")]
    assert "colour" in columns


@contextmanager
def older_store(path: Path, version: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteProgressStore]:
    """A store at an earlier schema `version`, open for the block (its methods are today's: use those
    its tables already serve)."""
    from app.progress import migrations

    with monkeypatch.context() as older:
        older.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:version])
        older.setattr(migrations, "SCHEMA_VERSION", version)
        old = SQLiteProgressStore(path)
        old.open()
        try:
            yield old
        finally:
            old.close()


def test_clients_kept_before_their_use_was_recorded_are_kept_while_their_grants_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade to schema 16 (a client's last use): a client with a live grant keeps its tokens."""
    path = tmp_path / "p.sqlite3"
    with older_store(path, 15, monkeypatch):
        pass
    with closing(sqlite3.connect(path)) as db, db:
        for client in ("with-tokens", "without"):
            db.execute("INSERT INTO oauth_clients VALUES (?, '{}', 0)", (client,))
        db.execute("INSERT INTO oauth_grants (key_hash, kind, client_id, data, expires_at) "
                   "VALUES ('h', 'refresh', 'with-tokens', '{}', 4e9)")  # fmt: skip
    new = SQLiteProgressStore(path)
    new.open()
    new.save_oauth_client("newcomer", "{}")  # lets go of clients unused for long
    assert new.oauth_client("with-tokens") == "{}" and new.oauth_client("without") is None
    new.close()


def test_joins_denied_before_the_upgrade_stay_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The upgrade to schema 17 (who is turned away): a learner denied before it cannot ask again."""
    path = tmp_path / "p.sqlite3"
    with older_store(path, 16, monkeypatch) as old:
        klass = old.create_class("Before", expected_size=1)
    with closing(sqlite3.connect(path)) as db, db:  # a join denied as schema 16 kept it
        db.execute(
            "INSERT INTO learners (id, created_at, last_seen_at) VALUES ('learner-denied-00000000', 1, 1)"
        )
        db.execute("INSERT INTO join_requests (learner_id, class_id, display_name, requested_at, denied_at) "
                   "VALUES ('learner-denied-00000000', ?, 'Dee', 1, 2)", (klass.id,))  # fmt: skip
    new = SQLiteProgressStore(path)
    new.open()
    assert [(t.learner_id, t.display_name) for t in new.turned_away(klass.id)] == [
        ("learner-denied-00000000", "Dee")
    ]
    assert new.join_class("learner-denied-00000000", klass.id, "Dee") == "denied"
    new.close()


def test_a_failed_migration_leaves_the_old_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.progress import migrations

    path = tmp_path / "p.sqlite3"
    s = SQLiteProgressStore(path)
    s.open()
    s.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, ("CREATE TABLE t (a)", "NOT SQL")))
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(sqlite3.OperationalError):
        SQLiteProgressStore(path).open()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 't'").fetchone() is None


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    with pytest.raises(ProgressError, match="not open"):
        SQLiteProgressStore(tmp_path / "p.sqlite3").learner(LEARNER)


def test_saved_server_files_survive_the_move_to_workspace_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.progress import migrations

    path = tmp_path / "p.sqlite3"
    before = migrations.MIGRATIONS[:9]  # the schema before the workspace held more than server.py
    monkeypatch.setattr(migrations, "MIGRATIONS", before)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(before))
    old = SQLiteProgressStore(path)
    old.open()
    old.record_seen(LEARNER, "l/a")
    old.close()
    with closing(sqlite3.connect(path)) as db, db:
        for version in (1, 2):
            db.execute("INSERT INTO server_files (learner_id, version, source, saved_at) VALUES (?, ?, ?, ?)",
                       (LEARNER, version, f"v = {version}\n", 1000.0 + version))  # fmt: skip
    monkeypatch.undo()
    new = SQLiteProgressStore(path)
    new.open()
    assert new.schema_version == SCHEMA_VERSION
    saved = new.server_file(LEARNER)
    assert saved is not None and (saved.version, saved.source, saved.saved_at) == (2, "v = 2\n", 1002.0)
    assert [v.version for v in new.server_file_history(LEARNER)] == [2, 1]
    assert new.server_file(LEARNER, name="test_server.py") is None
    new.close()
