"""The WebSocket route /ws/{name}: handshake rules, then one of the two wire modes (docs/websocket.md)."""

from __future__ import annotations

import logging
import time

import anyio
from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketState

from app.course.checks import StepChecker
from app.course.models import Step
from app.progress.errors import StoreUnavailable
from app.protocol.transcript import Transcript
from app.relay.wire import EnvelopeWire, McpWire, WireLimits
from app.sandbox.errors import CapacityError, SandboxError
from app.web.errors import STORE_RETRY_S, STORE_UNAVAILABLE, error_body
from app.web.guard import same_origin
from app.web.learner import STORE_AWAY
from app.web.state import AppState
from app.web.wsprotocol import LOST

log = logging.getLogger(__name__)
router = APIRouter()

MCP_SUBPROTOCOL = "mcp"
ENVELOPE_SUBPROTOCOL = "playground.v1"
CLOSE_TRY_AGAIN_LATER = 1013
NORMAL_CLOSURE = 1000


def origin_allowed(websocket: WebSocket, state: AppState) -> bool:
    """Absent Origin (not a browser) is allowed; a browser must come from this site or an allowed origin."""
    origin = websocket.headers.get("origin")
    if origin is None:
        return True
    if origin in state.settings.allowed_origins:
        return True
    return same_origin(origin, websocket.headers.get("host", ""))


async def deny(websocket: WebSocket, status: int, message: str, retry_after_s: int | None = None) -> None:
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s else None
    body = error_body(status, message)
    await websocket.send_denial_response(JSONResponse(body, status_code=status, headers=headers))


class StepChecks:
    """The hands-on checks of the console's step: `check` frames for the wire, passes recorded as
    progress (once per connection, off the event loop). A pass the database could not take is kept,
    and recorded at a later round of the same connection."""

    def __init__(self, state: AppState, step: Step, learner: str | None) -> None:
        self.state = state
        self.step = step
        self.learner = learner
        self.checker = StepChecker(step)
        self.recorded: set[str] = set()
        self.unrecorded: list[str] = []  # passed, not yet in the database
        self.cost_s = 0.0  # what the last round held the event loop for

    async def run(self, transcript: Transcript) -> tuple[list[dict], bool]:
        began = time.perf_counter()
        results, complete = self.checker.run(transcript)
        self.cost_s = time.perf_counter() - began
        frames = []
        for result in results:
            name = result.name
            if result.passed and self.learner and name not in self.recorded and name not in self.unrecorded:
                self.unrecorded.append(name)
            frames.append({"type": "check", "step": self.step.slug, "check": result.name,
                           "passed": result.passed, "reason": result.reason})  # fmt: skip
        await self._record()
        return frames, complete

    async def _record(self) -> None:
        while self.unrecorded and self.learner:
            name = self.unrecorded[0]
            try:
                await anyio.to_thread.run_sync(
                    self.state.progress.record_check, self.learner, self.step.slug, name
                )
            except StoreUnavailable as exc:
                log.warning("check %s of %s not recorded yet: %s", name, self.step.slug, exc)
                return
            self.recorded.add(self.unrecorded.pop(0))


def step_checks(
    state: AppState, step_slug: str | None, learner: str | None, server: str
) -> StepChecks | None:
    """The step's checks, on a console of the step's own server only: on another (the learner's own
    server.py, which can answer anything) a check could be passed by a reply written to pass it."""
    step = state.catalog.step(step_slug) if step_slug else None
    if step is None or not step.checks or step.console is None or step.console.server != server:
        return None
    return StepChecks(state, step, learner)


async def refuse_full(websocket: WebSocket, mode: str, offered: list[str], exc: CapacityError) -> None:
    """A browser cannot read a refused handshake's HTTP status (503, or 429 for too many new sessions),
    so the console is told in a `full` frame, then 1013."""
    if mode == MCP_SUBPROTOCOL:
        await deny(websocket, exc.status_code, exc.message, exc.retry_after_s)
        return
    await websocket.accept(subprotocol=ENVELOPE_SUBPROTOCOL if ENVELOPE_SUBPROTOCOL in offered else None)
    # `message` as a raw client reads it; `situation` and `advice` without the wait, which the console
    # says itself since it tries again on its own.
    await websocket.send_json({"type": "full", "retry_after_s": exc.retry_after_s, "message": exc.message,
                               "reason": exc.reason, "situation": exc.situation,
                               "advice": exc.advice})  # fmt: skip
    await websocket.close(CLOSE_TRY_AGAIN_LATER, exc.message[:120])


