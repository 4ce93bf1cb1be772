"""The course's claims and where the spec says so: every `[spec ...]` of every lesson, on one page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.course.spec import sections
from app.web.state import get_state
from app.web.templating import page

router = APIRouter()


@router.get("/spec", response_class=HTMLResponse)
def spec_claims(request: Request) -> HTMLResponse:
    catalog = get_state(request).catalog
    lessons = [
        (lesson, [(step, claim) for step in lesson.steps for claim in step.claims])
        for lesson in catalog.lessons
    ]
    return page(
        request,
        "spec_refs.html",
        title="Where the spec says so",
        lessons=[(lesson, claims) for lesson, claims in lessons if claims],
        total=sum(len(claims) for _, claims in lessons),
        commit=sections().commit,
    )
