"""HTML pages: home and the free-standing playground."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.web.state import get_state
from app.web.templating import templates

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> HTMLResponse:
    state = get_state(request)
    return templates.TemplateResponse(
        request, "home.html", {"title": "Learn MCP by talking to real servers", "demos": state.demos.values()}
    )
