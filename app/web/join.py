"""Joining a class with its code."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.web.guesses import failed, throttled
from app.web.learner import learner_id
from app.web.state import get_state
from app.web.templating import page

router = APIRouter()


@router.get("/join", response_class=HTMLResponse)
def join_form(request: Request, code: str = "") -> HTMLResponse:
    progress = get_state(request).progress.learner(learner_id(request))
    return page(request, "join.html", title="Join a class", code=code, name=progress.display_name or "")


@router.get("/join/{code}", response_class=HTMLResponse)
def join_link(request: Request, code: str) -> HTMLResponse:
    return join_form(request, code)


@router.post("/join", response_class=HTMLResponse)
def join(request: Request, code: str = Form(""), display_name: str = Form("")) -> Response:
    state = get_state(request)
    if (refusal := throttled(request, "join")) is not None:
        return refusal
    klass = state.progress.class_by_code(code) if code.strip() else None
    error = None
    if klass is None:
        failed(request, "join")
        error = (
            "There is no class with that code. Check it with your instructor (letters and digits, no 0 or 1)."
        )
    elif klass.closed:
        error = f"The class “{klass.name}” is closed to new learners. Ask your instructor."
    elif not display_name.strip():
        error = "Enter the name your instructor will see beside your progress."
    else:
        try:
            state.progress.join_class(learner_id(request), klass.id, display_name)
        except ValueError as exc:
            error = str(exc)
    if error:
        return page(
            request, "join.html", status=400, title="Join a class", code=code, name=display_name, error=error
        )
    return RedirectResponse("/course?joined=1", status_code=303)
