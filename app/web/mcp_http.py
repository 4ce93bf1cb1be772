"""`/mcp/{token}`: a learner's endpoint over Streamable HTTP (handshake revisions, and 2026-07-28's
stateless requests), for any MCP client. See docs/http.md.

A POSTed `initialize` opens an MCP session (`Mcp-Session-Id`), which is one sandboxed instance
admitted against the endpoint owner's caps, with the same limits and transcript as a console; later
POSTs carry the session id; GET opens the stream of what the server sends on its own; DELETE ends
the session. This module finds the endpoint (Origin, token), admits and ends sessions and answers
with the app's errors; the wire itself (headers, revisions, SSE) is app/relay/httptransport.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from mcp_types.jsonrpc import HEADER_MISMATCH
from starlette.requests import ClientDisconnect

from app.progress.store import EndpointInfo
from app.protocol.jsonrpc import INVALID_REQUEST, RATE_LIMITED, UNSUPPORTED_VERSION, Frame, FrameError
from app.relay.admission import Owner
from app.relay.httptransport import (
    FIRST_EVENT_S,
    REPLY_LIMIT_S,
    SESSION_HEADER,
    VERSION_HEADER,
    EventStream,
    answer_status,
    header_mismatch,
    modern_version,
    read_in_turn,
    record,
    sse_stream,
    unsupported_version,
    version_problem,
    waiter_events,
)
from app.relay.httpwire import FINAL, MAX_ID_CHARS, MAX_WAITING, Gate, HttpListener
from app.relay.sessions import NORMAL_CLOSURE
from app.relay.stateless import SharedListener
from app.relay.wire import WireLimits
from app.sandbox.errors import CapacityError, SandboxError
from app.web import protected
from app.web.client import client_key
from app.web.endpoints import end_session, token_hash
from app.web.errors import error_body
from app.web.guard import same_origin
from app.web.state import AppState, get_state

router = APIRouter()


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
    if info.auth == "oauth":
        scopes = await protected.token_scopes(request, token, info)
        if isinstance(scopes, JSONResponse):
            return scopes
        request.state.scopes = scopes
    return info


async def _beyond_scopes(
    request: Request, token: str, info: EndpointInfo, message: Any
) -> JSONResponse | None:
    """The 403 for a message of a protected endpoint that its token's scopes do not cover."""
    scopes = getattr(request.state, "scopes", None)
    return (
        None if scopes is None else await protected.insufficient_scope(request, token, info, scopes, message)
    )


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


async def mcp_post(request: Request) -> Response:
    try:
        response, listener, message = await _post(request, request.path_params["token"])
    except ClientDisconnect:  # it went away while its request waited its turn: nobody reads an answer
        return Response(status_code=400)
    record(listener, request, response, message)
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
        text = await read_in_turn(request, gate)
        first = text if isinstance(text, FrameError) else gate.admit(text)
        if isinstance(first, FrameError):
            return _jsonrpc_error(429 if first.code == RATE_LIMITED else 400, first), None, None
        if (refusal := await _beyond_scopes(request, token, info, first.message)) is not None:
            return refusal, None, first.message
        version = modern_version(first.message)
        if version is not None:
            response, listener = await _stateless(request, state, info, first, version, sse)
        elif (asked := unsupported_version(request, first.message)) is not None:
            response, listener = _unsupported(first.message, asked), None
        elif request.headers.get(VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS:
            error = FrameError(HEADER_MISMATCH, "header mismatch", f"params._meta names no protocol version, "
                               f"where {VERSION_HEADER} names one", id=first.message.get("id"))  # fmt: skip
            response, listener = _jsonrpc_error(400, error), None
        else:
            response, listener = await _initialize(request, state, info, first)
        return response, listener, first.message
    found = _listener(request, state, info)
    if isinstance(found, JSONResponse):
        return found, None, None
    listener = found
    if (problem := version_problem(request, listener)) is not None:
        return _error(400, problem), listener, None
    text = await read_in_turn(request, listener)
    result = text if isinstance(text, FrameError) else listener.admit(text)
    if isinstance(result, FrameError):
        if isinstance(text, str):
            listener.session.transcript.add_relay_error(text[:2000], result.reply())
        return _jsonrpc_error(429 if result.code == RATE_LIMITED else 400, result), listener, None
    if (refusal := await _beyond_scopes(request, token, info, result.message)) is not None:
        return refusal, listener, result.message
    if "method" not in result.message or "id" not in result.message:
        return await _send(listener, result), listener, result.message
    return await _answer(listener, result, sse), listener, result.message


def _unsupported(message: dict[str, Any], asked: str) -> JSONResponse:
    """2026-07-28's answer to a version this endpoint does not implement: what it does, to choose from."""
    supported = [*MODERN_PROTOCOL_VERSIONS, *sorted(HANDSHAKE_PROTOCOL_VERSIONS, reverse=True)]
    error = {"code": UNSUPPORTED_VERSION, "message": "Unsupported protocol version",
             "data": {"supported": supported, "requested": asked[:200], "from": "relay"}}  # fmt: skip
    return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "error": error}, status_code=400)


