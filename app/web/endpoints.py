"""Streamable HTTP endpoints: a learner's own URL to their sandboxed server, for any MCP client.

`/api/endpoints` makes, lists and ends a learner's endpoints (learner cookie, same site).
`/mcp/{token}` speaks Streamable HTTP (handshake revisions): a POSTed `initialize` opens an MCP
session (`Mcp-Session-Id`), which is one sandboxed instance admitted against the endpoint owner's
caps, with the same limits and transcript as a console; later POSTs carry the session id; GET opens
the stream of what the server sends on its own; DELETE ends the session. See docs/http.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from mcp.shared.inbound import NAME_BEARING_METHODS, decode_header_value
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from mcp_types import PROTOCOL_VERSION_META_KEY
from mcp_types.jsonrpc import HEADER_MISMATCH
from pydantic import BaseModel, Field
from starlette.requests import ClientDisconnect

from app.course import checks
from app.course.models import Step
from app.progress.store import EndpointInfo
from app.protocol.jsonrpc import INVALID_REQUEST, RATE_LIMITED, Frame, FrameError
from app.protocol.transcript import HTTP_HEADERS_SHOWN
from app.relay.admission import Owner
from app.relay.httpwire import FINAL, Door, Gate, HttpListener, Waiter
from app.relay.sessions import NORMAL_CLOSURE
from app.relay.wire import WireLimits, entry_frame
from app.sandbox.errors import CapacityError, SandboxError
from app.web.client import client_key, site_url
from app.web.errors import error_body
from app.web.guard import same_origin
from app.web.learner import learner_id
from app.web.state import AppState, get_state

router = APIRouter()

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# A reply the server has not sent in this long is answered by the relay (the session goes on).
REPLY_LIMIT_S = 300.0
# An idle SSE stream gets a comment this often, so proxies keep it open.
KEEPALIVE_S = 15.0


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


def _endpoint_json(info: EndpointInfo, live: int) -> dict[str, Any]:
    return {"id": info.id, "server": info.server, "created_at": int(info.created_at),
            "expires_at": int(info.expires_at), "live_sessions": live}  # fmt: skip


# --- the learner's endpoints ----------------------------------------------------------------------


class NewEndpoint(BaseModel):
    server: str = Field(max_length=100, description="A registry name, as in /api/servers.")


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
    token = secrets.token_urlsafe(24)  # 192 random bits; only its hash is stored, and it is never logged
    info = await anyio.to_thread.run_sync(
        state.progress.create_endpoint,
        learner,
        body.server,
        token_hash(token),
        state.settings.endpoint_lifetime_s,
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
    await anyio.to_thread.run_sync(state.progress.end_endpoint, endpoint_id)
    state.endpoint_cache.forget(endpoint_id)
    for listener in state.http_sessions.of_endpoint(endpoint_id):
        await _end(state, listener, "the endpoint was deleted")
    state.http_sessions.forget_endpoint(endpoint_id)
    return JSONResponse({"ended": True})


# A page of an endpoint's traffic, for the learner watching it.
TRAFFIC_PAGE = 200


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
        body["checks"] = await _step_checks(state, learner, lesson_step, chosen)
    return JSONResponse(body)


async def _step_checks(
    state: AppState, learner: str, step: Step, chosen: HttpListener | None
) -> list[dict[str, Any]]:
    """The step's checks on the chosen session; a check passed once stays passed (it is progress)."""
    passed = (await anyio.to_thread.run_sync(state.progress.learner, learner)).checks_passed(step.slug)
    results = []
    for name in step.checks:
        if chosen is not None:
            result = checks.REGISTRY[name].run(chosen.session.transcript)
            if result.passed and name not in passed:
                await anyio.to_thread.run_sync(state.progress.record_check, learner, step.slug, name)
                passed = passed | {name}
            reason = result.reason
        else:
            reason = "No client has used your endpoint yet: connect one with the URL above."
        results.append({"check": name, "passed": name in passed, "reason": reason})
    return results


# --- Streamable HTTP ------------------------------------------------------------------------------


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


def _jsonrpc_error(status: int, error: FrameError) -> JSONResponse:
    return JSONResponse(error.reply(), status_code=status)


async def _endpoint(request: Request, token: str) -> EndpointInfo | JSONResponse:
    """The endpoint a token names, or the refusal (a foreign Origin, an unknown or ended token)."""
    state = get_state(request)
    origin = request.headers.get("origin")
    if origin is not None and origin not in state.settings.allowed_origins:
        if not same_origin(origin, request.headers.get("host", "")):
            return _error(403, "This origin may not use this endpoint.")

    async def load(hashed: str) -> EndpointInfo | None:
        return await anyio.to_thread.run_sync(state.progress.endpoint_by_token_hash, hashed)

    info = await state.endpoint_cache.get(token_hash(token), load)
    if info is None or not info.live(time.time()):
        return _error(404, "No such endpoint: it may have ended or expired. Make a new one.")
    return info


