"""A learner's Streamable HTTP endpoints, managed: `/api/endpoints` makes, lists and ends them (learner
cookie, same site), and `/api/endpoints/{id}/traffic` shows what outside clients exchange with one,
with a lesson step's hands-on checks on it. The endpoints themselves (`/mcp/{token}`) are
app/web/mcp_http.py. See docs/http.md.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, Literal

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from app.course import checks
from app.course.models import Step
from app.progress.store import EndpointInfo
from app.relay.httpwire import HttpListener
from app.relay.sessions import NORMAL_CLOSURE
from app.relay.wire import entry_frame
from app.web import oauth_log
from app.web.client import client_key, site_url
from app.web.errors import error_body
from app.web.learner import learner_id
from app.web.state import AppState, get_state

router = APIRouter()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


def _endpoint_json(info: EndpointInfo, live: int) -> dict[str, Any]:
    return {"id": info.id, "server": info.server, "auth": info.auth, "created_at": int(info.created_at),
            "expires_at": int(info.expires_at), "live_sessions": live}  # fmt: skip


async def end_session(state: AppState, listener: HttpListener, reason: str) -> None:
    """End an endpoint's MCP session (its client's DELETE, or the endpoint's end)."""
    state.http_sessions.remove(listener)
    if state.sessions is not None:
        await state.sessions.end(listener.session, NORMAL_CLOSURE, reason)


# --- the learner's endpoints ----------------------------------------------------------------------


class NewEndpoint(BaseModel):
    server: str = Field(max_length=100, description="A registry name, as in /api/servers.")
    auth: Literal["none", "oauth"] = Field(
        "none",
        description='"oauth": a protected endpoint, open only with an access token (MCP authorization).',
    )


@router.post("/api/endpoints", status_code=201)
async def create_endpoint(request: Request, body: NewEndpoint) -> JSONResponse:
    state = get_state(request)
    learner = learner_id(request)
    if body.server not in state.demos:
        return JSONResponse(error_body(404, f"There is no server named {body.server!r}."), status_code=404)
    mine = await anyio.to_thread.run_sync(state.progress.learner_endpoints, learner)
    cap = state.settings.max_endpoints_per_learner
    if len(mine) >= cap:
        message = f"You already have {cap} endpoints. End one (DELETE /api/endpoints/ID) first."
        return JSONResponse(error_body(409, message), status_code=409)
    if (wait := state.endpoint_starts.wait(client_key(request.scope))) is not None:
        state.metrics.writes_capped.labels("endpoints").inc()
        message = (f"The learners at this address have made {state.endpoint_starts.limit} endpoints in the last "
                   f"hour, the most this playground allows. Use one you have, or try again in "
                   f"{max(1, round(wait / 60))} min.")  # fmt: skip
        return JSONResponse(
            error_body(429, message), status_code=429, headers={"Retry-After": str(int(wait) + 1)}
        )
    token = secrets.token_urlsafe(24)  # 192 random bits; only its hash is stored, and it is never logged
    info = await anyio.to_thread.run_sync(
        state.progress.create_endpoint,
        learner,
        body.server,
        token_hash(token),
        state.settings.endpoint_lifetime_s,
        body.auth,
    )
    url = site_url(request) + f"/mcp/{token}"
    return JSONResponse({**_endpoint_json(info, 0), "url": url}, status_code=201)


@router.get("/api/endpoints")
async def list_endpoints(request: Request) -> list[dict[str, Any]]:
    """The learner's live endpoints (their URLs were shown once, when made: the token is not kept)."""
    state = get_state(request)
    mine = await anyio.to_thread.run_sync(state.progress.learner_endpoints, learner_id(request))
    return [_endpoint_json(info, _live(state, info.id)) for info in mine]


def _live(state: AppState, endpoint_id: str) -> int:
    # A session whose place is free but whose process is still being released is no longer live:
    # it leaves http_sessions only once its ending finishes.
    return sum(not listener.session.closed for listener in state.http_sessions.of_endpoint(endpoint_id))


@router.delete("/api/endpoints/{endpoint_id}")
async def delete_endpoint(request: Request, endpoint_id: str) -> JSONResponse:
    state = get_state(request)
    mine = await anyio.to_thread.run_sync(state.progress.learner_endpoints, learner_id(request))
    if not any(info.id == endpoint_id for info in mine):
        return JSONResponse(error_body(404, "No such endpoint (or it is not yours)."), status_code=404)
    await end_endpoint(state, endpoint_id, "the endpoint was deleted")
    return JSONResponse({"ended": True})


async def end_endpoint(state: AppState, endpoint_id: str, reason: str) -> None:
    """End an endpoint: its URL answers 404 from now on (on another replica once its cache lets go of
    it), and its sessions here end with `reason`."""
    await anyio.to_thread.run_sync(state.progress.end_endpoint, endpoint_id)
    state.endpoint_cache.forget(endpoint_id)
    for listener in state.http_sessions.of_endpoint(endpoint_id):
        await end_session(state, listener, reason)
    state.http_sessions.forget_endpoint(endpoint_id)


