"""Endpoints by the hash of their token, remembered for a moment.

Every request an MCP client sends names its endpoint by its URL's token, and a store lookup (a hop
to a worker thread and one indexed query) per request was most of the difference between an HTTP
round trip and the WebSocket relay's. An endpoint ended on this replica is forgotten at once; ended
on another replica sharing the store, it is believed for at most TTL_S more. Expiry is checked on
every use, from the endpoint's own expiry time, never from the cache.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from app.progress.store import EndpointInfo

TTL_S = 2.0
# Tokens remembered at most (a client guessing tokens only pushes the oldest out).
MAX_TOKENS = 10_000


class EndpointCache:
    def __init__(self, ttl_s: float = TTL_S, max_tokens: int = MAX_TOKENS) -> None:
        self.ttl_s = ttl_s
        self.max_tokens = max_tokens
        self._by_hash: OrderedDict[str, tuple[float, EndpointInfo | None]] = OrderedDict()

    async def get(
        self, token_hash: str, load: Callable[[str], Awaitable[EndpointInfo | None]]
    ) -> EndpointInfo | None:
        """The endpoint (or None when there is none), from memory while fresh, else from `load`."""
        now = time.monotonic()
        kept = self._by_hash.get(token_hash)
        if kept is not None and now - kept[0] < self.ttl_s:
            self._by_hash.move_to_end(token_hash)
            return kept[1]
        info = await load(token_hash)
        self._by_hash[token_hash] = (now, info)
        self._by_hash.move_to_end(token_hash)
        while len(self._by_hash) > self.max_tokens:
            self._by_hash.popitem(last=False)
        return info

    def forget(self, endpoint_id: str) -> None:
        """The endpoint has ended here: no request may find it in memory any more."""
        for key in [
            key for key, (_, info) in self._by_hash.items() if info is not None and info.id == endpoint_id
        ]:
            del self._by_hash[key]
