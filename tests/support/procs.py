"""Looking at sandboxed processes from the host, the way an operator would: through /proc."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass
class HostProcess:
    pid: int
    status: dict[str, str]

    @property
    def uids(self) -> list[int]:
        return [int(x) for x in self.status["Uid"].split()]

    @property
    def nspids(self) -> list[int]:
        return [int(x) for x in self.status["NSpid"].split()]

    @property
    def zombie(self) -> bool:
        return self.status.get("State", "").startswith("Z")

    def ns(self, kind: str) -> str | None:
        try:
            return os.readlink(f"/proc/{self.pid}/ns/{kind}")
        except OSError:
            return None


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the command name (which may hold spaces): state, ppid, pgrp, session, ..."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rpartition(")")[2].split()


def all_processes() -> list[HostProcess]:
    """Every process /proc shows now (one that ends while we look is left out)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        status = {k: v.strip() for k, v in (line.split(":\t", 1) for line in lines if ":\t" in line)}
        found.append(HostProcess(int(name), status))
    return found


def processes_in_uid_range(low: int, high: int) -> list[HostProcess]:
    return [p for p in all_processes() if low <= p.uids[0] < high]


def descendants(root: int) -> list[HostProcess]:
    """Every process below `root`, as /proc shows them now."""
    processes = all_processes()
    found, frontier = [], {root}
    while frontier:
        children = [p for p in processes if int(p.status["PPid"]) in frontier]
        found.extend(children)
        frontier = {p.pid for p in children}
    return found


async def wait_until_async(predicate, timeout: float = 30.0, interval: float = 0.01) -> bool:  # noqa: ANN001
    """As `wait_until`, for a test's event loop: polls without blocking it."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
    return True


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:  # noqa: ANN001
    """Poll `predicate` until it is true or `timeout` passes; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


# A pipe's default capacity on Linux, and Python's buffer for a piped stdout (one write(2) of it):
# what a writer may have handed the kernel beyond what its reader read.
PIPE_BYTES = 64 * 1024
STDIO_BUFFER_BYTES = 8192


def waiting_to_write(pid: int, fd: int = 1) -> bool:
    """Whether the process sleeps in a write(2) to `fd` (its system call, from /proc/PID/syscall)."""
    import pyseccomp

    write = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, "write")
    try:
        with open(f"/proc/{pid}/syscall") as handle:
            number, target, *_ = handle.read().split()
    except (OSError, ValueError):  # gone, or running ("running" has no arguments)
        return False
    return number == str(write) and int(target, 16) == fd


def bytes_written(pid: int) -> int:
    """What the process has written with write(2) and its relatives so far (`wchar`)."""
    with open(f"/proc/{pid}/io") as handle:
        fields = dict(line.split(": ") for line in handle.read().splitlines())
    return int(fields["wchar"])
