"""`Cgroups.kill` ends every process of an instance's cgroup, in every session they moved to: on
this machine's cgroup v1 hierarchies, through cgroup v2's `cgroup.kill`, and on v2 without it."""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.sandbox import cgroups
from app.sandbox.cgroups import Cgroups, _Hierarchy, _open_dir
from app.sandbox.limits import Limits
from tests.support.forkserver import dead
from tests.support.procs import wait_until

DEADLINE_S = 30.0
UNIFIED = Path("/sys/fs/cgroup/unified")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root")


def spread_in(made: Cgroups, name: str, children: int) -> tuple[int, list[int]]:
    """Fork a process into the cgroup `name` that leaves our session and starts `children` more, each
    in a session of its own; return its pid and every pid, once each has left its session."""
    fds = made.create(name)
    said, say = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(said)
            cgroups.join(fds)
            os.setsid()
            os.write(say, f"{os.getpid()}\n".encode())
            for _ in range(children):
                if os.fork() == 0:
                    os.setsid()
                    os.write(say, f"{os.getpid()}\n".encode())  # a line is one atomic pipe write
                    time.sleep(3600)  # until killed
                    os._exit(0)
            time.sleep(3600)
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)
    os.close(say)
    heard = b""
    deadline = time.monotonic() + DEADLINE_S
    try:
        while heard.count(b"\n") < children + 1:
            ready, _, _ = select.select([said], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"only {heard!r} reported"
            heard += os.read(said, 4096)
    except BaseException:
        for each in [pid, *(int(line) for line in heard.split())]:
            os.kill(each, signal.SIGKILL)
        os.waitpid(pid, 0)
        made.remove(name)
        raise
    finally:
        os.close(said)
    return pid, [int(line) for line in heard.split()]


def all_end(pids: list[int]) -> bool:
    return wait_until(lambda: all(dead(p) for p in pids), DEADLINE_S)


@contextmanager
def killed_and_removed(made: Cgroups, name: str, children: int = 5) -> Iterator[list[int]]:
    """A spread of processes in `name`; whatever the test does, none outlives it, and the cgroup goes."""
    pid, pids = spread_in(made, name, children)
    try:
        yield pids
    finally:
        for each in pids:
            try:
                os.kill(each, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
        assert wait_until(lambda: made.remove(name), DEADLINE_S), f"cgroup {name} still busy"


def test_on_v1_every_process_of_the_cgroup_ends_whatever_session_it_is_in() -> None:
    if not Path("/sys/fs/cgroup/pids").is_dir():
        pytest.skip("no cgroup v1 pids hierarchy")
    made = Cgroups.setup(Limits())
    try:
        assert made.version == 1
        with killed_and_removed(made, "spread") as pids:
            assert len({os.getsid(p) for p in pids}) == len(pids)  # every one its own session
            made.kill("spread")
            assert all_end(pids), [p for p in pids if not dead(p)]
        made.kill("spread")  # gone: nothing to do, nothing raised
    finally:
        made.close()


@contextmanager
def a_v2_tree() -> Iterator[Cgroups]:
    """Our own parent cgroup in this machine's v2 tree (no controllers needed to kill)."""
    if not (UNIFIED / "cgroup.controllers").exists():
        pytest.skip("no cgroup v2 tree")
    own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
               if line.startswith("0::"))  # fmt: skip
    parent = UNIFIED / own.strip("/") / f"playground-test-{os.getpid()}"
    parent.mkdir()
    hierarchy = _Hierarchy("unified", str(parent), _open_dir(str(parent)), _open_dir(str(parent.parent)))
    made = Cgroups(2, [hierarchy])
    try:
        yield made
    finally:
        made.close()


def test_on_v2_cgroup_kill_ends_them() -> None:
    with a_v2_tree() as made, killed_and_removed(made, "spread") as pids:
        assert Path(made.hierarchies[0].path, "spread", "cgroup.kill").exists()
        made.kill("spread")
        assert all_end(pids), [p for p in pids if not dead(p)]


def test_on_v2_without_cgroup_kill_each_member_is_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on kernels before 5.14, which have no `cgroup.kill`."""
    write_at = cgroups._write_at

    def no_kill_file(dir_fd: int, path: str, value: str) -> None:
        if path.endswith("cgroup.kill"):
            raise FileNotFoundError(path)
        write_at(dir_fd, path, value)

    monkeypatch.setattr(cgroups, "_write_at", no_kill_file)
    with a_v2_tree() as made, killed_and_removed(made, "spread") as pids:
        made.kill("spread")
        assert all_end(pids), [p for p in pids if not dead(p)]
