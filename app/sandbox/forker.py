"""The forker: a copy of the fork server that does nothing but fork instances.

Forking from the fork server itself had two costs (bench/README.md, round 23):
- Each page the fork server wrote after a fork was still shared with the instance it had just made,
  so its own loop (the request, the cgroups, the replies) copied some 250 pages per spawn: 12,000 in
  a burst of 50, on the one process every spawn waits for.
- A fork copies an entry of the page tables for each page the parent has: 46 MiB of imports.

So the fork server forks this process once, when it is ready, and hands it every spawn over a
socket, the request's pipes and cgroup descriptors with it. Its loop is short (receive, fork,
reply), so it writes few pages after a fork; the fork server shares no page with any instance now,
so its own writes copy nothing. And the forker moves its heap onto 2 MiB pages (MADV_COLLAPSE,
Linux 6.1): a fork copies one entry for each 2 MiB the forker has not written since, not 512.

Instances are forked with CLONE_PARENT: their parent is the fork server, as when it forked them
itself. It reaps them, their parent-death signal follows it, and the pid it reports is theirs. The
forker runs none of a request's code, and lives only as long as the fork server (its own
parent-death signal, and the end of its socket). Should it die (an instance can reach it only where
the PID namespace layer is missing), the fork server forks instances itself from then on.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

from app.sandbox import kernel, own_server

HUGE_PAGE = 2 << 20
MAX_FDS = 8  # three pipes, the report pipe, a cgroup.procs per hierarchy (v1 has at most three)
MAX_REQUEST = 1024 + own_server.MAX_SOURCE_BYTES  # a small header, then a learner's file
# A fork takes a millisecond or two; a forker this late is stuck, and is ended.
REPLY_TIMEOUT_S = 30.0

# What the forker calls to fork one instance: (the request's header, the learner's file or None,
# its descriptors) -> the instance's pid. In the child it runs the instance and never returns.
Fork = Callable[[dict, "str | None", list[int]], int]


class Gone(Exception):
    """The forker is dead, or stuck and ended. `may_have_forked`: the request had reached it."""

    def __init__(self, why: str, *, may_have_forked: bool) -> None:
        super().__init__(why)
        self.may_have_forked = may_have_forked


class Forker:
    """The fork server's end: start the forker, hand it spawns, end it."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid

    @classmethod
    def start(cls, become: Callable[[socket.socket], NoReturn]) -> Forker:
        """Fork the forker; in it, `become(its socket)` clears what it must not hold and serves."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                become(theirs)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(70)
        theirs.close()
        ours.settimeout(REPLY_TIMEOUT_S)
        return cls(ours, pid)

    def fork(self, header: dict, source: str | None, fds: list[int]) -> int:
        """The pid of an instance the forker forked. OSError if its fork failed; Gone if it is dead
        or stuck (end it: `close`)."""
        message = json.dumps({**header, "own": source is not None}).encode() + b"\n"
        try:
            socket.send_fds(self.sock, [message + (source or "").encode()], fds)
        except OSError as exc:
            raise Gone(f"cannot send it a spawn: {exc}", may_have_forked=False) from exc
        try:
            reply = self.sock.recv(256)
        except OSError as exc:  # a time-out too
            raise Gone(f"no reply: {exc!r}", may_have_forked=True) from exc
        if not reply:
            raise Gone("it died during a spawn", may_have_forked=True)
        if reply.startswith(b"!"):
            raise OSError(reply[1:].decode(errors="replace"))
        return int(reply)

    def close(self) -> None:
        """End it (it may be stuck), before it is reaped: the fork server reaps it like any child."""
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def serve(sock: socket.socket, parent: int, fork: Fork, proc_fd: int | None) -> NoReturn:
    """The forker's life, after the fork server's `become` has cleared what it must not hold."""
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the fork server died before the prctl took hold
        os._exit(0)
    collapse(proc_fd)
    while True:
        data, fds, flags, _ = socket.recv_fds(sock, MAX_REQUEST, MAX_FDS)
        if not data and not fds:  # the fork server closed its end: it is leaving
            os._exit(0)
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ValueError("a spawn came truncated")
            header, _, source = data.partition(b"\n")
            job = json.loads(header)
            pid = fork(job, source.decode("utf-8") if job.pop("own") else None, fds)
        except Exception as exc:  # its fork failed (or the fork server sent what it never sends)
            reply = b"!" + str(exc).encode()
        else:
            reply = b"%d" % pid
        finally:
            for fd in fds:
                os.close(fd)
        sock.send(reply)


def collapse(proc_fd: int | None) -> int:
    """Move this process's private anonymous memory onto 2 MiB pages where the kernel can; the bytes
    moved. MADV_COLLAPSE copies what it moves, so the forker no longer shares those pages with the
    fork server; where it is refused (before Linux 6.1, or no huge page to be had) nothing changes."""
    path = "self/maps" if proc_fd is not None else "/proc/self/maps"
    with open(os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc_fd)) as maps:
        lines = maps.readlines()
    moved, refused = 0, None
    for line in lines:
        fields = line.split()
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        name = fields[5] if len(fields) > 5 else ""
        if fields[1][1] != "w" or fields[1][3] != "p" or name not in ("", "[heap]"):
            continue  # not private, anonymous and writable: code, mapped files, stacks
        start, end = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if end <= start:
            continue
        try:
            kernel.madvise(start, end - start, kernel.MADV_COLLAPSE)
            moved += end - start
        except OSError as exc:
            refused = exc
    if refused is not None and not moved:
        print(f"fork server: its forker stays on 4 KiB pages: {refused}", file=sys.stderr, flush=True)
    return moved
