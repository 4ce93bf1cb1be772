"""The instructor dashboard: classes and their numbers, per-learner progress, live sessions,
transcripts, resets (who may join is app/web/class_joins.py; the roster app/web/roster.py).

Protected by the instructor token, sent once to /instructor/login, which starts a sign-in session
kept in the progress store (every replica knows it): the HttpOnly, SameSite=Strict cookie holds the
session's random id, never the token, and signing out ends it. Scripts send
`Authorization: Bearer <token>` instead. Wrong tokens are throttled per client address.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from app import workspace
from app.course.models import Step
from app.course.render import code_block
from app.fleet.fleet import ENDED_BY_INSTRUCTOR
from app.progress import ClassInfo, LearnerProgress
from app.progress.store import (
    DEFAULT_CLASS_SIZE,
    EXPECTED_SIZE,
    MAX_CLASS_NUMBER,
    SESSION_CAP,
    parse_class_number,
)
from app.relay.session import RelaySession
from app.relay.sessions import NORMAL_CLOSURE
from app.relay.wire import entry_frame
from app.web.api import PAGE_CHARS, TRANSCRIPT_PAGE
from app.web.client import client_key, is_https, site_url
from app.web.credentials import retry_words, same_secret
from app.web.state import AppState, get_state
from app.web.templating import templates
from app.web.workspace import STORED_INT_MAX

router = APIRouter()
COOKIE = "playground_instructor"
# A sign-in lasts a working day.
COOKIE_MAX_AGE_S = 12 * 3600
THROTTLE_KIND = "instructor"


def _session_key(state: AppState, session_id: str) -> str:
    # The store keeps a hash: a copy of the table signs nobody in. It is keyed with the token, so a
    # changed token (after a leak, say) ends every sign-in made with the old one, on every replica.
    token = (state.instructor_token or "").encode("utf-8", errors="surrogatepass")
    return hmac.new(token, session_id.encode("utf-8", errors="surrogatepass"), hashlib.sha256).hexdigest()


def is_instructor(request: Request) -> bool:
    """A valid Bearer token, or a live sign-in session. A wrong token past the address's budget raises
    429 (a right one always passes)."""
    state = get_state(request)
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        if same_secret(header[7:].strip(), state.instructor_token or ""):
            return True
        _wrong_token(request)
        return False
    session_id = request.cookies.get(COOKIE)
    return session_id is not None and state.progress.instructor_session_valid(_session_key(state, session_id))


def _wrong_token(request: Request) -> None:
    """Count a wrong token from this address; past its budget, 429."""
    wait = get_state(request).throttle.failed(THROTTLE_KIND, client_key(request.scope))
    if wait is not None:
        raise HTTPException(
            429, f"Too many wrong instructor tokens from your address. Try again in {retry_words(wait)}.",
            headers={"Retry-After": str(int(wait) + 1)},
        )  # fmt: skip


def require_instructor(request: Request) -> AppState:
    if not is_instructor(request):
        raise HTTPException(401, "The instructor dashboard needs the instructor token.")
    return get_state(request)


Instructor = Annotated[AppState, Depends(require_instructor)]


def class_or_404(state: AppState, class_id: str) -> ClassInfo:
    klass = state.progress.get_class(class_id)
    if klass is None:
        raise HTTPException(404, "There is no such class (it may have been deleted).")
    return klass


@router.get("/instructor", response_class=HTMLResponse)
def dashboard(request: Request) -> HTMLResponse:
    if not is_instructor(request):
        return templates.TemplateResponse(
            request, "instructor_login.html", {"title": "Instructor"}, status_code=401
        )
    state = get_state(request)
    classes = state.progress.classes()
    live = live_sessions(state)
    by_class: dict[str | None, int] = {}
    for item in live:
        by_class[item["class_id"]] = by_class.get(item["class_id"], 0) + 1
    rows = [{"klass": c, "members": state.progress.class_size(c.id), "waiting": len(state.progress.pending_joins(c.id)),
             "live": by_class.get(c.id, 0), "cap": c.max_sessions or state.settings.max_sessions_per_class}
            for c in classes]  # fmt: skip
    context = {"title": "Instructor", "rows": rows, "live_total": len(live), "default_size": DEFAULT_CLASS_SIZE,
               "max_sessions": state.settings.max_sessions, "default_cap": state.settings.max_sessions_per_class,
               "max_number": MAX_CLASS_NUMBER}  # fmt: skip
    return templates.TemplateResponse(request, "instructor.html", context)


@router.post("/instructor/login")
def login(request: Request, token: str = Form("")) -> Response:
    state = get_state(request)
    if not same_secret(token.strip(), state.instructor_token or ""):
        _wrong_token(request)
        context = {
            "title": "Instructor",
            "error": "That is not the instructor token. It was printed when the app started.",
        }
        return templates.TemplateResponse(request, "instructor_login.html", context, status_code=401)
    session_id = secrets.token_urlsafe(32)
    state.progress.start_instructor_session(_session_key(state, session_id), COOKIE_MAX_AGE_S)
    response = RedirectResponse("/instructor", status_code=303)
    response.set_cookie(COOKIE, session_id, max_age=COOKIE_MAX_AGE_S, path="/", httponly=True, samesite="strict",
                        secure=is_https(request.scope))  # fmt: skip
    return response


@router.post("/instructor/logout")
def logout(request: Request) -> Response:
    session_id = request.cookies.get(COOKIE)
    if session_id:
        get_state(request).progress.end_instructor_session(_session_key(get_state(request), session_id))
    response = RedirectResponse("/instructor", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=is_https(request.scope))
    return response


def _class_numbers(max_sessions: str, expected_size: str) -> tuple[int | None, int]:
    """The two numbers of a class as typed in its form (an empty field: the default); 400 with the
    reason when one is not a whole number in range."""
    try:
        cap = parse_class_number(max_sessions, SESSION_CAP) if max_sessions.strip() else None
        size = (
            parse_class_number(expected_size, EXPECTED_SIZE) if expected_size.strip() else DEFAULT_CLASS_SIZE
        )
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc
    return cap, size


@router.post("/instructor/classes")
def create_class(
    request: Request,
    state: Instructor,
    name: str = Form(""),
    max_sessions: str = Form(""),
    expected_size: str = Form(""),
) -> Response:
    cap, size = _class_numbers(max_sessions, expected_size)
    try:
        klass = state.progress.create_class(name, cap, size)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc
    return RedirectResponse(f"/instructor/classes/{klass.id}", status_code=303)


@router.post("/instructor/classes/{class_id}/settings")
def class_settings(
    state: Instructor, class_id: str, max_sessions: str = Form(""), expected_size: str = Form("")
) -> Response:
    """New numbers for the class: members beyond a lowered expected size keep their place, and a raised
    one lets later joins in (joins already waiting still wait for a decision)."""
    class_or_404(state, class_id)
    cap, size = _class_numbers(max_sessions, expected_size)
    state.progress.update_class(class_id, cap, size)
    return RedirectResponse(f"/instructor/classes/{class_id}?done=settings", status_code=303)


def live_sessions(state: AppState, class_id: str | None = None) -> list[dict]:
    """Every live session (of one class): this replica's, or with replicas sharing PostgreSQL, every
    replica's. `local` sessions can be followed here; the others only ended (their replica acts)."""
    local = dict(state.sessions.sessions) if state.sessions is not None else {}
    if state.fleet is not None:
        return [{"id": s.id, "server": s.server, "learner": s.learner_id, "class_id": s.class_id,
                 "local": s.id in local} for s in state.fleet.live(class_id)]  # fmt: skip
    return [{"id": s.id, "server": s.server, "learner": s.learner, "class_id": s.owner.class_id, "local": True}
            for s in local.values() if class_id is None or s.owner.class_id == class_id]  # fmt: skip


