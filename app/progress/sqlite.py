"""Progress in one SQLite file on disk: WAL journal, a schema version table and migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.progress.database import Dialect
from app.progress.sql import SQLProgressStore
from app.progress.store import ProgressError

# How long a writer waits for another connection's lock before failing.
BUSY_TIMEOUT_MS = 5000
# SQLite's primary result codes for a database that cannot do what was asked for now: busy or locked
# (past the wait), read-only, an I/O error, full, not openable.
UNAVAILABLE_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_READONLY,
                               sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN})  # fmt: skip


class SQLiteProgressStore(SQLProgressStore):
    dialect = Dialect(placeholder="?", time_type="REAL", serial_type="INTEGER PRIMARY KEY AUTOINCREMENT",
                      begin="BEGIN IMMEDIATE")  # fmt: skip

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.name = str(path)

    def _connect(self) -> sqlite3.Connection:
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
        return db

    def _is_integrity_error(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def _is_unavailable(self, exc: BaseException) -> bool:
        code = getattr(exc, "sqlite_errorcode", None)  # not a statement's mistake (those say 1, SQLITE_ERROR)
        return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in UNAVAILABLE_CODES
