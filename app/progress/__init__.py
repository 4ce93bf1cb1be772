"""Learner progress: steps seen, quiz answers, hands-on checks passed, an optional display name."""

from app.progress.sqlite import SQLiteProgressStore
from app.progress.store import LearnerProgress, ProgressStore, QuizRecord

__all__ = ["LearnerProgress", "ProgressStore", "QuizRecord", "SQLiteProgressStore"]