def _gate(state: AppState, endpoint_id: str) -> Gate:
    assert state.sessions is not None
    limits, pace = WireLimits.from_settings(state.settings), state.sessions.session_limits.client_pace
    return state.http_sessions.gate(endpoint_id, lambda: Gate(limits, pace()))


async def _send(listener: HttpListener, frame: Frame) -> Response:
    """A notification, or a response to the server's own request: 202, or why it may not go."""
    try:
        refused = await listener.send_other(frame)
    except SandboxError:
        refused = None  # the server has gone; the next request learns that the session ended
    if refused is not None:
        listener.session.transcript.add_relay_error(frame.line[:2000], refused.reply())
        return _jsonrpc_error(400, refused)
    return Response(status_code=202)


async def _open(request: Request, state: AppState, info: EndpointInfo,
                shared: bool = False) -> HttpListener | JSONResponse:  # fmt: skip
    """A new sandboxed session for this endpoint, admitted against the endpoint owner's caps (shared:
    the endpoint's one instance for 2026-07-28 requests, which all its clients share)."""
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
    limits = WireLimits.from_settings(state.settings)
    listener = SharedListener(session, info.id, limits) if shared else HttpListener(session, info.id, limits)
    sessions = state.sessions

    def gone() -> None:  # its server exited, or a timer ended it: forget it, free its place
        state.http_sessions.remove(listener)
        sessions.end_soon(session, NORMAL_CLOSURE, listener.end_reason or "the MCP session ended")

    listener.on_gone = gone
    sessions.attach(session, listener)
    if state.http_sessions.was_deleted(info.id):  # deleted while this session started: nobody could end it
        await end_session(state, listener, "the endpoint was deleted")
        return _error(404, "No such endpoint: it was deleted as this session started. Make a new one.")
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
        await end_session(state, listener, "initialize did not succeed")  # no session to keep
        return response, None
    listener.version = session.transcript.revision
    response.headers[SESSION_HEADER] = session.id
    return response, listener


async def _stateless(request: Request, state: AppState, info: EndpointInfo, first: Frame, version: str,
                     sse: bool) -> tuple[Response, HttpListener | None]:  # fmt: skip
    """A 2026-07-28 request: no session; the endpoint's one instance for such requests answers it."""
    mismatch = header_mismatch(request, first.message, version)
    listener = state.http_sessions.serving(info.id)
    if mismatch is not None:
        error = FrameError(HEADER_MISMATCH, "header mismatch", mismatch, id=first.message.get("id"))
        return _jsonrpc_error(400, error), listener
    if listener is None:

        async def open_one() -> HttpListener | JSONResponse:
            opened = await _open(request, state, info, shared=True)
            if not isinstance(opened, JSONResponse):
                state.http_sessions.stateless[info.id] = opened
            return opened

        opened = await state.http_sessions.open_stateless(info.id, open_one)
        if isinstance(opened, JSONResponse):
            return opened, None
        listener = opened
    # Admitted at the endpoint's gate: the one instance's rate limit and pace are the gate's.
    if "method" not in first.message or "id" not in first.message:
        return await _send(listener, first), listener
    return await _answer(listener, first, sse), listener


