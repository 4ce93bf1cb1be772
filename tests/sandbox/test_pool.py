"""The warm pool, with a real fork server: what it starts, and when."""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest

from app.protocol import messages
from app.sandbox import pool as pool_module
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool
from tests.support.procs import processes_in_uid_range

SERVER = "demo-orders"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the fork server gives each instance a uid")


def one_server_pool(uid_base: int, **settings: Any) -> InstancePool:
    """A pool of SERVER alone, one warm, sandboxed, for eight learners (`settings` change those)."""
    given: dict[str, Any] = {"capacity": 8, "pool_sizes": {SERVER: 1}} | settings
    return InstancePool(servers=[SERVER], limits=Limits(), sandbox=True, extra_modules=[], uid_base=uid_base,
                        max_line_bytes=1 << 20, max_output_bytes=1 << 20, **given)  # fmt: skip


async def wait_for(predicate, timeout: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("first", ["initialize", "server/discover"])
async def test_a_warm_instance_hears_its_learners_first_message_first(first: str) -> None:
    """The SDK's server takes its protocol era from the first message it reads: a warm instance must
    not have read any before its learner's, whichever era that learner speaks."""
    pool = one_server_pool(312_000, capacity=4)
    await pool.start()
    instance = None
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        instance = await pool.acquire(SERVER)
        message = messages.initialize(7) if first == "initialize" else messages.discover(7)
        await instance.write_line(json.dumps(message))
        line = await asyncio.wait_for(instance.read_line(), 30)
        assert line is not None
        reply = json.loads(line)
        assert reply["id"] == 7 and "result" in reply, reply
    finally:
        if instance is not None:
            await pool.release(instance)
        await pool.stop()


async def test_refills_wait_while_someone_waits_for_an_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst of arrivals empties the pool: the instances started for those waiting go first, and
    the pool refills only once none is waiting (its spawns would only slow theirs)."""
    monkeypatch.setattr(pool_module, "REFILL_DELAY_S", 0.0)  # so a refill not held back would run at once
    pool = one_server_pool(310_000)
    await pool.start()
    taken = []
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        spawns: list[int] = []
        gate = asyncio.Event()
        real_spawn = pool.launcher.spawn

        async def spawn(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            spawns.append(len(spawns))
            if len(spawns) == 1:  # the start for the second learner: held until we let it go
                await gate.wait()
            return await real_spawn(*args, **kwargs)

        monkeypatch.setattr(pool.launcher, "spawn", spawn)
        taken.append(await pool.acquire(SERVER))  # the warm one: a refill is due
        second = asyncio.create_task(pool.acquire(SERVER))  # none warm: started for this learner
        for _ in range(20):  # every task that can run without waiting has run
            await asyncio.sleep(0)
        assert spawns == [0], "the refill did not wait for the learner's instance"
        gate.set()
        taken.append(await second)
        await wait_for(lambda: pool.pool_size(SERVER) == 1)  # then the pool refills
        assert spawns == [0, 1]
        for instance in taken:
            assert instance.poll() is None
    finally:
        for instance in taken:
            await pool.release(instance)
        await pool.stop()


def count_spawns(pool: InstancePool, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one whenever the pool asks its fork server for an instance."""
    spawns: list[int] = []
    real_spawn = pool.launcher.spawn

    async def spawn(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        spawns.append(len(spawns))
        return await real_spawn(*args, **kwargs)

    monkeypatch.setattr(pool.launcher, "spawn", spawn)
    return spawns


def sandboxed(pool: InstancePool) -> int:
    return len(processes_in_uid_range(pool.uid_range.start, pool.uid_range.stop))


async def test_a_burst_grows_the_pool_and_the_pool_settles_back_to_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The growth starts 0.1 s after the burst; the pool settles 4 s after it, time enough for a busy
    # machine to start two instances first.
    monkeypatch.setattr(pool_module, "GROWTH_QUIET_S", 0.1)
    pool = one_server_pool(314_000, growth=2, settle_s=4.0)
    await pool.start()
    taken: list = []
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        taken = list(await asyncio.gather(*(pool.acquire(SERVER) for _ in range(4))))  # 3 found none warm
        assert pool.pool_target(SERVER) == 3  # grown by 2, its budget, not by 3
        await wait_for(lambda: pool.pool_size(SERVER) == 3)
        for instance in taken:
            await pool.release(instance)
        taken = []
        # Nobody takes from it for settle_s: it stops what it holds beyond its size.
        await wait_for(lambda: pool.pool_target(SERVER) == 1 and pool.pool_size(SERVER) == 1)
        await wait_for(lambda: sandboxed(pool) == 1)
        # The budget is back: the next burst grows it again, and its instances start.
        taken = list(await asyncio.gather(*(pool.acquire(SERVER) for _ in range(3))))
        assert pool.pool_target(SERVER) == 3
        await wait_for(lambda: pool.pool_size(SERVER) == 3)
    finally:
        for instance in taken:
            await pool.release(instance)
        await pool.stop()


class NearlyFull:
    """The instances' memory gauge (cgroups.MemoryGauge) reading 60% of the budget used."""

    limit_bytes = 1 << 30

    def usage_bytes(self) -> int:
        return self.limit_bytes * 6 // 10


async def test_a_pool_does_not_grow_into_memory_that_learners_need() -> None:
    pool = one_server_pool(316_000, growth=8)
    await pool.start()
    pool.launcher.memory = NearlyFull()  # type: ignore[assignment]
    taken: list = []
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        taken = list(await asyncio.gather(*(pool.acquire(SERVER) for _ in range(4))))
        assert pool.pool_target(SERVER) == 1
    finally:
        for instance in taken:
            await pool.release(instance)
        pool.launcher.memory = None
        await pool.stop()


async def test_what_a_burst_grows_starts_only_once_the_burst_is_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """The instances beyond the pool's size are for a later burst: started at once, they would take
    the CPU from the first messages of the burst that grew the pool."""
    monkeypatch.setattr(pool_module, "GROWTH_QUIET_S", 3600.0)  # this burst is never over, here
    pool = one_server_pool(318_000, growth=2)
    await pool.start()
    taken: list = []
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        spawns = count_spawns(pool, monkeypatch)
        taken = list(await asyncio.gather(*(pool.acquire(SERVER) for _ in range(4))))  # 3 started for them
        assert pool.pool_target(SERVER) == 3
        # Every refill is released at the same moment (once none is waiting): by the time the one
        # that brings the pool back to its size has started, any other not held back has asked too.
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        assert len(spawns) == 3 + 1, spawns
        # Arrivals go on (a churning burst): the pool still refills to its size at each take, while
        # what the burst grew it by goes on waiting.
        for round_ in range(2):
            taken.append(await pool.acquire(SERVER))
            await wait_for(lambda: pool.pool_size(SERVER) == 1)
            assert len(spawns) == 3 + 1 + round_ + 1, spawns
    finally:
        for instance in taken:
            await pool.release(instance)
        await pool.stop()


async def test_a_pool_that_settles_before_its_growth_started_starts_none_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pool_module, "GROWTH_QUIET_S", 3600.0)  # the growth waits past the settling
    pool = one_server_pool(320_000, growth=2, settle_s=0.5)
    await pool.start()
    taken: list = []
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        spawns = count_spawns(pool, monkeypatch)
        taken = list(await asyncio.gather(*(pool.acquire(SERVER) for _ in range(4))))
        assert pool.pool_target(SERVER) == 3
        await wait_for(lambda: pool.pool_target(SERVER) == 1 and not pool._refilling[SERVER])
        assert pool.pool_size(SERVER) == 1
        assert len(spawns) == 3 + 1, spawns  # the three started for learners, the one back to size
    finally:
        for instance in taken:
            await pool.release(instance)
        await pool.stop()
