"""One MCP session over Streamable HTTP: the listener that stays attached to its relay session while
HTTP requests come and go (see docs/http.md).

A POSTed request waits for its response here: as one JSON body, or as an SSE stream that also carries
what the server sends meanwhile (its own requests and notifications). Whatever the server sends while
no SSE request is waiting goes to the session's GET stream (bounded: the oldest go first). While no
request waits and no GET stream is open, nobody hears the session: its server is read no further
than a small buffer (RelaySession).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from app.protocol.jsonrpc import Frame, FrameError, rate_limit_error, readable_id, to_line
from app.protocol.transcript import Entry
from app.relay.rates import Pace, Paced, Recent
from app.relay.session import RelaySession, line_cost
from app.relay.wire import ID_PEEK_BYTES, RATE_WINDOW_S, RateLimiter, WireLimits

# Server messages kept for a GET stream that is not open (or is slow), and their bytes at most (a
# line may be 1 MiB); the oldest go first.
STREAM_KEPT = 200
STREAM_KEPT_BYTES = 1024 * 1024
# Ended sessions kept for the learner's traffic view (transcripts only): per endpoint, and in all, and
# their transcripts' lines in all (each may hold 2 MiB: one address ending session after session full
# of them would otherwise hold hundreds of MiB of the web process's memory).
ENDED_KEPT = 5
ENDED_KEPT_IN_ALL = 200
ENDED_KEPT_BYTES = 32 * 1024 * 1024
# Requests of one session waiting for their responses, at most, and the longest string id one may
# have: each waiting request is kept until it is answered or cancelled, and a server may never answer.
MAX_WAITING = 100
MAX_ID_CHARS = 256
CANCELLED = "notifications/cancelled"
# What a cancelled request's client gets on a handshake revision's wire, as from the official SDK's
# server (its stream ends only with a response): the server itself answers a cancelled request nothing.
REQUEST_CANCELLED = -32800
# Endpoints whose gate is kept (the least recently used goes first): far more than are ever in use.
GATES_KEPT = 10_000
FINAL = None  # the end of one request's events
# Server messages one SSE response holds for a client that is not reading them (see Waiter).
SSE_KEPT = 64
# The _meta key of a 2026-07-28 notification that names the subscriptions/listen request it is for.
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LISTEN = "subscriptions/listen"


class Door:
    """Where the requests for one session come in, or an endpoint's requests that name none: the
    same rules as a WebSocket frame. The web layer counts each request against `limiter` and waits
    its turn at `pace` (by its declared length) before it reads the body, so that requests waiting
    side by side hold no bodies; then `admit` reads the message."""

    limits: WireLimits
    limiter: RateLimiter
    pace: Paced

    def refused(self, text: str, wait: float) -> FrameError:
        """The answer to a request past the rate limit, with its id when that is cheap to read."""
        return rate_limit_error(
            self.limiter.limit, self.limiter.window_s, wait, readable_id(text, ID_PEEK_BYTES)
        )

    def admit(self, text: str) -> Frame | FrameError:
        """Strict JSON-RPC; a message's values are charged to the pace (its bytes were, before)."""
        result = self.limits.admit(text)
        if isinstance(result, Frame):
            self.pace.charge(line_cost("", result.items))
        return result


class Gate(Door):
    """The requests to one endpoint that name no session (an initialize, or a 2026-07-28 request),
    counted and paced as one session's are. Unlimited, one client posting 1 MiB initialize bodies back
    to back took 82% of the web process's core."""

    def __init__(self, limits: WireLimits, pace: Pace) -> None:
        self.limits = limits
        self.limiter = RateLimiter(limits.messages_per_window, RATE_WINDOW_S)
        self.pace = pace


@dataclass
class Waiter:
    """A POSTed request waiting for its response; `events` also carries server messages when SSE.

    Server messages wait here until the client reads them, at most `SSE_KEPT`: past them the session
    stops reading its server until the client reads on (and the server waits on its pipe). Once the
    response stream is over (`close`: the client went away), nothing more is kept for it."""

    sse: bool
    method: str | None = None
    client_id: Any = None  # the request's id as its client sent it
    id: Any = None  # ... and as the server got it (another on a shared instance, when that was in use)
    token: Any = None  # its progressToken as the server got it, if it carried one
    client_token: Any = None
    events: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    response: str | None = None
    gone: bool = False
    on_close: Callable[[Waiter], None] | None = None  # told once its response stream is over
    _taken: asyncio.Event = field(default_factory=asyncio.Event)

    async def next_event(self) -> str | None:
        event = await self.events.get()
        self._taken.set()
        return event

    async def put_meanwhile(self, line: str) -> None:
        """A server message sent while this request waits: kept for the client once there is room."""
        while self.events.qsize() >= SSE_KEPT and not self.gone:
            self._taken.clear()
            await self._taken.wait()
        if not self.gone:
            self.events.put_nowait(line)

    def close(self) -> None:
        if self.gone:
            return
        self.gone = True
        while not self.events.empty():
            self.events.get_nowait()
        self._taken.set()
        if self.on_close is not None:
            self.on_close(self)

    def finish(self, line: str | None) -> None:
        """Its response (None: none will come), and the end of its events."""
        if line is not None:
            self.response = line
            self.events.put_nowait(line)
        self.events.put_nowait(FINAL)


