from __future__ import annotations

import pytest

from tests.support.appserver import AppProcess


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
