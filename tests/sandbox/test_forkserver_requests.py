"""The fork server checks every request: once the web process drops root, whoever holds the other end
of its socket may be a compromised, unprivileged process. Each hostile request gets a "failed" reply,
is logged, and the fork server goes on serving (a good spawn and signal still work afterwards)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.demos import MY_SERVER
from app.sandbox import cgroups
from tests.support.forkserver import RawClient, dead, pipes, running_forkserver
from tests.support.procs import stat_fields, wait_until

UID_BASE = 3_400_000
RANGE = range(UID_BASE, UID_BASE + 8)  # the probe's uid, then the instances'


@pytest.fixture
def forkserver() -> Iterator[RawClient]:
    with running_forkserver(RANGE) as client:
        yield client


def spawn(server: str = "demo-orders", uid: int = RANGE.start + 1, id_: int = 1) -> bytes:
    return json.dumps({"op": "spawn", "id": id_, "server": server, "uid": uid}).encode()


def spawn_instances(forkserver: RawClient, count: int) -> list[tuple[int, list[int]]]:
    """`count` demo-orders instances on the range's instance uids: each one's pid and our ends of its
    pipes (stdin's write end first; closing it lets the server exit by itself)."""
    spawned = []
    for n in range(count):
        fds, ours = pipes()
        forkserver.send(spawn(uid=RANGE.start + 1 + n, id_=n), fds)
        reply = forkserver.recv_op("spawned", "failed")
        assert reply["op"] == "spawned", reply
        for fd in fds:
            os.close(fd)
        spawned.append((reply["pid"], ours))
    return spawned


def test_hostile_requests_are_refused_and_the_fork_server_keeps_serving(forkserver: RawClient) -> None:
    good_fds, our_ends = pipes()
    with open("/etc/hostname", "rb") as plain_file:
        root_dir = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        extra_r, extra_w = os.pipe()
        program = os.memfd_create("server")
        os.write(program, b"print('hello')\n")
        own = {"op": "spawn", "id": 1, "server": MY_SERVER, "uid": RANGE.start + 1}
        # (what is wrong, the packet, the descriptors sent with it)
        hostile: list[tuple[str, bytes, list[int]]] = [
            ("junk", b"{bad json", []),
            ("not an object", b"[1, 2]", []),
            ("null", b"null", []),
            ("deep nesting", b"[" * 60_000, []),
            ("unknown op", b'{"op": "exec", "id": 1, "argv": ["/bin/sh"]}', []),
            ("unknown server", spawn(server="no-such-server"), good_fds),
            ("a server name that is not text", spawn(server=["demo-orders"]), good_fds),  # type: ignore[arg-type]
            ("uid 0", spawn(uid=0), good_fds),
            ("uid below the range", spawn(uid=RANGE.start - 1), good_fds),
            ("uid past the range", spawn(uid=RANGE.stop), good_fds),
            ("uid as text", spawn(uid=str(RANGE.start + 1)), good_fds),  # type: ignore[arg-type]
            ("uid as a bool", spawn(uid=True), good_fds),
            ("uid as a float", spawn(uid=RANGE.start + 1.5), good_fds),  # type: ignore[arg-type]
            ("an extra key", json.dumps({"op": "spawn", "id": 1, "server": "demo-orders", "uid": RANGE.start + 1, "env": {"LD_PRELOAD": "x"}}).encode(), good_fds),
            ("a warm key", json.dumps({"op": "spawn", "id": 1, "server": "demo-orders", "uid": RANGE.start + 1, "warm": False}).encode(), good_fds),
            ("no id", json.dumps({"op": "spawn", "server": "demo-orders", "uid": RANGE.start + 1}).encode(), good_fds),
            ("no descriptors", spawn(), []),
            ("two descriptors", spawn(), good_fds[:2]),
            ("four descriptors", spawn(), [*good_fds, extra_r]),
            ("a directory for stdin", spawn(), [root_dir, good_fds[1], good_fds[2]]),
            ("a plain file for stdin", spawn(), [plain_file.fileno(), good_fds[1], good_fds[2]]),
            ("my-server without a runtime", json.dumps(own).encode(), [*good_fds, program]),
            ("my-server on an unknown runtime", json.dumps({**own, "runtime": "/bin/sh"}).encode(), [*good_fds, program]),
            ("my-server's runtime as a list", json.dumps({**own, "runtime": ["node"]}).encode(), [*good_fds, program]),
            ("a runtime for a demo", json.dumps({**own, "server": "demo-orders", "runtime": "node"}).encode(), good_fds),
            ("my-server with a pipe for its file", json.dumps({**own, "runtime": "node"}).encode(), [*good_fds, extra_r]),
            ("signal to a process not ours", json.dumps({"op": "signal", "pid": os.getpid(), "signal": 9}).encode(), []),
            ("signal to pid 1", json.dumps({"op": "signal", "pid": 1, "signal": 9}).encode(), []),
            ("signal to every process", json.dumps({"op": "signal", "pid": -1, "signal": 9}).encode(), []),
        ]  # fmt: skip
        try:
            for what, packet, fds in hostile:
                forkserver.send(packet, fds)
                reply = forkserver.recv_op("failed", "spawned")
                assert reply["op"] == "failed" and reply["error"].startswith("bad request"), (what, reply)
                assert forkserver.proc.poll() is None, what
        finally:
            os.close(root_dir)
            for fd in (extra_r, extra_w, program):
                os.close(fd)
    # Every refusal was logged.
    refused = forkserver.stderr.read_text().count("fork server: refused a request")
    assert refused == len(hostile), forkserver.stderr.read_text()

    # A well-formed spawn still works, on the same descriptors ...
    forkserver.send(spawn(id_=7), good_fds)
    reply = forkserver.recv_op("spawned", "failed")
    assert reply["op"] == "spawned" and reply["id"] == 7, reply
    for fd in good_fds:
        os.close(fd)
    pid = reply["pid"]  # our ends stay open until it is killed: at EOF on stdin it would exit by itself
    # ... a signal with a bad number to our own instance is refused ...
    forkserver.send(json.dumps({"op": "signal", "pid": pid, "signal": signal.SIGSTOP}).encode())
    assert forkserver.recv_op("failed")["error"].startswith("bad request: signal 19")
    # ... and SIGKILL through the fork server ends it.
    forkserver.send(json.dumps({"op": "signal", "pid": pid, "signal": signal.SIGKILL}).encode())
    exited = forkserver.recv_op("exited")
    for fd in our_ends:
        os.close(fd)
    assert exited["pid"] == pid and exited["signal"] == signal.SIGKILL, exited
    # Once it is gone, its pid is no longer one the fork server will signal. That refusal is not
    # logged: it is what the app's stop crossing an instance's own exit looks like.
    refused = forkserver.stderr.read_text().count("fork server: refused a request")
    forkserver.send(json.dumps({"op": "signal", "pid": pid, "signal": signal.SIGKILL}).encode())
    assert "is not a live instance" in forkserver.recv_op("failed")["error"]
    assert forkserver.stderr.read_text().count("fork server: refused a request") == refused
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie_gone(pid), 30)


