"""Streamable HTTP on the wire (docs/http.md): its headers, the revision a request names, a body
read in its turn, SSE events, and the record of each exchange in the session's transcript.

The listener that stays attached to a relay session is httpwire.py; the `/mcp/{token}` route that
finds the endpoint, admits a session and answers with the app's errors is app/web/mcp_http.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.shared.inbound import NAME_BEARING_METHODS, decode_header_value
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from mcp_types import PROTOCOL_VERSION_META_KEY
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from app.protocol.exchanges import HTTP_HEADERS_SHOWN
from app.protocol.jsonrpc import FrameError
from app.relay.httpwire import Door, HttpListener, Waiter

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# A reply the server has not sent in this long is answered by the relay (the session goes on).
REPLY_LIMIT_S = 300.0
# How long a 2026-07-28 answer is waited for before its stream begins (see `answer_status`).
FIRST_EVENT_S = 1.0
# An idle SSE stream gets a comment this often, so proxies keep it open.
KEEPALIVE_S = 15.0


def version_problem(request: Request, listener: HttpListener) -> str | None:
    """What is wrong with the request's MCP-Protocol-Version for this session, or None."""
    version = request.headers.get(VERSION_HEADER)
    if version is None:
        return None  # the spec's default for a client that does not say (2025-03-26)
    if version not in HANDSHAKE_PROTOCOL_VERSIONS or (listener.version and version != listener.version):
        return f"{VERSION_HEADER} {version!r} is not the revision this session negotiated."
    return None


def record(listener: HttpListener | None, request: Request, response: Response, message: Any = None) -> None:
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


async def read_in_turn(request: Request, door: Door) -> str | FrameError:
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


def modern_version(message: dict[str, Any]) -> str | None:
    """The 2026-07-28 version a stateless request names in params._meta, if it names one."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    return version if version in MODERN_PROTOCOL_VERSIONS else None


def unsupported_version(request: Request, message: dict[str, Any]) -> str | None:
    """The version a request asks for when it is a 2026-07-28-era request (its params._meta names a
    version, or its MCP-Protocol-Version header names one of no handshake revision) of a version
    this endpoint does not implement; None otherwise."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    named = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    header = request.headers.get(VERSION_HEADER)
    asked = named if named is not None else header
    if asked is None or asked in MODERN_PROTOCOL_VERSIONS:
        return None
    if named is None and asked in HANDSHAKE_PROTOCOL_VERSIONS:
        return None  # a handshake revision's request: the header names the session's version
    return str(asked)


# The JSON-RPC errors a 2026-07-28 answer carries with an HTTP status of their own (2026-07-28
# basic/transports/streamable-http §Protocol Version Header; basic §Meta).
ERROR_STATUSES = {-32601: 404, -32021: 400, -32022: 400, -32020: 400}


def answer_status(line: str) -> int:
    """The HTTP status of a 2026-07-28 answer: 200, or the one its error code asks for."""
    if '"error"' not in line:
        return 200
    try:
        code = json.loads(line)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return 200
    return ERROR_STATUSES.get(code, 200) if isinstance(code, int) else 200


def header_mismatch(request: Request, message: dict[str, Any], version: str) -> str | None:
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


def sse_event(line: str) -> bytes:
    return f"event: message\ndata: {line}\n\n".encode()


async def sse_stream(next_line: Callable[[], Awaitable[str | None]], idle: bytes) -> AsyncIterator[bytes]:
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
        yield sse_event(line)


class EventStream(StreamingResponse):
    """An SSE response that calls `ended` as soon as it is over: read to its end, or its client gone.

    A generator's own `finally` is no place for that. When the client leaves while a send waits (it
    read nothing), the generator sits at a `yield`, and runs its `finally` only once it is collected:
    until then its session counted as heard, and its server was read at full pace."""

    def __init__(self, events: AsyncIterator[bytes], ended: Callable[[], None]) -> None:
        # X-Accel-Buffering: a proxy in front (nginx, and others that read it) passes each event on
        # at once (2026-07-28 transports: servers SHOULD send it).
        super().__init__(events, media_type="text/event-stream",
                         headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})  # fmt: skip
        self.ended = ended

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.ended()


def waiter_events(waiter: Waiter, first: str | None = None) -> EventStream:
    """A POST's SSE response: what comes for `waiter` meanwhile (after `first`, taken already), then
    its response (FINAL is None)."""

    async def next_event() -> str | None:
        nonlocal first
        if first is not None:
            taken, first = first, None
            return taken
        return await waiter.next_event()

    return EventStream(sse_stream(next_event, b": still waiting\n\n"), waiter.close)
