"""Every exercise against its reference solution (each test must pass) and against the starter file
(the run must fail: an exercise the starter passes tests nothing), in Python and, where the solution
has a TypeScript twin (the same name, .ts), in TypeScript too. For a test exercise the solution is a
test file: it must pass beside the step's server and catch every broken one, and the starter test
file must not.

Part of `python -m app check-lessons`, which passes servers from the real sandbox (app/check_lessons.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection
from contextlib import AbstractAsyncContextManager
from pathlib import Path
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

    def running(self, source: workspace.Program) -> AbstractAsyncContextManager[ServerLines]:
        """A server running `source`, stopped when the block ends."""
        ...


def has_exercises(catalog: Catalog) -> bool:
    return any(step.exercise is not None for step in catalog.steps())


async def check_exercises(catalog: Catalog, servers: ExerciseServers, out: TextIO,
                          languages: Collection[str] = tuple(workspace.LANGUAGES)) -> int:  # fmt: skip
    """The number of exercises that do not hold (each problem printed on `out`), in `languages`."""
    steps = [step for step in catalog.steps() if step.exercise is not None]
    if not steps:
        return 0
    limit = asyncio.Semaphore(PARALLEL)

    class Limited:
        """The servers, at most PARALLEL at once."""

        gone = servers.gone

        @contextlib.asynccontextmanager
        async def running(self, source: workspace.Program) -> AsyncIterator[ServerLines]:
            async with limit, servers.running(source) as server:
                yield server

    async def attempt(source: str, exercise: Exercise | TestExercise, language: str) -> Report:
        if isinstance(exercise, TestExercise):
            own = exercise.server.read_text(encoding="utf-8")
            return await test_exercise.run(exercise, Limited(), server=own, tests=source)
        program = await asyncio.to_thread(workspace.program, language, source)
        async with Limited().running(program) as server:
            return await exercises.run(exercise, server, gone=servers.gone)

    def starter(exercise: Exercise | TestExercise, language: str) -> str:
        if isinstance(exercise, TestExercise):
            return workspace.starter(workspace.TEST_FILE_NAME)
        return workspace.starter(workspace.LANGUAGES[language])

    failures = 0
    runs = dict.fromkeys(workspace.LANGUAGES, 0)
    for step in steps:
        exercise = step.exercise
        assert exercise is not None
        for language, solution in solutions(exercise):
            if language not in languages:
                continue
            runs[language] += 1
            solved, unsolved = await asyncio.gather(
                attempt(solution.read_text(encoding="utf-8"), exercise, language),
                attempt(starter(exercise, language), exercise, language),
            )
            where = f"{step.slug} (line {exercise.line})"
            if not solved.passed:
                failures += 1
                failed = [f"{o.title}: {o.reason}" for o in solved.outcomes if not o.passed]
                print(f"{where}: the reference solution {solution.name} fails: "
                      + "; ".join(failed or [solved.problem or "?"]), file=out)  # fmt: skip
            if unsolved.passed:
                failures += 1
                which = "the TypeScript starter file" if language == "typescript" else "the starter file"
                print(f"{where}: {which} passes this exercise, so it tests nothing", file=out)
    counted = f"{runs['python']} exercises"
    if runs["typescript"]:
        counted += f" ({runs['typescript']} in TypeScript too)"
    if list(languages) == ["typescript"]:
        counted = f"{runs['typescript']} exercises in TypeScript"
    print(f"{counted} run on their solutions and on the starter: {failures} problems", file=out)
    return failures


def solutions(exercise: Exercise | TestExercise) -> list[tuple[str, Path]]:
    """The exercise's reference solutions by language: the Python one, and its TypeScript twin (the
    same name, .ts) when there is one."""
    found = [("python", exercise.solution)]
    twin = exercise.solution.with_suffix(".ts")
    if (
        not isinstance(exercise, TestExercise)
        and exercises.not_for_typescript(exercise) is None
        and twin.exists()
    ):
        found.append(("typescript", twin))
    return found
