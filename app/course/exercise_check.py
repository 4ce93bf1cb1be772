"""Every exercise against its reference solution (each test must pass) and against the starter file
(the run must fail: an exercise the starter passes tests nothing), run in the real sandbox.

Part of `python -m app check-lessons`; `python -m app.course.exercise_check` runs this part alone.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from app import workspace
from app.config import Settings
from app.course import exercises
from app.course.catalog import Catalog
from app.course.exercises import Report
from app.demos import MY_SERVER, load_registry
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool

# Exercise runs at once: a few instances side by side, not one per step.
PARALLEL = 4


async def check_exercises(catalog: Catalog, settings: Settings, out: TextIO) -> int:
    """The number of exercises that do not hold (each problem printed on `out`)."""
    steps = [step for step in catalog.steps() if step.exercise is not None]
    if not steps:
        return 0
    pool = InstancePool(
        servers=[MY_SERVER], limits=Limits.from_settings(settings), sandbox=settings.sandbox,
        extra_modules=[], capacity=PARALLEL * 2, pool_sizes={}, uid_base=settings.uid_base,
        max_line_bytes=settings.server_max_line_bytes, max_output_bytes=settings.server_max_output_bytes,
        rootless=settings.rootless_sandbox,
    )  # fmt: skip
    await pool.start()
    limit = asyncio.Semaphore(PARALLEL)
    starter = workspace.starter()

    async def attempt(source: str, exercise: exercises.Exercise) -> Report:
        async with limit:
            process = await pool.acquire(MY_SERVER, source)
            try:
                return await exercises.run(exercise, process)
            finally:
                await pool.release(process)

    failures = 0
    try:
        for step in steps:
            exercise = step.exercise
            assert exercise is not None
            solved, unsolved = await asyncio.gather(
                attempt(exercise.solution.read_text(encoding="utf-8"), exercise), attempt(starter, exercise)
            )
            where = f"{step.slug} (line {exercise.line})"
            if not solved.passed:
                failures += 1
                failed = [f"{o.title}: {o.reason}" for o in solved.outcomes if not o.passed]
                print(f"{where}: the reference solution {exercise.solution.name} fails: "
                      + "; ".join(failed or [solved.problem or "?"]), file=out)  # fmt: skip
            if unsolved.passed:
                failures += 1
                print(f"{where}: the starter file passes this exercise, so it tests nothing", file=out)
    finally:
        await pool.stop()
    print(f"{len(steps)} exercises run on their solutions and on the starter: {failures} problems", file=out)
    return failures


def main() -> int:
    settings = Settings()
    demos = load_registry(settings.extra_demo_modules)
    catalog = Catalog.load(settings.lessons_dir, servers=demos.keys())
    return 1 if asyncio.run(check_exercises(catalog, settings, sys.stdout)) else 0


if __name__ == "__main__":
    sys.exit(main())
