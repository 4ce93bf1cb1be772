"""The app's end of the fork server's socket, driven by hand: a fork server started as the app starts
it (Launcher.command), optionally behind a wrapper command, and the pipes a spawn sends."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.config import PROJECT_ROOT
from app.sandbox.launcher import Launcher, child_environment
from app.sandbox.limits import Limits
from tests.support.procs import wait_until

READY_TIMEOUT_S = 120.0  # the fork server imports the SDK and every demo first; a busy machine is slow
REPLY_TIMEOUT_S = 30.0


class RawClient:
    """The app's end of the fork-server socket."""

    def __init__(
        self, sock: socket.socket, proc: subprocess.Popen, stderr: Path, ready: dict[str, Any]
    ) -> None:
        self.sock = sock
        self.proc = proc
        self.stderr = stderr
        self.ready = ready  # the fork server's first message: its layers and pid

    def send(self, packet: bytes, fds: list[int] | None = None) -> None:
        if fds:
            socket.send_fds(self.sock, [packet], fds)
        else:
            self.sock.send(packet)

    def recv(self, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        return json.loads(self.sock.recv(65536))

    def recv_op(self, *ops: str) -> dict[str, Any]:
        while (message := self.recv())["op"] not in ops:
            pass
        return message


def launcher_for(uids: range, rootless: bool = False) -> Launcher:
    """The fork server as the app starts it: its probe has uid `uids.start`, its instances the rest
    (rootless: every instance the app's uid, as for an ordinary user; docs/sandbox.md)."""
    return Launcher(limits=Limits(), sandbox=True, extra_modules=[], uid_probe=uids.start,
                    uid_range=range(uids.start + 1, uids.stop), rootless=rootless)  # fmt: skip


@contextmanager
def running_forkserver(
    uids: range, wrapper: list[str] | None = None, own_parent: bool = False, rootless: bool = False
) -> Iterator[RawClient]:
    """A fork server whose probe has uid `uids.start` and whose instances the rest of `uids`, started
    through `wrapper` (a command that execs its arguments) if given, and ended at its socket's end.
    With `own_parent`, its parent is a stand-in for the app (tests.support.forkserver_parent), which
    is then the client's `proc`: kill it to see what the fork server does when the app dies. With
    `rootless`, in rootless mode (not with `own_parent`, whose stand-in starts it as root)."""
    assert not (own_parent and rootless), "the stand-in parent starts the fork server as root"
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if own_parent:
        parent = "tests.support.forkserver_parent"
        command = [sys.executable, "-m", parent, str(theirs.fileno()), str(uids.start), str(uids.stop)]
        command += wrapper or []
    else:
        command = [*(wrapper or []), *launcher_for(uids, rootless).command(theirs.fileno())]
    with tempfile.NamedTemporaryFile(prefix="forkserver-", suffix=".log", delete=False) as log:
        stderr = Path(log.name)
        proc = subprocess.Popen(
            command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            env=child_environment(str(PROJECT_ROOT)), start_new_session=True,
        )  # fmt: skip
    theirs.close()
    ready: dict[str, Any] = {}
    try:
        ours.settimeout(READY_TIMEOUT_S)
        ready = json.loads(ours.recv(65536))
        assert ready["op"] == "ready", ready
        yield RawClient(ours, proc, stderr, ready)
    finally:
        ours.close()  # its end of file: the fork server ends every instance and exits
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
        if "pid" in ready and not wait_until(lambda: dead(ready["pid"]), 30):  # behind a stand-in parent
            os.kill(ready["pid"], signal.SIGKILL)
        stderr.unlink(missing_ok=True)


def pipes() -> tuple[list[int], list[int]]:
    """Three pipes: the ends a spawn sends (stdin read end, stdout and stderr write ends), and ours."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    return [in_r, out_w, err_w], [in_w, out_r, err_r]


def dead(pid: int) -> bool:
    """Gone, or a zombie waiting for whoever adopted it to reap it."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return "Z (zombie)" in handle.read()
    except OSError:
        return True