class HttpListener(Door):
    """One MCP session of an endpoint (a handshake revision's), as its client's requests come."""

    shared = False  # see SharedListener (app/relay/stateless.py)

    def __init__(self, session: RelaySession, endpoint_id: str, limits: WireLimits) -> None:
        self.session = session
        self.endpoint_id = endpoint_id
        self.limits = limits
        self.limiter = RateLimiter(limits.messages_per_window, RATE_WINDOW_S)
        self.pace = session.client_pace  # the session's, which its replays and traffic pages share
        self.version: str | None = None  # MCP-Protocol-Version, once initialize has been answered
        self.ended = asyncio.Event()
        self.end_reason = ""
        self._waiting: dict[str, Waiter] = {}
        self._stream: deque[str] = deque()
        self._stream_bytes = 0
        self._stream_ready = asyncio.Event()
        self._stream_open = False
        # Called once the session has ended or its server exited: an MCP session has no console to
        # restart it, so whoever holds the listener lets it go (and ends the session).
        self.on_gone: Callable[[], None] | None = None

    # --- what the HTTP side asks ------------------------------------------------------------------

    @property
    def listening(self) -> bool:
        """Someone hears the session: a request waits for its response, or the GET stream is open."""
        return self._stream_open or any(not waiter.gone for waiter in self._waiting.values())

    @property
    def stream_open(self) -> bool:
        return self._stream_open

    def open_stream(self) -> None:
        self._stream_open = True
        self.session.listener_changed()

    def close_stream(self) -> None:
        self._stream_open = False

    def waiting_for(self, request_id: Any) -> bool:
        """Whether a request with this id waits for its response (another would take its answer)."""
        return key_of(request_id) in self._waiting

    async def request(self, frame: Frame, sse: bool) -> Waiter:
        """Send a request; its Waiter gets the response (and, with SSE, what comes meanwhile)."""
        message = frame.message
        token = _progress_token(message)
        waiter = Waiter(sse, message.get("method"), client_id=message["id"], id=message["id"], token=token,
                        client_token=token)  # fmt: skip
        await self._admit(waiter)
        try:
            frame = self._as_sent(frame, waiter)
            self._waiting[key_of(waiter.id)] = waiter
            waiter.on_close = self._closed
            self.session.listener_changed()
            await self.session.send(frame)
        except BaseException:
            self._waiting.pop(key_of(waiter.id), None)
            self._done(waiter)
            raise
        return waiter

    @property
    def waiting(self) -> int:
        """Requests of this session waiting for their responses."""
        return len(self._waiting)

    async def send_other(self, frame: Frame) -> FrameError | None:
        """A notification, or a response to the server's own request; why not, if it may not go."""
        await self.session.send(frame)
        if frame.message.get("method") == CANCELLED:
            self._cancelled(frame.message.get("params"))
        return None

    def _cancelled(self, params: Any) -> None:
        """A request its client cancelled gets no answer from the server (basic/utilities/cancellation):
        it stops waiting, and its stream ends with the error the official SDK's server sends."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        waiter = self._waiting.pop(key_of(request_id), None) if request_id is not None else None
        if waiter is None:
            return
        self._done(waiter)
        error = {"code": REQUEST_CANCELLED, "message": "Request cancelled"}
        waiter.finish(to_line({"jsonrpc": "2.0", "id": waiter.client_id, "error": error}))

    # Hooks for a listener whose instance several clients share (SharedListener).

    async def _admit(self, waiter: Waiter) -> None:
        """Wait until the request may go to the server."""

    def _as_sent(self, frame: Frame, waiter: Waiter) -> Frame:
        """The request as the server gets it (`waiter.id` and `waiter.token` as in it)."""
        return frame

    def _done(self, waiter: Waiter) -> None:
        """The request has its answer, or will have none."""

    def _closed(self, waiter: Waiter) -> None:
        """Its client stopped listening before the answer came. The request goes on: a handshake
        revision's client cancels with notifications/cancelled, not by leaving (2025-11-25 transports:
        a disconnection is not a cancellation)."""

    def _meanwhile(self, entry: Entry) -> Waiter | None:
        """The request a server message that answers none belongs with: the newest that streams."""
        streaming = [waiter for waiter in self._waiting.values() if waiter.sse and not waiter.gone]
        return streaming[-1] if streaming else None

    async def stream(self) -> str | None:
        """The next message for the GET stream; None once the session has ended."""
        while not self._stream:
            if self.ended.is_set():
                return None
            self._stream_ready.clear()
            waits = [asyncio.create_task(self._stream_ready.wait()), asyncio.create_task(self.ended.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in waits:
                    task.cancel()
        line = self._stream.popleft()
        self._stream_bytes -= len(line)
        return line

    # --- what the relay session tells (the Listener protocol) ---------------------------------------

    async def on_server_line(self, line: str) -> None:
        pass  # routed by the id it carries, once it is an entry

    async def on_server_entry(self, entry: Entry) -> None:
        if entry.is_response:
            waiter = self._waiting.pop(key_of(entry.message.get("id")), None)
            if waiter is not None:
                self._done(waiter)
                if not waiter.gone:  # else its stream has ended: only the transcript keeps it
                    line = entry.line
                    if waiter.id != waiter.client_id:
                        line = to_line({**entry.message, "id": waiter.client_id})
                    waiter.finish(line)
                return
            if self.shared:
                return  # a request its client gave up on: nobody could be told
        # Progress goes to the request whose token it carries, a subscription's notification to the
        # subscriptions/listen request it names; the server's other requests and notifications (and
        # lines that are not messages) as `_meanwhile` says.
        line = entry.line
        if (progress := self._progress_of(entry)) is not None:
            target: Waiter | None = progress
            if progress.token != progress.client_token:
                params = {**entry.message["params"], "progressToken": progress.client_token}
                line = to_line({**entry.message, "params": params})
        elif (listen := self._listen_of(entry)) is not None:
            target = listen
            if listen.id != listen.client_id:
                params = entry.message["params"]
                meta = {**params["_meta"], SUBSCRIPTION_ID: listen.client_id}
                line = to_line({**entry.message, "params": {**params, "_meta": meta}})
        else:
            target = self._meanwhile(entry)
        if target is not None and target.sse and not target.gone:
            await target.put_meanwhile(line)
        else:
            self._keep_for_stream(line)

    def _listen_of(self, entry: Entry) -> Waiter | None:
        """The waiting subscriptions/listen request a notification names (2026-07-28)."""
        params = entry.message.get("params") if isinstance(entry.message, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        named = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        found = self._waiting.get(key_of(named)) if named is not None else None
        return found if found is not None and found.method == LISTEN else None

    def _progress_of(self, entry: Entry) -> Waiter | None:
        """The waiting request a progress notification is about, by its token."""
        message = entry.message
        if not isinstance(message, dict) or message.get("method") != "notifications/progress":
            return None
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        if token is None:
            return None
        key = key_of(token)
        return next((waiter for waiter in self._waiting.values() if key_of(waiter.token) == key), None)

    def forget_stream(self) -> None:
        """Let go of what was kept for a GET stream that will not be opened again."""
        self._stream.clear()
        self._stream_bytes = 0

    def _keep_for_stream(self, line: str) -> None:
        while self._stream and (
            len(self._stream) >= STREAM_KEPT or self._stream_bytes + len(line) > STREAM_KEPT_BYTES
        ):
            self._stream_bytes -= len(self._stream.popleft())
        self._stream.append(line)
        self._stream_bytes += len(line)
        self._stream_ready.set()

    async def on_stderr(self, text: str, at_ms: float) -> None:
        pass  # an MCP client hears protocol messages only; the transcript view shows stderr

    async def on_state(self) -> None:
        pass

    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None:
        # The relay answers requests the server can no longer answer (it exited).
        waiter = self._waiting.pop(key_of(error.id), None) if error.id is not None else None
        if waiter is not None:
            self._done(waiter)
            waiter.finish(json.dumps({**error.reply(), "id": waiter.client_id}, separators=(",", ":")))

    async def on_ended(self, code: int, reason: str) -> None:
        self.end_reason = reason
        self.ended.set()
        for waiter in self._waiting.values():
            self._done(waiter)
            waiter.finish(None)
        self._waiting.clear()
        if self.on_gone is not None:
            gone, self.on_gone = self.on_gone, None
            gone()


def key_of(value: Any) -> str:
    """The key a request waits under: equal only for the same JSON value."""
    return json.dumps(value)


def _progress_token(message: dict[str, Any]) -> Any:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


class HttpSessions:
    """The MCP sessions of every endpoint on this replica, by `Mcp-Session-Id` (the relay session's id)."""

    def __init__(self) -> None:
        self.by_id: dict[str, HttpListener] = {}
        # 2026-07-28 requests carry no session: one instance per endpoint serves them all.
        self.stateless: dict[str, HttpListener] = {}
        # Recently ended sessions, so that the learner still sees what a client did after it has gone
        # (an SDK client ends its session as it exits). Their servers are gone; only transcripts stay,
        # a few per endpoint and a bounded number in all.
        self.ended: deque[HttpListener] = deque(maxlen=ENDED_KEPT_IN_ALL)
        self.gates: dict[str, Gate] = {}  # by endpoint, the least recently used first
        # Endpoints deleted here: a session that was starting for one as it went is ended once started.
        self._deleted: Recent[str, bool] = Recent(GATES_KEPT)
        self._opening: dict[str, asyncio.Task[Any]] = {}  # stateless instances on their way, by endpoint

    def gate(self, endpoint_id: str, make: Callable[[], Gate]) -> Gate:
        """The endpoint's gate for requests that name no session."""
        gate = self.gates.pop(endpoint_id, None) or make()
        self.gates[endpoint_id] = gate
        if len(self.gates) > GATES_KEPT:
            del self.gates[next(iter(self.gates))]
        return gate

    def add(self, listener: HttpListener) -> None:
        self.by_id[listener.session.id] = listener

    def serving(self, endpoint_id: str) -> HttpListener | None:
        """The endpoint's instance for stateless requests, while it lives."""
        listener = self.stateless.get(endpoint_id)
        if listener is not None and (listener.ended.is_set() or listener.session.closed):
            del self.stateless[endpoint_id]
            return None
        return listener

    async def open_stateless(self, endpoint_id: str, open_one: Callable[[], Awaitable[Any]]) -> Any:
        """What `open_one` gives (the endpoint's stateless instance, or why there is none), started once
        however many requests ask at the same moment: each would start an instance of its own, and all
        but the last would run on unseen, holding the owner's places."""
        opening = self._opening.get(endpoint_id)
        if opening is None:
            opening = self._opening[endpoint_id] = asyncio.ensure_future(open_one())
            opening.add_done_callback(lambda _: self._opening.pop(endpoint_id, None))
        return await asyncio.shield(opening)  # a request that gives up leaves the others theirs

    def get(self, session_id: str, endpoint_id: str) -> HttpListener | None:
        listener = self.by_id.get(session_id)
        if listener is None or listener.endpoint_id != endpoint_id:
            return None  # another endpoint's session is as good as unknown
        return listener

    def remove(self, listener: HttpListener) -> None:
        known = self.by_id.pop(listener.session.id, None) is not None
        if self.stateless.get(listener.endpoint_id) is listener:
            del self.stateless[listener.endpoint_id]
            known = True
        if known:
            mine = [item for item in self.ended if item.endpoint_id == listener.endpoint_id]
            if len(mine) >= ENDED_KEPT:
                self.ended.remove(mine[0])
            listener.forget_stream()  # nobody can open its GET stream again
            self.ended.append(listener)
            while (
                len(self.ended) > 1
                and sum(item.session.transcript.size_bytes for item in self.ended) > ENDED_KEPT_BYTES
            ):
                self.ended.popleft()

    def of_endpoint(self, endpoint_id: str) -> list[HttpListener]:
        """The endpoint's live sessions."""
        found = [listener for listener in self.by_id.values() if listener.endpoint_id == endpoint_id]
        return found + ([self.stateless[endpoint_id]] if endpoint_id in self.stateless else [])

    def recently_ended(self, endpoint_id: str) -> list[HttpListener]:
        return [item for item in self.ended if item.endpoint_id == endpoint_id]

    def was_deleted(self, endpoint_id: str) -> bool:
        return self._deleted.get(endpoint_id) is not None

    def forget_endpoint(self, endpoint_id: str) -> None:
        """The endpoint was deleted: let its gate and its ended sessions go, and remember it."""
        self._deleted.add(endpoint_id, True)
        self.gates.pop(endpoint_id, None)
        for item in self.recently_ended(endpoint_id):
            self.ended.remove(item)