async def _answer(listener: HttpListener, frame: Any, sse: bool) -> Response:
    request_id = frame.message["id"]
    error = None
    if isinstance(request_id, str) and len(request_id) > MAX_ID_CHARS:
        error = FrameError(INVALID_REQUEST, "id too long",
                           f"A request id here is at most {MAX_ID_CHARS} characters: the relay keeps each "
                           "request's id while it waits for its response.")  # fmt: skip
    elif not listener.shared and listener.waiting_for(request_id):
        error = FrameError(INVALID_REQUEST, "id in use by a request still waiting for its response",
                           "A request of this session with this id still waits for its response: each request "
                           "needs an id of its own.", id=request_id)  # fmt: skip
    elif listener.waiting >= MAX_WAITING:
        error = FrameError(RATE_LIMITED, "too many requests waiting",
                           f"{MAX_WAITING} requests of this session already wait for their responses: let "
                           "some be answered (or cancel them) first.", id=request_id)  # fmt: skip
    if error is not None:
        listener.session.transcript.add_relay_error(frame.line[:2000], error.reply())
        return _jsonrpc_error(429 if error.code == RATE_LIMITED else 400, error)
    try:
        waiter = await listener.request(frame, sse)
    except TimeoutError:  # a shared instance's turn did not come
        return _error(503, f"Another request has had this endpoint's instance for {REPLY_LIMIT_S:g} s; try "
                      "again later.", {"Retry-After": "10"})  # fmt: skip
    except SandboxError as exc:
        return _error(404, f"{exc.message} The MCP session has ended; send initialize to start a new one.")
    if sse:
        if not listener.shared:
            return waiter_events(waiter)
        # 2026-07-28: some errors have an HTTP status of their own, which a stream begun at 200 could
        # not have; an answer that comes at once, before anything else, is looked at first.
        try:
            first = await asyncio.wait_for(waiter.next_event(), FIRST_EVENT_S)
        except TimeoutError:
            return waiter_events(waiter)
        if first is FINAL:
            return _error(404, "The MCP session ended before the server answered.")
        if first == waiter.response and (status := answer_status(first)) != 200:
            return Response(first, status_code=status, media_type="application/json")
        return waiter_events(waiter, first)
    try:
        while await asyncio.wait_for(waiter.events.get(), REPLY_LIMIT_S) is not FINAL:
            pass
    except TimeoutError:
        waiter.close()  # nobody waits for this answer now (the transcript still gets it)
        return _error(504, f"The server did not answer in {REPLY_LIMIT_S:g} s; the session goes on.")
    if waiter.response is None:
        return _error(404, "The MCP session ended before the server answered.")
    status = answer_status(waiter.response) if listener.shared else 200
    return Response(waiter.response, status_code=status, media_type="application/json")


async def mcp_get(request: Request) -> Response:
    listener = await _session(request, request.path_params["token"])
    if isinstance(listener, JSONResponse):
        return listener
    refusal = None
    if (problem := version_problem(request, listener)) is not None:
        refusal = _error(400, problem)
    elif "text/event-stream" not in request.headers.get("accept", ""):
        refusal = _error(406, "The GET stream is text/event-stream: say so in Accept.")
    elif listener.stream_open:
        refusal = _error(409, "This session's stream is already open.")
    if refusal is not None:
        record(listener, request, refusal)
        return refusal
    listener.open_stream()
    response = EventStream(sse_stream(listener.stream, b": keep-alive\n\n"), listener.close_stream)
    record(listener, request, response)
    return response


async def mcp_delete(request: Request) -> Response:
    listener = await _session(request, request.path_params["token"])
    if isinstance(listener, JSONResponse):
        return listener
    if (problem := version_problem(request, listener)) is not None:
        refused = _error(400, problem)
        record(listener, request, refused)
        return refused
    response = Response(status_code=204)
    record(listener, request, response)
    await end_session(get_state(request), listener, "the client ended the MCP session")
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
