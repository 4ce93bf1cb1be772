"""What the exercise tests share: an exercise built from (title, spec) pairs, run on a server file in a
plain process, and its outcomes by title."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app import workspace
from app.course import exercises
from app.course.exercises import Exercise, ExerciseTest
from app.sandbox.errors import SandboxError
from tests.support.plainproc import PlainSource


def exercise(*tests: tuple[str, dict[str, Any]], revision: str = "2025-11-25") -> Exercise:
    """An exercise of these tests; each one's kind is the key of its spec that names a kind."""
    kinds = [next(kind for kind in exercises.KINDS if kind in spec) for _, spec in tests]
    return Exercise(revision, Path(__file__),
                    tuple(ExerciseTest(t, k, s) for (t, s), k in zip(tests, kinds, strict=True)), 1)  # fmt: skip


async def run(source: str, ex: Exercise, language: str = "python") -> exercises.Report:
    """The exercise's report on `source` (a file in `language`), run as my-server in a plain process."""
    plain = PlainSource()
    process = await plain.acquire("my-server", workspace.program(language, source))
    try:
        return await exercises.run(ex, process, gone=SandboxError)
    finally:
        await plain.release(process)
        plain.remove_files()


def outcomes(report: exercises.Report) -> dict[str, tuple[bool, str]]:
    """Each test's (passed, reason) by its title; the run itself had no problem."""
    assert report.problem is None, report.problem
    return {o.title: (o.passed, o.reason) for o in report.outcomes}
