"""Endpoints remembered by token hash for a moment: fresh answers from memory, stale ones looked up
again, an ended endpoint forgotten at once, and the memory bounded."""

from __future__ import annotations

from app.progress.store import EndpointInfo
from app.web import endpoint_cache
from app.web.endpoint_cache import EndpointCache

INFO = EndpointInfo("e1", "learner", "demo-orders", 0.0, 1e12)


class Store:
    def __init__(self) -> None:
        self.loads: list[str] = []
        self.known = {"h1": INFO}

    async def load(self, hashed: str) -> EndpointInfo | None:
        self.loads.append(hashed)
        return self.known.get(hashed)


async def test_a_fresh_answer_comes_from_memory_and_a_stale_one_from_the_store(monkeypatch) -> None:  # noqa: ANN001
    store, clock = Store(), [100.0]
    monkeypatch.setattr(endpoint_cache.time, "monotonic", lambda: clock[0])
    cache = EndpointCache(ttl_s=2.0)
    assert await cache.get("h1", store.load) is INFO
    assert await cache.get("h1", store.load) is INFO
    assert store.loads == ["h1"]
    del store.known["h1"]  # ended on another replica
    clock[0] += 2.5
    assert await cache.get("h1", store.load) is None
    assert store.loads == ["h1", "h1"]


async def test_an_endpoint_ended_here_is_forgotten_at_once() -> None:
    store = Store()
    cache = EndpointCache()
    assert await cache.get("h1", store.load) is INFO
    del store.known["h1"]
    cache.forget("e1")
    assert await cache.get("h1", store.load) is None


async def test_unknown_tokens_fill_only_a_bounded_memory() -> None:
    store = Store()
    cache = EndpointCache(max_tokens=3)
    for n in range(10):
        assert await cache.get(f"guess-{n}", store.load) is None
    assert len(cache._by_hash) == 3