async def relay(websocket: WebSocket) -> None:
    """Check the handshake, admit (or reattach), attach, run the wire."""
    name = websocket.path_params["name"]
    state: AppState = websocket.app.state.playground
    offered = websocket.scope.get("subprotocols") or []
    mode = MCP_SUBPROTOCOL if MCP_SUBPROTOCOL in offered else ENVELOPE_SUBPROTOCOL
    if not origin_allowed(websocket, state):
        await deny(websocket, 403, "This origin may not open a playground session.")
        return
    if name not in state.demos:
        await deny(websocket, 404, f"There is no demo server named {name!r}.")
        return
    sessions = state.sessions
    assert sessions is not None  # set in the lifespan, before any connection
    params = websocket.query_params
    try:
        if websocket.scope.get(STORE_AWAY):  # its cookie could not be checked (app/web/learner.py)
            raise StoreUnavailable("a learner cookie could not be checked")
        owner = await state.owner_of(websocket.scope)
    except StoreUnavailable as exc:
        log.error("handshake on %s: %s", websocket.url.path, exc)
        await deny(websocket, 503, STORE_UNAVAILABLE, STORE_RETRY_S)
        return
    session = sessions.reattach(params["session"], owner.key, name) if params.get("session") else None
    resumed = session is not None
    if session is None:
        try:
            session = await sessions.open(name, owner)
        except StoreUnavailable as exc:  # a class's or a learner's cap across replicas could not be read
            log.error("handshake on %s: %s", websocket.url.path, exc)
            await deny(websocket, 503, STORE_UNAVAILABLE, STORE_RETRY_S)
            return
        except CapacityError as exc:
            await refuse_full(websocket, mode, offered, exc)
            return
        except SandboxError as exc:
            log.error("session start failed: %s", exc.log_message)
            await deny(websocket, exc.status_code, exc.message)
            return
    try:
        await websocket.accept(
            subprotocol=mode if mode in offered else None,
            headers=[(b"x-playground-session", session.id.encode())],
        )
    except (OSError, RuntimeError):  # the client left during the handshake: its server goes too
        await sessions.end(session, NORMAL_CLOSURE, "the client left during the handshake")
        return
    limits = WireLimits.from_settings(state.settings)
    lost = websocket.scope.get("extensions", {}).get(LOST)  # None in an in-process test
    wire: McpWire | EnvelopeWire
    if mode == MCP_SUBPROTOCOL:
        wire = McpWire(websocket, session, sessions, limits, lost=lost)
    else:
        checks = step_checks(state, params.get("step"), owner.learner, name)
        wire = EnvelopeWire(websocket, session, sessions, limits, checks=checks, lost=lost)
    sessions.attach(session, wire)
    try:
        if isinstance(wire, EnvelopeWire):
            frame = session.state_frame()
            frame["resumed"] = resumed
            await wire.send_json(frame)
            if resumed:
                await wire.replay(_int(params.get("last_seq")))
        if session.status == "exited":  # it ended while nobody was attached
            await wire.on_ended(1011, session.reason or "the server has exited")
        await wire.run()
    finally:
        await wire.finish()
        sessions.detach(session, wire, deliberate=wire.peer_close_code == NORMAL_CLOSURE or wire.abusive)
        if websocket.client_state == WebSocketState.CONNECTED and not wire.ended:
            try:
                await websocket.close()
            except RuntimeError:
                pass


def _int(value: str | None) -> int:
    try:
        return max(int(value or 0), 0)
    except ValueError:
        return 0


# A plain Starlette route, behind the same middlewares: FastAPI's own (`@router.websocket`) solves
# dependencies and validates parameters, of which this endpoint has none, on every handshake.
router.add_websocket_route("/ws/{name}", relay)
