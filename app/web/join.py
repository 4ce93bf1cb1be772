"""Joining a class with its code: a member while the class is under its expected size, past it a join
that waits for the instructor (app/web/instructor.py approves or denies it), none while joining is locked."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.progress import ClassInfo
from app.web.guesses import wrong
from app.web.learner import learner_id
from app.web.state import get_state
from app.web.templating import page

router = APIRouter()
WAITING = "/join/waiting"  # never a join code: the code alphabet has no I


def locked_message(klass: ClassInfo) -> str:
    return (
        f"Joining the class “{klass.name}” is locked: it is closed to new learners for now. "
        "Ask your instructor to unlock it."
    )


@router.get("/join", response_class=HTMLResponse)
def join_form(request: Request, code: str = "") -> HTMLResponse:
    state = get_state(request)
    me = learner_id(request)
    progress = state.progress.learner(me)
    asked = state.progress.join_request(me)
    waiting_for = state.progress.get_class(asked.class_id) if asked and not asked.denied else None
    return page(request, "join.html", title="Join a class", code=code, name=progress.display_name or "",
                waiting_for=waiting_for)  # fmt: skip


@router.get(WAITING, response_class=HTMLResponse)
def waiting(request: Request) -> Response:
    """Where a join past the class's expected size lands: the instructor's answer shows on the next
    reload (the page reloads itself now and then). Approval makes the learner a member at once."""
    state = get_state(request)
    me = learner_id(request)
    asked = state.progress.join_request(me)
    if asked is not None:
        klass = state.progress.get_class(asked.class_id)
        if klass is not None:
            status = "denied" if asked.denied else "waiting"
            return page(request, "join_waiting.html", title="Join a class", answer=status, klass=klass,
                        name=asked.display_name)  # fmt: skip
    klass = state.progress.learner_class(me)
    if klass is None:  # never asked, or the class is gone
        return RedirectResponse("/join", status_code=303)
    name = state.progress.learner(me).display_name
    return page(request, "join_waiting.html", title="Join a class", answer="member", klass=klass, name=name)


@router.get("/join/{code}", response_class=HTMLResponse)
def join_link(request: Request, code: str) -> HTMLResponse:
    return join_form(request, code)


@router.post("/join", response_class=HTMLResponse)
def join(request: Request, code: str = Form(""), display_name: str = Form("")) -> Response:
    state = get_state(request)
    klass = state.progress.class_by_code(code) if code.strip() else None
    error = None
    if klass is None:
        if (refusal := wrong(request, "join")) is not None:
            return refusal
        error = (
            "There is no class with that code. Check it with your instructor (letters and digits, no 0 or 1)."
        )
    elif not display_name.strip():
        error = "Enter the name your instructor will see beside your progress."
    else:
        try:
            outcome = state.progress.join_class(learner_id(request), klass.id, display_name)
        except ValueError as exc:
            error = str(exc)
        else:
            if outcome == "pending":
                return RedirectResponse(WAITING, status_code=303)
            if outcome == "locked":
                error = locked_message(klass)
            elif outcome == "denied":
                error = (
                    f"Your instructor has not let you into the class “{klass.name}”. Ask them if this is a "
                    "mistake; meanwhile you can follow the course on your own."
                )
            elif outcome == "too_many_waiting":
                error = (
                    f"The class “{klass.name}” is full, and too many joins already wait for the instructor. "
                    "Ask your instructor."
                )
    if error:
        return page(
            request, "join.html", status=400, title="Join a class", code=code, name=display_name, error=error
        )
    return RedirectResponse("/course?joined=1", status_code=303)