def _learner_sessions(state: AppState, class_id: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for item in live_sessions(state, class_id):
        if item["learner"]:
            out.setdefault(item["learner"], []).append(item)
    return out


def grid(state: AppState, learners: list[LearnerProgress], class_id: str) -> tuple[list[Step], list[dict]]:
    steps = list(state.catalog.steps())
    sessions = _learner_sessions(state, class_id)
    failing = state.progress.failing_exercises(class_id)
    rows = []
    for learner in learners:
        cells = []
        for step in steps:
            passed = learner.checks_passed(step.slug)
            quiz_ids = [q.id for q in step.quizzes]
            quizzes_right = learner.quizzes_right(step.slug, quiz_ids)
            cells.append({"step": step, "status": learner.step_status(step.slug, step.required_checks, quiz_ids), "seen": step.slug in learner.seen,
                          "failing": (learner.learner_id, step.slug) in failing,
                          "checks": len(set(step.required_checks) & passed), "checks_total": len(step.required_checks),
                          "quizzes": quizzes_right, "quizzes_total": len(step.quizzes)})  # fmt: skip
        rows.append({"learner": learner, "row_id": row_id(state, learner.learner_id),
                     "cells": cells, "sessions": sessions.get(learner.learner_id, []),
                     "done": sum(1 for c in cells if c["status"] == "done"),
                     "last_seen": learner.last_seen_at or 0})  # fmt: skip
    return steps, rows


# The grid's filters (docs/hosting.md): inactive after this long without activity; stuck on a step
# not completed, while active, this long after first opening it (or at once when its exercise's
# latest run failed); behind with fewer steps done than half the class's median.
INACTIVE_AFTER_S = 10 * 60
STUCK_AFTER_S = 15 * 60


def mark_filters(rows: list[dict], now: float) -> None:
    """Mark each row `inactive`, `stuck` and `behind` (the grid's filters)."""
    done = sorted(row["done"] for row in rows)
    median = done[len(done) // 2] if done else 0
    for row in rows:
        learner = row["learner"]
        row["inactive"] = now - row["last_seen"] >= INACTIVE_AFTER_S
        current = learner.current_step
        stuck_on = None
        if current is not None and not row["inactive"]:
            cell = next((c for c in row["cells"] if c["step"].slug == current[0]), None)
            waited = now - current[1] >= STUCK_AFTER_S
            if cell is not None and cell["status"] != "done" and (waited or cell.get("failing")):
                stuck_on = cell["step"]
        row["stuck_on"] = stuck_on
        row["crashed"] = not row["inactive"] and _crashed_lately(learner.server_exit, now)
        row["behind"] = median >= 2 and row["done"] < median / 2
        row["stuck"] = bool(stuck_on) or row["crashed"]


def _crashed_lately(recorded: str | None, now: float) -> bool:
    """Whether the learner's own server ended in failure (not exit status 0) within STUCK_AFTER_S."""
    if not recorded:
        return False
    try:
        report = json.loads(recorded)
    except ValueError:
        return False
    return now - float(report.get("at", 0)) < STUCK_AFTER_S and bool(report.get("failed"))


def step_summary(steps: list[Step], rows: list[dict]) -> list[int]:
    """For each step, how many of the class have completed it."""
    return [sum(1 for row in rows if row["cells"][i]["status"] == "done") for i in range(len(steps))]


def _class_context(state: AppState, request: Request, class_id: str) -> dict:
    klass = class_or_404(state, class_id)
    steps, rows = grid(state, state.progress.class_learners(class_id), class_id)
    mark_filters(rows, time.time())
    join_link = site_url(request) + f"/join/{klass.join_code}"
    host = request.url.hostname or ""
    # A link naming loopback opens only on this machine: the page says so rather than hand it out.
    loopback = host in ("localhost", "::1", "[::1]") or host.startswith("127.")
    live = sum(len(row["sessions"]) for row in rows)
    cap = klass.max_sessions or state.settings.max_sessions_per_class
    waiting = [{"row_id": row_id(state, w.learner_id), "name": w.display_name, "at": w.requested_at}
               for w in state.progress.pending_joins(class_id)]  # fmt: skip
    away = [{"row_id": row_id(state, t.learner_id), "name": t.display_name}
            for t in state.progress.turned_away(class_id)]  # fmt: skip
    return {"title": klass.name, "klass": klass, "steps": steps, "rows": rows, "join_link": join_link,
            "join_link_local": loopback,
            "seats": state.progress.seats(class_id),
            "completed_by": step_summary(steps, rows),
            "lessons": state.catalog.lessons, "live": live, "cap": cap, "now": time.time(), "waiting": waiting, "turned_away": away,
            "default_cap": state.settings.max_sessions_per_class, "max_number": MAX_CLASS_NUMBER}  # fmt: skip


@router.get("/instructor/classes/{class_id}", response_class=HTMLResponse)
def class_page(state: Instructor, request: Request, class_id: str) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "instructor_class.html", _class_context(state, request, class_id)
    )


@router.get("/instructor/classes/{class_id}/grid", response_class=HTMLResponse)
def class_grid(state: Instructor, request: Request, class_id: str) -> HTMLResponse:
    """The class page's live part alone (who joined, how far, which consoles are open): the page
    fetches it every few seconds, so an instructor never has to reload."""
    return templates.TemplateResponse(request, "_class_grid.html", _class_context(state, request, class_id))


@router.post("/instructor/classes/{class_id}/delete")
def delete_class(state: Instructor, class_id: str) -> Response:
    class_or_404(state, class_id)
    state.progress.delete_class(class_id)
    return RedirectResponse("/instructor", status_code=303)


@router.post("/instructor/classes/{class_id}/learners/{row}/reset")
def reset_learner(state: Instructor, class_id: str, row: str) -> Response:
    """`row` is the learner's opaque row id on the class page (never their own id, which is a secret)."""
    class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    state.progress.reset_learner(learner.learner_id)
    return RedirectResponse(f"/instructor/classes/{class_id}?done=reset", status_code=303)


@router.get("/instructor/classes/{class_id}/learners/{row}/server.py", response_class=HTMLResponse)
@router.get("/instructor/classes/{class_id}/learners/{row}/server.ts", response_class=HTMLResponse)
def learner_server_file(state: Instructor, request: Request, class_id: str, row: str,
                        version: Annotated[int | None, Query(ge=0, le=STORED_INT_MAX)] = None,
                        ) -> HTMLResponse:  # fmt: skip
    """A learner's own server.py or server.ts, read-only: the newest saved version, or one of the kept
    ones; and which of the two their server runs."""
    name = request.url.path.rsplit("/", 1)[-1]
    klass = class_or_404(state, class_id)
    learner = class_learner(state, class_id, row)
    saved = state.progress.server_file(learner.learner_id, version, name=name)
    if saved is None and version is not None:
        raise HTTPException(404, f"There is no saved version {version} (only the last few are kept).")
    language = state.progress.server_language(learner.learner_id) or workspace.DEFAULT_LANGUAGE
    context = {
        "title": f"{name} of {learner.display_name or '(no name)'}",
        "klass": klass, "learner": learner, "row": row, "saved": saved, "name": name,
        "runs": workspace.LANGUAGES.get(language) == name,
        "other": workspace.TS_FILE_NAME if name == workspace.FILE_NAME else workspace.FILE_NAME,
        # As plain text: a lexer's patterns can take quadratic time on a file written for them (64 KiB
        # of "a." holds Pygments' TypeScript lexer, and with it the web process, for two minutes).
        "code": code_block(saved.source, "text") if saved else None,
        "history": state.progress.server_file_history(learner.learner_id, name=name),
    }  # fmt: skip
    return templates.TemplateResponse(request, "instructor_server_file.html", context)


def class_learner(state: AppState, class_id: str, row: str) -> LearnerProgress:
    learner = next(
        (p for p in state.progress.class_learners(class_id) if row_id(state, p.learner_id) == row), None
    )
    if learner is None:
        raise HTTPException(404, "There is no such learner in this class.")
    return learner


def row_id(state: AppState, learner: str) -> str:
    assert state.identity is not None  # the app has started
    return state.identity.signer.row_id(learner)


# The session page shows the latest entries; the JSON export has them all, in pages.
SESSION_PAGE_ENTRIES = 500


@router.get("/instructor/sessions/{session_id}", response_class=HTMLResponse)
def session_page(state: Instructor, request: Request, session_id: str) -> HTMLResponse:
    """A learner's console as they see it, following along as they go (static/instructor.js)."""
    session = state.sessions.sessions.get(session_id) if state.sessions else None
    if session is None:  # ended (or on another replica): a page with the way back, not a bare 404
        return templates.TemplateResponse(request, "instructor_session.html", {"title": "Console ended"},
                                          status_code=404)  # fmt: skip
    learner = state.progress.learner(session.learner) if session.learner else None
    transcript = session.transcript
    after = max(transcript.last_seq - SESSION_PAGE_ENTRIES, transcript.dropped)
    class_id = session.owner.class_id
    context = {
        "title": "Transcript",
        "session": session,
        "learner": learner,
        "after": after,
        "earlier": after,
        "class_id": class_id,
        "row": row_id(state, session.learner) if session.learner and class_id else None,
    }
    return templates.TemplateResponse(request, "instructor_session.html", context)


@router.get("/api/instructor/sessions/{session_id}/frames")
def session_frames(state: Instructor, session_id: str, after: int = 0) -> JSONResponse:
    """The session's entries above `after` as the learner's console frames (the same builder as a
    reconnect's replay), at most a page; `next_after` is where to ask from next time."""
    session = _live_session(state, session_id)
    transcript = session.transcript
    entries = transcript.page(max(after, 0), TRANSCRIPT_PAGE, PAGE_CHARS)
    with transcript.reading():  # a message is parsed once for its frame and its findings
        frames = [entry_frame(e, transcript) for e in entries]
    return JSONResponse({
        "session": session.id, "server": session.server, "status": session.status,
        "revision": transcript.revision, "frames": frames,
        "next_after": entries[-1].seq if entries else max(after, 0),
        "more": bool(entries) and entries[-1].seq < transcript.last_seq,
    })  # fmt: skip


@router.post("/instructor/sessions/{session_id}/end")
async def end_session(state: Instructor, session_id: str, class_id: str = Form("")) -> Response:
    """End a learner's console, on this replica or on the one that holds it (within a second or so);
    back to the class page it was ended from."""
    if not await end_live_session(state, session_id, ENDED_BY_INSTRUCTOR):
        raise HTTPException(404, "That session has ended.")
    known = class_id and await anyio.to_thread.run_sync(state.progress.get_class, class_id) is not None
    where = f"/instructor/classes/{class_id}" if known else "/instructor"
    return RedirectResponse(where + "?done=ended", status_code=303)


async def end_live_session(state: AppState, session_id: str, reason: str) -> bool:
    """End a live session, on this replica or by asking the one that holds it; False if none does."""
    session = state.sessions.sessions.get(session_id) if state.sessions is not None else None
    if session is not None:
        assert state.sessions is not None
        await state.sessions.end(session, NORMAL_CLOSURE, reason)
        return True
    return (
        state.fleet is not None
        and await anyio.to_thread.run_sync(state.fleet.request_end, session_id) is not None
    )


def _live_session(state: AppState, session_id: str) -> RelaySession:
    session = state.sessions.sessions.get(session_id) if state.sessions else None
    if session is None:
        raise HTTPException(404, "That session has ended.")
    return session


@router.get("/api/instructor/sessions/{session_id}/transcript")
def session_transcript(state: Instructor, session_id: str, after: int = 0,
                             limit: int = TRANSCRIPT_PAGE) -> JSONResponse:  # fmt: skip
    """Paged like the learner's export: entries above `after`, at most `limit`; see `next_after`."""
    session = _live_session(state, session_id)
    body = session.transcript.to_json(max(after, 0), min(max(limit, 1), TRANSCRIPT_PAGE), PAGE_CHARS)
    learner = row_id(state, session.learner) if session.learner else None  # as the pages name learners
    body.update(session=session.id, status=session.status, learner=learner)
    return JSONResponse(body)