async def _end(state: AppState, listener: HttpListener, reason: str) -> None:
    state.http_sessions.remove(listener)
    if state.sessions is not None:
        await state.sessions.end(listener.session, NORMAL_CLOSURE, reason)


def _listener(request: Request, state: AppState, info: EndpointInfo) -> HttpListener | JSONResponse:
    session_id = request.headers.get(SESSION_HEADER)
    if not session_id:
        return _error(400, f"This request needs the {SESSION_HEADER} header that initialize answered with.")
    listener = state.http_sessions.get(session_id, info.id)
    if listener is None or listener.ended.is_set() or listener.session.closed:
        return _error(404, "No such MCP session: it has ended. Send initialize to start a new one.")
    return listener


async def _session(request: Request, token: str) -> HttpListener | JSONResponse:
    """The MCP session a GET or DELETE names on this endpoint, or the refusal."""
    info = await _endpoint(request, token)
    if isinstance(info, JSONResponse):
        return info
    return _listener(request, get_state(request), info)


def _version_problem(request: Request, listener: HttpListener) -> JSONResponse | None:
    version = request.headers.get(VERSION_HEADER)
    if version is None:
        return None  # the spec's default for a client that does not say (2025-03-26)
    if version not in HANDSHAKE_PROTOCOL_VERSIONS or (listener.version and version != listener.version):
        return _error(400, f"{VERSION_HEADER} {version!r} is not the revision this session negotiated.")
    return None


def _record(listener: HttpListener | None, request: Request, response: Response, message: Any = None) -> None:
    """Keep this HTTP exchange in the session's transcript: what the learner watches, what HTTP
    checks read. Only the headers that matter to MCP are kept (never a cookie or a token)."""
    if listener is None:
        return
    carried = None
    if isinstance(message, dict):
        carried = {key: message[key] for key in ("method", "id") if key in message}
        carried["kind"] = "request" if "method" in message and "id" in message else (
            "notification" if "method" in message else "response")  # fmt: skip
    asked = {name: request.headers[name] for name in HTTP_HEADERS_SHOWN if name in request.headers}
    answered = {
        name: response.headers[name]
        for name in ("content-type", "mcp-session-id")
        if name in response.headers
    }
    listener.session.transcript.add_exchange(request.method, response.status_code, asked, answered, carried)


async def mcp_post(request: Request) -> Response:
    try:
        response, listener, message = await _post(request, request.path_params["token"])
    except ClientDisconnect:  # it went away while its request waited its turn: nobody reads an answer
        return Response(status_code=400)
    _record(listener, request, response, message)
    return response


async def _post(request: Request, token: str) -> tuple[Response, HttpListener | None, Any]:
    """The answer to a POST, the session it went to (if any), and the message it carried."""
    state = get_state(request)
    info = await _endpoint(request, token)
    if isinstance(info, JSONResponse):
        return info, None, None
    sse = "text/event-stream" in request.headers.get("accept", "")
    if not request.headers.get(SESSION_HEADER):
        gate = _gate(state, info.id)
        text = await _read_in_turn(request, gate)
        first = text if isinstance(text, FrameError) else gate.admit(text)
        if isinstance(first, FrameError):
            return _jsonrpc_error(429 if first.code == RATE_LIMITED else 400, first), None, None
        version = _modern_version(first.message)
        if version is not None:
            response, listener = await _stateless(request, state, info, first, version, sse)
        else:
            response, listener = await _initialize(request, state, info, first)
        return response, listener, first.message
    found = _listener(request, state, info)
    if isinstance(found, JSONResponse):
        return found, None, None
    listener = found
    if (problem := _version_problem(request, listener)) is not None:
        return problem, listener, None
    text = await _read_in_turn(request, listener)
    result = text if isinstance(text, FrameError) else listener.admit(text)
    if isinstance(result, FrameError):
        if isinstance(text, str):
            listener.session.transcript.add_relay_error(text[:2000], result.reply())
        return _jsonrpc_error(429 if result.code == RATE_LIMITED else 400, result), listener, None
    if "method" not in result.message or "id" not in result.message:
        await _send(listener, result)  # a notification, or a response to the server's own request
        return Response(status_code=202), listener, result.message
    return await _answer(listener, result, sse), listener, result.message


