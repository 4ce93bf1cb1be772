"""What /metrics reads of every replica's sessions: anyone may ask for it, as often as they like."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from app.fleet.fleet import EVERYWHERE_FRESH_S, Fleet
from app.fleet.store import FleetStore, LiveSession
from app.progress import SQLiteProgressStore


class CountedReads(FleetStore):
    """The real register on a real database, counting its reads of every replica's sessions."""

    reads = 0

    def live_sessions(self, fresh_s: float, class_id: str | None = None) -> list[LiveSession]:
        self.reads += 1
        return super().live_sessions(fresh_s, class_id)


async def test_a_flood_of_metrics_scrapes_reads_the_register_once_a_second(tmp_path: Path) -> None:
    progress = SQLiteProgressStore(tmp_path / "p.sqlite3")
    progress.open()
    try:
        store = CountedReads(progress)
        store.register_replica("r1")
        fleet = Fleet(store, silence_s=30)
        scrapes = await asyncio.gather(*(fleet.live_everywhere() for _ in range(200)))
        assert store.reads == 1 and all(s == [] for s in scrapes)
        now = time.time()
        store.add_live_session("r1", LiveSession("s1", "r1", "ada", None, "demo-orders", now, now), None, 30)
        deadline = time.monotonic() + 10 * EVERYWHERE_FRESH_S
        while not await fleet.live_everywhere():  # a new session is counted once the read is stale
            assert time.monotonic() < deadline, "the new session was never counted"
            await asyncio.sleep(0.05)
        assert [s.id for s in await fleet.live_everywhere()] == ["s1"]
        assert 2 <= store.reads <= 3
    finally:
        progress.close()
