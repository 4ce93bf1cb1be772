"""Clocks for tests of paces and timers: time that moves only when something waits on it, only when
the test moves it, or not at all.

`VirtualClock` stands where `app.relay.rates.Clock` goes. Its `sleep(s)` returns at once, in real
time, with the clock moved on to the sleeper's deadline; sleepers side by side wake in the order of
their deadlines, so three waits of a second that overlap take one virtual second, not three. Work
between waits (a subprocess writing, the loop's turns) takes no virtual time at all: a test on this
clock checks what a pace allows, never how fast the machine is.

`ManualClock` is for timers (a session's idle, grace and longest-session times): a timer that loops
(the reaper) would run virtual time away while a test waits on a real subprocess, so here time moves
only when the test calls `advance`, and every sleeper whose deadline it passes wakes.
"""

from __future__ import annotations

import asyncio


class VirtualClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self.slept: list[float] = []  # every wait asked for, in order
        self._deadlines: list[float] = []  # of the sleepers now waiting

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        deadline = self.t + max(0.0, seconds)
        self._deadlines.append(deadline)
        try:
            # Give every other task a turn, then wake once no sleeper has an earlier deadline.
            await asyncio.sleep(0)
            while min(self._deadlines) < deadline:
                await asyncio.sleep(0)
        finally:
            self._deadlines.remove(deadline)
        self.t = max(self.t, deadline)


class FrozenClock:
    """Time that stands still: every wait is recorded in `slept` and returns at once, so a test sees
    exactly the waits a pace asks for."""

    def __init__(self, at: float = 0.0) -> None:
        self.t = at
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


class ManualClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.t

    @property
    def sleepers(self) -> int:
        """How many tasks wait on this clock now (one woken, or cancelled, waits no more)."""
        return sum(not woken.done() for _, woken in self._sleepers)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        sleeper = (self.t + seconds, asyncio.get_running_loop().create_future())
        self._sleepers.append(sleeper)
        try:
            await sleeper[1]
        finally:
            self._sleepers.remove(sleeper)

    def advance(self, seconds: float) -> None:
        """Move the time on, and wake every sleeper whose deadline is now past."""
        self.t += seconds
        for deadline, woken in self._sleepers:
            if deadline <= self.t and not woken.done():
                woken.set_result(None)
