"""The class's roster, from the instructor's side: seats from a pasted roster, a message every
member's pages show, and one learner at a time: their name, the identifier the grade book gives
them, their resume code (shown, or replaced by a new one), their removal from the class, and
"follow": their console as they see it, moving with them from step to step (each step opens a
console of its own). None of it counts as the learner's own activity, and a learner appears only by
their row id (their own id is their identity).
"""

from __future__ import annotations

import json
import time

import anyio
from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from app.progress.names import clean_display_name
from app.web.endpoints import end_endpoint
from app.web.instructor import Instructor, class_learner, class_or_404, end_live_session, live_sessions
from app.web.templating import page

router = APIRouter()

MAX_MESSAGE = 280
MAX_STUDENT_ID = 64
SIGNED_OUT = "you were signed out: your instructor gave you a new resume code"


def _back(class_id: str, row: str | None = None, done: str = "") -> RedirectResponse:
    """Back to the class page (or the learner's), saying what was `done` (a key of templating.DONE)."""
    where = f"/instructor/classes/{class_id}" + (f"/learners/{row}" if row else "")
    return RedirectResponse(where + (f"?done={done}" if done else ""), status_code=303)


def _text(value: str, most: int, what: str) -> str | None:
    value = " ".join(value.split())  # one line: it is shown in a header and in a spreadsheet cell
    if len(value) > most:
        raise HTTPException(422, f"The {what} has {len(value)} characters; it may have {most}.")
    return value or None


@router.post("/instructor/classes/{class_id}/message")
def class_message(state: Instructor, class_id: str, message: str = Form("")) -> Response:
    """What every member's course and step pages show, until it is cleared (an empty message)."""
    class_or_404(state, class_id)
    state.progress.set_class_message(class_id, _text(message, MAX_MESSAGE, "message"))
    return _back(class_id, done="message")


MAX_SEATS = 500