async def _read_in_turn(request: Request, door: Door) -> str | FrameError:
    """The request's body as text, read in its turn at the door: past its rate limit, the refusal;
    past its pace, the wait comes before the body is read, so a request waiting holds no body (uvicorn
    reads no more than 64 KiB of one until it is asked for). 60 requests of 1 MiB waiting side by
    side on one session held 128 MiB of the web process when the wait came after. A request past the
    rate limit waits its turn too (its body is read for the id in the refusal): else a client keeping
    the limit spent with small requests had big ones read back to back, at no pace."""
    wait = door.limiter.check()
    declared = request.headers.get("content-length", "")
    if declared.isdigit():
        await door.pace.turn(int(declared))  # the guard has refused a length past its limit
    body = await request.body()  # within PLAYGROUND_MAX_FRAME_BYTES: the guard answers 413 past it
    text = body.decode("utf-8", errors="surrogateescape")
    if not declared.isdigit():  # a chunked body: charged once it has come
        await door.pace.turn(len(text))
    return text if wait is None else door.refused(text, wait)


def _gate(state: AppState, endpoint_id: str) -> Gate:
    assert state.sessions is not None
    limits, pace = WireLimits.from_settings(state.settings), state.sessions.session_limits.client_pace
    return state.http_sessions.gate(endpoint_id, lambda: Gate(limits, pace()))


async def _send(listener: HttpListener, frame: Any) -> None:
    try:
        await listener.session.send(frame)
    except SandboxError:
        pass  # the server has gone; the next request learns that the session ended


async def _open(request: Request, state: AppState, info: EndpointInfo) -> HttpListener | JSONResponse:
    """A new sandboxed session for this endpoint, admitted against the endpoint owner's caps."""
    assert state.sessions is not None
    klass = await anyio.to_thread.run_sync(state.progress.learner_class, info.learner_id)
    owner = Owner(info.learner_id, client_key(request.scope), klass.id if klass else None,
                  (klass.max_sessions or state.settings.max_sessions_per_class) if klass else None)  # fmt: skip
    try:
        session = await state.sessions.open(info.server, owner)
    except CapacityError as exc:
        return _error(exc.status_code, exc.message, {"Retry-After": str(exc.retry_after_s or 60)})
    except SandboxError as exc:
        return _error(exc.status_code, exc.message)
    listener = HttpListener(session, info.id, WireLimits.from_settings(state.settings))
    sessions = state.sessions

    def gone() -> None:  # its server exited, or a timer ended it: forget it, free its place
        state.http_sessions.remove(listener)
        sessions.end_soon(session, NORMAL_CLOSURE, listener.end_reason or "the MCP session ended")

    listener.on_gone = gone
    sessions.attach(session, listener)
    return listener


async def _initialize(request: Request, state: AppState, info: EndpointInfo,
                      probe: Frame) -> tuple[Response, HttpListener | None]:  # fmt: skip
    if probe.message.get("method") != "initialize" or "id" not in probe.message:
        return _error(
            400,
            f"Start with an initialize request (it answers with {SESSION_HEADER}); every later request "
            "carries that header. A 2026-07-28 request carries its version in params._meta instead.",
        ), None
    listener = await _open(request, state, info)
    if isinstance(listener, JSONResponse):
        return listener, None
    listener.limiter.check()  # the initialize itself counts
    state.http_sessions.add(listener)
    session = listener.session
    response = await _answer(listener, probe, sse=False)
    if response.status_code != 200 or session.transcript.revision is None:
        await _end(state, listener, "initialize did not succeed")  # no session to keep
        return response, None
    listener.version = session.transcript.revision
    response.headers[SESSION_HEADER] = session.id
    return response, listener


def _modern_version(message: dict[str, Any]) -> str | None:
    """The 2026-07-28 version a stateless request names in params._meta, if it names one."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    return version if version in MODERN_PROTOCOL_VERSIONS else None


def _header_mismatch(request: Request, message: dict[str, Any], version: str) -> str | None:
    """2026-07-28: MCP-Protocol-Version, Mcp-Method and Mcp-Name must say what the body says."""
    headers = request.headers
    if headers.get(VERSION_HEADER) != version:
        return f"{VERSION_HEADER} must be {version}, as in params._meta"
    method = message.get("method")
    if method is not None and headers.get(METHOD_HEADER) != method:
        return f"{METHOD_HEADER} must be {method!r}, the body's method"
    key = NAME_BEARING_METHODS.get(str(method))
    params = message.get("params")
    named = params.get(key) if key and isinstance(params, dict) else None
    if named is not None and decode_header_value(headers.get(NAME_HEADER)) != named:
        return f"{NAME_HEADER} must be the body's {key!r}"
    return None


async def _stateless(request: Request, state: AppState, info: EndpointInfo, first: Frame, version: str,
                     sse: bool) -> tuple[Response, HttpListener | None]:  # fmt: skip
    """A 2026-07-28 request: no session; the endpoint's one instance for such requests answers it."""
    mismatch = _header_mismatch(request, first.message, version)
    listener = state.http_sessions.serving(info.id)
    if mismatch is not None:
        error = FrameError(HEADER_MISMATCH, "header mismatch", mismatch, id=first.message.get("id"))
        return _jsonrpc_error(400, error), listener
    if listener is None:
        opened = await _open(request, state, info)
        if isinstance(opened, JSONResponse):
            return opened, None
        listener = state.http_sessions.stateless[info.id] = opened
    # Admitted at the endpoint's gate: the one instance's rate limit and pace are the gate's.
    if "method" not in first.message or "id" not in first.message:
        await _send(listener, first)
        return Response(status_code=202), listener
    return await _answer(listener, first, sse), listener


