"""The fork server's forker (app/sandbox/forker.py): a copy of it that only forks instances.

From outside, as an operator sees them through /proc: instances stay the fork server's children, the
fork server stops copying its own pages at every spawn, the forker holds none of the fork server's
ends, and when it dies the fork server forks instances itself. Then the forker's loop alone, with
a stand-in for the fork, for the requests it refuses and what it closes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.sandbox import forker
from tests.support.forkserver import RawClient, dead, forker_of, pipes, running_forkserver
from tests.support.procs import stat_fields, wait_until

UID_BASE = 3_460_000
RANGE = range(UID_BASE, UID_BASE + 24)  # the probe's uid, then the instances'
SPAWNS = 8


@pytest.fixture
def forkserver() -> Iterator[RawClient]:
    with running_forkserver(RANGE) as client:
        yield client


def minor_faults(pid: int) -> int:
    return int(stat_fields(pid)[7])


def spawn(client: RawClient, n: int) -> tuple[int, list[int]]:
    """Spawn demo-orders with uid number `n` of the range: its pid and our ends of its pipes."""
    fds, ours = pipes()
    request = {"op": "spawn", "id": n, "server": "demo-orders", "uid": RANGE.start + 1 + n, "warm": False}
    client.send(json.dumps(request).encode(), fds)
    for fd in fds:
        os.close(fd)
    reply = client.recv_op("spawned", "failed")
    assert reply["op"] == "spawned", reply
    return reply["pid"], ours


def ping(ours: list[int], id_: int) -> dict:
    stdin, stdout, _ = ours
    os.write(stdin, json.dumps({"jsonrpc": "2.0", "id": id_, "method": "ping"}).encode() + b"\n")
    with os.fdopen(os.dup(stdout), "rb") as out:
        return json.loads(out.readline())


def faults_per_spawn(client: RawClient, first: int, opened: list[int]) -> float:
    """The fork server's page faults per spawn, over SPAWNS spawns while every instance lives."""
    before = minor_faults(client.proc.pid)
    for n in range(first, first + SPAWNS):
        opened.extend(spawn(client, n)[1])
    return (minor_faults(client.proc.pid) - before) / SPAWNS


def test_the_forker_forks_every_instance_as_the_fork_servers_child_and_dies_with_it(
    forkserver: RawClient,
) -> None:
    server = forkserver.proc.pid
    forker_pid = forker_of(server)
    assert forker_pid != server
    instances = []
    try:
        for n in range(3):
            pid, ours = spawn(forkserver, n)
            instances.append((pid, ours))
            assert ping(ours, n) == {"jsonrpc": "2.0", "id": n, "result": {}}
            assert int(stat_fields(pid)[1]) == server  # CLONE_PARENT: reaped and reported by it
        forkserver.proc.kill()
        forkserver.proc.wait(30)
        assert wait_until(lambda: dead(forker_pid) and all(dead(pid) for pid, _ in instances), 30)
    finally:
        for _, ours in instances:
            for fd in ours:
                os.close(fd)


def test_the_fork_server_no_longer_copies_its_pages_at_each_spawn_and_does_once_its_forker_dies(
    forkserver: RawClient,
) -> None:
    """Forking itself, every page its loop writes was shared with the instance just forked: some 250
    copies a spawn. With the forker it shares none with any instance. Once the forker is killed,
    the fork server says so, forks instances itself, and they work."""
    opened: list[int] = []
    try:
        opened.extend(spawn(forkserver, SPAWNS * 2)[1])  # a first spawn may grow its heap
        with_forker = faults_per_spawn(forkserver, 0, opened)
        forker_pid = forker_of(forkserver.proc.pid)
        os.kill(forker_pid, signal.SIGKILL)
        assert wait_until(lambda: not os.path.exists(f"/proc/{forker_pid}"), 30)  # reaped by the fork server
        assert wait_until(lambda: "its forker is gone" in forkserver.stderr.read_text(), 30)
        itself = faults_per_spawn(forkserver, SPAWNS, opened)
        assert with_forker < 40 < 120 < itself, (with_forker, itself)
        pid, ours = spawn(forkserver, SPAWNS * 2 + 1)
        opened.extend(ours)
        assert ping(ours, 7) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert int(stat_fields(pid)[1]) == forkserver.proc.pid
    finally:
        for fd in opened:
            os.close(fd)


def test_the_forker_holds_none_of_the_fork_servers_ends(forkserver: RawClient) -> None:
    """Not the app's socket (the app must see the fork server's death at once), and no pipe's write
    end (the instances' life pipe must reach end of file when the fork server dies)."""
    forker_pid = forker_of(forkserver.proc.pid)
    app_end = os.fstat(forkserver.sock.fileno()).st_ino
    held = []
    for fd in os.listdir(f"/proc/{forker_pid}/fd"):
        target = os.readlink(f"/proc/{forker_pid}/fd/{fd}")
        with open(f"/proc/{forker_pid}/fdinfo/{fd}") as info:
            flags = int(next(line for line in info if line.startswith("flags:")).split()[1], 8)
        held.append((target, flags & os.O_ACCMODE))
    sockets = [target for target, _ in held if target.startswith("socket:")]
    assert len(sockets) == 1, held  # its own end of the fork server's
    # Our end and the fork server's are one socket pair: the fork server's end is the other inode.
    assert f"socket:[{app_end}]" not in sockets
    assert not [t for t, mode in held if t.startswith("pipe:") and mode == os.O_WRONLY], held


THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def collapse_available() -> bool:
    """MADV_COLLAPSE: Linux 6.1, with transparent huge pages not switched off."""
    release = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2])
    return release >= (6, 1) and THP.exists() and "[never]" not in THP.read_text()


@pytest.mark.skipif(not collapse_available(), reason="no MADV_COLLAPSE here (Linux 6.1, huge pages on)")
def test_the_forkers_heap_moves_onto_huge_pages(forkserver: RawClient) -> None:
    forker_pid = forker_of(forkserver.proc.pid)

    def huge_kib() -> int:
        with open(f"/proc/{forker_pid}/smaps_rollup") as rollup:
            return int(next(line for line in rollup if line.startswith("AnonHugePages:")).split()[1])

    assert wait_until(lambda: huge_kib() >= 8 << 10, 30), huge_kib()


# --- the forker's loop alone ----------------------------------------------------------------


def test_the_forkers_loop_replies_with_each_pid_or_why_and_closes_what_it_was_sent() -> None:
    """Forked here with a stand-in fork that keeps what it was sent: a learner's 64 KiB file arrives
    whole, a failed fork and a request the fork server never sends get "!why", every descriptor is
    closed after its request, and the end of the socket ends the loop."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    report_read, report_write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the forker, with a stand-in fork
        try:
            ours.close()
            os.close(report_read)

            def fork(header: dict, source: str | None, fds: list[int]) -> int:
                if header["server"] == "fails":
                    raise OSError(11, "clone: Resource temporarily unavailable")
                kinds = [stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in fds]
                report = [header, len(source or ""), fds, kinds]
                os.write(report_write, json.dumps(report).encode() + b"\n")
                return 4000 + len(fds)

            forker.serve(theirs, parent, fork, None)
        finally:
            os._exit(70)
    theirs.close()
    os.close(report_write)
    reports = os.fdopen(report_read, "rb")
    fds, mine = pipes()
    try:
        handle = forker.Forker(ours, pid)
        assert handle.fork({"server": "demo-orders", "uid": 1, "warm": True}, None, fds) == 4003
        header, length, _, kinds = json.loads(reports.readline())
        assert header == {"server": "demo-orders", "uid": 1, "warm": True} and length == 0 and all(kinds)
        assert (
            handle.fork({"server": "my-server", "uid": 2, "warm": False}, "é" * (32 << 10), fds[:1]) == 4001
        )
        header, length, _, _ = json.loads(reports.readline())
        assert header["server"] == "my-server" and length == 32 << 10
        with pytest.raises(OSError, match="clone: Resource temporarily unavailable"):
            handle.fork({"server": "fails", "uid": 3, "warm": False}, None, [])
        ours.send(b"not json\n")
        assert ours.recv(256).startswith(b"!")
        # What it was sent is closed after each request: it holds no end of those pipes.
        for fd in fds:
            os.close(fd)
        os.close(mine[0])
        assert wait_until(lambda: _no_pipe_shared_with(pid, mine[1:]), 10)
        ours.close()  # the fork server leaving: the loop ends
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        reports.close()
        for fd in mine[1:]:
            os.close(fd)
        if not dead(pid):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _no_pipe_shared_with(pid: int, ours: list[int]) -> bool:
    """`pid` holds no end of the pipes `ours` belong to."""
    inodes = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in ours}
    try:
        held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except FileNotFoundError:
        return True
    return not inodes & held


def test_a_forker_that_is_gone_or_stuck_is_reported_so() -> None:
    """Before its spawn reached it (the fork server may fork itself) or after (it may have forked:
    the spawn fails, so that no two servers share a learner's pipes)."""
    sleeper = os.fork()
    if sleeper == 0:
        signal.pause()
        os._exit(0)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.settimeout(0.2)  # as REPLY_TIMEOUT_S, shortened
    handle = forker.Forker(ours, sleeper)
    try:
        with pytest.raises(forker.Gone) as stuck:
            handle.fork({"server": "demo-orders", "uid": 1, "warm": False}, None, [])
        assert stuck.value.may_have_forked
        theirs.close()
        with pytest.raises(forker.Gone) as gone:
            handle.fork({"server": "demo-orders", "uid": 1, "warm": False}, None, [])
        assert not gone.value.may_have_forked
        handle.close()  # ends the stuck one
        _, status = os.waitpid(sleeper, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    finally:
        if not dead(sleeper):
            os.kill(sleeper, signal.SIGKILL)
            os.waitpid(sleeper, 0)
