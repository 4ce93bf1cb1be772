"""The progress interface. SQLite implements it today; another database can sit behind the same methods."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

MAX_DISPLAY_NAME = 40


class ProgressError(Exception):
    """The store cannot be used (for example: its database was written by a newer version)."""


@dataclass(frozen=True)
class QuizRecord:
    """A learner's latest answer to one quiz, and whether any attempt was right."""

    choices: tuple[str, ...]
    correct: bool
    attempts: int
    ever_correct: bool


@dataclass
class LearnerProgress:
    learner_id: str
    display_name: str | None = None
    seen: set[str] = field(default_factory=set)  # step slugs
    checks: dict[str, set[str]] = field(default_factory=dict)  # step slug -> check names passed
    quizzes: dict[tuple[str, str], QuizRecord] = field(default_factory=dict)  # (step slug, quiz id)

    def checks_passed(self, step_slug: str) -> set[str]:
        return self.checks.get(step_slug, set())

    def quiz(self, step_slug: str, quiz_id: str) -> QuizRecord | None:
        return self.quizzes.get((step_slug, quiz_id))


class ProgressStore(Protocol):
    """Every method is quick and synchronous; recording the same fact twice is harmless."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def set_display_name(self, learner_id: str, name: str | None) -> None: ...

    def record_seen(self, learner_id: str, step_slug: str) -> None: ...

    def record_quiz_answer(
        self, learner_id: str, step_slug: str, quiz_id: str, choices: Sequence[str], correct: bool
    ) -> None: ...

    def record_check(self, learner_id: str, step_slug: str, check_name: str) -> None: ...

    def learner(self, learner_id: str) -> LearnerProgress: ...


def clean_display_name(name: str | None) -> str | None:
    """A display name as stored: trimmed, at most MAX_DISPLAY_NAME characters, None for empty.

    Raises ValueError with a sentence for the learner when the name cannot be used.
    """
    if name is None:
        return None
    name = " ".join(name.split())
    if not name:
        return None
    if len(name) > MAX_DISPLAY_NAME:
        raise ValueError(f"A display name has at most {MAX_DISPLAY_NAME} characters.")
    if any(not ch.isprintable() for ch in name):
        raise ValueError("A display name cannot hold control characters.")
    return name
