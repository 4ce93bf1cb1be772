"""The session layer alone, fast: admission, attach/detach, grace, idle and age timers, restarts and
exits, each process released exactly once. A real demo server runs as a plain subprocess behind the
relay's process interface (no sandbox), so these take milliseconds per start."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from app.demos import MY_SERVER
from app.protocol.jsonrpc import parse_client_text
from app.relay.admission import Admission, Caps, Owner
from app.relay.session import DEFAULT_LIMITS, LINE_BYTES, NOT_SERVING_S, SessionLimits, line_cost
from app.relay.sessions import Sessions
from app.sandbox.errors import CapacityError, SandboxError
from app.workspace import Program
from tests.support.clocks import FrozenClock, ManualClock, VirtualClock
from tests.support.plainproc import PlainSource
from tests.support.procs import wait_until_async
from tests.support.wsclient import init_request

DEADLINE_S = 30.0
ADA = Owner("ada-0123456789abcdef", "10.0.0.1")


class Recorder:
    """A listener (what a wire mode is to a session) that records what it hears."""

    listening = True

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []  # ("line" | "entry", the line), in the order heard
        self.entries: list = []
        self.stderr: list[str] = []
        self.states = 0
        self.ended: tuple[int, str] | None = None
        self.bad: list = []
        self.changed = asyncio.Event()

    async def on_server_line(self, line: str) -> None:
        self.heard.append(("line", line))

    async def on_server_entry(self, entry) -> None:  # noqa: ANN001
        self.heard.append(("entry", entry.line))
        self.entries.append(entry)
        self.changed.set()

    async def on_stderr(self, text: str, at_ms: float) -> None:
        self.stderr.append(text)
        self.changed.set()

    async def on_state(self) -> None:
        self.states += 1
        self.changed.set()

    async def on_ended(self, code: int, reason: str) -> None:
        self.ended = (code, reason)
        self.changed.set()

    async def on_bad_frame(self, error, seq=None) -> None:  # noqa: ANN001
        self.bad.append(error)
        self.changed.set()


def make(source: PlainSource, *, total: int = 10, per_owner: int = 4, grace_s: float = 30.0,
         idle_timeout_s: float = 600.0, max_session_s: float = 3600.0, own_server: str | None = None,
         session_limits: SessionLimits = DEFAULT_LIMITS) -> Sessions:  # fmt: skip
    async def own_source(owner: Owner) -> Program:
        assert own_server is not None, "this test runs no server.py"
        return Program.python(own_server)

    sessions = Sessions(source, Admission(Caps(total, per_owner, total)), grace_s=grace_s,
                        idle_timeout_s=idle_timeout_s, max_session_s=max_session_s, own_source=own_source,
                        session_limits=session_limits)  # fmt: skip
    sessions.start()
    return sessions


async def timers_set(clock: ManualClock, count: int) -> None:
    """Wait until `count` timers wait on `clock`: one just set sleeps from the time it first runs."""
    assert await wait_until_async(lambda: clock.sleepers == count), f"{clock.sleepers} timers, not {count}"


@pytest.fixture
async def source():
    source = PlainSource()
    yield source
    for process in source.acquired:  # whatever a failing test left behind
        process.kill()
        await process.exited.wait()
    source.remove_files()


async def test_a_message_goes_through_and_the_reply_reaches_the_listener(source: PlainSource) -> None:
    sessions = make(source)
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    frame = parse_client_text(json.dumps(init_request()), 1 << 20)
    await session.send(frame)  # type: ignore[arg-type]
    assert await wait_until_async(lambda: listener.entries), "the initialize reply"
    assert listener.entries[0].answers == 1
    assert session.transcript.revision == "2025-06-18"
    await sessions.close_all()
    assert source.released == source.acquired


async def test_each_server_line_is_heard_raw_before_it_is_an_entry(source: PlainSource) -> None:
    # The MCP wire forwards the raw line first: a client waits for neither the parse nor the transcript.
    sessions = make(source)
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await session.send(parse_client_text(json.dumps(init_request()), 1 << 20))  # type: ignore[arg-type]
    await session.send(parse_client_text('{"jsonrpc":"2.0","id":2,"method":"ping"}', 1 << 20))  # type: ignore[arg-type]
    assert await wait_until_async(lambda: len(listener.entries) == 2), "both replies"
    lines = [entry.line for entry in listener.entries]
    assert listener.heard == [
        ("line", lines[0]),
        ("entry", lines[0]),
        ("line", lines[1]),
        ("entry", lines[1]),
    ]
    await sessions.close_all()


async def test_admission_counts_until_the_session_ends_and_names_the_cap(source: PlainSource) -> None:
    sessions = make(source, per_owner=2)
    first = await sessions.open("demo-orders", ADA)
    await sessions.open("demo-orders", ADA)
    with pytest.raises(CapacityError) as refused:
        await sessions.open("demo-orders", ADA)
    assert refused.value.reason == "owner_full" and "2 consoles" in refused.value.message
    assert len(source.acquired) == 2  # a refused session never starts a process
    await sessions.end(first, 1000, "done")
    third = await sessions.open("demo-orders", ADA)
    assert third.status == "ready"
    await sessions.close_all()


async def test_a_failed_start_gives_its_place_back(source: PlainSource) -> None:
    sessions = make(source, per_owner=1)
    with pytest.raises(SandboxError):
        await sessions.open("no-such-server", ADA)
    assert sessions.admission.total == 0
    await sessions.open("demo-orders", ADA)
    await sessions.close_all()


async def test_a_drop_keeps_the_session_for_the_grace_period_then_ends_it(source: PlainSource) -> None:
    clock = ManualClock()
    sessions = make(source, grace_s=30, session_limits=SessionLimits(timer_clock=clock))
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    sessions.detach(session, listener)  # a dropped connection, not a goodbye
    await timers_set(clock, 2)  # the reaper's and the grace period's
    clock.advance(29)
    assert sessions.reattach(session.id, ADA.key, "demo-orders") is session
    sessions.attach(session, listener)  # came back in time: the timer is off
    await timers_set(clock, 1)
    clock.advance(300)  # long past the first drop's deadline (and touched: not idle)
    session.touch()
    assert not session.closed
    sessions.detach(session, listener)
    await timers_set(clock, 2)
    clock.advance(29.9)
    await asyncio.sleep(0)
    assert not session.closed and sessions.admission.total == 1
    clock.advance(0.2)
    assert await wait_until_async(lambda: session.closed), "the grace period to end the session"
    assert sessions.admission.total == 0 and session.id not in sessions.sessions
    assert await wait_until_async(lambda: source.acquired[0].poll() is not None), "the process to exit"
    assert source.released == [source.acquired[0]]
    await sessions.close_all()


async def test_a_goodbye_ends_the_session_at_once(source: PlainSource) -> None:
    sessions = make(source, grace_s=3600)
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    sessions.detach(session, listener, deliberate=True)
    assert sessions.admission.total == 0  # the place is free before the process has stopped
    assert await wait_until_async(lambda: source.released), "the release"
    assert sessions.reattach(session.id, ADA.key, "demo-orders") is None
    await sessions.close_all()


async def test_another_owner_cannot_reattach_or_find_a_session(source: PlainSource) -> None:
    sessions = make(source)
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    sessions.detach(session, listener)
    thief = Owner("eve-0123456789abcdef", "10.0.0.1")
    assert sessions.reattach(session.id, thief.key, "demo-orders") is None
    assert sessions.find(session.id, thief.key) is None
    assert sessions.find(session.id, ADA.key) is session
    await sessions.close_all()


async def test_an_idle_session_is_ended_with_a_reason(source: PlainSource) -> None:
    clock = ManualClock()
    sessions = make(source, idle_timeout_s=60, session_limits=SessionLimits(timer_clock=clock))
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await session.send(parse_client_text(json.dumps(init_request(1)), 1 << 20))  # type: ignore[arg-type]
    assert await wait_until_async(lambda: listener.entries), "the reply"
    for _ in range(4):  # a message now and then keeps it going, however long it lasts
        await timers_set(clock, 1)
        clock.advance(50)
        session.touch()
    await timers_set(clock, 1)  # the reaper has looked, and waits again
    assert listener.ended is None
    clock.advance(61)  # and a minute without one ends it
    assert await wait_until_async(lambda: listener.ended is not None), "the idle timer"
    assert listener.ended == (1000, "session ended after 60 s without a message")
    assert session.status == "exited" and sessions.admission.total == 0
    assert await wait_until_async(lambda: len(source.released) == 1), "the release"
    await sessions.close_all()


async def test_a_busy_session_still_ends_at_the_longest_session_time(source: PlainSource) -> None:
    clock = ManualClock()
    sessions = make(
        source, idle_timeout_s=60, max_session_s=600, session_limits=SessionLimits(timer_clock=clock)
    )
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    ping = parse_client_text('{"jsonrpc":"2.0","id":1,"method":"ping"}', 1 << 20)
    for _ in range(11):  # busy, never idle: a message every 50 s, up to 550 s
        await timers_set(clock, 1)
        clock.advance(50)
        session.touch()
    await timers_set(clock, 1)  # the reaper has looked, and waits again
    assert listener.ended is None
    clock.advance(51)
    assert await wait_until_async(lambda: listener.ended is not None), "the longest-session timer"
    assert listener.ended == (1000, "session ended after the longest session time, 600 s")
    with pytest.raises(SandboxError):
        await session.send(ping)  # type: ignore[arg-type]
    await sessions.close_all()


# A learner's server that runs and never serves: a forgotten `mcp.run()`.
SILENT = """
import time
while True:
    time.sleep(60)
