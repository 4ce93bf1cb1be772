"""Grading a quiz answer on the server: the page never holds which choices are correct."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from app.course.models import Quiz


class AnswerError(ValueError):
    """The answer cannot be graded (nothing chosen, an unknown choice, two for a single choice)."""


@dataclass(frozen=True)
class ChoiceFeedback:
    key: str
    text: Markup
    right: bool  # picking this choice was right (a correct one chosen)
    why: Markup


@dataclass(frozen=True)
class Outcome:
    correct: bool
    chosen: tuple[str, ...]
    feedback: tuple[ChoiceFeedback, ...]  # one per chosen choice, in the quiz's order
    missed: int  # correct choices not chosen; the count only, so the answer is not given away

    def to_json(self) -> dict[str, object]:
        return {
            "correct": self.correct,
            "chosen": list(self.chosen),
            "missed": self.missed,
            "feedback": [{"choice": f.key, "right": f.right, "why": str(f.why)} for f in self.feedback],
        }


def grade(quiz: Quiz, keys: Sequence[str]) -> Outcome:
    """Grade the chosen choice keys; raise AnswerError for an answer that cannot be graded."""
    chosen = set(keys)
    if not chosen:
        raise AnswerError("Choose an answer first.")
    if len(chosen) != len(keys):
        raise AnswerError("A choice was sent twice.")
    unknown = sorted(k for k in chosen if quiz.choice(k) is None)
    if unknown:
        raise AnswerError(f"This quiz has no choice {', '.join(map(repr, unknown))}.")
    if quiz.kind == "single" and len(chosen) > 1:
        raise AnswerError("This question takes one answer.")
    feedback = tuple(ChoiceFeedback(c.key, c.text, c.correct, c.why) for c in quiz.choices if c.key in chosen)
    missed = sum(1 for c in quiz.choices if c.correct and c.key not in chosen)
    correct = missed == 0 and all(f.right for f in feedback)
    return Outcome(correct, tuple(f.key for f in feedback), feedback, missed)
