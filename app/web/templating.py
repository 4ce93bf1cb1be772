"""The one Jinja2 environment for every page."""

from __future__ import annotations

import datetime

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from app.config import PROJECT_ROOT

templates = Jinja2Templates(directory=str(PROJECT_ROOT / "templates"))


def utc_time(seconds: float) -> str:
    """A moment as an instructor reads it, the same on every replica: `2026-12-01 14:05 UTC`."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


templates.env.filters["utc"] = utc_time


def inline_code(text: str) -> Markup:
    """A reason in plain words, as the console shows it: `backticked` parts as code, the rest as text."""
    parts = str(text).split("`")
    return Markup("").join(Markup("<code>{}</code>").format(part) if i % 2 else escape(part)
                           for i, part in enumerate(parts))  # fmt: skip


templates.env.filters["inline_code"] = inline_code

# What an instructor's action did, said once on the page it comes back to (`?done=<key>`): a page
# that only changed a field or dropped a link said nothing. Only these words, never the query's own.
DONE = {
    "message": "Message saved: your learners see it on their pages.",
    "seats": "Seats added.",
    "renamed": "Name saved.",
    "student-id": "Student identifier saved.",
    "resume-code": "New resume code made: give it to the learner. Their old sign-ins have ended.",
    "removed": "The learner left the class; their progress stays theirs.",
    "reset": "Their progress was reset.",
    "ended": "Console ended.",
    "settings": "Class numbers saved.",
}
templates.env.globals["done_messages"] = DONE


def page(request: Request, template: str, status: int = 200, **context: object) -> HTMLResponse:
    """A page from `template` with `context`."""
    return templates.TemplateResponse(request, template, context, status_code=status)
