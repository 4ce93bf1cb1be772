"""The progress store when its PostgreSQL server goes away and comes back (a restart, a failover): a
clear error meanwhile, nothing half-saved, and service again without restarting the app."""

from __future__ import annotations

import time

import pytest

from app.progress.database import RECONNECT_BACKOFF_S
from app.progress.errors import StoreUnavailable
from app.progress.postgres import PostgresProgressStore

ADA = "learner-ada-0000000000"


def test_a_restarted_server_is_connected_to_again(postgres_server) -> None:  # noqa: ANN001
    with postgres_server.fresh_database() as url:
        store = PostgresProgressStore(url)
        store.open()
        try:
            store.save_server_file(ADA, "x = 1\n")
            postgres_server.stop_for_now()
            try:
                with pytest.raises(StoreUnavailable):
                    store.save_server_file(ADA, "x = 2\n")
                with pytest.raises(StoreUnavailable):
                    store.server_file(ADA)
                began = time.monotonic()  # once an attempt has failed, the next fail at once
                with pytest.raises(StoreUnavailable, match="tried less than"):
                    store.server_file(ADA)
                assert time.monotonic() - began < 1
            finally:
                postgres_server.start_again()
            deadline = time.monotonic() + 10 * RECONNECT_BACKOFF_S
            while True:  # served again within the back-off, with no reopening of the store
                try:
                    store.save_server_file(ADA, "x = 3\n")
                    break
                except StoreUnavailable:
                    assert time.monotonic() < deadline, "never connected again"
                    time.sleep(0.1)
            saved = store.server_file(ADA)
            assert saved is not None and saved.source == "x = 3\n" and saved.version == 2

            # Gone and back while idle: the next write notices at its start and connects again.
            postgres_server.stop_for_now()
            postgres_server.start_again()
            store.record_check(ADA, "transports/stdio", "round-trip-measured")
            assert store.learner(ADA).checks_passed("transports/stdio") == {"round-trip-measured"}
        finally:
            store.close()
