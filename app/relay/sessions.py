"""Every live session, and the one owner of their lives: admission, attach and detach, the idle,
longest-session and reconnect-grace timers, restarts, and exactly one place that releases a process.

Both front doors (the WebSocket route and the Streamable HTTP endpoints) go through here: admit
and open, attach a listener, detach it, and the session ends on its own timers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Protocol

from app.demos import MY_SERVER
from app.metrics import Metrics
from app.protocol.jsonrpc import server_exited_error
from app.protocol.transcript import Transcript
from app.relay.admission import Admission, Owner
from app.relay.rates import HeldPaces
from app.relay.session import DEFAULT_LIMITS, Listener, RelaySession, SessionLimits
from app.sandbox.errors import CapacityError, SandboxError
from app.sandbox.process import ProcessSource, ServerProcess
from app.workspace import Program

log = logging.getLogger(__name__)

# How often the timer loop looks for idle and overlong sessions (capped by the shortest timeout / 4).
REAP_INTERVAL_S = 5.0
# Close codes: a goodbye (the session ended on a timer, or the app stops) and a server that failed.
NORMAL_CLOSURE = 1000
SERVER_ENDED = 1011
GOING_AWAY = 1001


class SharedSessions(Protocol):
    """Every replica's live sessions, where several share one database (app/fleet/)."""

    async def admitted(self, session: RelaySession) -> None:
        """Count the new session everywhere; raise CapacityError when its class is full across replicas."""
        ...

    def ended(self, session: RelaySession) -> None:
        """The session has ended here (soon forgotten everywhere)."""
        ...


