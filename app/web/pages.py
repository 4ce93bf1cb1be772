"""HTML pages: home and the free-standing playground."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.protocol import messages
from app.web.state import get_state
from app.web.templating import templates

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> HTMLResponse:
    state = get_state(request)
    return templates.TemplateResponse(
        request, "home.html", {"title": "Learn MCP by talking to real servers", "demos": state.demos.values()}
    )


# The revision each playground console starts with: the server's newest, in the era it speaks.
PLAYGROUND_REVISIONS = {"demo-legacy": "2024-11-05", "demo-stateless": messages.STATELESS_REVISION}
DEFAULT_REVISION = messages.NEWEST_HANDSHAKE_REVISION
DEFAULT_SERVER = "demo-orders"


def starting_message(revision: str) -> str:
    """The console's first message: the handshake, or server/discover in the stateless revision."""
    return json.dumps(messages.opening(revision), indent=2)


@router.get("/playground", response_class=HTMLResponse)
async def playground(request: Request, server: str | None = None) -> HTMLResponse:
    """A free-standing console; `?server=` picks the demo server (an unknown name falls back)."""
    demos = get_state(request).demos
    name = server if server in demos else (DEFAULT_SERVER if DEFAULT_SERVER in demos else next(iter(demos)))
    revision = PLAYGROUND_REVISIONS.get(name, DEFAULT_REVISION)
    context = {
        "title": "Playground",
        "demos": list(demos.values()),
        "demo": demos[name],
        "unknown": server is not None and server not in demos,
        "console_server": name,
        "console_title": demos[name].title,
        "console_rev": revision,
        "console_message": starting_message(revision),
        "console_wide": True,
        "own_server": demos[name].learners_own,  # the editor of the learner's server.py, above the console
    }
    return templates.TemplateResponse(request, "playground.html", context)
