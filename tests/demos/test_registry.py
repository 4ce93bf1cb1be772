"""Every registered demo server imports, describes itself and can be served."""

from __future__ import annotations

import importlib

import pytest

from app.demos import BUILTIN_MODULES, MY_SERVER, load_registry


@pytest.mark.parametrize("path", BUILTIN_MODULES)
def test_demo_module_has_info_and_serve(path: str) -> None:
    module = importlib.import_module(path)
    assert set(module.INFO) >= {"name", "title", "description"}
    assert module.INFO["name"].startswith("demo-")
    assert all(isinstance(module.INFO[key], str) and module.INFO[key] for key in ("title", "description"))
    assert callable(module.serve)


def test_registry_names_every_builtin_once() -> None:
    registry = load_registry()
    demos = [demo for demo in registry.values() if not demo.learners_own]
    assert len(demos) == len(BUILTIN_MODULES)
    assert {demo.module for demo in demos} == set(BUILTIN_MODULES)


def test_the_learners_own_server_is_registered_without_a_module() -> None:
    mine = load_registry()[MY_SERVER]
    assert mine.learners_own and mine.module is None
    with pytest.raises(ValueError, match="learner's own file"):
        mine.load()
