"""The course as the app reads it (lessons/, every demo server known), parsed once per test process:
modules that parametrize over its steps read it while they are collected, on every worker."""

from __future__ import annotations

import functools

from app.config import PROJECT_ROOT
from app.course.catalog import Catalog
from app.demos import load_registry

LESSONS = PROJECT_ROOT / "lessons"


@functools.cache
def course() -> Catalog:
    return Catalog.load(LESSONS, servers=load_registry().keys())
