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


def processes_in_uid_range(low: int, high: int) -> list[HostProcess]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                status = dict(line.split(":\t", 1) for line in handle.read().splitlines() if ":\t" in line)
        except OSError:
            continue  # it ended while we looked
        status = {k: v.strip() for k, v in status.items()}
        uid = int(status["Uid"].split()[0])
        if low <= uid < high:
            found.append(HostProcess(int(name), status))
    return found


def descendants(root: int) -> list[HostProcess]:
    """Every process below `root`, as /proc shows them now."""
    parents: dict[int, int] = {}
    statuses: dict[int, dict[str, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                status = dict(line.split(":\t", 1) for line in handle.read().splitlines() if ":\t" in line)
        except OSError:
            continue
        statuses[int(name)] = {k: v.strip() for k, v in status.items()}
        parents[int(name)] = int(statuses[int(name)]["PPid"])
    found, frontier = [], {root}
    while frontier:
        children = {pid for pid, parent in parents.items() if parent in frontier}
        found.extend(HostProcess(pid, statuses[pid]) for pid in children)
        frontier = children
    return found


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:  # noqa: ANN001
    """Poll `predicate` until it is true or `timeout` passes; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
