"""The warm pool, with a real fork server: what it starts, and when."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time

import pytest

from app.protocol import messages
from app.sandbox import pool as pool_module
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool

SERVER = "demo-orders"
MUTE = "test-mute"  # tests/fixtures/mute_server.py: reads every line, answers none

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the fork server gives each instance a uid")


async def wait_for(predicate, timeout: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def make_pool(servers: list[str], size: int, uid_base: int) -> InstancePool:
    return InstancePool(servers=servers, limits=Limits(), sandbox=True, extra_modules=["tests.fixtures.mute_server"],
                        capacity=8, pool_sizes=dict.fromkeys(servers, size), uid_base=uid_base,
                        max_line_bytes=1 << 20, max_output_bytes=1 << 20)  # fmt: skip


async def test_a_warm_instance_has_answered_and_its_learner_hears_only_their_own_replies() -> None:
    """The pool's ping is answered before the instance is handed out: the learner's first line back is
    the reply to their own first message, and their output budget starts untouched."""
    pool = make_pool([SERVER], 1, 312_000)
    await pool.start()
    instance = None
    try:
        await wait_for(lambda: pool.pool_size(SERVER) == 1)
        instance = await pool.acquire(SERVER)
        assert instance.output_bytes == 0
        await instance.write_line(json.dumps(messages.initialize(7)))
        line = await asyncio.wait_for(instance.read_line(), 30)
        assert line is not None
        reply = json.loads(line)
        assert reply["id"] == 7 and "result" in reply, reply
        assert instance.output_bytes == len(line) + 1
    finally:
        if instance is not None:
            await pool.release(instance)
        await pool.stop()


async def test_a_server_that_never_answers_is_never_counted_warm(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that starts but never answers (wedged, or not an MCP server at all) stays out of the
    pool: it is ended, its uid goes back, and the operator's log says why. A learner who asks for it
    still gets an instance started for them, as when the pool is empty."""
    monkeypatch.setattr(pool_module, "READY_TIMEOUT_S", 0.5)
    monkeypatch.setattr(pool_module, "REFILL_RETRY_S", 0.0)
    caplog.set_level(logging.WARNING, logger="app.sandbox.pool")
    pool = make_pool([MUTE], 1, 313_000)
    free = len(pool._free_uids)
    await pool.start()
    instance = None
    try:
        await wait_for(lambda: any("did not answer a ping" in r.getMessage() for r in caplog.records))
        await wait_for(lambda: len(pool._free_uids) == free)  # the mute instance's uid is back
        assert pool.pool_size(MUTE) == 0
        assert f"warm pool: could not start {MUTE}: it did not answer a ping within 0.5 s" in caplog.text
        instance = await pool.acquire(MUTE)
        assert instance.poll() is None
    finally:
        if instance is not None:
            await pool.release(instance)
        await pool.stop()


async def test_refills_wait_while_someone_waits_for_an_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst of arrivals empties the pool: the instances started for those waiting go first, and
    the pool refills only once none is waiting (its spawns would only slow theirs)."""
    monkeypatch.setattr(pool_module, "REFILL_DELAY_S", 0.0)  # so a refill not held back would run at once
    pool = InstancePool(servers=[SERVER], limits=Limits(), sandbox=True, extra_modules=[], capacity=8,
                        pool_sizes={SERVER: 1}, uid_base=310_000, max_line_bytes=1 << 20,
                        max_output_bytes=1 << 20)  # fmt: skip
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
