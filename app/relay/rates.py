"""How often one key (a client address, a session's owner) may do something: at most `limit` times in
a sliding window. Used for new identities per address (app/web/learner.py) and new sessions per owner
(admission). And how much one key may add up in a sliding window (`KeyedBudget`): the bytes of files
each address saves (app/web/workspace.py).

Each table keeps at most so many keys (`Recent`): one more forgets the key used longest ago, so a
visitor with many addresses can neither make a table grow without bound nor make each new key cost
a look at every other.

And how fast one session's work may go on (`Pace`): a server's output is read no faster than the web
process may spend on one session.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

# Keys a table remembers at most.
KEYS_KEPT = 10_000

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most `kept` values by key, in the order they were last used; making one more forgets the
    key used longest ago (a quiet one first). One with more addresses than `kept` can make an active
    key go too, which gains it nothing its own addresses did not have (each counts on its own)."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._values: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._values.get(key)
        if value is not None:
            self._values.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> V:
        while len(self._values) >= max(self.kept, 1):
            self._values.popitem(last=False)
        self._values[key] = value
        return value

    def discard(self, key: K) -> None:
        self._values.pop(key, None)

    def __len__(self) -> int:
        return len(self._values)


class KeyedRate:
    def __init__(self, limit: int, window_s: float, keys_kept: int = KEYS_KEPT) -> None:
        self.limit = limit
        self.window_s = window_s
        self._times: Recent[str, deque[float]] = Recent(keys_kept)

    def wait(self, key: str) -> float | None:
        """None when `key` may go once more now (and that is counted), else the seconds until it may."""
        now = time.monotonic()
        times = self._times.get(key)
        if times is None:
            times = self._times.add(key, deque())
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


class KeyedBudget:
    """At most `limit` units (bytes, say) per key in any `window_s` seconds."""

    def __init__(self, limit: float, window_s: float, keys_kept: int = KEYS_KEPT) -> None:
        self.limit = limit
        self.window_s = window_s
        self._spent: Recent[str, tuple[deque[tuple[float, float]], list[float]]] = Recent(
            keys_kept
        )  # (uses, [sum])

    def spend(self, key: str, units: float) -> float | None:
        """None when `key` may spend `units` more now (and they are counted), else the seconds until
        enough of what it spent has aged out of the window."""
        now = time.monotonic()
        found = self._spent.get(key)
        if found is None:
            found = self._spent.add(key, (deque(), [0.0]))
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

    def refund(self, key: str, units: float) -> None:
        """Take back the latest `units` `key` spent (what it paid for came to nothing)."""
        found = self._spent.get(key)
        if found and found[0] and found[0][-1][1] == units:
            found[0].pop()
            found[1][0] -= units

    def __len__(self) -> int:
        return len(self._spent)


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


class Paced(Protocol):
    """What paces work: one Pace, or several together (`Joint`)."""

    def charge(self, units: float) -> float: ...

    async def turn(self, units: float) -> None: ...


class Joint:
    """Work paced by several paces at once (a session's own and its address's): each counts it, and
    it waits for the slowest."""

    def __init__(self, *paces: Pace) -> None:
        self.paces = paces

    def charge(self, units: float) -> float:
        return max(pace.charge(units) for pace in self.paces)

    async def turn(self, units: float) -> None:
        if wait := self.charge(units):
            await self.paces[0].clock.sleep(wait)


class HeldPaces:
    """Paces by key (an owner, an address), kept while sessions hold them, and after the last lets go
    until they have rested: a debt outlives the sessions that made it."""

    def __init__(self, make: Callable[[], Pace]) -> None:
        self.make = make
        self._held: dict[str, tuple[Pace, int]] = {}

    def hold(self, key: str) -> Pace:
        pace, held = self._held.get(key) or (self.make(), 0)
        self._held[key] = (pace, held + 1)
        return pace

    def let_go(self, key: str) -> None:
        pace, held = self._held[key]
        if held > 1 or not pace.rested:
            self._held[key] = (pace, held - 1)
        else:
            del self._held[key]

    def forget_rested(self) -> None:
        for key, (pace, held) in list(self._held.items()):
            if not held and pace.rested:
                del self._held[key]

    def __len__(self) -> int:
        return len(self._held)