def _zombie_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return "Z (zombie)" not in handle.read()
    except OSError:
        return True


def test_an_instance_is_confined_before_it_is_reported_spawned(forkserver: RawClient) -> None:
    """The app hands a reported instance to a learner: it must be locked down by then, filter and all."""
    spawned = []
    for attempt in range(len(RANGE) - 1):  # every instance uid of the range
        fds, ours = pipes()
        forkserver.send(spawn(uid=RANGE.start + 1 + attempt, id_=attempt), fds)
        reply = forkserver.recv_op("spawned", "failed")
        assert reply["op"] == "spawned", reply
        with open(f"/proc/{reply['pid']}/status") as handle:  # at once: no wait, no poll
            status = dict(line.split(":", 1) for line in handle.read().splitlines())
        assert status["Seccomp"].strip() == "2", (attempt, status["Seccomp"])
        assert status["NoNewPrivs"].strip() == "1"
        assert status["CapEff"].strip() == "0000000000000000"
        assert status["Uid"].split()[0] == str(RANGE.start + 1 + attempt)
        spawned.append((reply["pid"], fds + ours))
    for pid, _ in spawned:
        forkserver.send(json.dumps({"op": "signal", "pid": pid, "signal": signal.SIGKILL}).encode())
    exited = {forkserver.recv_op("exited")["pid"] for _ in spawned}
    assert exited == {pid for pid, _ in spawned}
    for _, fds in spawned:
        for fd in fds:
            os.close(fd)


