"""Hands out sandboxed instances: a warm pool per server, one uid per instance, shutdown.

The pool knows processes only: who uses an instance, for how long, and how many one person may hold
are the relay's (app/relay/sessions.py and admission.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import resource
from collections import defaultdict, deque

from app.sandbox.errors import SandboxError
from app.sandbox.instance import Instance
from app.sandbox.launcher import Launcher
from app.sandbox.limits import Limits
from app.sandbox.process import ServerProcess
from app.workspace import Program

log = logging.getLogger(__name__)

# Descriptors per live session in the app: three pipe ends, a WebSocket, and slack.
FDS_PER_SESSION = 8
# Back-off after a warm-pool refill fails, so a broken fork server is not hammered.
REFILL_RETRY_S = 2.0
# A refill waits this long, so that its spawn does not compete for the CPU with the first messages
# of the learner who just took a warm instance (measured: it made their first reply slower).
REFILL_DELAY_S = 0.02
# Uids beyond live and warm instances: an instance being stopped still holds its uid.
UID_SLACK = 16
# Instances beyond a pool's size are for a class's next burst: they start once nobody has taken an
# instance of that server for this long, and so leave the CPU to the first messages of the burst that
# grew the pool (measured: started at once, they made that burst 0.1-0.2 s slower).
GROWTH_QUIET_S = 1.0
# A grown pool goes back to its size once nobody has taken one of its instances for this long: the
# class that grew it has moved on (the same time as a silent session's end, by default).
SETTLE_S = 600.0


def raise_open_file_limit(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards `wanted` (never above the hard limit); return the result."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


class WarmTargets:
    """How many warm instances each server's pool keeps: its size, plus one for each learner who found
    it empty lately (a class opening its consoles together), from a budget (`growth`) that every server
    shares. A pool's extra goes once `settle_s` has passed without anyone taking one of its instances."""

    def __init__(self, sizes: dict[str, int], growth: int, settle_s: float = SETTLE_S) -> None:
        self.sizes = sizes
        self.growth = max(growth, 0)
        self.settle_s = settle_s
        self.extra: dict[str, int] = defaultdict(int)
        self._last_taken: dict[str, float] = {}

    def size(self, server: str) -> int:
        """The pool's own size, as configured."""
        return self.sizes.get(server, 0)

    def target(self, server: str) -> int:
        return self.size(server) + self.extra[server]

    @property
    def grown(self) -> int:
        return sum(self.extra.values())

    def taken(self, server: str, now: float, *, warm: bool, room: bool = True) -> None:
        """A learner took an instance of `server` (`warm`: from its pool, else started for them);
        `room`: the instances' memory leaves room for more warm ones."""
        self._last_taken[server] = now
        # A server kept without a pool (size 0: the instructor's choice) does not grow one.
        if not warm and room and self.size(server) > 0 and self.grown < self.growth:
            self.extra[server] += 1

    def since_taken(self, server: str, now: float) -> float:
        """Seconds since a learner last took an instance of `server` (infinite: never)."""
        last = self._last_taken.get(server)
        return math.inf if last is None else now - last

    def settle_in(self, server: str, now: float) -> float | None:
        """Seconds until `server`'s extra is due to go (0: now), or None when it has none."""
        if not self.extra[server]:
            return None
        return max(self._last_taken.get(server, now) + self.settle_s - now, 0.0)

    def settle(self, server: str) -> None:
        self.extra[server] = 0