"""


async def test_a_server_that_never_answers_is_said_not_to_serve_once_its_time_is_up(
    source: PlainSource,
) -> None:
    clock = ManualClock()
    sessions = make(source, own_server=SILENT, session_limits=SessionLimits(timer_clock=clock))
    session = await sessions.open(MY_SERVER, ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await timers_set(clock, 1)  # the reaper: nothing is watched before the server is sent a message
    await session.send(parse_client_text(json.dumps(init_request(1)), 1 << 20))  # type: ignore[arg-type]
    await timers_set(clock, 2)
    clock.advance(NOT_SERVING_S - 0.1)
    await asyncio.sleep(0)
    assert session.reason is None and listener.states == 0
    clock.advance(0.2)
    assert await wait_until_async(lambda: listener.states == 1), "the state frame that says so"
    assert session.status == "ready" and "has not started serving" in (session.reason or "")
    assert "mcp.run()" in (session.reason or "")
    await sessions.close_all()


async def test_a_restart_releases_the_old_process_once_and_starts_a_new_transcript(
    source: PlainSource,
) -> None:
    sessions = make(source)
    session = await sessions.open("demo-orders", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    old_transcript = session.transcript
    await session.send(parse_client_text(json.dumps(init_request()), 1 << 20))  # type: ignore[arg-type]
    await sessions.restart(session)
    assert source.released == [source.acquired[0]] and len(source.acquired) == 2
    assert session.transcript is not old_transcript and session.status == "ready"
    assert sessions.admission.total == 1  # the same session, the same place
    await sessions.close_all()
    assert source.released == source.acquired


async def test_an_exit_answers_waiting_requests_and_releases_once(source: PlainSource) -> None:
    sessions = make(source)
    session = await sessions.open("exits", ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await session.send(parse_client_text('{"jsonrpc":"2.0","id":7,"method":"ping"}', 1 << 20))  # type: ignore[arg-type]
    assert await wait_until_async(lambda: listener.ended is not None), "the exit to be reported"
    assert listener.ended[0] == 1011 and "3" in listener.ended[1]
    assert listener.stderr == ["leaving now"]  # its last words arrived before the end was told
    assert [e.id for e in listener.bad] == [7]  # the waiting request got an answer from the relay
    assert session.status == "exited" and session.exit_status is not None
    assert source.released == [source.acquired[0]]
    assert sessions.admission.total == 1  # it holds its place until its connection goes
    sessions.detach(session, listener, deliberate=True)
    assert await wait_until_async(lambda: session.closed), "the end"
    assert sessions.admission.total == 0
    assert source.released == [source.acquired[0]]  # ending it did not release the process again
    await sessions.close_all()


async def test_a_session_ended_during_a_restart_does_not_keep_the_new_process(source: PlainSource) -> None:
    sessions = make(source)
    session = await sessions.open("demo-orders", ADA)
    started, proceed = asyncio.Event(), asyncio.Event()
    acquire = source.acquire

    async def held_acquire(server: str):  # noqa: ANN202
        started.set()
        await proceed.wait()  # the new process starts only once the session has ended
        return await acquire(server)

    source.acquire = held_acquire  # type: ignore[method-assign]
    restarting = asyncio.create_task(sessions.restart(session))
    await started.wait()
    sessions.end_soon(session, 1000, "ended on a timer")
    proceed.set()
    with pytest.raises(SandboxError):
        await restarting
    await sessions.close_all()
    assert len(source.acquired) == 2 and source.released == source.acquired  # both processes went back


async def test_a_clients_messages_are_read_at_the_sessions_pace_and_a_restart_keeps_the_debt(
    source: PlainSource,
) -> None:
    clock = FrozenClock()
    sessions = make(source, session_limits=SessionLimits(client_read_bytes_per_s=1000, clock=clock))
    session = await sessions.open("demo-orders", ADA)
    # A second's worth at once, and a message that goes past it still goes: its door then waits.
    assert [session.client_read(600), session.client_read(600)] == [0.0, pytest.approx(0.2)]
    assert session.client_owed() == pytest.approx(0.2)
    clock.t += 0.2
    assert session.client_owed() == 0.0
    await session.client_turn(500)  # work for the client (a transcript page) waits its turn first
    assert clock.slept == [pytest.approx(0.5)]
    await sessions.restart(session)
    assert session.client_owed() == pytest.approx(0.5)  # a new process, the same client: the same debt
    await sessions.close_all()


async def test_one_address_outside_classes_shares_one_pace_for_its_messages_whatever_its_identities(
    source: PlainSource,
) -> None:
    """From the side of a visitor with many identities: ten of them at one address, four consoles
    each, sending as fast as each session's pace let them, took 74% of the web process's core. Now
    the sessions of an address outside classes share twice one session's pace, whatever learner each
    is; a class member's sessions share their own (the class is counted by learner, not address)."""
    clock = FrozenClock()
    sessions = make(source, session_limits=SessionLimits(client_read_bytes_per_s=1000, clock=clock))
    here, elsewhere = "198.51.100.66", "198.51.100.7"
    mallory = [await sessions.open("demo-orders", Owner(name, here)) for name in ("m1", "m2", None)]
    assert [mallory[0].client_read(1000), mallory[1].client_read(1000)] == [0.0, 0.0]  # two seconds' worth
    assert mallory[2].client_read(600) == pytest.approx(0.3)  # the third identity waits for the address
    assert mallory[0].client_owed() == pytest.approx(0.3)  # ... and so do the others
    neighbour = await sessions.open("demo-orders", Owner("ada", elsewhere))
    assert neighbour.client_read(1000) == 0.0  # another address: its own pace
    student = [await sessions.open("demo-orders", Owner("cy", here, class_id="c1")) for _ in range(3)]
    classmate = await sessions.open("demo-orders", Owner("dee", here, class_id="c1"))
    assert [student[0].client_read(1000), student[1].client_read(1000)] == [0.0, 0.0]
    assert student[2].client_read(100) == pytest.approx(0.05)  # one learner's consoles share theirs
    assert classmate.client_read(1000) == 0.0  # behind the same address, a classmate has their own
    clock.t += 0.3
    assert mallory[0].client_owed() == 0.0
    await sessions.close_all()


