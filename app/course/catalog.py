"""Every lesson in lessons/, parsed and checked at start-up, ordered by lesson number."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.course import checks
from app.course.models import Claim, Lesson, LessonError, Step
from app.course.parser import parse_lesson

LESSON_GLOB = "*.md"


@dataclass
class Catalog:
    lessons: list[Lesson] = field(default_factory=list)
    _steps: dict[str, Step] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, directory: Path, servers: Collection[str] = ()) -> Catalog:
        """Parse every lesson file; the first bad one raises LessonError with its file and line.

        `servers` are the demo servers a console or expect block may name (empty: any name).
        """
        if not directory.is_dir():
            raise LessonError(directory, 0, "the lessons folder does not exist")
        catalog = cls()
        by_number: dict[int, Lesson] = {}
        for path in sorted(directory.glob(LESSON_GLOB)):
            if path.name.lower() == "readme.md":
                continue
            lesson = parse_lesson(path, checks=checks.REGISTRY.keys(), servers=servers)
            if lesson.number in by_number:
                other = by_number[lesson.number].path.name
                raise LessonError(path, 2, f"lesson number {lesson.number} is also used by {other}")
            if catalog.lesson(lesson.slug) is not None:
                raise LessonError(path, 2, f"lesson slug {lesson.slug!r} is also used by another file")
            by_number[lesson.number] = lesson
            catalog.lessons.append(lesson)
        catalog.lessons.sort(key=lambda lesson: lesson.number)
        catalog._steps = {step.slug: step for step in catalog.steps()}
        return catalog

    def lesson(self, slug: str) -> Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.slug == slug), None)

    def step(self, slug: str) -> Step | None:
        """The step named "<lesson-slug>/<step-slug>", or None."""
        return self._steps.get(slug)

    def steps(self) -> Iterator[Step]:
        for lesson in self.lessons:
            yield from lesson.steps

    def claims(self) -> list[tuple[Step, Claim]]:
        """Every `[spec ...]` claim of the course with its step, in course order."""
        return [(step, claim) for step in self.steps() for claim in step.claims]

    def neighbours(self, step: Step) -> tuple[Step | None, Step | None]:
        """The steps before and after `step` across the whole course."""
        ordered = list(self.steps())
        at = ordered.index(step)
        return (ordered[at - 1] if at > 0 else None, ordered[at + 1] if at + 1 < len(ordered) else None)
