"""Learner progress: steps seen, quiz answers, hands-on checks passed, display names, classes."""

from app.progress.sqlite import SQLiteProgressStore
from app.progress.store import ClassInfo, LearnerProgress, ProgressStore, QuizRecord

__all__ = ["ClassInfo", "LearnerProgress", "ProgressStore", "QuizRecord", "SQLiteProgressStore", "open_store"]


def open_store(database_url: str | None, sqlite_path) -> ProgressStore:  # noqa: ANN001
    """The store a deployment chose: PostgreSQL when a URL is set, else SQLite in the data folder."""
    if database_url:
        from app.progress.postgres import PostgresProgressStore

        return PostgresProgressStore(database_url)
    return SQLiteProgressStore(sqlite_path)
