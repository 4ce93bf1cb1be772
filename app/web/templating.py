"""The one Jinja2 environment for every page."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app.config import PROJECT_ROOT

templates = Jinja2Templates(directory=str(PROJECT_ROOT / "templates"))


def page(request: Request, template: str, status: int = 200, **context: object) -> HTMLResponse:
    """A page from `template` with `context`."""
    return templates.TemplateResponse(request, template, context, status_code=status)
