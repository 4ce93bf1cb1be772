"""The web process's heap: what start-up leaves is set aside from the collector (`settle_heap`), and
memory freed after a burst of big messages goes back to the system (`HeapTrim`). Both run in the
real server process only (`python -m app`), never in a test that builds the app in-process.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import time
from collections.abc import Callable

import anyio

log = logging.getLogger(__name__)

# The collector's thresholds for the web process (Python's defaults: 700, 10, 10). Each message
# allocates dozens of short-lived containers; with 700, collections come so often that objects
# living a few milliseconds (a message in flight) reach the oldest generation, whose full
# collections then run every few seconds. At 1500 sessions (bench/capacity.py): 7 full collections
# (1.3 s of stalls) against 1 with these, and p99 295 ms against 55 ms.
GC_THRESHOLDS = (50_000, 20, 10)


def settle_heap() -> int:
    """Move every object alive after start-up (modules, lessons, templates, the SDK's schemas) out of
    the collector's reach, and collect less often; how many objects that set aside. A full collection
    walks every tracked object and stops the event loop meanwhile: with 1250 sessions live they took
    150-430 ms, each a stall for every learner at once. Objects made later (sessions, messages) are
    collected as before."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return gc.get_freeze_count()  # counted by walking them all (~10 ms here): once, not per scrape


# How often the resident size is looked at, and how far past what start-up left it may be before the
# allocator's free pages are handed back.
TRIM_EVERY_S = 30.0
TRIM_ABOVE_BYTES = 64 << 20
# A trim that gives back less than this is not logged.
TRIM_WORTH_LOGGING = 16 << 20


def resident_bytes() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator keeps no such memory, or no trim
        return None


def trim() -> bool:
    """Hand the allocator's free pages back to the system (glibc's malloc_trim); False where there is
    no such call. ctypes lets go of the interpreter's lock meanwhile: it may run in a worker thread."""
    call = _malloc_trim()
    return call is not None and bool(call(0))


class HeapTrim:
    """Python frees a big message's memory into the C allocator, which keeps it for the next: forty
    consoles sending 1 MiB messages left the web process at 427 MiB resident with 5 MiB of objects
    alive, and each repeat of it more. While the resident size is TRIM_ABOVE_BYTES past what start-up
    left, every look hands the free pages back (427 to 121 MiB, in about 10 ms of a worker thread)."""

    def __init__(self, every_s: float = TRIM_EVERY_S, above: int = TRIM_ABOVE_BYTES) -> None:
        self.every_s = every_s
        self.above = above
        self.baseline = resident_bytes()

    async def look(self) -> None:
        resident = resident_bytes()
        if resident - self.baseline < self.above:
            return
        began = time.perf_counter()
        await anyio.to_thread.run_sync(trim)
        after = resident_bytes()
        if resident - after >= TRIM_WORTH_LOGGING:
            log.info("heap trimmed: %d -> %d MiB resident in %.1f ms", resident >> 20, after >> 20,
                     (time.perf_counter() - began) * 1000)  # fmt: skip

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            await self.look()
