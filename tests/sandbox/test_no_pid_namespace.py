"""Where the host refuses new PID namespaces, a learner's processes must still end with their server.

With the `pid_namespace` layer, a server's exit ends its whole namespace. Without it (a container
without CAP_SYS_ADMIN; tests.support.no_pid_namespace stands in for one), whatever the server started
would live on, reparented to init, under a uid the app gives to the next learner. The attacker here is
a learner's own server.py that forks a child, has it try to leave its process group (setsid), and
leaves it running, both when the server exits by itself and when the app is killed outright.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from app.demos import MY_SERVER
from tests.support.forkserver import RawClient, dead, pipes, running_forkserver
from tests.support.procs import stat_fields, wait_until

UID_BASE = 3_410_000
RANGE = range(UID_BASE, UID_BASE + 8)  # the probe's uid, then the instances'
WRAPPER = [sys.executable, "-m", "tests.support.no_pid_namespace"]
ORPHAN_DEADLINE_S = 30.0
REPORT_TIMEOUT_S = 30.0  # a busy machine starts a learner's server in well under a second

# What each attacker's child does first: try to leave the server's process group, and say how that went.
LEAVE_GROUP = textwrap.dedent("""
    import json, os, sys, time

    def leave_group():
        try:
            os.setsid()
            answer = "left its group"
        except OSError as exc:
            answer = f"refused: errno {exc.errno}"
        os.write(1, (json.dumps({"setsid": answer}) + "\\n").encode())
""")

# Forks a child that tries to leave the server's process group, then reports on stdout (the wire):
# the child's pid and what setsid() answered. The child then sleeps for an hour; the server, once the
# child has reported (the server's exit ends the child), either exits or waits for its stdin's end.
LEAVER = textwrap.dedent("""
    reported, report = os.pipe()
    child = os.fork()
    if child == 0:
        leave_group()
        os.write(report, b".")
        time.sleep(3600)
        os._exit(0)
    os.read(reported, 1)
    os.write(1, (json.dumps({"child": child}) + "\\n").encode())
    if STAY:
        sys.stdin.read()
""")


def leaver(stay: bool) -> str:
    return f"STAY = {stay}\n{LEAVE_GROUP}{LEAVER}"


# A fork bomb that left the server's group: the child reports what setsid() answered, then forks
# without end, and so does every process it makes, each saying so with a byte on a pipe. The server
# reports the child's pid once 16 have, then waits for a line on its stdin, so that the test counts
# the bomb before the server's exit starts ending it, and exits with the bomb still forking.
BOMB = LEAVE_GROUP + textwrap.dedent("""
    said, say = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(said)
        leave_group()
        while True:
            try:
                if os.fork() == 0:
                    os.write(say, b".")
            except OSError:
                pass
    os.close(say)
    seen = 0
    while seen < 16:
        seen += len(os.read(said, 16))
    os.write(1, (json.dumps({"child": child}) + "\\n").encode())
    sys.stdin.readline()
""")


@contextmanager
def learner_server(forkserver: RawClient, source: str) -> Iterator[tuple[int, int, str, int]]:
    """Spawn my-server with `source`; yield (server pid, child pid, what setsid answered, our stdin).
    Whatever happens, the child does not outlive the test."""
    fds, (stdin, stdout, stderr) = pipes()
    memfd = os.memfd_create("server.py")
    os.write(memfd, source.encode())
    request = {"op": "spawn", "id": 1, "server": MY_SERVER, "uid": RANGE.start + 1, "runtime": "python"}
    forkserver.send(json.dumps(request).encode(), [*fds, memfd])
    for fd in (*fds, memfd):
        os.close(fd)
    child = None
    try:
        reply = forkserver.recv_op("spawned", "failed")
        assert reply["op"] == "spawned", reply
        report: dict = {}
        deadline = time.monotonic() + REPORT_TIMEOUT_S
        with os.fdopen(os.dup(stdout), "rb", buffering=0) as out:  # unbuffered: select sees every byte
            while len(report) < 2:
                ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
                assert ready, f"the learner's server reported only {report}"
                line = out.readline()
                assert line, f"the learner's server closed its stdout after {report}"
                report.update(json.loads(line))
        child = report["child"]
        yield reply["pid"], child, report["setsid"], stdin
    finally:
        if child is not None and not dead(child):
            os.kill(child, signal.SIGKILL)
        for fd in (stdin, stdout, stderr):
            os.close(fd)


def in_cgroups_of(forkserver_pid: int) -> list[int]:
    """Every process in one of that fork server's instance cgroups (playground-<its pid>/...)."""
    marker, found = f"/playground-{forkserver_pid}/", []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cgroup") as handle:
                    if marker in handle.read() and not dead(int(entry)):
                        found.append(int(entry))
            except OSError:
                pass  # gone meanwhile
    return found


