"""Percentiles, and memory and CPU readings from /proc."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable

from tests.support.procs import processes_in_uid_range


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "mean": statistics.fmean(values),
        "n": len(values),
    }


def uss_bytes(pid: int) -> int:
    """Private memory (USS) of a process, from /proc/PID/smaps_rollup."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1]) * 1024
    return total


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sandbox_total(uid_base: int, reading: Callable[[int], float]) -> float:
    """`reading` (uss_bytes, cpu_seconds) summed over every sandboxed process of the app whose
    instances take uids from `uid_base`; a process that ends while we look is left out."""
    total = 0.0
    for proc in processes_in_uid_range(uid_base, uid_base + 100_000):
        try:
            total += reading(proc.pid)
        except OSError:
            pass
    return total
