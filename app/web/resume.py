"""Moving to another device: a resume code and link, and switching to the progress a code names."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.web.client import is_https, site_url
from app.web.guesses import wrong
from app.web.learner import has_identity, learner_id
from app.web.state import get_state
from app.web.templating import page

router = APIRouter()


@router.get("/resume", response_class=HTMLResponse)
def resume_page(request: Request) -> HTMLResponse:
    return _resume_page(request)


def _resume_page(request: Request, status: int = 200, error: str | None = None) -> HTMLResponse:
    """The learner's own code and link; a visitor without an identity yet gets none (a GET makes no rows)."""
    code = link = None
    if has_identity(request):
        code = get_state(request).progress.resume_code(learner_id(request))
        link = site_url(request) + f"/resume/{code}"
    return page(request, "resume.html", status=status, title="Continue on another device", code=code, link=link,
                 error=error)  # fmt: skip


def _switch_to(request: Request, code: str) -> Response:
    learner = get_state(request).progress.learner_for_resume_code(code)
    if learner is None:
        if (refusal := wrong(request, "resume")) is not None:
            return refusal
        return _resume_page(request, 404, "No progress has that resume code. Check it and try again.")
    state = get_state(request)
    response: Response = RedirectResponse("/course?resumed=1", status_code=303)
    before = learner_id(request) if has_identity(request) else None
    if before is not None and before != learner:
        # This browser's own progress stays reachable: its resume code, made now if it had none, is
        # shown once it has switched (a link from someone else can lead here, one click from it).
        earlier = state.progress.resume_code(before)
        response = page(request, "resume_switched.html", title="Continued on this device", earlier=earlier)
    identity = state.identity
    assert identity is not None  # the app has started
    generation = state.progress.sign_in_generation(learner)  # as new resume codes left it
    response.headers.append("set-cookie", identity.cookie(learner, is_https(request.scope), generation))
    return response


@router.get("/resume/{code}", response_class=HTMLResponse)
def resume_link(request: Request, code: str) -> Response:
    """A link only asks: switching who you are takes a click, so a link planted elsewhere cannot."""
    progress = get_state(request).progress
    learner = progress.learner_for_resume_code(code)
    if learner is None:
        return _switch_to(request, code)  # counts the wrong code, says it is unknown
    name = progress.learner(learner).display_name
    own = has_identity(request) and learner_id(request) != learner  # progress this browser would leave
    return page(
        request, "resume_confirm.html", title="Continue on this device", code=code, name=name, own=own
    )


@router.post("/resume")
def resume_code(request: Request, code: str = Form("")) -> Response:
    return _switch_to(request, code)