def test_the_end_of_the_socket_stops_the_fork_server_and_its_instances(forkserver: RawClient) -> None:
    """How the app stops it now (it may no longer be allowed to signal a root process)."""
    fds, ours = pipes()
    forkserver.send(spawn(), fds)
    reply = forkserver.recv_op("spawned", "failed")
    assert reply["op"] == "spawned", reply
    for fd in fds + ours:
        os.close(fd)
    forkserver.sock.close()
    assert forkserver.proc.wait(30) == 0, forkserver.stderr.read_text(errors="replace")
    assert wait_until(lambda: not os.path.exists(f"/proc/{reply['pid']}"), 30)


def parent_of(pid: int) -> int:
    return int(stat_fields(pid)[1])


def test_an_instance_is_one_process_the_fork_servers_child_and_pid_1_of_its_namespace(
    forkserver: RawClient,
) -> None:
    """Forked straight into its PID namespace: no go-between. It leads its own session and group (the
    group the app has signalled), and its exit is reported under its pid with its own status."""
    fds, (stdin, stdout, stderr) = pipes()
    forkserver.send(spawn(), fds)
    reply = forkserver.recv_op("spawned", "failed")
    for fd in fds:
        os.close(fd)
    try:
        assert reply["op"] == "spawned", reply
        assert set(reply) == {"op", "id", "pid"}
        server = reply["pid"]
        assert parent_of(server) == forkserver.proc.pid
        _state, _ppid, group, session, *_ = stat_fields(server)
        assert int(group) == int(session) == server
        with open(f"/proc/{server}/status") as handle:
            ns_pids = next(line for line in handle if line.startswith("NSpid:")).split()[1:]
        assert ns_pids == [str(server), "1"]
        os.write(stdin, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        with os.fdopen(os.dup(stdout), "rb") as out:
            assert json.loads(out.readline()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        os.close(stdin)  # end of input: the server exits 0 by itself
        stdin = -1
        exited = forkserver.recv_op("exited")
        assert exited == {"op": "exited", "pid": reply["pid"], "code": 0, "signal": None}, exited
    finally:
        for fd in (stdin, stdout, stderr):
            if fd >= 0:
                os.close(fd)


def test_a_killed_fork_server_takes_every_adopted_server_with_it(forkserver: RawClient) -> None:
    """Each server's parent-death signal is set as it locks down: a fork server killed outright (no
    chance to end them) still leaves no instance behind."""
    spawned = spawn_instances(forkserver, 3)
    servers = [pid for pid, _ in spawned]
    ours = [fd for _, mine in spawned for fd in mine]
    try:
        assert wait_until(lambda: all(parent_of(pid) == forkserver.proc.pid for pid in servers), 30)
        forkserver.proc.kill()
        forkserver.proc.wait(30)
        assert wait_until(lambda: all(dead(pid) for pid in servers), 30), servers
    finally:
        for fd in ours:
            os.close(fd)


def test_spawns_sent_back_to_back_overlap_and_each_gets_its_own_reply(forkserver: RawClient) -> None:
    """The fork server no longer waits for one instance to set up before forking the next (that wait
    made 50 learners arriving at once queue behind each other's namespaces), so replies may come in
    any order: each still names its own request, and each instance serves its own pipes."""
    count = 6
    ours_by_id: dict[int, list[int]] = {}
    for id_ in range(1, count + 1):
        fds, ours = pipes()
        forkserver.send(spawn(uid=RANGE.start + id_, id_=id_), fds)
        for fd in fds:
            os.close(fd)
        ours_by_id[id_] = ours
    replies = {}
    while len(replies) < count:
        reply = forkserver.recv_op("spawned", "failed")
        assert reply["op"] == "spawned", reply
        replies[reply["id"]] = reply
    assert sorted(replies) == list(range(1, count + 1))
    assert len({r["pid"] for r in replies.values()}) == count
    try:
        for id_, (stdin, stdout, _stderr) in ours_by_id.items():
            os.write(stdin, json.dumps({"jsonrpc": "2.0", "id": id_, "method": "ping"}).encode() + b"\n")
            with os.fdopen(os.dup(stdout), "rb") as out:
                assert json.loads(out.readline()) == {"jsonrpc": "2.0", "id": id_, "result": {}}
        for reply in replies.values():
            forkserver.send(json.dumps({"op": "signal", "pid": reply["pid"], "signal": 9}).encode())
        exited = {forkserver.recv_op("exited")["pid"] for _ in replies}
        assert exited == {r["pid"] for r in replies.values()}
    finally:
        for ours in ours_by_id.values():
            for fd in ours:
                os.close(fd)


@pytest.mark.skipif(
    not Path("/sys/fs/cgroup/pids/cgroup.procs").exists(), reason="a cgroup v1 pids hierarchy"
)
def test_a_spawn_the_kernel_refuses_fails_cleanly_and_the_fork_server_goes_on(forkserver: RawClient) -> None:
    """No process to be had (here: the pids cgroup of the fork server is full): the
    spawn gets a "failed" reply, and leaves no descriptor open and no instance cgroup behind."""
    server = forkserver.proc.pid
    parent = Path(f"{cgroups.CGROUP_MOUNT}/pids/{cgroups.PARENT_PREFIX}{server}")  # the instances'
    own = Path("/sys/fs/cgroup/pids") / Path(f"/proc/{server}/cgroup").read_text().split("pids:", 1)[
        1
    ].split()[0].lstrip("/")
    full = Path(f"/sys/fs/cgroup/pids/test-full-{os.getpid()}")
    full.mkdir()
    try:
        (full / "pids.max").write_text("1")  # the fork server, and no more
        (full / "cgroup.procs").write_text(str(server))
        descriptors = sorted(os.listdir(f"/proc/{server}/fd"))
        fds, ours = pipes()
        forkserver.send(spawn(), fds)
        for fd in fds + ours:
            os.close(fd)
        reply = forkserver.recv_op("spawned", "failed")
        assert reply["op"] == "failed" and "clone" in reply["error"], reply
        assert sorted(os.listdir(f"/proc/{server}/fd")) == descriptors
        assert not [p.name for p in parent.iterdir() if p.is_dir()]  # its instance cgroup is gone
    finally:
        (own / "cgroup.procs").write_text(str(server))
        full.rmdir()
    fds, ours = pipes()  # room again: the next spawn works
    forkserver.send(spawn(id_=2), fds)
    for fd in fds:
        os.close(fd)
    try:
        assert forkserver.recv_op("spawned", "failed")["op"] == "spawned"
    finally:
        for fd in ours:
            os.close(fd)


def test_a_socket_closed_with_replies_unread_stops_the_fork_server_cleanly(forkserver: RawClient) -> None:
    """The app may close its end with the fork server's replies still unread (SEQPACKET then resets the
    fork server's next read, or its next send, rather than ending it): that is the app's end too."""
    fds, ours = pipes()
    forkserver.send(spawn(), fds)
    forkserver.send(spawn(id_=2), fds)  # its reply, and the first one's, stay unread
    for fd in fds + ours:
        os.close(fd)
    forkserver.sock.close()
    assert forkserver.proc.wait(30) == 0, forkserver.stderr.read_text(errors="replace")


def test_signals_that_cross_the_ends_of_every_instance_at_once_are_refused_quietly(
    forkserver: RawClient,
) -> None:
    """The app stops every instance at once, and each has already ended by itself (its stdin closed)
    when the app's signal comes: every such signal is refused, and none is logged as hostile. A signal
    to a process that never was an instance still is."""
    spawned = spawn_instances(forkserver, len(RANGE) - 1)  # every instance uid: as many as may live at once
    try:
        for _, ours in spawned:
            os.close(ours[0])  # end of file on its stdin: a demo server exits by itself
        ended = {forkserver.recv_op("exited")["pid"] for _ in spawned}
        assert ended == {pid for pid, _ in spawned}
        logged = forkserver.stderr.read_text().count("fork server: refused a request")
        for pid, _ in spawned:
            forkserver.send(json.dumps({"op": "signal", "pid": pid, "signal": signal.SIGTERM}).encode())
            assert "is not a live instance" in forkserver.recv_op("failed")["error"]
        assert forkserver.stderr.read_text().count("fork server: refused a request") == logged
        forkserver.send(json.dumps({"op": "signal", "pid": os.getpid(), "signal": signal.SIGTERM}).encode())
        assert "is not a live instance" in forkserver.recv_op("failed")["error"]
        assert forkserver.stderr.read_text().count("fork server: refused a request") == logged + 1
    finally:
        for _, ours in spawned:
            for fd in ours[1:]:
                os.close(fd)
