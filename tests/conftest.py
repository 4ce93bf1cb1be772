from __future__ import annotations

import gc

import pytest

from tests.support.appserver import AppProcess


@pytest.fixture(autouse=True)
def _leaks_fail_where_they_happen():
    """Collect after every test, so a socket or transport a test forgot to close warns (and, with
    warnings as errors, fails) in the test that leaked it, not in whichever test the collector
    happens to run during later."""
    yield
    gc.collect()


@pytest.fixture(scope="session")
def live_app(tmp_path_factory: pytest.TempPathFactory):
    """The real app on a free loopback port with default settings, shared by the session's tests."""
    app = AppProcess(tmp_path_factory.mktemp("live-app"))
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on a free loopback port, for the whole test session."""
    from tests.support.postgres import PostgresServer

    server = PostgresServer()
    server.start()
    yield server
    server.stop()
