"""The course: the map, step pages, quiz answers (form and JSON), progress and the display name."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from app.course import checks
from app.course.catalog import Catalog
from app.course.models import Lesson, Quiz, Step
from app.course.quiz import AnswerError, Outcome, grade
from app.course.render import render_inline
from app.progress.store import LearnerProgress, StepStatus
from app.web.learner import has_identity, learner_id
from app.web.state import AppState, get_state
from app.web.templating import templates

router = APIRouter()

STATUS_WORDS = {"done": "Completed", "started": "Started", "new": "Not started"}


def step_status(step: Step, progress: LearnerProgress) -> StepStatus:
    return progress.step_status(step.slug, step.required_checks, (q.id for q in step.quizzes))


def _statuses(catalog: Catalog, progress: LearnerProgress) -> dict[str, StepStatus]:
    return {step.slug: step_status(step, progress) for step in catalog.steps()}


def _find(request: Request, lesson_slug: str, step_slug: str) -> tuple[Lesson, Step]:
    catalog = get_state(request).catalog
    lesson = catalog.lesson(lesson_slug)
    if lesson is None:
        raise HTTPException(404, f"There is no lesson called “{lesson_slug}”. The course map lists them all.")
    step = lesson.step(step_slug)
    if step is None:
        raise HTTPException(404, f"Lesson {lesson.number} has no step called “{step_slug}”.")
    return lesson, step


def _quiz(step: Step, quiz_id: str) -> Quiz:
    quiz = step.quiz(quiz_id)
    if quiz is None:
        raise HTTPException(404, f"This step has no quiz called “{quiz_id}”.")
    return quiz


def _previous_outcome(step: Step, quiz: Quiz, progress: LearnerProgress) -> Outcome | None:
    record = progress.quiz(step.slug, quiz.id)
    if record is None:
        return None
    try:
        return grade(quiz, record.choices)
    except AnswerError:  # the lesson changed since: show the quiz fresh
        return None


@router.get("/course", response_class=HTMLResponse)
def course_map(request: Request) -> Response:
    return _course_page(request)


def _course_page(request: Request, name_error: str | None = None, typed_name: str | None = None) -> Response:
    """The course map; with `name_error`, the name form says why `typed_name` was not saved (400)."""
    state = get_state(request)
    progress = state.progress.learner(learner_id(request))
    statuses = _statuses(state.catalog, progress)
    resume = next((s for s in state.catalog.steps() if statuses[s.slug] != "done"), None)
    # After /join, /resume or the name form redirected here: say what just happened.
    notice = None
    if request.query_params.get("joined") and progress.class_id:
        klass = state.progress.get_class(progress.class_id)
        notice = (
            f"You joined the class “{klass.name}”. Your instructor now sees your progress." if klass else None
        )
    elif request.query_params.get("resumed"):
        notice = "You are continuing with the progress of your resume code on this device."
    elif request.query_params.get("named"):
        notice = (
            f"Your name is saved: “{progress.display_name}”."
            if progress.display_name
            else "Your name is cleared."
        )
    context = {
        "title": "The course",
        "notice": notice,
        **_membership(state, progress),
        "new_here": not progress.seen and not progress.checks and not progress.quizzes,
        "lessons": state.catalog.lessons,
        "statuses": statuses,
        "status_words": STATUS_WORDS,
        "resume": resume,
        "progress": progress,
        "done": sum(1 for v in statuses.values() if v == "done"),
        "total": len(statuses),
        "name_error": name_error,
        "typed_name": typed_name,
    }
    return templates.TemplateResponse(request, "course.html", context, status_code=400 if name_error else 200)


@router.get("/course/{lesson_slug}")
def lesson_start(request: Request, lesson_slug: str) -> Response:
    lesson = get_state(request).catalog.lesson(lesson_slug)
    if lesson is None:
        raise HTTPException(404, f"There is no lesson called “{lesson_slug}”. The course map lists them all.")
    return RedirectResponse(lesson.steps[0].url, status_code=307)


@router.get("/course/{lesson_slug}/{step_slug}", response_class=HTMLResponse)
def step_page(request: Request, lesson_slug: str, step_slug: str) -> Response:
    state = get_state(request)
    lesson, step = _find(request, lesson_slug, step_slug)
    who = learner_id(request)
    if has_identity(request):  # a visitor without one is shown a fresh learner's page and leaves no rows
        state.progress.record_seen(who, step.slug)
    progress = state.progress.learner(who)
    previous, following = state.catalog.neighbours(step)
    passed = progress.checks_passed(step.slug)
    context: dict[str, Any] = {
        "title": f"{_plain(step)} · Lesson {lesson.number}",
        **_membership(state, progress),
        "lesson": lesson,
        "step": step,
        "previous": previous,
        "next": following,
        "statuses": _statuses(state.catalog, progress),
        "status_words": STATUS_WORDS,
        "outcomes": {q.id: _previous_outcome(step, q, progress) for q in step.quizzes},
        "checks": [
            {"name": name, "goal": render_inline(checks.REGISTRY[name].goal), "passed": name in passed}
            for name in step.checks
        ],
        "server": state.demos.get(step.console.server) if step.console else None,
        "own_server": bool(
            step.console
            and state.demos.get(step.console.server, None) is not None
            and state.demos[step.console.server].learners_own
        )
        or bool(lesson.workspace),  # fmt: skip
        "exercise_passed": "exercise" in passed,
        "endpoint_server": state.demos.get(step.endpoint.server) if step.endpoint else None,
    }
    return templates.TemplateResponse(request, "lesson_step.html", context)


def _membership(state: AppState, progress: LearnerProgress) -> dict[str, str | None]:
    """What a member's pages show of their class: its name in the header, the instructor's message."""
    klass = state.progress.get_class(progress.class_id) if progress.class_id else None
    return {"member_of": klass.name, "class_message": klass.message} if klass else {}


def _plain(step: Step) -> str:
    return step.title.striptags()


def _record_answer(request: Request, step: Step, quiz: Quiz, choices: list[str]) -> Outcome:
    try:
        outcome = grade(quiz, choices)
    except AnswerError as exc:
        raise HTTPException(422, str(exc)) from None
    get_state(request).progress.record_quiz_answer(
        learner_id(request), step.slug, quiz.id, outcome.chosen, outcome.correct
    )
    return outcome


@router.post("/course/{lesson_slug}/{step_slug}/quiz/{quiz_id}")
async def answer_form(request: Request, lesson_slug: str, step_slug: str, quiz_id: str) -> Response:
    """The quiz as a plain HTML form: record, then back to the step, where the feedback is shown."""
    _, step = _find(request, lesson_slug, step_slug)
    quiz = _quiz(step, quiz_id)
    form = await request.form()
    choices = [str(v) for v in form.getlist("choice")]
    await anyio.to_thread.run_sync(_record_answer, request, step, quiz, choices)
    return RedirectResponse(f"{step.url}#quiz-{quiz.id}", status_code=303)


class Answer(BaseModel):
    choices: list[str] = Field(max_length=26, description="The keys of the chosen choices: a, b, c, ...")


@router.post("/api/course/{lesson_slug}/{step_slug}/quiz/{quiz_id}")
def answer_api(request: Request, lesson_slug: str, step_slug: str, quiz_id: str, answer: Answer) -> Response:
    _, step = _find(request, lesson_slug, step_slug)
    quiz = _quiz(step, quiz_id)
    outcome = _record_answer(request, step, quiz, answer.choices)
    html = templates.get_template("_quiz_feedback.html").render(outcome=outcome, quiz=quiz)
    return JSONResponse({**outcome.to_json(), "html": html})


@router.get("/api/progress")
def progress_api(request: Request) -> dict[str, Any]:
    state = get_state(request)
    progress = state.progress.learner(learner_id(request))
    steps = {}
    for step in state.catalog.steps():
        passed = progress.checks_passed(step.slug)
        steps[step.slug] = {
            "status": step_status(step, progress),
            "seen": step.slug in progress.seen,
            "checks": {name: name in passed for name in step.required_checks},
            "quizzes": {
                q.id: {
                    "answered": progress.quiz(step.slug, q.id) is not None,
                    "correct": progress.quiz_right(step.slug, q.id),
                }
                for q in step.quizzes
            },
        }
    return {"display_name": progress.display_name, "steps": steps}


class DisplayName(BaseModel):
    display_name: str | None = Field(
        None, max_length=200, description="Shown to the instructor; empty clears it."
    )


def _set_name(request: Request, name: str | None) -> str | None:
    state = get_state(request)
    try:
        state.progress.set_display_name(learner_id(request), name)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return state.progress.learner(learner_id(request)).display_name


@router.put("/api/progress/name")
def name_api(request: Request, body: DisplayName) -> dict[str, str | None]:
    return {"display_name": _set_name(request, body.display_name)}


@router.post("/course/name")
async def name_form(request: Request) -> Response:
    form = await request.form()
    value = form.get("display_name")
    typed = value if isinstance(value, str) else None
    try:
        await anyio.to_thread.run_sync(_set_name, request, typed)
    except HTTPException as refused:  # the page again, saying why, with what was typed
        return await anyio.to_thread.run_sync(_course_page, request, str(refused.detail), typed)
    return RedirectResponse("/course?named=1", status_code=303)  # the page then says what was saved