class InstancePool:
    """One per app. `acquire(server)` gives a started instance; `release(instance)` ends it.

    `capacity` is the most instances handed out at once (the relay admits no more); the uid range
    is sized for those, the warm pools, what they may grow by (`growth`, WarmTargets) and some slack.
    """

    def __init__(
        self,
        *,
        servers: list[str],
        limits: Limits,
        sandbox: bool,
        extra_modules: list[str],
        capacity: int,
        pool_sizes: dict[str, int],
        uid_base: int,
        max_line_bytes: int,
        max_output_bytes: int,
        rootless: bool = False,
        growth: int = 0,
        settle_s: float = SETTLE_S,
    ) -> None:
        self.servers = servers
        self.capacity = capacity
        self.targets = WarmTargets(pool_sizes, growth, settle_s)
        self.max_line_bytes = max_line_bytes
        self.max_output_bytes = max_output_bytes
        most_warm = sum(pool_sizes.values()) + self.targets.growth
        # One uid per instance, live or warm; the range's first uid is for the start-up probe.
        self.uid_range = range(uid_base + 1, uid_base + 1 + capacity + most_warm + UID_SLACK)
        self._free_uids = deque(self.uid_range)
        self.launcher = Launcher(limits=limits, sandbox=sandbox, extra_modules=extra_modules, uid_probe=uid_base,
                                 rootless=rootless, uid_range=range(uid_base, self.uid_range.stop))  # fmt: skip
        self._pools: dict[str, deque[Instance]] = defaultdict(deque)
        self._refilling: dict[str, int] = defaultdict(int)  # refills under way, waiting or starting
        self._spawning: dict[str, int] = defaultdict(int)  # refills starting their instance
        # Refills waiting for a burst to end wait on these (_wake_refills).
        self._taken: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self._out: set[Instance] = set()  # handed out and not yet released
        # Instances being started for someone waiting (no warm one was left): while any are, refills
        # wait, so a burst of arrivals is not slowed by spawns that nobody is waiting for.
        self._starting_for_someone = 0
        self._no_one_waiting = asyncio.Event()
        self._no_one_waiting.set()
        self._tasks: set[asyncio.Task] = set()
        self._settle_timers: dict[str, asyncio.TimerHandle] = {}
        self._closing = False

    # --- lifecycle -------------------------------------------------------------------------------

    @property
    def open_files_needed(self) -> int:
        """Descriptors of the web process for every instance this pool may run, and 1024 to spare."""
        return self.capacity * FDS_PER_SESSION + 1024

    async def start(self) -> None:
        raise_open_file_limit(self.open_files_needed)
        await self.launcher.start()
        for server in self.servers:
            self._refill(server)

    async def stop(self) -> None:
        """End every instance (graceful shutdown), then the fork server."""
        self._closing = True
        for timer in self._settle_timers.values():
            timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        instances = list(self._out) + [i for pool in self._pools.values() for i in pool]
        await asyncio.gather(*(i.stop() for i in instances), return_exceptions=True)
        self._out.clear()
        self._pools.clear()
        await self.launcher.close()

    @property
    def layers(self) -> dict[str, str]:
        return self.launcher.layers

    def missing_layers(self) -> dict[str, str]:
        """What hosting mode refuses to start without (optional layers this host lacks are left out)."""
        return self.launcher.missing_layers()

    @property
    def handed_out(self) -> int:
        return len(self._out)

    # --- instances -------------------------------------------------------------------------------

    async def acquire(self, server: str, source: Program | None = None) -> Instance:
        if server not in self.servers:
            raise SandboxError(
                f"There is no server named {server!r}.", reason="unknown_server", status_code=404
            )
        instance = self._take_warm(server) if source is None else None  # a learner's own file: never warm
        warm = instance is not None
        if instance is None:
            self._starting_for_someone += 1
            self._no_one_waiting.clear()
            try:
                instance = await self._start_instance(server, source)
            finally:
                self._starting_for_someone -= 1
                if not self._starting_for_someone:
                    self._no_one_waiting.set()
        if source is None:
            self.targets.taken(server, self._now(), warm=warm, room=warm or self._room_to_grow())
            self._wake_refills(server)
            self._refill(server)
            self._arm_settle(server)
        self._out.add(instance)
        return instance

    async def release(self, process: ServerProcess) -> None:
        assert isinstance(process, Instance)
        self._out.discard(process)
        await process.stop()
        self._recycle_uid(process)

    def _take_warm(self, server: str) -> Instance | None:
        pool = self._pools[server]
        while pool:
            instance = pool.popleft()
            if instance.poll() is None:
                return instance
            self._recycle_uid(instance)
        return None

    async def _start_instance(self, server: str, source: Program | None = None) -> Instance:
        if not self._free_uids:
            raise SandboxError(
                "The playground has no room for another server right now. Try again in a minute.",
                reason="no_uid", status_code=503, retry_after_s=60,
            )  # fmt: skip
        uid = self._free_uids.popleft()
        instance = Instance(
            self.launcher,
            server,
            uid,
            max_line_bytes=self.max_line_bytes,
            max_output_bytes=self.max_output_bytes,
            source=source,
        )
        try:
            await instance.start()
        except BaseException:
            self._free_uids.append(uid)
            raise
        return instance

    def _room_to_grow(self) -> bool:
        """Warm instances must not take the memory a learner's console needs: a pool grows only while
        every instance together uses less than half of their budget (where there is one)."""
        gauge = self.launcher.memory
        if gauge is None:
            return True
        try:
            used = gauge.usage_bytes()
        except (OSError, ValueError):  # unreadable for a moment: do not grow on a guess
            return False
        return used is None or used < gauge.limit_bytes // 2

    def _recycle_uid(self, instance: Instance) -> None:
        # A uid is reused only once its instance has exited: every process under it is gone then
        # (the server is PID 1 of its namespace, whose exit ends everything in it; without that
        # layer, the fork server kills the server's process group before it reports the exit).
        if instance.poll() is not None and instance.uid not in self._free_uids:
            self._free_uids.append(instance.uid)

    # --- the warm pool ---------------------------------------------------------------------------

    def _refill(self, server: str) -> None:
        if self._closing:
            return
        want = self.targets.target(server) - len(self._pools[server]) - self._refilling[server]
        for _ in range(max(want, 0)):
            self._refilling[server] += 1
            task = asyncio.create_task(self._add_warm(server), name=f"warm-{server}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _add_warm(self, server: str) -> None:
        try:
            while True:
                # The instance just taken is serving its learner's first messages: let those go first,
                # and any instances being started for learners waiting now.
                await asyncio.sleep(REFILL_DELAY_S)
                await self._no_one_waiting.wait()
                coming = len(self._pools[server]) + self._spawning[server]
                if coming >= self.targets.target(server):
                    return  # no longer wanted: the pool settled back meanwhile
                if coming < self.targets.size(server):
                    break  # the pool is below its size
                # One beyond it is for a later burst: it waits until this one is over, whose first
                # messages it would slow. A take meanwhile wakes it to look again.
                quiet = GROWTH_QUIET_S - self.targets.since_taken(server, self._now())
                if quiet <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._taken[server].wait(), quiet)
            # Nothing is written to a warm instance before its learner's first message: the SDK's server
            # takes its protocol era from the first message it reads, so even a ping would lock it into the
            # handshake era, and the learner's 2026-07-28 requests would be refused (-32600).
            self._spawning[server] += 1
            try:
                instance = await self._start_instance(server)
            finally:
                self._spawning[server] -= 1
        except SandboxError as exc:
            log.warning("warm pool: could not start %s: %s", server, exc.log_message)
            await asyncio.sleep(REFILL_RETRY_S)
            return
        finally:
            self._refilling[server] -= 1
        if self._closing or len(self._pools[server]) >= self.targets.target(server):  # settled meanwhile
            await instance.stop(now=True)
            self._recycle_uid(instance)
            return
        self._pools[server].append(instance)

    def _wake_refills(self, server: str) -> None:
        """Wake the refills of `server` waiting for a burst to end, to look again (an Event set and
        cleared at once wakes every waiter and keeps none of the later ones from waiting)."""
        self._taken[server].set()
        self._taken[server].clear()

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    def _arm_settle(self, server: str) -> None:
        """Make sure a grown pool goes back to its size in time (see WarmTargets). A timer already set
        fires no later than this one would, and looks again then."""
        due = self.targets.settle_in(server, self._now())
        if due is None or self._closing or server in self._settle_timers:
            return
        self._settle_timers[server] = asyncio.get_running_loop().call_later(due, self._settle_due, server)

    def _settle_due(self, server: str) -> None:
        del self._settle_timers[server]
        due = self.targets.settle_in(server, self._now())
        if due is None or self._closing:
            return
        if due > 0:  # taken from since the timer was set: look again then
            self._arm_settle(server)
            return
        self.targets.settle(server)
        self._wake_refills(server)  # those waiting for a burst to end are no longer wanted
        pool = self._pools[server]
        surplus = [pool.pop() for _ in range(max(len(pool) - self.targets.target(server), 0))]
        if surplus:
            log.info("warm pool: %s back to %d (stopping %d)", server, len(pool), len(surplus))
            task = asyncio.create_task(self._stop_surplus(surplus), name=f"settle-{server}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _stop_surplus(self, instances: list[Instance]) -> None:
        await asyncio.gather(*(i.stop(now=True) for i in instances), return_exceptions=True)
        for instance in instances:
            self._recycle_uid(instance)

    def pool_size(self, server: str) -> int:
        return len(self._pools[server])

    def pool_target(self, server: str) -> int:
        """How many warm instances of `server` the pool is keeping now (its size, or more: WarmTargets)."""
        return self.targets.target(server)
