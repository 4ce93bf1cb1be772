"""The endpoint's one instance for 2026-07-28 requests, which every client of the endpoint shares
(docs/http.md, "2026-07-28: stateless requests"). A stateless request names no session, and the server
behind it speaks stdio, where nothing says which request a notification is about; so the relay keeps
what each client may tell apart:

- Each client numbers its requests its own way (from 0 or 1): an id, or a progressToken, that a
  waiting request has is given another on the way to the server (`relay-N`), and its own on the way
  back, in the answer, in progress and in a subscription's notifications.
- One request at a time goes to the server, subscriptions/listen aside: what the server says while it
  works (its log messages, its own requests) belongs to that request, and goes to its stream only.
  A subscription's notifications go to the listen request they name.
- A client that closes its stream cancels its request (2026-07-28 transports: the server treats a
  disconnect as cancellation); the relay, the server's stdio client, tells the server so. A posted
  notifications/cancelled is refused: it cannot say whose request it means.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from app.protocol.jsonrpc import INVALID_REQUEST, Frame, FrameError, to_line
from app.protocol.transcript import Entry
from app.relay.httptransport import REPLY_LIMIT_S
from app.relay.httpwire import CANCELLED, LISTEN, HttpListener, Waiter, key_of
from app.relay.session import RelaySession
from app.relay.wire import WireLimits
from app.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

# How long a request waits for its turn (as long as a reply may take: the JSON one's limit).
TURN_WAIT_S = REPLY_LIMIT_S
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
REFUSED_CANCEL = (
    "On this endpoint's 2026-07-28 instance, which all its clients share, a request is cancelled by "
    "closing its stream: a notifications/cancelled cannot say whose request it means."
)


class SharedListener(HttpListener):
    shared = True

    def __init__(self, session: RelaySession, endpoint_id: str, limits: WireLimits) -> None:
        super().__init__(session, endpoint_id, limits)
        self._fresh = 0
        self._turn = asyncio.Lock()
        self._current: Waiter | None = None  # the request that has the turn
        self._telling: set[asyncio.Task] = set()  # cancellations on their way to the server

    async def send_other(self, frame: Frame) -> FrameError | None:
        if frame.message.get("method") == CANCELLED:
            return FrameError(INVALID_REQUEST, "cancel by closing the stream", REFUSED_CANCEL)
        return await super().send_other(frame)

    # --- one request at a time -------------------------------------------------------------------

    async def _admit(self, waiter: Waiter) -> None:
        if waiter.method == LISTEN:
            return  # open for as long as its client listens: it holds no turn
        await asyncio.wait_for(self._turn.acquire(), TURN_WAIT_S)  # TimeoutError: another holds it
        self._current = waiter

    def _done(self, waiter: Waiter) -> None:
        if self._current is waiter:
            self._current = None
            self._turn.release()

    def _meanwhile(self, entry: Entry) -> Waiter | None:
        return self._current

    def _closed(self, waiter: Waiter) -> None:
        if self._waiting.get(key_of(waiter.id)) is not waiter:
            return  # answered already
        del self._waiting[key_of(waiter.id)]
        self._done(waiter)
        task = asyncio.ensure_future(self._tell_cancelled(waiter))
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    async def _tell_cancelled(self, waiter: Waiter) -> None:
        params: dict[str, Any] = {"requestId": waiter.id, "reason": "its client closed the stream"}
        message = {"jsonrpc": "2.0", "method": CANCELLED, "params": params}
        try:
            await self.session.send(Frame(message, to_line(message), 8))
        except SandboxError:
            pass  # the server has gone: nothing to cancel

    # --- each client's ids -----------------------------------------------------------------------

    def _as_sent(self, frame: Frame, waiter: Waiter) -> Frame:
        """The request with an id, and a progressToken, that no waiting request of another client has."""
        tokens = {key_of(other.token) for other in self._waiting.values() if other.token is not None}
        if not self.waiting_for(waiter.id) and (waiter.token is None or key_of(waiter.token) not in tokens):
            return frame
        message = dict(frame.message)
        if self.waiting_for(waiter.id):
            waiter.id = message["id"] = self._fresh_value(self.waiting_for)
        if waiter.token is not None and key_of(waiter.token) in tokens:
            waiter.token = self._fresh_value(lambda value: key_of(value) in tokens)
            params = message["params"] = dict(message["params"])
            params["_meta"] = {**params["_meta"], "progressToken": waiter.token}
        return Frame(message, to_line(message), frame.items)

    def _fresh_value(self, taken: Callable[[Any], bool]) -> str:
        while True:
            self._fresh += 1
            value = f"relay-{self._fresh}"
            if not taken(value):
                return value
