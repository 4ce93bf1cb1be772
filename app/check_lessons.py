"""`python -m app check-lessons` with every exercise run in the real sandbox.

The course's checks (app/course/cli.py, app/course/exercise_check.py) know no process; this module,
like app/main.py outside the layers, hands them sandboxed instances from a pool of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Collection
from typing import TextIO

from app.config import Settings
from app.course import cli, exercise_check
from app.course.catalog import Catalog
from app.demos import MY_SERVER
from app.sandbox.errors import SandboxError
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool
from app.sandbox.process import ServerProcess
from app.workspace import LANGUAGES, Program


class PoolServers:
    """Instances of the learner's server from a started pool, one for each exercise run."""

    gone: type[Exception] = SandboxError

    def __init__(self, pool: InstancePool) -> None:
        self.pool = pool

    @contextlib.asynccontextmanager
    async def running(self, source: Program) -> AsyncIterator[ServerProcess]:
        process = await self.pool.acquire(MY_SERVER, source)
        try:
            yield process
        finally:
            await self.pool.release(process)


async def check_exercises(catalog: Catalog, settings: Settings, out: TextIO,
                          languages: Collection[str] = LANGUAGES) -> int:  # fmt: skip
    """Every exercise in the sandbox (exercise_check.check_exercises), in `languages`; no pool when
    there is none."""
    if not exercise_check.has_exercises(catalog):
        return 0
    pool = InstancePool(
        servers=[MY_SERVER], limits=Limits.from_settings(settings), sandbox=settings.sandbox,
        extra_modules=[], capacity=exercise_check.PARALLEL * 2, pool_sizes={}, uid_base=settings.uid_base,
        max_line_bytes=settings.server_max_line_bytes, max_output_bytes=settings.server_max_output_bytes,
        rootless=settings.rootless_sandbox,
    )  # fmt: skip
    await pool.start()
    try:
        return await exercise_check.check_exercises(catalog, PoolServers(pool), out, languages)
    finally:
        await pool.stop()


def check_lessons(settings: Settings, out: TextIO | None = None) -> int:
    """0 when every lesson loads and every expect block and exercise holds, else 1."""
    return cli.check_lessons(
        settings, out, exercises=lambda catalog, out: asyncio.run(check_exercises(catalog, settings, out))
    )


if __name__ == "__main__":
    sys.exit(check_lessons(Settings()))
