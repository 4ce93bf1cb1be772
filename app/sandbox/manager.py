"""Hands out sandboxed instances: capacity caps, a warm pool per server, uids, idle and age reaping."""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import defaultdict, deque
from collections.abc import Callable

from app.sandbox.errors import CapacityError, SandboxError
from app.sandbox.instance import Instance
from app.sandbox.launcher import Launcher
from app.sandbox.limits import Limits

log = logging.getLogger(__name__)

# Descriptors per live session in the app: three pipe ends, a WebSocket, and slack.
FDS_PER_SESSION = 8
# How often the reaper looks for idle and overlong sessions (capped by the idle timeout / 4).
REAP_INTERVAL_S = 5.0
# Back-off after a warm-pool refill fails, so a broken fork server is not hammered.
REFILL_RETRY_S = 2.0


def raise_open_file_limit(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards `wanted` (never above the hard limit); return the result."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


class SessionManager:
    """One per app. `acquire()` gives a learner a ready instance; `release()` ends it.

    An ended session's callback (`on_reap`) lets the relay tell the learner why it ended.
    """

    def __init__(
        self,
        *,
        servers: list[str],
        limits: Limits,
        sandbox: bool,
        extra_modules: list[str],
        max_sessions: int,
        max_per_learner: int,
        pool_sizes: dict[str, int],
        idle_timeout_s: float,
        max_session_s: float,
        uid_base: int,
        max_line_bytes: int,
        max_output_bytes: int,
        rootless: bool = False,
    ) -> None:
        self.servers = servers
        self.max_sessions = max_sessions
        self.max_per_learner = max_per_learner
        self.pool_sizes = pool_sizes
        self.idle_timeout_s = idle_timeout_s
        self.max_session_s = max_session_s
        self.max_line_bytes = max_line_bytes
        self.max_output_bytes = max_output_bytes
        pool_total = sum(pool_sizes.values())
        # One uid per instance, live or warm; the range's first uid is for the start-up probe.
        self._free_uids = deque(range(uid_base + 1, uid_base + 1 + max_sessions + pool_total + 16))
        self.launcher = Launcher(
            limits=limits, sandbox=sandbox, extra_modules=extra_modules, uid_probe=uid_base, rootless=rootless
        )
        self._pools: dict[str, deque[Instance]] = defaultdict(deque)
        self._refilling: dict[str, int] = defaultdict(int)
        self.live: dict[Instance, tuple[str, str | None]] = {}  # instance -> (learner id, class id)
        self._reap_callbacks: dict[Instance, Callable[[str], None]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._reaper: asyncio.Task | None = None
        self.sessions_started = 0
        self._closing = False

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        raise_open_file_limit(self.max_sessions * FDS_PER_SESSION + 1024)
        await self.launcher.start()
        for server in self.servers:
            self._refill(server)
        self._reaper = asyncio.create_task(self._reap_loop(), name="session-reaper")

    async def stop(self) -> None:
        """End every instance (graceful shutdown), then the fork server."""
        self._closing = True
        if self._reaper is not None:
            self._reaper.cancel()
        for task in list(self._tasks):
            task.cancel()
        instances = list(self.live) + [i for pool in self._pools.values() for i in pool]
        await asyncio.gather(*(i.stop() for i in instances), return_exceptions=True)
        self.live.clear()
        self._pools.clear()
        await self.launcher.close()

    @property
    def layers(self) -> dict[str, str]:
        return self.launcher.layers

    def missing_layers(self) -> dict[str, str]:
        return {name: why for name, why in self.layers.items() if why != "ok"}

    # --- sessions --------------------------------------------------------------------------------

    def count_for(self, learner: str) -> int:
        return sum(1 for owner, _ in self.live.values() if owner == learner)

    def count_for_class(self, class_id: str) -> int:
        return sum(1 for _, group in self.live.values() if group == class_id)

    def check_capacity(self, learner: str, class_id: str | None = None, class_cap: int | None = None) -> None:
        """Raise CapacityError when a new session for `learner` (in `class_id`) would not fit."""
        if len(self.live) >= self.max_sessions:
            raise CapacityError(
                "The playground is full right now. Try again in a minute.", reason="full", retry_after_s=60
            )
        if self.count_for(learner) >= self.max_per_learner:
            raise CapacityError(
                f"You already have {self.max_per_learner} consoles open. Close one (another tab?) and retry.",
                reason="learner_full",
                retry_after_s=10,
            )
        if class_id is not None and class_cap is not None and self.count_for_class(class_id) >= class_cap:
            raise CapacityError(
                f"Your class has {class_cap} consoles open, the most your instructor allowed. "
                "Try again in a minute, or close a console you no longer need.",
                reason="class_full",
                retry_after_s=60,
            )

    async def acquire(
        self,
        server: str,
        learner: str,
        on_reap: Callable[[str], None] | None = None,
        class_id: str | None = None,
        class_cap: int | None = None,
    ) -> Instance:
        if server not in self.servers:
            raise SandboxError(
                f"There is no demo server named {server!r}.", reason="unknown_server", status_code=404
            )
        self.check_capacity(learner, class_id, class_cap)
        instance = self._take_warm(server)
        if instance is None:
            instance = await self._start_instance(server)
        self._refill(server)
        # Capacity may have filled while we awaited a cold start.
        try:
            self.check_capacity(learner, class_id, class_cap)
        except CapacityError:
            await self._retire(instance)
            raise
        self.live[instance] = (learner, class_id)
        if on_reap is not None:
            self._reap_callbacks[instance] = on_reap
        instance.started_at = instance.last_activity = time.monotonic()
        self.sessions_started += 1
        return instance

    async def release(self, instance: Instance) -> None:
        self.live.pop(instance, None)
        self._reap_callbacks.pop(instance, None)
        await self._retire(instance)

    def _take_warm(self, server: str) -> Instance | None:
        pool = self._pools[server]
        while pool:
            instance = pool.popleft()
            if instance.poll() is None:
                return instance
            self._recycle_uid(instance)
        return None

    async def _start_instance(self, server: str) -> Instance:
        if not self._free_uids:
            raise CapacityError("The playground is full right now. Try again in a minute.", reason="no_uid")
        uid = self._free_uids.popleft()
        instance = Instance(
            self.launcher,
            server,
            uid,
            max_line_bytes=self.max_line_bytes,
            max_output_bytes=self.max_output_bytes,
        )
        try:
            await instance.start()
        except BaseException:
            self._free_uids.append(uid)
            raise
        return instance

    async def _retire(self, instance: Instance) -> None:
        await instance.stop()
        self._recycle_uid(instance)

    def _recycle_uid(self, instance: Instance) -> None:
        # A uid is reused only once its instance has exited: every process under it is gone then
        # (the server is PID 1 of its namespace; its exit ends everything in it).
        if instance.poll() is not None and instance.uid not in self._free_uids:
            self._free_uids.append(instance.uid)

    # --- the warm pool ---------------------------------------------------------------------------

    def _refill(self, server: str) -> None:
        if self._closing:
            return
        want = self.pool_sizes.get(server, 0) - len(self._pools[server]) - self._refilling[server]
        for _ in range(max(want, 0)):
            self._refilling[server] += 1
            task = asyncio.create_task(self._add_warm(server), name=f"warm-{server}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _add_warm(self, server: str) -> None:
        try:
            instance = await self._start_instance(server)
        except SandboxError as exc:
            log.warning("warm pool: could not start %s: %s", server, exc.log_message)
            await asyncio.sleep(REFILL_RETRY_S)
            return
        finally:
            self._refilling[server] -= 1
        if self._closing:
            await instance.stop(now=True)
            return
        self._pools[server].append(instance)

    def pool_size(self, server: str) -> int:
        return len(self._pools[server])

    # --- reaping ---------------------------------------------------------------------------------

    async def _reap_loop(self) -> None:
        interval = min(REAP_INTERVAL_S, max(min(self.idle_timeout_s, self.max_session_s) / 4, 0.05))
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for instance in list(self.live):
                if now - instance.last_activity > self.idle_timeout_s:
                    reason = f"ended after {self.idle_timeout_s:g} s without a message"
                elif now - instance.started_at > self.max_session_s:
                    reason = f"ended after the longest session time, {self.max_session_s:g} s"
                else:
                    continue
                callback = self._reap_callbacks.get(instance)
                log.info("reaping %s (uid %s): %s", instance.server, instance.uid, reason)
                if callback is not None:
                    callback(reason)
                await self.release(instance)
