"""The editor's syntax checks of a learner's file (`app.workspace.diagnose`), as the web process runs
them. Each result is kept by the file's hash, so opening the editor again or saving the same text
checks nothing. A check starts a process (Python's compiler, or Node with esbuild for server.ts):
those run one at a time in all and one at a time per client address, so that an address saving text
after text takes its turn with everyone else's and never more than one core.
"""

from __future__ import annotations

import asyncio
import hashlib

import anyio

from app import workspace
from app.relay.rates import KEYS_KEPT, Recent
from app.workspace import Diagnostic
from app.workspace.typescript import UNCHECKED

# Files whose diagnostics are kept (a class of forty, each with a few files and versions open).
KEPT = 512
# Checks running at once, in all: one takes 20-50 ms of a core (a file written to keep the compiler
# busy, up to its CPU limit), and saves come when a learner asks.
CHECKS_AT_ONCE = 1


class FileChecks:
    def __init__(self, kept: int = KEPT, at_once: int = CHECKS_AT_ONCE) -> None:
        self._done: Recent[tuple[str, bytes], tuple[Diagnostic, ...]] = Recent(kept)
        self._running = asyncio.Semaphore(at_once)
        self._addresses: Recent[str, asyncio.Lock] = Recent(KEYS_KEPT)

    async def diagnose(self, source: str, name: str, address: str) -> list[Diagnostic]:
        key = (name, hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).digest())
        found = self._done.get(key)
        if found is not None:
            return list(found)
        turn = self._addresses.get(address) or self._addresses.add(address, asyncio.Lock())
        async with turn, self._running:
            found = tuple(await anyio.to_thread.run_sync(workspace.diagnose, source, name))
        if not any(d.message.startswith(UNCHECKED) for d in found):  # a check that could not run is not kept
            self._done.add(key, found)
        return list(found)
