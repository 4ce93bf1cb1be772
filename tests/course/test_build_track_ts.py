"""The Build track in TypeScript: every exercise the TypeScript SDK allows has a reference solution in
TypeScript (lessons/solutions/NAME.ts beside NAME.py), which passes it in the real sandbox on Node while
the TypeScript starter fails it; every other exercise says why a TypeScript learner cannot take it.
(A module of its own, so that its sandbox runs go beside the Python ones on another worker.)"""

from __future__ import annotations

import asyncio
import io
import shutil
from pathlib import Path

from app import workspace
from app.check_lessons import check_exercises
from app.config import Settings
from app.course.catalog import Catalog
from app.course.exercises import Exercise, not_for_typescript
from app.demos import load_registry
from tests.course.test_build_track import LESSONS, TRACK

EXERCISES = [
    step.exercise for lesson in TRACK for step in lesson.steps if isinstance(step.exercise, Exercise)
]


def test_every_exercise_has_a_typescript_twin_or_says_why_not() -> None:
    for exercise in EXERCISES:
        twin = exercise.solution.with_suffix(".ts")
        assert twin.exists() != bool(not_for_typescript(exercise)), exercise.solution.name
    assert sum(1 for e in EXERCISES if not_for_typescript(e) is None) >= 15


def test_the_typescript_solutions_are_whole_files_in_the_sdks_idiom() -> None:
    starter = workspace.starter(workspace.TS_FILE_NAME)
    for path in sorted((LESSONS / "solutions").glob("*.ts")):
        source = path.read_text(encoding="utf-8")
        assert "new McpServer(" in source and '"my-server"' in source, path
        assert source.rstrip().endswith(starter.rstrip().splitlines()[-1]), path  # serves on stdio last
        assert workspace.typescript.transpile(source).diagnostics == (), path


def test_every_twin_passes_its_exercise_and_the_typescript_starter_fails_it(tmp_path: Path) -> None:
    folder = tmp_path / "lessons"
    folder.mkdir()
    for lesson in TRACK:
        shutil.copy(lesson.path, folder / lesson.path.name)
    shutil.copytree(LESSONS / "solutions", folder / "solutions")
    catalog = Catalog.load(folder, servers=load_registry().keys())
    out = io.StringIO()
    problems = asyncio.run(check_exercises(catalog, Settings(lessons_dir=folder), out, ("typescript",)))
    twins = len(list((LESSONS / "solutions").glob("*.ts")))
    assert problems == 0, out.getvalue()
    assert (
        f"{twins} exercises in TypeScript run on their solutions and on the starter: 0 problems"
        in out.getvalue()
    )