class Sessions:
    def __init__(self, source: ProcessSource, admission: Admission, *, grace_s: float, idle_timeout_s: float,
                 max_session_s: float, metrics: Metrics | None = None,
                 new_transcript: Callable[[str], Transcript] | None = None,
                 own_source: Callable[[Owner], Awaitable[Program]] | None = None,
                 own_exited: Callable[[RelaySession], Awaitable[None]] | None = None,
                 shared: SharedSessions | None = None,
                 session_limits: SessionLimits = DEFAULT_LIMITS) -> None:  # fmt: skip
        self.source = source
        self.admission = admission
        self.grace_s = grace_s
        self.idle_timeout_s = idle_timeout_s
        self.max_session_s = max_session_s
        self.metrics = metrics or Metrics()
        self._new_transcript = new_transcript or (lambda server: Transcript(server=server))
        # The learner's latest saved server.py (or the starter), read whenever my-server (re)starts.
        self._own_source = own_source
        # Told when a learner's own server exits by itself, to keep a record of how (for the instructor).
        self._own_exited = own_exited
        self.shared = shared  # None on one machine (SQLite): nothing extra runs
        self.session_limits = session_limits
        self.clock = session_limits.timer_clock
        self.sessions: dict[str, RelaySession] = {}
        # Each owner's output pace, shared by their sessions: four consoles get one budget, not four;
        # and the pace their client messages share (`Owner.client_key`).
        self._owner_paces = HeldPaces(session_limits.pace)
        self._client_paces = HeldPaces(session_limits.shared_client_pace)
        self._grace: dict[str, asyncio.Task] = {}
        self._endings: set[asyncio.Task] = set()
        self._reaper: asyncio.Task | None = None

    # --- lifecycle of the whole -------------------------------------------------------------------

    def start(self) -> None:
        self._reaper = asyncio.create_task(self._reap_loop(), name="session-timers")

    async def close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        for timer in list(self._grace.values()):
            timer.cancel()
        await asyncio.gather(
            *(
                self.end(s, GOING_AWAY, "the playground is shutting down")
                for s in list(self.sessions.values())
            ),
            return_exceptions=True,
        )
        await asyncio.gather(*self._endings, return_exceptions=True)

    def count_for_class(self, class_id: str) -> int:
        return self.admission.count_for_class(class_id)

    @property
    def live(self) -> int:
        return len(self.sessions)

    # --- one session -----------------------------------------------------------------------------

    async def open(self, server: str, owner: Owner) -> RelaySession:
        """Admit a new session for `owner` and start its server. Raises CapacityError or SandboxError."""
        began = time.perf_counter()
        try:
            slot = self.admission.admit(owner)
        except CapacityError as exc:
            self.metrics.refusals.labels(exc.reason).inc()
            raise
        session = RelaySession(server, owner, slot, self.metrics,
                               new_transcript=lambda: self._new_transcript(server),
                               on_exit=self._process_exited, watch_serving=server == MY_SERVER,
                               limits=self.session_limits, owner_pace=self._owner_paces.hold(owner.key),
                               shared_client_pace=self._client_paces.hold(owner.client_key))  # fmt: skip
        try:
            if self.shared is not None:
                await self.shared.admitted(session)
            process = await self._acquire(server, owner)
        except BaseException as exc:
            if isinstance(exc, CapacityError):  # a cap across replicas (app/fleet/)
                self.metrics.refusals.labels(exc.reason).inc()
            slot.release()
            self._let_go_paces(owner)
            if self.shared is not None:
                self.shared.ended(session)
            raise
        session.run(process)
        self.sessions[session.id] = session
        self.metrics.session_start_seconds.observe(time.perf_counter() - began)
        self.metrics.sessions_started.labels(server).inc()
        # Written at the loop's next turn, once the caller has answered the handshake: a log line costs
        # as much as a tenth of a first reply, and the learner is waiting for that reply, not the line.
        line = functools.partial(log.info, "session %s started: %s", session.id, server,
                                 extra={"session": session.id, "server": server})  # fmt: skip
        asyncio.get_running_loop().call_soon(line)
        return session

    def find(self, session_id: str, owner_key: str) -> RelaySession | None:
        """The owner's own session, or None (another owner's id is as good as unknown)."""
        session = self.sessions.get(session_id)
        if session is None or session.owner.key != owner_key:
            return None
        return session

    def reattach(self, session_id: str, owner_key: str, server: str) -> RelaySession | None:
        """A dropped connection's session, if it is still waiting for this owner on this server."""
        session = self.find(session_id, owner_key)
        if session is None or session.server != server or session.closed or session.listener is not None:
            return None
        return session

    def attach(self, session: RelaySession, listener: Listener) -> None:
        timer = self._grace.pop(session.id, None)
        if timer is not None:
            timer.cancel()
        session.listener = listener
        session.detached_at = None
        session.listener_changed()

    def detach(self, session: RelaySession, listener: Listener, *, deliberate: bool = False) -> None:
        """The connection ended. A drop keeps the session for the grace period; a deliberate close
        (the client said goodbye with 1000) ends it at once, so its place is free for the next page."""
        if session.listener is not listener:
            return  # another connection has it now
        session.listener = None
        session.detached_at = self.clock.now()
        if session.closed:
            return
        if deliberate:
            self.end_soon(session, NORMAL_CLOSURE, "the client closed the connection")
        else:
            self._grace[session.id] = asyncio.create_task(self._expire(session), name=f"grace-{session.id}")

    async def restart(self, session: RelaySession) -> None:
        """End the session's process and start a fresh one with an empty transcript (same session)."""
        session.status = "starting"
        await self._notify_state(session)
        await self._release_process(session)
        session.transcript = session.new_transcript()
        try:
            process = await self._acquire(session.server, session.owner)
        except SandboxError as exc:
            session.status, session.reason = "exited", exc.message
            await self._notify_state(session)
            raise
        if session.closed:  # it ended (a timer, shutdown) while the new process started
            await self.source.release(process)
            raise SandboxError("This session has ended.", reason="ended", status_code=410)
        session.run(process)
        await self._notify_state(session)

    async def end(self, session: RelaySession, code: int, reason: str) -> None:
        """End a session for good: its place is free at once, then its process is released."""
        if self._forget(session):
            await self._finish(session, code, reason)

    def end_soon(self, session: RelaySession, code: int, reason: str) -> None:
        """As `end()`, for callers that cannot wait: the place is free before this returns."""
        if self._forget(session):
            task = asyncio.create_task(self._finish(session, code, reason), name=f"end-{session.id}")
            self._endings.add(task)
            task.add_done_callback(self._endings.discard)

    def _forget(self, session: RelaySession) -> bool:
        """The synchronous half of ending: no longer live, no longer counted. False if already ended."""
        if session.closed:
            return False
        session.closed = True
        self.sessions.pop(session.id, None)
        session.slot.release()
        self._let_go_paces(session.owner)
        if self.shared is not None:
            self.shared.ended(session)
        timer = self._grace.pop(session.id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        return True

    async def _finish(self, session: RelaySession, code: int, reason: str) -> None:
        """The other half: the one place that releases a session's process for good."""
        await self._release_process(session)
        if session.status != "exited":
            session.status, session.reason = "exited", reason
        listener = session.listener
        if listener is not None:
            await listener.on_state()
            await listener.on_ended(code, reason)
        log.info(
            "session %s ended: %s",
            session.id,
            reason,
            extra={"session": session.id, "server": session.server},
        )

    @contextlib.asynccontextmanager
    async def exercise_instance(
        self, owner: Owner, source: Program | None = None
    ) -> AsyncIterator[ServerProcess]:
        """A fresh instance of the owner's own server for one exercise run (or of `source`, the code of
        a lesson's runnable block): admitted on the exercise budget (not a console's place), and
        released when the run ends, however it ends."""
        slot = self.admission.admit_exercise(owner)
        try:
            if source is None:
                process = await self._acquire(MY_SERVER, owner)
            else:
                process = await self.source.acquire(MY_SERVER, source)
            try:
                yield process
            finally:
                await self.source.release(process)
        finally:
            slot.release()

    @contextlib.asynccontextmanager
    async def check_instance(self, program: Program) -> AsyncIterator[ServerProcess]:
        """An instance for a program of ours that reads a learner's text (the editor's syntax check of
        server.py): counted against no one's caps, since its caller runs two checks at a time in all
        (app/web/file_checks.py), and released when the check ends, however it ends."""
        process = await self.source.acquire(MY_SERVER, program)
        try:
            yield process
        finally:
            await self.source.release(process)

    # --- inside ----------------------------------------------------------------------------------

    def _let_go_paces(self, owner: Owner) -> None:
        self._owner_paces.let_go(owner.key)
        self._client_paces.let_go(owner.client_key)

    async def _acquire(self, server: str, owner: Owner) -> ServerProcess:
        if server != MY_SERVER:
            return await self.source.acquire(server)
        if self._own_source is None:
            raise SandboxError("Your own server is not available here.", reason="unknown_server",
                               status_code=404)  # fmt: skip
        return await self.source.acquire(server, await self._own_source(owner))

    async def _release_process(self, session: RelaySession) -> None:
        process = session.take_process()
        if process is not None:
            await self.source.release(process)

    async def _process_exited(self, session: RelaySession, process: ServerProcess,
                              ended: tuple[int, str] | None) -> None:  # fmt: skip
        """The server exited (or broke a limit and was killed): tell the listener; the session stays
        (a console can restart it) until its connection goes and the grace period passes."""
        status = process.poll()
        await session.drain_stderr()
        words = ended_words(status, session.stderr_tail)
        code, reason = ended or (SERVER_ENDED, f"the server {words}")
        session.status, session.exit_status, session.reason = "exited", status, reason
        self.metrics.sessions_ended.labels("exited").inc()
        log.info(
            "session %s: %s", session.id, reason, extra={"session": session.id, "server": session.server}
        )
        if session.server == MY_SERVER and self._own_exited is not None:
            try:
                await self._own_exited(session)
            except Exception:
                log.exception("session %s: its exit could not be recorded", session.id)
        await self._release_process(session)
        listener = session.listener
        if listener is not None:
            # Requests left hanging get an answer from the relay, so no client waits forever.
            for request in session.transcript.unanswered():
                await listener.on_bad_frame(server_exited_error(request.message["id"], words))
            await listener.on_state()
            await listener.on_ended(code, reason)

    async def _notify_state(self, session: RelaySession) -> None:
        if session.listener is not None:
            await session.listener.on_state()

    async def _expire(self, session: RelaySession) -> None:
        try:
            await self.clock.sleep(self.grace_s)
        except asyncio.CancelledError:
            return
        self._grace.pop(session.id, None)
        if session.listener is None:
            self.metrics.sessions_ended.labels("dropped").inc()
            await self.end(session, GOING_AWAY, f"nobody reconnected within {self.grace_s:g} s")

    async def _reap_loop(self) -> None:
        interval = min(REAP_INTERVAL_S, max(min(self.idle_timeout_s, self.max_session_s) / 4, 0.05))
        while True:
            await self.clock.sleep(interval)
            now = self.clock.now()
            self._owner_paces.forget_rested()
            self._client_paces.forget_rested()
            for session in list(self.sessions.values()):
                if now - session.last_active > self.idle_timeout_s:
                    reason = f"session ended after {self.idle_timeout_s:g} s without a message"
                elif now - session.started_at > self.max_session_s:
                    reason = f"session ended after the longest session time, {self.max_session_s:g} s"
                else:
                    continue
                log.info("reaping session %s (%s): %s", session.id, session.server, reason)
                self.metrics.sessions_ended.labels("reaped").inc()
                self.end_soon(session, NORMAL_CLOSURE, reason)


# What a runtime writes as it dies of its heap: V8's fatal error, Python's MemoryError.
OUT_OF_MEMORY_SAID = ("JavaScript heap out of memory", "MemoryError")


def ended_words(status: object, stderr: Iterable[str] = ()) -> str:
    """How the server ended, to follow "the server ": "was killed by SIGSEGV: it ran out of memory, its
    standard error says" when its last words say so (a heap that hit the instance's limit may die of
    a signal the memory's killer did not send)."""
    text = str(status)
    words = f"{'was ' if text.startswith('killed') else ''}{text}"
    if (
        text.startswith("killed")
        and ": " not in text
        and any(said in piece for piece in stderr for said in OUT_OF_MEMORY_SAID)
    ):
        words += ": it ran out of memory, its standard error says"
    return words
