"""Grading on the server."""

from __future__ import annotations

import pytest
from markupsafe import Markup

from app.course.models import Choice, Quiz
from app.course.quiz import AnswerError, grade


def quiz(kind: str, correct: str) -> Quiz:
    choices = tuple(Choice(k, Markup(k.upper()), k in correct, Markup(f"why {k}")) for k in "abcd")
    return Quiz("q", Markup("?"), kind, choices, 1)  # type: ignore[arg-type]


def test_single_choice_right_and_wrong() -> None:
    q = quiz("single", "b")
    right = grade(q, ["b"])
    assert right.correct and right.missed == 0 and [f.key for f in right.feedback] == ["b"]
    wrong = grade(q, ["c"])
    assert not wrong.correct and wrong.missed == 1
    assert [(f.key, f.right, str(f.why)) for f in wrong.feedback] == [("c", False, "why c")]


def test_multiple_choice_needs_every_right_one_and_no_wrong_one() -> None:
    q = quiz("multiple", "ac")
    assert grade(q, ["a", "c"]).correct
    partial = grade(q, ["a"])
    assert not partial.correct and partial.missed == 1
    extra = grade(q, ["a", "b", "c"])
    assert not extra.correct and extra.missed == 0
    assert [f.right for f in extra.feedback] == [True, False, True]


def test_feedback_covers_only_the_chosen_choices() -> None:
    outcome = grade(quiz("multiple", "ac"), ["d"])
    assert [f.key for f in outcome.feedback] == ["d"]
    assert outcome.to_json() == {
        "correct": False, "chosen": ["d"], "missed": 2, "feedback": [{"choice": "d", "right": False, "why": "why d"}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "keys", "message"),
    [
        ("single", [], "Choose an answer"),
        ("single", ["a", "b"], "takes one answer"),
        ("single", ["z"], "no choice 'z'"),
        ("multiple", ["a", "a"], "sent twice"),
    ],
)
def test_answers_that_cannot_be_graded(kind: str, keys: list[str], message: str) -> None:
    with pytest.raises(AnswerError, match=message):
        grade(quiz(kind, "a"), keys)
