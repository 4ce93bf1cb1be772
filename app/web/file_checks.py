"""The editor's syntax checks of a learner's file, as the web process runs them. Each result is kept
by the file's hash, so opening the editor again or saving the same text checks nothing. A check runs
in a process, never in the web process: Python's compiler in a sandboxed instance (a file can be
written to hold the compiler, and with it the interpreter's lock, for a second: app/workspace/
pysyntax.py), esbuild for server.ts in a subprocess (app/workspace/typescript.py). Checks run two at
a time in all for each kind and one at a time per class member, or outside classes per client address, so that
whoever saves text after text takes their turn with everyone else's, never more than one core, and
never every turn: a check may take seconds (a file written to hold a parser), and a save waits for
its check.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging

import anyio

from app import workspace
from app.relay.rates import KEYS_KEPT, Recent
from app.relay.sessions import Sessions
from app.sandbox.errors import SandboxError
from app.workspace import Diagnostic
from app.workspace.typescript import UNCHECKED

log = logging.getLogger(__name__)

# Files whose diagnostics are kept (a class of forty, each with a few files and versions open).
KEPT = 512
# Checks running at once, in all: one takes 20-50 ms of a core, and saves come when a learner asks.
CHECKS_AT_ONCE = 2
# Python's compiler takes milliseconds for most files, and about 0.4 s for the worst of 64 KiB;
# past this the check is stopped (and its instance with it).
PYTHON_CHECK_LIMIT_S = 10.0
TOO_LONG = "Python's compiler took too long on this file: it was not checked."


class FileChecks:
    def __init__(self, kept: int = KEPT, at_once: int = CHECKS_AT_ONCE) -> None:
        self._done: Recent[tuple[str, bytes], tuple[Diagnostic, ...]] = Recent(kept)
        # By kind: esbuild on the host and Python's compiler in an instance take turns apart, so that
        # files written to hold esbuild its whole time (two colluders) hold no server.py's save.
        self._running = {kind: asyncio.Semaphore(at_once) for kind in ("ts", "py")}
        self._turns: Recent[str, asyncio.Lock] = Recent(KEYS_KEPT)

    async def diagnose(self, source: str, name: str, turn: str, sessions: Sessions) -> list[Diagnostic]:
        """`turn`: whose checks run one at a time (Owner.client_key)."""
        key = (name, hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).digest())
        found = self._done.get(key)
        if found is not None:
            return list(found)
        lock = self._turns.get(turn) or self._turns.add(turn, asyncio.Lock())
        async with lock, self._running["ts" if name == workspace.TS_FILE_NAME else "py"]:
            if name == workspace.TS_FILE_NAME:
                found = tuple(await anyio.to_thread.run_sync(workspace.diagnose, source, name))
            else:
                found = tuple(await python_check(source, name, sessions))
        if not any(d.message.startswith(UNCHECKED) for d in found):  # a check that could not run is not kept
            self._done.add(key, found)
        return list(found)


async def python_check(source: str, name: str, sessions: Sessions) -> list[Diagnostic]:
    """A Python file's syntax errors, found by the compiler in a sandboxed instance."""
    try:
        async with sessions.check_instance(workspace.syntax_checker()) as process:
            await process.write_line(workspace.syntax_check_input(source, name))
            try:
                line = await asyncio.wait_for(process.read_line(), PYTHON_CHECK_LIMIT_S)
            except TimeoutError:
                return [Diagnostic(1, 1, TOO_LONG)]
    except SandboxError as exc:
        return [Diagnostic(1, 1, f"{UNCHECKED}: {exc.message}")]
    found = workspace.syntax_check_answer(line) if line is not None else None
    if found is None:
        log.warning("the syntax check of a %s answered %r", name, (line or "")[:200])
        return [Diagnostic(1, 1, f"{UNCHECKED}: the syntax check stopped before it answered.")]
    return found
