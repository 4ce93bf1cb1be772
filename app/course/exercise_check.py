"""Every exercise against its reference solution (each test must pass) and against the starter file
(the run must fail: an exercise the starter passes tests nothing). For a test exercise the solution is
a test file: it must pass beside the step's server and catch every broken one, and the starter test
file must not.

Part of `python -m app check-lessons`, which passes servers from the real sandbox (app/check_lessons.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TextIO

from app import workspace
from app.course import exercises, test_exercise
from app.course.catalog import Catalog
from app.course.conversation import ServerLines
from app.course.exercises import Exercise, Report
from app.course.test_exercise import TestExercise

# Exercise runs at once: a few instances side by side, not one per step.
PARALLEL = 4


class ExerciseServers(Protocol):
    """Fresh instances of a learner's server, one for each run."""

    gone: type[Exception]  # what a server's `write_line` raises once it has exited

    def running(self, source: str) -> AbstractAsyncContextManager[ServerLines]:
        """A server running `source`, stopped when the block ends."""
        ...


def has_exercises(catalog: Catalog) -> bool:
    return any(step.exercise is not None for step in catalog.steps())


async def check_exercises(catalog: Catalog, servers: ExerciseServers, out: TextIO) -> int:
    """The number of exercises that do not hold (each problem printed on `out`)."""
    steps = [step for step in catalog.steps() if step.exercise is not None]
    if not steps:
        return 0
    limit = asyncio.Semaphore(PARALLEL)

    class Limited:
        """The servers, at most PARALLEL at once."""

        gone = servers.gone

        @contextlib.asynccontextmanager
        async def running(self, source: str) -> AsyncIterator[ServerLines]:
            async with limit, servers.running(source) as server:
                yield server

    async def attempt(source: str, exercise: Exercise | TestExercise) -> Report:
        if isinstance(exercise, TestExercise):
            own = exercise.server.read_text(encoding="utf-8")
            return await test_exercise.run(exercise, Limited(), server=own, tests=source)
        async with Limited().running(source) as server:
            return await exercises.run(exercise, server, gone=servers.gone)

    def starter(exercise: Exercise | TestExercise) -> str:
        return workspace.starter(
            workspace.TEST_FILE_NAME if isinstance(exercise, TestExercise) else workspace.FILE_NAME
        )

    failures = 0
    for step in steps:
        exercise = step.exercise
        assert exercise is not None
        solved, unsolved = await asyncio.gather(
            attempt(exercise.solution.read_text(encoding="utf-8"), exercise),
            attempt(starter(exercise), exercise),
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
    print(f"{len(steps)} exercises run on their solutions and on the starter: {failures} problems", file=out)
    return failures
