"""The WebSocket route /ws/{name}: handshake rules, then one of the two wire modes (docs/websocket.md)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketState

from app.protocol.transcript import Transcript
from app.relay.wire import CheckHook, EnvelopeWire, McpWire
from app.sandbox.errors import CapacityError, SandboxError
from app.web.state import AppState

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
    host = websocket.headers.get("host", "")
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()


async def deny(websocket: WebSocket, status: int, message: str, retry_after_s: int | None = None) -> None:
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s else None
    body = {"error": {"status": status, "message": message}}
    await websocket.send_denial_response(JSONResponse(body, status_code=status, headers=headers))


def make_check_hook(state: AppState, step_slug: str | None, learner: str) -> CheckHook | None:
    """Hands-on checks of the console's step, pushed as `check` frames and recorded as progress."""
    catalog = getattr(state, "catalog", None)
    if not step_slug or catalog is None:
        return None
    step = catalog.step(step_slug)
    if step is None:
        return None
    from app.course import checks

    recorded: set[str] = set()  # a pass is written once per connection, not after every message

    async def hook(transcript: Transcript) -> list[dict]:
        frames = []
        for result in checks.evaluate(step, transcript):
            if result.passed and result.name not in recorded:
                state.progress.record_check(learner, step_slug, result.name)
                recorded.add(result.name)
            frames.append({"type": "check", "step": step_slug, "check": result.name, "passed": result.passed,
                           "reason": result.reason})  # fmt: skip
        return frames

    return hook


@router.websocket("/ws/{name}")
async def relay(websocket: WebSocket, name: str) -> None:
    state: AppState = websocket.app.state.playground
    learner: str = websocket.scope["learner_id"]
    offered = websocket.scope.get("subprotocols") or []
    mode = MCP_SUBPROTOCOL if MCP_SUBPROTOCOL in offered else ENVELOPE_SUBPROTOCOL
    if not origin_allowed(websocket, state):
        await deny(websocket, 403, "This origin may not open a playground session.")
        return
    if name not in state.demos:
        await deny(websocket, 404, f"There is no demo server named {name!r}.")
        return
    hub, manager = state.hub, state.manager
    assert hub is not None and manager is not None  # set in the lifespan, before any connection
    params = websocket.query_params
    session = None
    if params.get("session"):
        session = hub.reattach(params["session"], learner, name)
    class_id, class_cap = state.class_of(learner)
    if session is None:
        try:
            manager.check_capacity(learner, class_id, class_cap)
        except CapacityError as exc:
            state.metrics.refusals.labels(exc.reason).inc()
            if mode == MCP_SUBPROTOCOL:
                await deny(websocket, 503, exc.message, exc.retry_after_s)
            else:
                await websocket.accept(
                    subprotocol=ENVELOPE_SUBPROTOCOL if ENVELOPE_SUBPROTOCOL in offered else None
                )
                await websocket.send_json(
                    {"type": "full", "retry_after_s": exc.retry_after_s, "message": exc.message}
                )
                await websocket.close(CLOSE_TRY_AGAIN_LATER, exc.message[:120])
            return
    subprotocol = mode if mode in offered else None
    if session is None:
        try:
            session = await hub.open(name, learner, class_id, class_cap)
        except CapacityError as exc:  # filled between the check and the start
            if mode == MCP_SUBPROTOCOL:
                await deny(websocket, 503, exc.message, exc.retry_after_s)
            else:
                await websocket.accept(subprotocol=subprotocol)
                await websocket.send_json(
                    {"type": "full", "retry_after_s": exc.retry_after_s, "message": exc.message}
                )
                await websocket.close(CLOSE_TRY_AGAIN_LATER, exc.message[:120])
            return
        except SandboxError as exc:
            log.error("session start failed: %s", exc.log_message)
            await deny(websocket, exc.status_code, exc.message)
            return
        resumed = False
    else:
        resumed = True
    try:
        await websocket.accept(
            subprotocol=subprotocol, headers=[(b"x-playground-session", session.id.encode())]
        )
    except (OSError, RuntimeError):  # the client left during the handshake: its server goes too
        hub.detach(session, deliberate=True)
        return
    settings = state.settings
    wire: McpWire | EnvelopeWire
    if mode == MCP_SUBPROTOCOL:
        wire = McpWire(websocket, session, max_message_bytes=settings.max_message_bytes,
                       rate_limit=settings.max_messages_per_10s)  # fmt: skip
    else:
        wire = EnvelopeWire(websocket, session, max_message_bytes=settings.max_message_bytes,
                            rate_limit=settings.max_messages_per_10s,
                            checks=make_check_hook(state, params.get("step"), learner))  # fmt: skip
    session.listener = wire
    try:
        if isinstance(wire, EnvelopeWire):
            frame = session.state_frame()
            frame["resumed"] = resumed
            await wire.send_json(frame)
            if resumed:
                await wire.replay(_int(params.get("last_seq")))
        if session.status == "exited":  # it ended while nobody was attached
            await wire.on_ended(1011, session.reason or "the demo server has exited")
        await wire.run()
    finally:
        if session.listener is wire:
            hub.detach(session, deliberate=wire.peer_close_code == NORMAL_CLOSURE)
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
