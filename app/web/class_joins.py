"""Who may join a class, from the instructor's side: locking joining, the joins waiting past the
expected size (approved or denied), whom the instructor turned away (a join denied, a member
removed: the code no longer lets them in, until the instructor lets them join again), and a new
join code for one that was seen by people who should not have it. Each on the class page's forms,
and as JSON for scripts. A learner appears only by their row id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, HTTPException
from fastapi.responses import JSONResponse, RedirectResponse, Response

from app.web.instructor import Instructor, class_or_404, row_id
from app.web.state import AppState

router = APIRouter()


def _back(class_id: str) -> RedirectResponse:
    return RedirectResponse(f"/instructor/classes/{class_id}", status_code=303)


@router.post("/instructor/classes/{class_id}/lock")
@router.post("/instructor/classes/{class_id}/close")  # the name scripts know: closed to new learners
def lock_joining(state: Instructor, class_id: str) -> Response:
    """No new joins at all, waiting or not; members keep their place and their consoles."""
    class_or_404(state, class_id)
    state.progress.lock_joining(class_id, True)
    return _back(class_id)


@router.post("/instructor/classes/{class_id}/unlock")
def unlock_joining(state: Instructor, class_id: str) -> Response:
    class_or_404(state, class_id)
    state.progress.lock_joining(class_id, False)
    return _back(class_id)


@router.post("/api/instructor/classes/{class_id}/joining")
def set_joining(state: Instructor, class_id: str, locked: Annotated[bool, Body(embed=True)]) -> JSONResponse:
    """`{"locked": true}` locks joining, `false` unlocks it."""
    class_or_404(state, class_id)
    state.progress.lock_joining(class_id, locked)
    return JSONResponse({"class": class_id, "locked": locked})


@router.post("/instructor/classes/{class_id}/join-code")
def new_join_code_form(state: Instructor, class_id: str) -> Response:
    class_or_404(state, class_id)
    state.progress.new_join_code(class_id)
    return _back(class_id)


@router.post("/api/instructor/classes/{class_id}/join-code")
def new_join_code(state: Instructor, class_id: str) -> JSONResponse:
    """A fresh join code: the old one and its link stop working; members stay."""
    class_or_404(state, class_id)
    return JSONResponse({"class": class_id, "join_code": state.progress.new_join_code(class_id)})


# Joins past the class's expected size: the page's Approve / Deny buttons, and the same as JSON for scripts.


def _decide(state: AppState, class_id: str, row: str, approve: bool) -> None:
    """`row` is the waiting learner's opaque row id (as on the class page); 404 when no such join waits."""
    class_or_404(state, class_id)
    waiting = next(
        (w for w in state.progress.pending_joins(class_id) if row_id(state, w.learner_id) == row), None
    )
    if waiting is None or not state.progress.decide_join(class_id, waiting.learner_id, approve):
        raise HTTPException(404, "No such join waits in this class (it may have been answered already).")


@router.post("/instructor/classes/{class_id}/joins/{row}/approve")
def approve_join_form(state: Instructor, class_id: str, row: str) -> Response:
    _decide(state, class_id, row, approve=True)
    return _back(class_id)


@router.post("/instructor/classes/{class_id}/joins/{row}/deny")
def deny_join_form(state: Instructor, class_id: str, row: str) -> Response:
    _decide(state, class_id, row, approve=False)
    return _back(class_id)


@router.get("/api/instructor/classes/{class_id}/joins")
def pending_joins(state: Instructor, class_id: str) -> JSONResponse:
    """The class's numbers, the joins waiting for a decision and whom it turned away, oldest first."""
    klass = class_or_404(state, class_id)
    waiting = [{"id": row_id(state, w.learner_id), "name": w.display_name, "requested_at": w.requested_at}
               for w in state.progress.pending_joins(class_id)]  # fmt: skip
    away = [{"id": row_id(state, t.learner_id), "name": t.display_name, "turned_away_at": t.requested_at}
            for t in state.progress.turned_away(class_id)]  # fmt: skip
    return JSONResponse({"class": klass.id, "members": state.progress.class_size(class_id),
                         "expected_size": klass.expected_size, "locked": klass.locked, "pending": waiting,
                         "turned_away": away})  # fmt: skip


@router.post("/api/instructor/classes/{class_id}/joins/{row}/approve")
def approve_join(state: Instructor, class_id: str, row: str) -> JSONResponse:
    _decide(state, class_id, row, approve=True)
    return JSONResponse({"id": row, "status": "member"})


@router.post("/api/instructor/classes/{class_id}/joins/{row}/deny")
def deny_join(state: Instructor, class_id: str, row: str) -> JSONResponse:
    _decide(state, class_id, row, approve=False)
    return JSONResponse({"id": row, "status": "denied"})


# Turned away: a learner denied or removed, whom the code no longer lets in.


def _let_in(state: AppState, class_id: str, row: str) -> None:
    class_or_404(state, class_id)
    away = next((t for t in state.progress.turned_away(class_id) if row_id(state, t.learner_id) == row), None)
    if away is None or not state.progress.let_in_again(class_id, away.learner_id):
        raise HTTPException(404, "Nobody by that id is turned away from this class.")


@router.post("/instructor/classes/{class_id}/turned-away/{row}/let-in")
def let_in_form(state: Instructor, class_id: str, row: str) -> Response:
    _let_in(state, class_id, row)
    return _back(class_id)


@router.post("/api/instructor/classes/{class_id}/turned-away/{row}/let-in")
def let_in(state: Instructor, class_id: str, row: str) -> JSONResponse:
    """The learner may join with the code again (as anyone with it may)."""
    _let_in(state, class_id, row)
    return JSONResponse({"id": row, "status": "may join"})
