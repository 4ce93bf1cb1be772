"""Percentiles and memory readings."""

from __future__ import annotations

import statistics


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