async def _answer(listener: HttpListener, frame: Any, sse: bool) -> Response:
    if listener.waiting_for(frame.message["id"]):
        error = FrameError(INVALID_REQUEST, "id in use by a request still waiting for its response",
                           "A request of this session with this id still waits for its response: each request "
                           "needs an id of its own.", id=frame.message["id"])  # fmt: skip
        listener.session.transcript.add_relay_error(frame.line[:2000], error.reply())
        return _jsonrpc_error(400, error)
    try:
        waiter = await listener.request(frame, sse)
    except SandboxError as exc:
        return _error(404, f"{exc.message} The MCP session has ended; send initialize to start a new one.")
    if sse:
        return StreamingResponse(_events(waiter), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})  # fmt: skip
    try:
        while await asyncio.wait_for(waiter.events.get(), REPLY_LIMIT_S) is not FINAL:
            pass
    except TimeoutError:
        waiter.close()  # nobody waits for this answer now (the transcript still gets it)
        return _error(504, f"The server did not answer in {REPLY_LIMIT_S:g} s; the session goes on.")
    if waiter.response is None:
        return _error(404, "The MCP session ended before the server answered.")
    return Response(waiter.response, media_type="application/json")


def _sse(line: str) -> bytes:
    return f"event: message\ndata: {line}\n\n".encode()


async def _sse_stream(next_line: Callable[[], Awaitable[str | None]], idle: bytes) -> AsyncIterator[bytes]:
    """Each line `next_line` gives as an SSE event, until it gives None; `idle` (a comment) whenever
    nothing has come for KEEPALIVE_S, so that proxies keep the stream open."""
    while True:
        try:
            line = await asyncio.wait_for(next_line(), KEEPALIVE_S)
        except TimeoutError:
            yield idle
            continue
        if line is None:
            return
        yield _sse(line)


async def _events(waiter: Waiter) -> AsyncIterator[bytes]:
    try:
        async for event in _sse_stream(waiter.next_event, b": still waiting\n\n"):  # FINAL is None
            yield event
    finally:
        waiter.close()  # the client has read the end, or gone away


async def mcp_get(request: Request) -> Response:
    listener = await _session(request, request.path_params["token"])
    if isinstance(listener, JSONResponse):
        return listener
    refusal = None
    if "text/event-stream" not in request.headers.get("accept", ""):
        refusal = _error(406, "The GET stream is text/event-stream: say so in Accept.")
    elif listener.stream_open:
        refusal = _error(409, "This session's stream is already open.")
    if refusal is not None:
        _record(listener, request, refusal)
        return refusal
    listener.open_stream()

    async def stream() -> AsyncIterator[bytes]:
        try:
            async for event in _sse_stream(listener.stream, b": keep-alive\n\n"):
                yield event
        finally:
            listener.close_stream()

    response = StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )
    _record(listener, request, response)
    return response


async def mcp_delete(request: Request) -> Response:
    listener = await _session(request, request.path_params["token"])
    if isinstance(listener, JSONResponse):
        return listener
    response = Response(status_code=204)
    _record(listener, request, response)
    await _end(get_state(request), listener, "the client ended the MCP session")
    return response


MCP_METHODS = {"POST": mcp_post, "GET": mcp_get, "DELETE": mcp_delete}
ALLOW = ", ".join(MCP_METHODS)


async def mcp_endpoint(request: Request) -> Response:
    """The one MCP endpoint path of the transport, by method; any other method is answered 405 with
    all three in Allow (one route per method would name only the first)."""
    handler = MCP_METHODS.get(request.method)
    if handler is None:
        return _error(405, f"The MCP endpoint answers {ALLOW}.", {"Allow": ALLOW})
    return await handler(request)


# A plain Starlette route, behind the same middlewares: FastAPI's own solves dependencies and validates
# parameters on every message of an MCP client, and this one takes the request and nothing else.
# It takes the methods a client may try too, so that a wrong one gets the 405 above.
router.add_route("/mcp/{token}", mcp_endpoint, methods=[*MCP_METHODS, "HEAD", "PUT", "PATCH", "OPTIONS"])
