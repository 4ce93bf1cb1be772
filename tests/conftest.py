from __future__ import annotations

import ast
import functools
import gc
from pathlib import Path

import pytest

from tests.support.appserver import AppProcess

TESTS = Path(__file__).resolve().parent
# Markers by folder: what a whole folder needs (docs/testing.md).
FOLDER_MARKERS = {"sandbox": "sandbox", "browser": "browser", "deploy": "deploy", "bench": "bench"}
# A function calling one of these runs the real app or a real fork server: the sandbox, root or a
# user namespace, and seconds a start.
SANDBOX_NAMES = ("AppProcess", "check_exercises", "InstancePool")


@functools.cache
def _sandbox_functions(path: Path) -> set[str]:
    """The functions of a test module (tests, fixtures, helpers) whose bodies start the real app or a
    real fork server, directly or through another such function of the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    uses: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = {n.id for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
            params = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
            # Not annotations (a type named is nothing started); not parameters, which are fixtures
            # (the item's fixturenames hold those) or values a helper is handed.
            uses[node.name] = body - params
    marked = {name for name, used in uses.items() if used.intersection(SANDBOX_NAMES)}
    # A fixture or helper imported from another test module that starts the real app (the course
    # walk's modules share one `app` fixture) counts as if written here.
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests."):
            source = TESTS.parent / (node.module.replace(".", "/") + ".py")
            if source.is_file():
                theirs = _sandbox_functions(source)
                marked |= {alias.asname or alias.name for alias in node.names if alias.name in theirs}
    while grown := {name for name, used in uses.items() if used & marked} - marked:
        marked |= grown
    return marked


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test by what it needs, so `-m` picks a tier (the Makefile's test-fast)."""
    for item in items:
        path = Path(str(item.path))
        folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else ""
        if folder in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[folder])
        fixtures = getattr(item, "fixturenames", ())
        uses = _sandbox_functions(path) if path.suffix == ".py" else set()
        name = getattr(item, "originalname", item.name)
        if "live_app" in fixtures or name in uses or uses.intersection(fixtures):
            item.add_marker("sandbox")
        # A test parametrized over the stores asks for the server by name, for "postgres" only.
        callspec = getattr(item, "callspec", None)
        if "postgres_server" in fixtures or (callspec is not None and "postgres" in callspec.params.values()):
            item.add_marker("postgres")
    items[:] = _longest_modules_first(items)


# What a module's tests start or do, from the costliest: replicas on PostgreSQL, Chromium, the real
# app, thousands of examples or the real clock.
COST_RANK = ("postgres", "browser", "sandbox", "slow")


def _longest_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The modules that start the costliest things first, each module's tests kept together and in
    order: the workers (`--dist loadscope --no-loadscope-reorder`) take modules in this order, so the
    last ones handed out are short, and no worker is left alone with a long module at the end."""
    rank: dict[Path, int] = {}
    for item in items:
        names = {mark.name for mark in item.iter_markers()}
        mine = next((i for i, name in enumerate(COST_RANK) if name in names), len(COST_RANK))
        rank[item.path] = min(rank.get(item.path, mine), mine)
    return sorted(items, key=lambda item: rank[item.path])  # stable: the order within a rank stays


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything alive once every test module is imported (modules, parameters) lives to the end:
    out of the collector's reach, the collection after each test walks only what tests made, in
    milliseconds instead of a fifth of a second."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _leaks_fail_where_they_happen():
    """Collect after every test, so a socket or transport a test forgot to close warns (and, with
    warnings as errors, fails) in the test that leaked it, not in whichever test the collector
    happens to run during later."""
    yield
    gc.collect()


@pytest.fixture(scope="session", autouse=True)
def _preloaded_python():
    """The preloaded Python the plain demo servers fork from (tests/support/preloaded.py), started on
    first use and ended with the session."""
    from tests.support import preloaded

    yield
    preloaded.stop()


@pytest.fixture(scope="session")
def live_app(tmp_path_factory: pytest.TempPathFactory):
    """The real app on a free loopback port with default settings, shared by the session's tests."""
    app = AppProcess(tmp_path_factory.mktemp("live-app"))
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="session")
def app_in_process(tmp_path_factory: pytest.TempPathFactory):
    """The app built in this process over plain subprocesses (no sandbox), default settings, shared
    by the session's tests: for pages and JSON APIs (tests/support/inprocess.py)."""
    from tests.support.inprocess import InProcessApp

    with InProcessApp(tmp_path_factory.mktemp("app-in-process")) as app:
        yield app


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on a free loopback port, for the whole test session."""
    from tests.support.postgres import PostgresServer

    server = PostgresServer()
    server.start()
    yield server
    server.stop()
