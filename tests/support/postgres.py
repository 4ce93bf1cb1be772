"""A real PostgreSQL server for the tests: initdb into a temporary folder, a free loopback port.

Debian's `postgresql` package (make test installs it) brings the server binaries and the
`postgres` user, which the server must run as (it refuses to run as root).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.appserver import free_port

# initdb and a first start can be slow on a busy machine.
START_TIMEOUT_S = 120
_names = itertools.count(1)


def server_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise RuntimeError(
            "PostgreSQL's server is not installed (Debian package postgresql); `make test` installs it"
        )
    return os.path.dirname(found[-1])


class PostgresServer:
    def __init__(self) -> None:
        self.bin = server_bin()
        self.user = pwd.getpwnam("postgres")
        self.root = tempfile.mkdtemp(prefix="playground-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = free_port()

    def _run(self, *args: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *args],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_S,
        )

    def start(self) -> None:
        os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        self._run(f"{self.bin}/initdb", "-D", self.data, "-A", "trust", "-U", "playground", "--no-sync")
        self.start_again()

    def start_again(self) -> None:
        """Start the server on its data (after `start`, and a `stop_for_now`)."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(f"{self.bin}/pg_ctl", "-D", self.data, "-o", options, "-l", f"{self.root}/log", "-w",
                  "-t", str(START_TIMEOUT_S), "start")  # fmt: skip

    def stop_for_now(self) -> None:
        """Stop the server as an administrator does (its clients are cut off), keeping its data."""
        self._run(f"{self.bin}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        try:
            self._run(f"{self.bin}/pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://playground@127.0.0.1:{self.port}/{database}"

    @contextmanager
    def fresh_database(self) -> Iterator[str]:
        """A new, empty database for one test; dropped afterwards."""
        import psycopg

        name = f"t{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(self.url(), autocommit=True) as admin:
                admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
