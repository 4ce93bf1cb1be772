"""A relay session: one server process at a time, its transcript, and the pumps that read its output.

The session's life (admission, timers, restarts, ending, the one release of its process) belongs to
`Sessions` (sessions.py); this object only relays. Whoever is attached (a Listener, one of the wire
modes) hears every line, stderr chunk and state change.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from app.metrics import Metrics
from app.protocol.jsonrpc import MAX_ITEMS, Frame, FrameError, json_items, parse_json
from app.protocol.transcript import PARSED_ITEM_BYTES, Entry, Maker, Transcript
from app.relay.admission import Owner, Slot
from app.relay.rates import MONOTONIC, Clock, Joint, Pace, Paced
from app.sandbox.errors import OutputLimitError, SandboxError
from app.sandbox.launcher import ExitStatus
from app.sandbox.process import ServerProcess

log = logging.getLogger(__name__)


class Listener(Protocol):
    # Each line the server writes, as it arrives and before anything else is done with it; then the
    # same line as a transcript entry. A wire that forwards lines unchanged does it in the first.
    async def on_server_line(self, line: str) -> None: ...
    async def on_server_entry(self, entry: Entry) -> None: ...
    # Whether anyone hears the server now (an HTTP session's listener: only while a request waits or
    # its GET stream is open). A session nobody hears is read no further than a small buffer.
    @property
    def listening(self) -> bool: ...
    async def on_stderr(self, text: str, at_ms: float) -> None: ...
    async def on_state(self) -> None: ...
    async def on_ended(self, code: int, reason: str) -> None: ...
    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None: ...


# The stderr pieces a session keeps (the newest), for the record of how its server ended.
STDERR_TAIL_PIECES = 40
# After a process exits, how long its last stderr lines may take to arrive before it is released.
STDERR_DRAIN_S = 1.0
# A learner's own server that has not written a line this long after it was first sent one has not
# started serving (a forgotten `mcp.run()`, a loop before it): the learner is told. Generous: a real
# server answers in milliseconds, and a slow first tool call is rare in an exercise.
NOT_SERVING_S = 5.0
NOT_SERVING = (
    "your server has not answered anything in {seconds:g} s since it was sent its first message: it is "
    "running but has not started serving. Does server.py end with `mcp.run()` (server.ts with `await "
    "server.connect(new StdioServerTransport())`), and does nothing before it wait forever?"
)
# How fast one learner's server output is read by default, all their sessions together (and so one
# session's), in bytes a second with each line and stderr piece counted as `LINE_BYTES` more and
# each JSON value as `PARSED_ITEM_BYTES` more (the setting `server_read_bytes_per_s`). A server
# writing lines of 3000 values as fast as it could took 29% of the web process's core unpaced, 1% at
# this pace; one writing `x` lines, 4%; a demo server's answers come to kilobytes a second.
READ_BYTES_PER_S = 4 * 1024 * 1024
# What handling one line (or stderr piece) costs beyond its bytes: reading, classifying, recording,
# counting and framing an `x` line took the web process 38 us on the envelope wire, as long as 3.2 KiB
# of a long line's bytes (20 us on the mcp wire). At least a JSON value's cost, whatever the line.
LINE_BYTES = 4096
# A server whose output kept its session waiting on the pace more than FLOOD_SHARE of the time, for
# FLOOD_S (all of it), is flooding: it is stopped. A legitimate burst (a big resource) waits seconds.
FLOOD_S = 10.0
FLOOD_SHARE = 0.5
# What is read of a session nobody hears (no WebSocket attached; an HTTP session with no request
# waiting and no GET stream open) before its pumps stop reading until someone does, counted as
# `output_cost` counts (64 `x` lines, or about 256 KiB of long ones): its server then waits on its
# full pipes. Beyond this, only the pipe reader's own buffer (twice the longest line) is read from them.
UNHEARD_BYTES = 256 * 1024
# Work done without a pace's wait gives the loop a turn this often (in the pace's units, about 0.7 ms
# of work), so a burst of output never holds every other session up for long.
YIELD_BYTES = 64 * 1024
# How fast one session's client messages are read by default, counted the same way (the setting
# `client_read_bytes_per_s`). A console sending valid 1 MiB messages at the frame rate limit took 17%
# of the web process's core (the echo of each, a parse, a check); four of them, one visitor's cap,
# 66%. A learner types messages of a few kilobytes.
CLIENT_READ_BYTES_PER_S = 1024 * 1024
# ... and all the sessions of one learner in a class, or of one address outside classes (whatever its
# identities: ten of them, forty consoles, each at the pace of one, held 74% of the core and others'
# pings at p99 420 ms), together at this many times that.
CLIENT_READ_SHARED = 2
TOO_MANY_ITEMS = "The server wrote a line of more than {limit} JSON values; the session was ended."
FLOODED = (
    "The server kept writing faster than the playground reads output (each line counts as {line} bytes "
    "more than its text; {rate} a second for all of one learner's servers) for {seconds:g} s, "
    "and was stopped. Does it print in a loop? Restart it once it does not."
)


@dataclass(frozen=True)
class SessionLimits:
    """What one session may cost the web process. Its server's output: a line's JSON values (the same
    limit a client's message has), and how fast it is read, each line and stderr piece counted as
    `output_cost` says, by the session and by its owner's sessions together; how long it may go on
    writing faster (`flood_s`); and how much of it is read while nobody hears it (`unheard_bytes`).
    Its client's messages: how fast they are read, counted as `line_cost` says, on every door the
    session has had (a console that reconnects finds its debt where it left it). A server that writes
    faster waits on its full pipe, a client on its unread socket or its unanswered request, and every
    other session goes on meanwhile. The paces keep time by `clock`; the timers of the session and of
    `Sessions` (idle, grace, longest session, not serving) by `timer_clock`."""

    max_items: int = MAX_ITEMS
    read_bytes_per_s: int = READ_BYTES_PER_S
    client_read_bytes_per_s: int = CLIENT_READ_BYTES_PER_S
    flood_s: float = FLOOD_S
    unheard_bytes: int = UNHEARD_BYTES
    clock: Clock = MONOTONIC
    timer_clock: Clock = MONOTONIC

    def pace(self) -> Pace:
        """A session's output pace, or its owner's (all their sessions'): the same figure."""
        # Up to a second's worth at once.
        return Pace(self.read_bytes_per_s, burst=self.read_bytes_per_s, clock=self.clock)

    def flood_pace(self) -> Pace:
        """Seconds a session's output waits on its pace: FLOOD_SHARE of the time goes on for ever, all
        of it for `flood_s`."""
        return Pace(FLOOD_SHARE, burst=self.flood_s * (1 - FLOOD_SHARE), clock=self.clock)

    def flooded(self) -> str:
        return FLOODED.format(line=LINE_BYTES, rate=_size(self.read_bytes_per_s), seconds=self.flood_s)

    def client_pace(self) -> Pace:
        return Pace(self.client_read_bytes_per_s, burst=self.client_read_bytes_per_s, clock=self.clock)

    def shared_client_pace(self) -> Pace:
        """The pace of the client messages of one learner's sessions together (or of one address's,
        outside classes): `Sessions` holds it, by `Owner.client_key`."""
        rate = self.client_read_bytes_per_s * CLIENT_READ_SHARED
        return Pace(rate, burst=rate, clock=self.clock)


DEFAULT_LIMITS = SessionLimits()


def _size(count: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def line_cost(line: str, items: int) -> int:
    """What reading a line costs, in bytes of a plain string (a value takes as long as 128 of them)."""
    return len(line) + PARSED_ITEM_BYTES * items


def output_cost(text: str, items: int = 0) -> int:
    """What a server's line or stderr piece costs the relay: `line_cost` and its handling."""
    return LINE_BYTES + len(text) + PARSED_ITEM_BYTES * items


# Called by the stdout pump when the process has exited: (session, process, why we ended it or None).
ExitHandler = Callable[["RelaySession", ServerProcess, "tuple[int, str] | None"], Awaitable[None]]


class RelaySession:
    def __init__(self, server: str, owner: Owner, slot: Slot, metrics: Metrics, *,
                 new_transcript: Callable[[], Transcript], on_exit: ExitHandler,
                 watch_serving: bool = False, limits: SessionLimits = DEFAULT_LIMITS,
                 owner_pace: Pace | None = None, shared_client_pace: Pace | None = None) -> None:  # fmt: skip
        self.id = secrets.token_urlsafe(12)
        self.server = server
        self.owner = owner
        self.slot = slot
        self.metrics = metrics
        self.new_transcript = new_transcript
        self.transcript = new_transcript()
        self.process: ServerProcess | None = None
        self.status = "starting"
        self.exit_status: ExitStatus | None = None
        self.reason: str | None = None
        # The end of what the server wrote to stderr (its traceback, often): kept for its exit's record.
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_PIECES)
        self.listener: Listener | None = None
        self.closed = False
        self.started_at = self.last_active = limits.timer_clock.now()
        self.detached_at: float | None = None
        self._on_exit = on_exit
        self._pumps: list[asyncio.Task] = []
        self.watch_serving = watch_serving  # a learner's own server: say so if it never serves
        self.answered = False  # the current process has written at least one stdout line
        self._serving_watch: asyncio.Task | None = None
        self.limits = limits
        self._pace = limits.pace()  # the session's, across restarts
        self._owner_pace = owner_pace or limits.pace()  # shared by the owner's sessions (Sessions)
        self._flood = limits.flood_pace()  # across restarts: a restarted flooder is stopped sooner
        self._flooded: tuple[int, str] | None = None  # why the current process was stopped, if it flooded
        self._unyielded = 0  # output work done since the pumps last gave the loop a turn
        self._unheard = 0  # output read since anyone last heard the session (`output_cost`)
        self._heard = asyncio.Event()  # set when someone may hear it again
        # Across restarts and reconnects; with the pace its owner's other sessions share, when given.
        own = limits.client_pace()
        self.client_pace: Paced = Joint(own, shared_client_pace) if shared_client_pace else own

    @property
    def learner(self) -> str | None:
        return self.owner.learner

    def state_frame(self) -> dict[str, Any]:
        return {
            "type": "state",
            "session": self.id,
            "server": self.server,
            "status": self.status,
            "exit_status": self.exit_status.to_json() if self.exit_status else None,
            "reason": self.reason,
            "revision": self.transcript.revision,
        }

    def client_read(self, cost: int) -> float:
        """Count `cost` (`line_cost`'s units) of a client's message read now; the seconds the door it
        came by waits before it reads the next (0.0: none)."""
        return self.client_pace.charge(cost)

    async def client_turn(self, cost: int) -> None:
        """Work for the session's client (`cost` as in `client_read`), done at its pace: charged now
        and waited for before it is done, so that work asked for side by side queues up."""
        await self.client_pace.turn(cost)

    def client_owed(self) -> float:
        """The seconds before a client's next message may be read."""
        return self.client_pace.charge(0)

    def touch(self) -> None:
        self.last_active = self.limits.timer_clock.now()

    @property
    def heard(self) -> bool:
        """Whether anyone hears the server now (see `Listener.listening`)."""
        return self.listener is not None and self.listener.listening

    def listener_changed(self) -> None:
        """A listener came or went, or began or ceased listening: a paused pump may read again."""
        if self.heard:
            self._unheard = 0
            self._heard.set()

    def run(self, process: ServerProcess) -> None:
        """Relay `process` from now on (a fresh one: after open or restart)."""
        self.process = process
        self.status, self.exit_status, self.reason = "ready", None, None
        self.answered = False
        self._flooded = None
        self.touch()
        self._pumps = [
            asyncio.create_task(self._pump_stdout(process), name=f"stdout-{self.id}"),
            asyncio.create_task(self._pump_stderr(process), name=f"stderr-{self.id}"),
        ]

    async def drain_stderr(self, timeout_s: float = STDERR_DRAIN_S) -> None:
        """After an exit: let the stderr pump read what the process wrote last (a traceback, often)."""
        pumps = [task for task in self._pumps[1:] if task is not asyncio.current_task()]
        if pumps:
            await asyncio.wait(pumps, timeout=timeout_s)

    def take_process(self) -> ServerProcess | None:
        """Stop relaying and hand the process back to whoever releases it (Sessions)."""
        process, self.process = self.process, None
        me = asyncio.current_task()
        for task in [*self._pumps, self._serving_watch]:
            if task is not None and task is not me:
                task.cancel()
        self._pumps, self._serving_watch = [], None
        return process

    async def send(self, frame: Frame, by: Maker | None = None) -> Entry:
        """Record a validated client message and write its line to the server's stdin (`by`: made by
        the console as an Apps host, for itself or for an app)."""
        process = self.process
        if process is None or self.status != "ready":
            raise SandboxError("The server is not running.", reason="not_running", status_code=409)
        entry = self.transcript.add_client(frame.line, frame.message, by)  # before the write: replies pair up
        self.touch()
        await process.write_line(frame.line)
        self._sent(process)
        return entry

    def _sent(self, process: ServerProcess) -> None:
        self.metrics.client_messages.inc()
        if self.watch_serving and not self.answered and self._serving_watch is None:
            self._serving_watch = asyncio.create_task(self._watch_serving(process), name=f"serving-{self.id}")

    async def _watch_serving(self, process: ServerProcess) -> None:
        """Tell the listener when a learner's server, sent a message, has not answered within the time."""
        try:
            await self.limits.timer_clock.sleep(NOT_SERVING_S)
        except asyncio.CancelledError:
            return
        if self.process is process and not self.answered and process.poll() is None:
            self.reason = NOT_SERVING.format(seconds=NOT_SERVING_S)
            log.info("session %s: not serving", self.id, extra={"session": self.id, "server": self.server})
            if self.listener is not None:
                await self.listener.on_state()

    def _charge(self, cost: int) -> float:
        """Count output work done now against the session's pace and its owner's; the seconds the
        pumps wait before reading more."""
        return max(self._pace.charge(cost), self._owner_pace.charge(cost))

    async def _paid(self, process: ServerProcess, cost: int) -> bool:
        """Charge output work done, and wait while it is owed: the server's pipe fills meanwhile, and
        it waits. False, with the process killed, once it has kept the session waiting too long."""
        if not (wait := self._charge(cost)):
            self._unyielded += cost
            if self._unyielded >= YIELD_BYTES:
                self._unyielded = 0
                await asyncio.sleep(0)
            return True
        self._unyielded = 0
        clock = self.limits.clock
        began = clock.now()
        await clock.sleep(wait)
        # The time it really waited: on a busy loop a sleep runs late, and the next one is shorter.
        if self._flood.charge(clock.now() - began):
            self._flooded = self._flooded or (1011, self.limits.flooded())
            log.info("session %s: flooded", self.id, extra={"session": self.id, "server": self.server})
            process.kill()
            return False
        return True

    async def _may_read(self, process: ServerProcess) -> bool:
        """Before a pump reads more: once the unheard buffer is spent, wait for someone to hear. False
        once the process has been stopped for flooding (the other pump found it)."""
        while not self.heard and self._unheard >= self.limits.unheard_bytes:
            self._heard.clear()
            await self._heard.wait()
        return self._flooded is None

    def _read(self, text: str) -> None:
        self._unheard = 0 if self.heard else self._unheard + output_cost(text)

    async def _pump_stdout(self, process: ServerProcess) -> None:
        ended: tuple[int, str] | None = None
        try:
            while await self._may_read(process) and (line := await process.read_line()) is not None:
                self._read(line)
                self.touch()
                self.answered = True
                if self.listener is not None:
                    await self._tell(self.listener.on_server_line(line))
                items = json_items(line, self.limits.max_items)
                if items > self.limits.max_items:  # not parsed: that is what it would cost
                    ended = (1011, TOO_MANY_ITEMS.format(limit=self.limits.max_items))
                    process.kill()
                    break
                message, error = parse_json(line)
                entry = self.transcript.add_server(line, None if error else message)
                self.metrics.server_messages.inc()
                if self.listener is not None:
                    await self._tell(self.listener.on_server_entry(entry))
                if not await self._paid(process, output_cost(line, items)):
                    break
        except OutputLimitError as exc:
            ended = (1011, exc.message)
            process.kill()
        except asyncio.CancelledError:
            return
        await process.exited.wait()
        if self.process is process:
            await self._on_exit(self, process, ended or self._flooded)

    async def _tell(self, heard: Awaitable[None]) -> None:
        """Let the listener hear something from the server. A listener's failure is a bug of ours: it
        is logged, and the server goes on being read (else nothing it wrote would reach anyone again,
        not even its exit)."""
        try:
            await heard
        except Exception:
            log.exception("session %s: the listener failed", self.id,
                          extra={"session": self.id, "server": self.server})  # fmt: skip

    async def _pump_stderr(self, process: ServerProcess) -> None:
        try:
            while await self._may_read(process) and (text := await process.read_stderr()) is not None:
                self._read(text)
                self.stderr_tail.append(text)
                if self.listener is not None:
                    await self._tell(self.listener.on_stderr(text, self.transcript.now_ms()))
                if not await self._paid(process, output_cost(text)):  # the same paces as its lines
                    return
        except asyncio.CancelledError:
            return
