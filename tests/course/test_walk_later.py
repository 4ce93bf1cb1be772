"""The later half of the course walk (tests/course/test_walk.py, which says what the walk does): a
module of its own, with an app of its own, so that another worker walks it at the same time."""

from __future__ import annotations

import pytest

from tests.course.test_walk import HALF, STEPS, app, walk  # noqa: F401 (app: the module's own fixture)
from tests.support.appserver import AppProcess


@pytest.mark.parametrize("slug", [s.slug for s in STEPS[HALF:]])
async def test_following_a_later_step_passes_its_checks(app: AppProcess, slug: str) -> None:  # noqa: F811
    await walk(app, slug)
