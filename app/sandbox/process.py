"""What the relay needs of a server process, and of whatever hands processes out.

`Instance` (a sandboxed process from the fork server) and `InstancePool` implement these; the
session layer's fast tests use a plain subprocess behind the same two interfaces.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from app.sandbox.launcher import ExitStatus
from app.workspace import Program


class ServerProcess(Protocol):
    """One running MCP server on stdio: lines in, lines out, a staged stop."""

    server: str
    exited: asyncio.Event  # set once the process has exited

    def poll(self) -> ExitStatus | None:
        """None while it runs, else how it ended."""
        ...

    async def write_line(self, line: str) -> None:
        """Write one line to stdin; raises SandboxError once the process has gone."""
        ...

    async def read_line(self) -> str | None:
        """The next stdout line, None at end; raises OutputLimitError past the caps."""
        ...

    async def read_stderr(self) -> str | None:
        """The next stderr line (long ones in pieces), None at end."""
        ...

    async def stop(self, now: bool = False) -> ExitStatus | None:
        """Close stdin, SIGTERM, SIGKILL, each with a time-out; idempotent."""
        ...

    def kill(self) -> None:
        """SIGKILL at once."""
        ...


class ProcessSource(Protocol):
    """Hands out started server processes and takes them back. Knows nothing of who uses them."""

    servers: list[str]

    async def acquire(self, server: str, source: Program | None = None) -> ServerProcess:
        """A started process of `server` (for my-server, running `source`); raises SandboxError."""
        ...

    async def release(self, process: ServerProcess) -> None:
        """Stop the process and recycle what it held. Called exactly once per acquired process."""
        ...
