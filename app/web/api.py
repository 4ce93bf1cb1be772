"""JSON routes: health and the demo-server registry."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.web.errors import error_body
from app.web.state import get_state

router = APIRouter()


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    state = get_state(request)
    body = state.health()
    return JSONResponse(body, status_code=200 if body["status"] in ("ok", "degraded") else 503)


@router.get("/api/servers")
async def servers(request: Request) -> list[dict[str, Any]]:
    """Every server a console can open: what it is, and the sample messages its templates offer."""
    return [demo.public() for demo in get_state(request).demos.values()]


# A transcript export comes in pages: at most this many entries per request (`?limit=` lowers it), and
# the entries whose lines fit in PAGE_CHARS (the first always). Each entry's message is parsed to be
# sent: a page of 2 MiB of lines such as `[[],[],...]` takes the web process's core for most of a second.
TRANSCRIPT_PAGE = 1000
PAGE_CHARS = 256 * 1024


@router.get("/api/sessions/{session_id}/transcript")
async def transcript(
    session_id: str, request: Request, after: int = 0, limit: int = TRANSCRIPT_PAGE
) -> JSONResponse:
    """A session's transcript as JSON, for the learner who owns it (the learner cookie) only.

    Paged: entries numbered above `after`, at most `limit`; `next_after` names the next page's `after`.
    """
    from app.web.learner import learner_id

    state = get_state(request)
    owner_key = f"learner:{learner_id(request)}"
    session = state.sessions.find(session_id, owner_key) if state.sessions else None
    if session is None:
        return JSONResponse(error_body(404, "No such session (or it is not yours)."), status_code=404)
    after, limit = max(after, 0), min(max(limit, 1), TRANSCRIPT_PAGE)
    await session.client_turn(
        session.transcript.page_bytes(after, limit, PAGE_CHARS)
    )  # a loop of exports waits
    body = session.transcript.to_json(after, limit, PAGE_CHARS)
    body.update(session=session.id, status=session.status)
    return JSONResponse(
        body, headers={"Content-Disposition": f'attachment; filename="transcript-{session.id}.json"'}
    )


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus metrics: sessions, start latency, relay messages and errors, sandbox layers; and the
    whole playground's live sessions by class, whichever replica answers."""
    state = get_state(request)
    if state.fleet is not None:
        everywhere = await state.fleet.live_everywhere()
        state.metrics.count_live([s.class_id for s in everywhere])
    elif state.sessions is not None:
        state.metrics.count_live([s.owner.class_id for s in list(state.sessions.sessions.values())])
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