def parse_roster(text: str) -> list[tuple[str, str | None]]:
    """Pasted lines, each a name and maybe a student identifier after a tab (a spreadsheet's column)
    or after the line's last comma. Raises HTTPException(422) naming the first wrong line."""
    seats: list[tuple[str, str | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, _, student = line.partition("\t") if "\t" in line else line.rpartition(",")
        if not name.strip():  # no comma: the whole line is the name
            name, student = line, ""
        try:
            cleaned = clean_display_name(name)
            student_id = _text(student, MAX_STUDENT_ID, "student identifier")
        except (ValueError, HTTPException) as exc:
            reason = exc.detail if isinstance(exc, HTTPException) else str(exc)
            raise HTTPException(422, f"Line {number}: {reason} Nothing was added.") from None
        if cleaned:
            seats.append((cleaned, student_id))
    if len(seats) > MAX_SEATS:
        raise HTTPException(422, f"The roster has {len(seats)} names; a class takes {MAX_SEATS} at most.")
    return seats


@router.post("/instructor/classes/{class_id}/seats")
def add_seats(state: Instructor, class_id: str, roster: str = Form("")) -> Response:
    """Seats from a pasted roster: a learner who joins under a seat's name takes it, and its identifier."""
    class_or_404(state, class_id)
    state.progress.add_seats(class_id, parse_roster(roster))
    return _back(class_id, done="seats")


@router.get("/instructor/classes/{class_id}/learners/{row}", response_class=HTMLResponse)
def learner_page(state: Instructor, request: Request, class_id: str, row: str) -> HTMLResponse:
    klass = class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    code = state.progress.resume_code(learner.learner_id, touch=False)
    current = state.catalog.step(learner.current_step[0]) if learner.current_step else None
    runs = [{"step": state.catalog.step(run.step_slug), "at": run.at, "passed": run.passed,
             "report": json.loads(run.report)} for run in state.progress.exercise_runs(learner.learner_id)[:RUNS_SHOWN]]  # fmt: skip
    consoles = [{"server": s.server, "status": s.status, "reason": s.reason, "id": s.id}
                for s in _local_consoles(state, class_id, learner.learner_id)]  # fmt: skip
    recorded = state.progress.server_exit(learner.learner_id)
    return page(request, "instructor_learner.html", title=learner.display_name or "A learner", klass=klass,
                learner=learner, row=row, resume_code=code, max_student_id=MAX_STUDENT_ID, current=current,
                now=time.time(), runs=[r for r in runs if r["step"] is not None], consoles=consoles,
                server_exit=json.loads(recorded) if recorded else None)  # fmt: skip


# The latest exercise runs a learner's page shows (one per step, newest first).
RUNS_SHOWN = 5


def _local_consoles(state: Instructor, class_id: str, learner_id: str) -> list:
    """The learner's live consoles that this replica holds, as sessions (their state and reason)."""
    held = state.sessions.sessions if state.sessions is not None else {}
    return [held[s["id"]] for s in live_sessions(state, class_id)
            if s["learner"] == learner_id and s["local"] and s["id"] in held]  # fmt: skip


@router.post("/instructor/classes/{class_id}/learners/{row}/name")
def rename(state: Instructor, class_id: str, row: str, display_name: str = Form("")) -> Response:
    class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    try:
        state.progress.rename_learner(learner.learner_id, display_name)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return _back(class_id, row, done="renamed")


@router.post("/instructor/classes/{class_id}/learners/{row}/student-id")
def student_id(state: Instructor, class_id: str, row: str, student_id: str = Form("")) -> Response:
    class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    state.progress.set_student_id(learner.learner_id, _text(student_id, MAX_STUDENT_ID, "student identifier"))
    return _back(class_id, row, done="student-id")


@router.post("/instructor/classes/{class_id}/learners/{row}/resume-code")
async def new_resume_code(state: Instructor, class_id: str, row: str) -> Response:
    """A new resume code (for a learner whose code was seen by others); the old one stops working,
    every device signed in as them is signed out, and their endpoints and live sessions end: a console
    opened with the old sign-in would otherwise go on as them, its checks passed recorded as theirs,
    and an endpoint made with it would run their server and hold their places."""
    learner = await anyio.to_thread.run_sync(_class_learner_id, state, class_id, row)
    await anyio.to_thread.run_sync(state.progress.new_resume_code, learner)
    if state.identity is not None:
        state.identity.forget(learner)
    for endpoint in await anyio.to_thread.run_sync(state.progress.learner_endpoints, learner):
        await end_endpoint(state, endpoint.id, SIGNED_OUT)
    everywhere = await anyio.to_thread.run_sync(live_sessions, state)
    for session in everywhere:
        if session["learner"] == learner:
            await end_live_session(state, session["id"], SIGNED_OUT)
    return _back(class_id, row, done="resume-code")


def _class_learner_id(state: Instructor, class_id: str, row: str) -> str:
    class_or_404(state, class_id)
    return class_learner(state, class_id, row).learner_id


@router.post("/instructor/classes/{class_id}/learners/{row}/remove")
def remove(state: Instructor, class_id: str, row: str) -> Response:
    """The learner leaves the class: the class no longer sees them; their progress stays theirs."""
    class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    state.progress.remove_from_class(class_id, learner.learner_id)
    return _back(class_id, done="removed")


def _newest_console(state: Instructor, class_id: str, learner_id: str) -> dict | None:
    """The learner's newest live console that this replica holds (it can be followed here)."""
    mine = [s for s in live_sessions(state, class_id) if s["learner"] == learner_id and s["local"]]
    return mine[-1] if mine else None


@router.get("/instructor/classes/{class_id}/learners/{row}/follow", response_class=HTMLResponse)
def follow_learner(state: Instructor, request: Request, class_id: str, row: str) -> HTMLResponse:
    klass = class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    return page(request, "instructor_follow.html", title=f"Following {learner.display_name or 'a learner'}",
                klass=klass, learner=learner, row=row)  # fmt: skip


@router.get("/api/instructor/classes/{class_id}/learners/{row}/console")
def learner_console(state: Instructor, class_id: str, row: str) -> JSONResponse:
    """Which console of the learner to follow now: their newest live one, or none."""
    class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    newest = _newest_console(state, class_id, learner.learner_id)
    step = state.catalog.step(learner.current_step[0]) if learner.current_step else None
    where = (
        f"lesson {step.lesson_number}: {step.title.striptags()}" if step else None
    )  # the newest step opened
    return JSONResponse({"session": newest["id"], "server": newest["server"], "step": where} if newest
                        else {"session": None}, headers={"Cache-Control": "no-store"})  # fmt: skip