# Writes one notification of known cost as fast as it can, once it has been sent a line.
NOTICE = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}' % (
    "x" * 10_000
)
FLOODER = f"""
import sys
sys.stdin.readline()
while True:
    sys.stdout.write({NOTICE!r} + "\\n")
    sys.stdout.flush()
"""


async def test_a_server_writing_as_fast_as_it_can_is_read_at_the_pace(source: PlainSource) -> None:
    rate, clock = 100_000, VirtualClock()
    limits = SessionLimits(read_bytes_per_s=rate, clock=clock)
    sessions = make(source, own_server=FLOODER, session_limits=limits)
    began = clock.now()
    session = await sessions.open(MY_SERVER, ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await session.send(parse_client_text(json.dumps(init_request()), 1 << 20))  # type: ignore[arg-type]
    cost = line_cost(NOTICE, 5)  # two braces, three commas

    def read_at_the_pace() -> bool:
        # A second's worth at once, then the rate, at every look: never a line more.
        read = len(listener.entries)
        assert read * cost <= rate * (1 + clock.now() - began) + cost, (read, clock.now() - began)
        return read >= 25

    assert await wait_until_async(read_at_the_pace), "the flood, paced, goes on"
    assert clock.now() - began >= (24 * cost - rate) / rate  # the 25th line waited its turn
    assert all(entry.line == NOTICE for entry in listener.entries)
    await sessions.close_all()
    assert source.released == source.acquired


MANY_VALUES = """
import sys
sys.stdin.readline()
print('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"first"}}', flush=True)
print('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":[' + ",".join(["[]"] * 200) + ']}}', flush=True)
sys.stdin.readline()
"""


async def test_a_server_line_of_too_many_values_ends_the_session_unread(source: PlainSource) -> None:
    sessions = make(source, own_server=MANY_VALUES, session_limits=SessionLimits(max_items=100))
    session = await sessions.open(MY_SERVER, ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await session.send(parse_client_text(json.dumps(init_request()), 1 << 20))  # type: ignore[arg-type]
    assert await wait_until_async(lambda: listener.ended is not None), "the session's end"
    assert listener.ended == (
        1011,
        "The server wrote a line of more than 100 JSON values; the session was ended.",
    )
    assert session.status == "exited" and session.reason == listener.ended[1]
    # The line before it was relayed; the long one reached the transcript not at all.
    assert [entry.message["params"]["data"] for entry in listener.entries] == ["first"]
    assert [entry.direction for entry in session.transcript.entries] == ["client", "server"]
    assert len(source.released) == 1
    await sessions.close_all()


class Failing(Recorder):
    """A listener with a bug: it fails on the first server line and the first stderr text it hears."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: list[str] = []

    async def on_server_entry(self, entry) -> None:  # noqa: ANN001
        if "entry" not in self.failed:
            self.failed.append("entry")
            raise ValueError("a bug in a listener")
        await super().on_server_entry(entry)

    async def on_stderr(self, text: str, at_ms: float) -> None:
        if "stderr" not in self.failed:
            self.failed.append("stderr")
            raise ValueError("a bug in a listener")
        await super().on_stderr(text, at_ms)


async def test_a_listeners_failure_is_logged_and_the_server_is_still_read(
    source: PlainSource, caplog: pytest.LogCaptureFixture
) -> None:
    sessions = make(source)
    session = await sessions.open("demo-orders", ADA)
    listener = Failing()
    sessions.attach(session, listener)
    for n in (1, 2):
        await session.send(parse_client_text(json.dumps(init_request(n)), 1 << 20))  # type: ignore[arg-type]
    assert await wait_until_async(lambda: listener.entries), "the second reply, after the first failed"
    assert listener.failed == ["entry"] and listener.entries[0].answers == 2
    assert "the listener failed" in caplog.text

    session = await sessions.open("exits", ADA)  # says so on stderr, then exits with status 3
    listener = Failing()
    sessions.attach(session, listener)
    await session.send(parse_client_text(json.dumps(init_request()), 1 << 20))  # type: ignore[arg-type]
    assert await wait_until_async(lambda: listener.ended is not None), "the exit, heard"
    assert listener.ended is not None and "status 3" in listener.ended[1]
    assert listener.failed == ["stderr"]
    await sessions.close_all()


STDERR_FLOODER = """
import sys
sys.stdin.readline()
while True:
    sys.stderr.write("e" * 65535 + "\\n")
    sys.stderr.flush()
"""


async def test_a_server_writing_stderr_as_fast_as_it_can_is_read_at_the_same_pace(
    source: PlainSource,
) -> None:
    rate, clock = 200_000, VirtualClock()
    limits = SessionLimits(read_bytes_per_s=rate, clock=clock)
    sessions = make(source, own_server=STDERR_FLOODER, session_limits=limits)
    began = clock.now()
    session = await sessions.open(MY_SERVER, ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    await session.send(parse_client_text(json.dumps(init_request()), 1 << 20))  # type: ignore[arg-type]

    def read_at_the_pace() -> bool:
        # Each piece is charged as it is read: what was heard before the last piece was paid for.
        heard = sum(map(len, listener.stderr))
        before_last = heard - (len(listener.stderr[-1]) if listener.stderr else 0)
        assert before_last <= rate * (1 + clock.now() - began), (heard, clock.now() - began)
        return heard >= 1_000_000

    assert await wait_until_async(read_at_the_pace), "the flood, paced, goes on"
    # A megabyte heard, less a second's worth at once and the two pieces not yet paid for.
    assert clock.now() - began >= (1_000_000 - 2 * 65536 - rate) / rate
    await sessions.close_all()
    assert source.released == source.acquired


# `x` lines as fast as it can, from the start: each costs the relay a line's handling, not one byte.
X_FLOODER = """
import sys
while True:
    sys.stdout.write("x\\n")
"""


def _steady(count: Callable[[], int]) -> Callable[[], bool]:
    """A predicate true once `count` has not moved over its last five looks."""
    seen: list[int] = []

    def steady() -> bool:
        seen.append(count())
        return len(seen) > 5 and seen[-1] == seen[-6]

    return steady


async def test_a_session_nobody_hears_is_read_no_further_than_a_small_buffer(source: PlainSource) -> None:
    limits = SessionLimits(unheard_bytes=10 * LINE_BYTES)
    sessions = make(source, own_server=X_FLOODER, session_limits=limits)
    session = await sessions.open(MY_SERVER, ADA)
    listener = Recorder()
    listener.listening = False  # attached, as an HTTP session is, with no request waiting
    sessions.attach(session, listener)
    read = lambda: len(session.transcript.entries)  # noqa: E731
    assert await wait_until_async(lambda: read() > 0, timeout=DEADLINE_S), "the server starts writing"
    assert await wait_until_async(_steady(read), timeout=DEADLINE_S, interval=0.05)
    assert 0 < read() <= 10, read()
    listener.listening = True  # a request or a GET stream
    session.listener_changed()
    assert await wait_until_async(lambda: read() > 100), "read again once heard"
    await sessions.close_all()


async def test_one_owners_sessions_share_one_output_pace(source: PlainSource) -> None:
    rate = 100 * LINE_BYTES  # a hundred `x` lines a second, past a first second's worth
    clock = VirtualClock()
    limits = SessionLimits(read_bytes_per_s=rate, clock=clock)
    sessions = make(source, own_server=X_FLOODER, session_limits=limits)
    began = clock.now()
    floods = [await sessions.open(MY_SERVER, ADA) for _ in range(3)]
    for session in floods:
        sessions.attach(session, Recorder())

    def one_budget() -> bool:
        # No more than one budget has paid for, at every look: three would read three times as much.
        read = sum(len(session.transcript.entries) for session in floods)
        assert read <= rate * (1 + clock.now() - began) / LINE_BYTES + 3, (read, clock.now() - began)
        return clock.now() - began > 3

    assert await wait_until_async(one_budget, timeout=DEADLINE_S), "three virtual seconds of floods"
    await sessions.close_all()


async def test_a_server_that_keeps_flooding_is_stopped_and_told_why(source: PlainSource) -> None:
    clock = VirtualClock()
    limits = SessionLimits(read_bytes_per_s=100 * LINE_BYTES, flood_s=1.0, clock=clock)
    sessions = make(source, own_server=X_FLOODER, session_limits=limits)
    began = clock.now()
    session = await sessions.open(MY_SERVER, ADA)
    listener = Recorder()
    sessions.attach(session, listener)
    assert await wait_until_async(lambda: listener.ended is not None), "the flooder's end"
    # Stopped once it has waited on its pace for flood_s, give or take a line's wait (0.01 s here).
    assert limits.flood_s - 0.02 <= clock.now() - began <= limits.flood_s + 0.02, clock.now() - began
    assert listener.ended == (1011, limits.flooded())
    assert session.status == "exited" and session.reason == limits.flooded()
    assert "faster than the playground reads output" in session.reason
    await sessions.close_all()
    assert source.released == source.acquired
