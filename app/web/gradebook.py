"""A class's grade book, for a spreadsheet or a learning platform (docs/hosting.md, "The grade book").

`gradebook.csv` (and `.json`): one row per learner, with the student identifier the instructor gave
them (app/web/roster.py), a score per lesson and for the course, in percent, and their last activity. A step's points are its quizzes answered right (once is enough)
and its hands-on checks and exercise passed; a lesson's score is its steps' points over the points
it offers. `progress.csv` is the detail: each step's points, one column each.

Every number is a plain number (`12` or `66.7`): no `1/3`, which spreadsheets read as a date. A name
is the learner's own text, so one that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a
tab or a carriage return first) is kept as text with a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from app.course.catalog import Catalog
from app.course.models import Lesson, Step
from app.progress.store import LearnerProgress
from app.web.instructor import Instructor, class_or_404, grid

router = APIRouter()

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """A learner's text as a cell that a spreadsheet keeps as text (never a formula)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def step_points(step: Step, learner: LearnerProgress) -> tuple[int, int]:
    """(earned, offered): quizzes answered right and checks (the exercise included) passed."""
    quiz_ids = [quiz.id for quiz in step.quizzes]
    checks = set(step.required_checks)
    earned = learner.quizzes_right(step.slug, quiz_ids) + len(checks & learner.checks_passed(step.slug))
    return earned, len(quiz_ids) + len(checks)


def percent(earned: int, offered: int) -> str:
    """A score as a plain number: 0 to 100, one decimal at most (`66.7`, `100`)."""
    value = round(100 * earned / offered, 1) if offered else 0.0
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


@dataclass
class Scores:
    lessons: list[str]  # a percent per lesson, in course order
    total: str
    earned: int
    offered: int


def scores(catalog: Catalog, learner: LearnerProgress) -> Scores:
    per_lesson, earned_all, offered_all = [], 0, 0
    for lesson in catalog.lessons:
        earned = offered = 0
        for step in lesson.steps:
            got, of = step_points(step, learner)
            earned, offered = earned + got, offered + of
        per_lesson.append(percent(earned, offered))
        earned_all, offered_all = earned_all + earned, offered_all + offered
    return Scores(per_lesson, percent(earned_all, offered_all), earned_all, offered_all)


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)) if seconds else ""


def _lesson_heading(lesson: Lesson) -> str:
    return f"lesson {lesson.number}: {lesson.title} (%)"


def _rows(state: Any, class_id: str) -> tuple[list[str], list[dict[str, Any]]]:
    headings = ["name", "student id", "learner", "steps done", "steps", *[_lesson_heading(lesson) for lesson in state.catalog.lessons],
                "course (%)", "points", "points offered", "last activity (UTC)"]  # fmt: skip
    steps, grid_rows = grid(state, state.progress.class_learners(class_id), class_id)
    rows = []
    for row in grid_rows:
        learner = row["learner"]
        score = scores(state.catalog, learner)
        rows.append({"name": learner.display_name or "", "student_id": learner.student_id or "",
                     "learner": row["row_id"], "steps_done": row["done"], "steps": len(steps),
                     "lessons": score.lessons, "course": score.total, "points": score.earned,
                     "points_offered": score.offered, "last_activity": _when(learner.last_seen_at)})  # fmt: skip
    return headings, rows


def _csv(filename: str, headings: list[str], lines: list[list[Any]]) -> Response:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(headings)
    writer.writerows(lines)
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})  # fmt: skip


@router.get("/instructor/classes/{class_id}/gradebook.csv")
def gradebook_csv(state: Instructor, class_id: str) -> Response:
    klass = class_or_404(state, class_id)
    headings, rows = _rows(state, class_id)
    lines = [[spreadsheet_safe(r["name"]), spreadsheet_safe(r["student_id"]), r["learner"], r["steps_done"], r["steps"], *r["lessons"], r["course"],
              r["points"], r["points_offered"], r["last_activity"]] for r in rows]  # fmt: skip
    return _csv(f"gradebook-{klass.id}.csv", headings, lines)  # not the join code: files travel


@router.get("/instructor/classes/{class_id}/gradebook.json")
def gradebook_json(state: Instructor, class_id: str) -> JSONResponse:
    klass = class_or_404(state, class_id)
    _, rows = _rows(state, class_id)
    lessons = [
        {"number": lesson.number, "slug": lesson.slug, "title": lesson.title}
        for lesson in state.catalog.lessons
    ]
    learners = [{**r, "lessons": {lesson["slug"]: float(p) for lesson, p in zip(lessons, r["lessons"], strict=True)},
                 "course": float(r["course"])} for r in rows]  # fmt: skip
    return JSONResponse({"class": {"id": klass.id, "name": klass.name}, "lessons": lessons,
                         "score": "percent of the points offered: quizzes answered right, checks and exercises passed",
                         "learners": learners})  # fmt: skip


@router.get("/instructor/classes/{class_id}/progress.csv")
def progress_csv(state: Instructor, class_id: str) -> Response:
    """The detail: for each step, seen (0 or 1), quizzes right and offered, checks passed and offered."""
    klass = class_or_404(state, class_id)
    steps, rows = grid(state, state.progress.class_learners(class_id), class_id)
    kinds = ("seen", "quizzes right", "quizzes", "checks passed", "checks")
    headings = ["name", "learner", "steps done", *[f"{s.slug} {kind}" for s in steps for kind in kinds]]
    lines = [[spreadsheet_safe(row["learner"].display_name or ""), row["row_id"], row["done"],
              *[v for c in row["cells"] for v in (int(c["seen"]), c["quizzes"], c["quizzes_total"], c["checks"],
                                                   c["checks_total"])]] for row in rows]  # fmt: skip
    return _csv(f"progress-{klass.id}.csv", headings, lines)
