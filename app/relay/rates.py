"""How often one key (a client address, a session's owner) may do something: at most `limit` times in
a sliding window. Used for new identities per address (app/web/learner.py) and new sessions per owner
(admission). And how much one key may add up in a sliding window (`KeyedBudget`): the bytes of files
each address saves (app/web/workspace.py).

Keys that have gone quiet are forgotten once many are remembered, so a visitor with many addresses
cannot make the table grow without bound.

And how fast one session's work may go on (`Pace`): a server's output is read no faster than the web
process may spend on one session.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Protocol

# Keys remembered before the quiet ones are forgotten.
KEYS_KEPT = 10_000


class KeyedRate:
    def __init__(self, limit: int, window_s: float, keys_kept: int = KEYS_KEPT) -> None:
        self.limit = limit
        self.window_s = window_s
        self.keys_kept = keys_kept
        self._times: dict[str, deque[float]] = {}

    def wait(self, key: str) -> float | None:
        """None when `key` may go once more now (and that is counted), else the seconds until it may."""
        now = time.monotonic()
        times = self._times.get(key)
        if times is None:
            if len(self._times) >= self.keys_kept:
                self._forget_quiet(now)
            times = self._times[key] = deque()
        while times and now - times[0] > self.window_s:
            times.popleft()
        if len(times) >= self.limit:
            return self.window_s - (now - times[0])
        times.append(now)
        return None

    def refund(self, key: str) -> None:
        """Take back the latest time `key` was counted (what it did came to nothing)."""
        times = self._times.get(key)
        if times:
            times.pop()

    def __len__(self) -> int:
        return len(self._times)

    def _forget_quiet(self, now: float) -> None:
        for key in [k for k, t in self._times.items() if not t or now - t[-1] > self.window_s]:
            del self._times[key]


class KeyedBudget:
    """At most `limit` units (bytes, say) per key in any `window_s` seconds."""

    def __init__(self, limit: float, window_s: float, keys_kept: int = KEYS_KEPT) -> None:
        self.limit = limit
        self.window_s = window_s
        self.keys_kept = keys_kept
        self._spent: dict[str, tuple[deque[tuple[float, float]], list[float]]] = {}  # key -> (uses, [sum])

    def spend(self, key: str, units: float) -> float | None:
        """None when `key` may spend `units` more now (and they are counted), else the seconds until
        enough of what it spent has aged out of the window."""
        now = time.monotonic()
        found = self._spent.get(key)
        if found is None:
            if len(self._spent) >= self.keys_kept:
                self._forget_quiet(now)
            found = self._spent[key] = (deque(), [0.0])
        uses, total = found
        while uses and now - uses[0][0] > self.window_s:
            total[0] -= uses.popleft()[1]
        if total[0] + units <= self.limit:
            uses.append((now, units))
            total[0] += units
            return None
        if units > self.limit:
            return self.window_s
        freed = total[0] + units - self.limit  # what must age out first
        for at, spent in uses:
            freed -= spent
            if freed <= 0:
                return max(self.window_s - (now - at), 0.0)
        return self.window_s

    def __len__(self) -> int:
        return len(self._spent)

    def _forget_quiet(self, now: float) -> None:
        for key in [
            k for k, (uses, _) in self._spent.items() if not uses or now - uses[-1][0] > self.window_s
        ]:
            del self._spent[key]


class Clock(Protocol):
    """What a pace reads the time from and waits on: the real one (`MONOTONIC`), or a test's
    (tests/support/clocks.py), so that a test of a pace need not wait out its seconds."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


MONOTONIC: Clock = MonotonicClock()


class Pace:
    """Work paced to `rate` units a second on average, after a first `burst` of them: a token bucket
    that may go into debt by one piece of work, so that a piece bigger than the burst still goes."""

    def __init__(self, rate: float, burst: float, clock: Clock = MONOTONIC) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._tokens = burst
        self._at = clock.now()

    def charge(self, units: float) -> float:
        """Count `units` of work done now; the seconds to wait before doing more (0.0: none)."""
        now = self.clock.now()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate) - units
        self._at = now
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    @property
    def rested(self) -> bool:
        """Whether the burst has come back whole: a pace in this state is the same as a new one."""
        return self._tokens + (self.clock.now() - self._at) * self.rate >= self.burst

    async def turn(self, units: float) -> None:
        """Count `units` of work now and wait until the pace has paid for them, before doing it: work
        asked for side by side queues up."""
        if wait := self.charge(units):
            await self.clock.sleep(wait)
