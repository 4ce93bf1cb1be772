"""`python -m app check-lessons`: the start-up checks, every `expect` block against a live server, and
every exercise against its reference solution and the starter file (run by the caller's `exercises`:
app/check_lessons.py runs them in the real sandbox)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from app.config import PROJECT_ROOT, Settings
from app.course.catalog import Catalog
from app.course.expect import ExpectFailed, ProcessChannel, run_expect
from app.course.models import LessonError
from app.demos import load_registry


def check_lessons(
    settings: Settings, out: TextIO | None = None, *, exercises: Callable[[Catalog, TextIO], int]
) -> int:
    """Return 0 when every lesson loads and every expect block holds, else 1 (problems on `out`)."""
    out = out or sys.stdout
    demos = load_registry(settings.extra_demo_modules)
    try:
        catalog = Catalog.load(settings.lessons_dir, servers=demos.keys())
    except LessonError as exc:
        print(f"{exc}", file=out)
        return 1
    steps = list(catalog.steps())
    examples = sum(len(s.examples) for s in steps)
    quizzes = sum(len(s.quizzes) for s in steps)
    print(
        f"{len(catalog.lessons)} lessons, {len(steps)} steps, {examples} examples and {quizzes} quizzes "
        f"parsed and checked in {settings.lessons_dir}",
        file=out,
    )
    failures = 0
    total = 0
    for lesson in catalog.lessons:
        for step in lesson.steps:
            for expect in step.expects:
                total += 1
                module = demos[expect.server].module
                if module is None:  # a learner's file differs per learner: exercises check those
                    failures += 1
                    print(
                        f"{lesson.path}:{expect.line}: an expect block cannot name {expect.server}", file=out
                    )
                    continue
                with ProcessChannel(module, str(PROJECT_ROOT)) as channel:
                    try:
                        run_expect(expect, channel)
                    except (ExpectFailed, ValueError) as exc:
                        failures += 1
                        print(
                            f"{lesson.path}:{expect.line}: the live {expect.server} disagrees: {exc}",
                            file=out,
                        )
    print(f"{total - failures} of {total} expect blocks hold against the live demo servers", file=out)
    # Each exercise against its reference solution and against the starter.
    failures += exercises(catalog, out)
    return 1 if failures else 0
