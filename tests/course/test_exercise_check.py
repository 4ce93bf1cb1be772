"""check-lessons' part for exercises: in the real sandbox, each exercise must pass on its reference
solution and fail on the starter file."""

from __future__ import annotations

import asyncio
import io
import shutil
from pathlib import Path

from app.check_lessons import check_exercises
from app.config import Settings
from app.course.catalog import Catalog
from app.demos import load_registry

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "build_lessons"


def run(folder: Path) -> tuple[int, str]:
    settings = Settings(lessons_dir=folder)
    catalog = Catalog.load(folder, servers=load_registry().keys())
    out = io.StringIO()
    return asyncio.run(check_exercises(catalog, settings, out)), out.getvalue()


def copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "lessons"))


def test_a_sound_exercise_holds(tmp_path: Path) -> None:
    problems, out = run(copy(tmp_path))
    assert problems == 0, out
    assert "2 exercises run on their solutions and on the starter: 0 problems" in out


def test_a_reference_solution_that_fails_is_reported_with_the_failing_test(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    solution = folder / "solutions" / "add.py"
    solution.write_text(solution.read_text().replace("return a + b", "return a * b"))
    problems, out = run(folder)
    assert problems == 1
    assert "first-tool/add (line 17): the reference solution add.py fails" in out
    assert "expected the text '5'; got '6'" in out


def test_an_exercise_the_starter_passes_is_reported(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    lesson = folder / "01-first-tool.md"
    start = lesson.read_text().index("```exercise")
    lax = "```exercise rev=2025-11-25 solution=solutions/add.py\n- title: declares tools\n  capability: tools\n```\n"
    lesson.write_text(lesson.read_text()[:start] + lax)
    problems, out = run(folder)
    assert problems == 1 and "the starter file passes this exercise, so it tests nothing" in out
