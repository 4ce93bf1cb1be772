"""The Build track (lessons 11-14, and lesson 24 on testing): the learner writes their own server. At
least four lessons and sixteen steps, every step with an exercise on `my-server`, and every exercise
passes on its reference solution and fails on the starter file, in the real sandbox. Lesson 24's
reference tests pass on its server and catch each broken one."""

from __future__ import annotations

import ast
import asyncio
import io
import shutil
from pathlib import Path

import pytest

from app import workspace
from app.check_lessons import check_exercises
from app.config import PROJECT_ROOT, Settings
from app.course.catalog import Catalog
from app.course.models import Lesson
from app.course.test_exercise import TestExercise
from app.demos import MY_SERVER, load_registry
from tests.support.lessons import course

LESSONS = PROJECT_ROOT / "lessons"
CATALOG = course()
TRACK = [lesson for lesson in CATALOG.lessons if 11 <= lesson.number <= 14]
TESTING = next(lesson for lesson in CATALOG.lessons if lesson.slug == "testing-your-server")
SOLUTIONS = sorted({step.exercise.solution for lesson in TRACK for step in lesson.steps if step.exercise})


def test_the_track_has_four_lessons_and_sixteen_steps_each_with_an_exercise() -> None:
    assert [lesson.number for lesson in TRACK] == [11, 12, 13, 14]
    steps = [step for lesson in TRACK for step in lesson.steps]
    assert len(steps) >= 16
    assert all(len(lesson.steps) >= 4 for lesson in TRACK)
    missing = [step.slug for step in steps if step.exercise is None]
    assert not missing, f"steps without an exercise: {missing}"


@pytest.mark.parametrize("lesson", TRACK, ids=lambda lesson: lesson.slug)
def test_every_console_of_the_track_talks_to_the_learners_own_server(lesson: Lesson) -> None:
    for step in lesson.steps:
        assert step.console is not None, step.slug
        assert step.console.server == MY_SERVER, step.slug
        assert step.exercise is not None and step.exercise.tests, step.slug


def test_solutions_are_whole_files_grown_from_the_starter() -> None:
    starter = workspace.starter()
    assert len(SOLUTIONS) >= 16
    for path in SOLUTIONS:
        source = path.read_text(encoding="utf-8")
        assert path.parent == LESSONS / "solutions", path
        ast.parse(source, filename=str(path))  # runnable Python, not a fragment
        assert 'mcp = MCPServer(\n    "my-server"' in source or 'mcp = MCPServer("my-server")' in source, path
        assert source.rstrip().endswith(starter.rstrip().splitlines()[-1].strip()), path  # mcp.run() last


def test_the_testing_lesson_has_a_test_exercise_with_broken_servers() -> None:
    assert len(TESTING.steps) >= 4 and TESTING.workspace == (workspace.TEST_FILE_NAME,)
    exercises = [step.exercise for step in TESTING.steps if step.exercise is not None]
    assert len(exercises) == 1 and isinstance(exercises[0], TestExercise)
    assert len(exercises[0].broken) >= 3
    assert all(step.quizzes for step in TESTING.steps)


def test_every_exercise_passes_on_its_solution_and_fails_on_the_starter(tmp_path: Path) -> None:
    # Only this track's lessons, so that a problem elsewhere in lessons/ is not reported here.
    folder = tmp_path / "lessons"
    folder.mkdir()
    for lesson in (*TRACK, TESTING):
        shutil.copy(lesson.path, folder / lesson.path.name)
    shutil.copytree(LESSONS / "solutions", folder / "solutions")
    catalog = Catalog.load(folder, servers=load_registry().keys())
    out = io.StringIO()
    problems = asyncio.run(check_exercises(catalog, Settings(lessons_dir=folder), out, ("python",)))
    steps = sum(len(lesson.steps) for lesson in TRACK) + 1
    assert problems == 0, out.getvalue()
    assert f"{steps} exercises run on their solutions and on the starter: 0 problems" in out.getvalue()