# A page of an endpoint's traffic, for the learner watching it.
TRAFFIC_PAGE = 200
# Checks that could not read an endpoint's session, logged once here: the panel asks every few seconds.
_UNREADABLE_LOGGED: set[str] = set()


@router.get("/api/endpoints/{endpoint_id}/traffic")
async def endpoint_traffic(
    request: Request,
    endpoint_id: str,
    session: str = "",
    after: int = 0,
    exchanges_after: int = 0,
    step: str = "",
) -> JSONResponse:
    """What outside clients exchange with the learner's endpoint: its sessions (live, then the few
    recently ended; newest last), and of one (`session`, default the newest) the entries numbered
    above `after` (also as console frames), the HTTP exchanges numbered above `exchanges_after`, and,
    with `step`, that step's hands-on checks on it (a pass is recorded as progress)."""
    state = get_state(request)
    learner = learner_id(request)
    mine = await anyio.to_thread.run_sync(state.progress.learner_endpoints, learner)
    if not any(info.id == endpoint_id for info in mine):
        return JSONResponse(error_body(404, "No such endpoint (or it is not yours)."), status_code=404)
    live = state.http_sessions.of_endpoint(endpoint_id)
    listeners = sorted(state.http_sessions.recently_ended(endpoint_id) + live,
                       key=lambda item: item.session.started_at)  # fmt: skip
    serving = state.http_sessions.stateless.get(endpoint_id)
    sessions = [{"id": item.session.id, "status": item.session.status if item in live else "ended",
                 "revision": item.session.transcript.revision, "stateless": item is serving,
                 "ended": item not in live} for item in listeners]  # fmt: skip
    chosen = next(
        (item for item in listeners if item.session.id == session), listeners[-1] if listeners else None
    )
    body: dict[str, Any] = {"sessions": sessions, "session": None, "entries": [], "frames": [], "next_after": None,
                            "exchanges": [], "checks": []}  # fmt: skip
    if chosen is not None:
        transcript = chosen.session.transcript
        await chosen.session.client_turn(transcript.page_bytes(max(after, 0), TRAFFIC_PAGE))
        page = transcript.to_json(max(after, 0), TRAFFIC_PAGE)
        entries = transcript.page(max(after, 0), TRAFFIC_PAGE)
        body.update(session=chosen.session.id, entries=page["entries"], next_after=page["next_after"],
                    frames=[entry_frame(entry, transcript) for entry in entries],
                    exchanges=[x.to_json() for x in transcript.exchanges_after(max(exchanges_after, 0))])  # fmt: skip
    lesson_step = state.catalog.step(step) if step else None
    if lesson_step is not None and lesson_step.endpoint is not None:
        body["checks"] = await _step_checks(state, learner, lesson_step, chosen, endpoint_id)
    return JSONResponse(body)


async def _step_checks(
    state: AppState, learner: str, step: Step, chosen: HttpListener | None, endpoint_id: str
) -> list[dict[str, Any]]:
    """The step's checks on the chosen session, or on the endpoint's authorization flows (the checks
    that read those); a check passed once stays passed (it is progress)."""
    passed = (await anyio.to_thread.run_sync(state.progress.learner, learner)).checks_passed(step.slug)
    flow: list[str] | None = None
    results = []
    for name in step.checks:
        check = checks.REGISTRY[name]
        if check.reads == checks.AUTHORIZATION:
            if flow is None:
                rows = await anyio.to_thread.run_sync(state.progress.oauth_events, endpoint_id, 0)
                flow = [oauth_log.event_json(*row)["step"] for row in rows]
            result = checks.run_guarded(name, flow, step.slug, _UNREADABLE_LOGGED)
            if result.passed and name not in passed:
                await anyio.to_thread.run_sync(state.progress.record_check, learner, step.slug, name)
                passed = passed | {name}
            results.append({"check": name, "passed": name in passed, "reason": result.reason})
            continue
        if chosen is not None:
            result = checks.run_guarded(name, chosen.session.transcript, step.slug, _UNREADABLE_LOGGED)
            if result.passed and name not in passed:
                await anyio.to_thread.run_sync(state.progress.record_check, learner, step.slug, name)
                passed = passed | {name}
            reason = result.reason
        else:
            reason = "No client has used your endpoint yet: connect one with the URL above."
        results.append({"check": name, "passed": name in passed, "reason": reason})
    return results


@router.get("/api/endpoints/{endpoint_id}/auth")
async def endpoint_auth(request: Request, endpoint_id: str, after: int = 0) -> JSONResponse:
    """A protected endpoint's authorization flows, step by step (numbered above `after`), each with
    what it means and where it is defined (app/web/oauth_log.py)."""
    state = get_state(request)
    mine = await anyio.to_thread.run_sync(state.progress.learner_endpoints, learner_id(request))
    if not any(info.id == endpoint_id for info in mine):
        return JSONResponse(error_body(404, "No such endpoint (or it is not yours)."), status_code=404)
    rows = await anyio.to_thread.run_sync(state.progress.oauth_events, endpoint_id, max(after, 0))
    events = [oauth_log.event_json(*row) for row in rows]
    return JSONResponse({"events": events, "next_after": events[-1]["seq"] if events else max(after, 0)})