def kill_in_cgroups_of(forkserver_pid: int) -> bool:
    """Kill every process in that fork server's instance cgroups; whether none is left after."""
    for pid in in_cgroups_of(forkserver_pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return not in_cgroups_of(forkserver_pid)


@contextmanager
def ending_what_outlives(forkserver_pid: int) -> Iterator[None]:
    """Whatever the test finds, no process of an instance's cgroup outlives it."""
    try:
        yield
    finally:
        assert wait_until(lambda: kill_in_cgroups_of(forkserver_pid), ORPHAN_DEADLINE_S), in_cgroups_of(
            forkserver_pid
        )


def in_group(pid: int, group: int) -> bool:
    return int(stat_fields(pid)[2]) == group


def test_the_stand_in_host_has_no_pid_namespaces_and_the_layer_says_so() -> None:
    with running_forkserver(RANGE, WRAPPER) as forkserver:
        assert forkserver.ready["layers"]["pid_namespace"].startswith("missing"), forkserver.ready


def test_what_a_server_started_ends_when_it_exits_by_itself() -> None:
    with running_forkserver(RANGE, WRAPPER) as forkserver:
        with learner_server(forkserver, leaver(stay=False)) as (server, child, setsid, _stdin):
            assert setsid.startswith("refused"), setsid  # the filter keeps it in the server's group
            exited = forkserver.recv_op("exited")
            assert exited["pid"] == server, exited
            assert wait_until(lambda: dead(child), ORPHAN_DEADLINE_S), f"{child} outlived its server"


@pytest.mark.parametrize("rootless", [False, True], ids=["root", "rootless"])
def test_without_the_filter_too_what_left_the_group_still_ends(rootless: bool) -> None:
    """With seccomp missing as well, the child may leave the server's process group. The instance's
    cgroup, which none of its processes can leave, still holds it, and as root so does the instance's
    uid, its own; rootless, every instance shares the app's uid and the cgroup alone finds it."""
    with running_forkserver(RANGE, [*WRAPPER, "--no-seccomp"], rootless=rootless) as forkserver:
        layers = forkserver.ready["layers"]
        assert layers["seccomp"].startswith("missing") and layers["cgroups"] == "ok", layers
        with learner_server(forkserver, leaver(stay=False)) as (server, child, setsid, _stdin):
            assert setsid == "left its group", setsid
            exited = forkserver.recv_op("exited")
            assert exited["pid"] == server, exited
            assert wait_until(lambda: dead(child), ORPHAN_DEADLINE_S), f"{child} outlived its server"


def test_rootless_without_the_filter_too_a_fork_bomb_that_left_the_group_ends_with_its_cgroup() -> None:
    with running_forkserver(RANGE, [*WRAPPER, "--no-seccomp"], rootless=True) as forkserver:
        pid = forkserver.ready["pid"]
        with ending_what_outlives(pid), learner_server(forkserver, BOMB) as (server, _child, setsid, stdin):
            assert setsid == "left its group", setsid
            assert len(in_cgroups_of(pid)) > 16
            os.write(stdin, b"go\n")  # the server exits now
            exited = forkserver.recv_op("exited")
            assert exited["pid"] == server, exited
            assert wait_until(lambda: not in_cgroups_of(pid), ORPHAN_DEADLINE_S), in_cgroups_of(pid)


def test_what_a_server_started_ends_when_the_app_is_killed_outright() -> None:
    with running_forkserver(RANGE, WRAPPER, own_parent=True) as forkserver:
        with learner_server(forkserver, leaver(stay=True)) as (server, child, _setsid, _stdin):
            assert in_group(child, server)
            forkserver.proc.kill()  # the app's stand-in: the fork server hears of it by its parent-death signal
            forkserver.proc.wait(30)
            assert wait_until(lambda: dead(server) and dead(child), ORPHAN_DEADLINE_S), (server, child)
