"""Lessons 19 and 20 walked as a learner who only presses Try-it (and does by hand what the text asks,
with the console's follow-up buttons): the console's own message, which a Try-it replaces, is never
sent. A module of its own, with an app of its own, so that another worker walks it at the same time
as tests/course/test_walk.py and test_walk_later.py."""

from __future__ import annotations

import pytest

from tests.course.test_walk import CATALOG, STEPS, app, walk  # noqa: F401 (app: the module's own fixture)
from tests.support.appserver import AppProcess

BY_TRY_IT_ALONE = [s.slug for s in STEPS if CATALOG.lesson(s.lesson_slug).number in (19, 20)]


def test_the_walk_by_try_it_alone_finds_the_later_lessons() -> None:
    assert len(BY_TRY_IT_ALONE) >= 8


@pytest.mark.parametrize("slug", BY_TRY_IT_ALONE)
async def test_a_step_of_lessons_19_and_20_passes_by_its_try_its_alone(app: AppProcess, slug: str) -> None:  # noqa: F811
    await walk(app, slug, start=False)
