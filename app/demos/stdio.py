"""Serve an SDK server on this process's stdin and stdout, on the event loop, without worker threads.

The SDK's `stdio_server()` reads and writes through `anyio.wrap_file`: every line read, every write
and every flush is a hop to a worker thread and back. For a demo that answers in microseconds those
hops are most of its cost (a tools/call takes 1.0 ms of the server's CPU through them, 0.5 ms with
the pipes below; bench/profile.py measures it). Here stdin and stdout are asyncio pipes, read and
written by app/protocol/lines.py, handed to the same `stdio_server()`, which accepts explicit
streams: the SDK still parses, validates and serialises every message.

As `stdio_server()` does when it claims the standard streams, fd 0 then reads the null device and
fd 1 writes to stderr, so a stray `print()` in a handler cannot corrupt the wire. A stdin or stdout
that is not a pipe, socket or terminal (a file, say) is served by the SDK's own threads.

Also: `MCPServer.run()` builds its initialize options without `NotificationOptions`, so `listChanged`
is always false; a demo that sends list-changed notifications passes them here to declare them. And
the demos serve without the SDK's OpenTelemetry middleware (`untraced`).

This is the one module of ours that reaches past the SDK's public API, where SDK 2.3 has no public
route: `lowlevel()` (the low-level server inside MCPServer, as its own `run_stdio_async` uses it),
`untraced()` (the tracing middleware's class, in a private module) and `serve_stateless()` (the SDK's
loop for 2026-07-28 alone). mcp is pinned exactly in pyproject.toml, and tests/demos/test_stdio.py
fails at once on an SDK that lacks what these use.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
import sys
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import _serve_modern_stream
from mcp.server.stdio import stdio_server

from app.protocol.lines import LineReader, LineTooLong, LineWriter

# The relay never forwards a message over its own limit (1 MiB by default); this only bounds a
# line from some other writer. A longer line is dropped and said so on stderr.
MAX_LINE_BYTES = 64 * 1024 * 1024
# What is read of stdin ahead of the server: the relay writes one message at a time.
STDIN_BUFFER_BYTES = 64 * 1024


class _Lines:
    """stdin for stdio_server(): the pipe's lines as text."""

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self.reader.line()
            except LineTooLong:
                self.reader.skip_line()
                print(f"stdin: dropped a line over {MAX_LINE_BYTES} bytes", file=sys.stderr, flush=True)
                continue
            if line is None:
                raise StopAsyncIteration
            return line.decode("utf-8", errors="replace")  # as the SDK's own wrapper decodes


class _Out:
    """stdout for stdio_server(): a write returns once the pipe's reader has kept up."""

    def __init__(self, writer: LineWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        await self.writer.write(text.encode())

    async def flush(self) -> None:
        pass  # nothing is held here: write() has handed the bytes to the pipe


def _pipe_like(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _take_standard_streams() -> tuple[int, int]:
    """Private descriptors for the wire; fd 0 then reads the null device and fd 1 writes to stderr."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:  # no null device: fd 0 stays the wire, which no handler of ours reads
        pass
    else:
        os.dup2(null, 0)
        os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


async def _open_pipes() -> tuple[_Lines, _Out] | None:
    if not (_pipe_like(0) and _pipe_like(1)):
        return None
    wire_in, wire_out = _take_standard_streams()
    loop = asyncio.get_running_loop()
    reader = LineReader(ahead=STDIN_BUFFER_BYTES, max_line=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: reader, open(wire_in, "rb", 0))
    writer = LineWriter()
    await loop.connect_write_pipe(lambda: writer, open(wire_out, "wb", 0))
    return _Lines(reader), _Out(writer)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple]:
    """The (read_stream, write_stream) pair of `stdio_server()`, over asyncio pipes where possible."""
    pipes = await _open_pipes()
    if pipes is None:
        async with stdio_server() as streams:
            yield streams
        return
    lines, out = pipes
    async with stdio_server(stdin=lines, stdout=out) as streams:  # type: ignore[arg-type]
        yield streams


def lowlevel(server: MCPServer) -> Server:
    """The low-level server inside `server`: for handlers of methods MCPServer has no decorator for,
    initialize options that declare notifications, and serving streams of our own."""
    return server._lowlevel_server


async def serve_stateless(server: Server, read_stream: Any, write_stream: Any, lifespan_state: Any) -> None:
    """Serve 2026-07-28 only, from the first line: the SDK's public loop (`Server.run`) lets a first
    `initialize` lock the connection into the handshake era, where this answers it with -32022."""
    await _serve_modern_stream(
        server, read_stream, write_stream, lifespan_state=lifespan_state, raise_exceptions=False
    )


def untraced(server: MCPServer) -> MCPServer:
    """`server` without the SDK's OpenTelemetry middleware, which SDK 2.3 puts first on every server.

    A sandboxed demo has no exporter and no network, so every span it opens is thrown away; opening
    them (attributes, trace context from `_meta`, a span per message) is a tenth of the server's CPU
    per tools/call (bench/profile.py). The SDK's own comment names removing it as the way to opt out.
    Idempotent: the fork server's warm-up and the serving code both call it, so they run one path.
    """
    server.middleware[:] = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    return server


def serving(server: MCPServer, notifications: NotificationOptions | None = None, *,
            quiet: tuple[type[Warning], ...] = ()) -> Callable[[], None]:  # fmt: skip
    """A demo's `serve()`: serve `server` on stdin and stdout, as `server.run("stdio")` does, declaring
    `notifications`, and showing no warnings of the `quiet` categories (on stderr, which learners see).

    Called as the demo's module is imported, so that what every instance would build alike is built
    once, in the fork server: built in each instance, the initialize options would copy some 35 of
    its pages as it starts. Its registrations must come before.
    """
    inner = lowlevel(untraced(server))
    options = (
        inner.create_initialization_options()
        if notifications is None
        else inner.create_initialization_options(notifications)
    )

    async def main() -> None:
        async with stdio_streams() as (read_stream, write_stream):
            await inner.run(read_stream, write_stream, options)

    def serve() -> None:
        """Serve MCP on this process's stdin and stdout (the sandbox calls this)."""
        for category in quiet:
            warnings.filterwarnings("ignore", category=category)
        # A bare asyncio loop, on which anyio runs as it does under any asyncio server: anyio.run's
        # runner (asyncio.Runner, its signal handling, anyio's bookkeeping of the host task) copied
        # some 40 more pages of a sandboxed instance as it started.
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()

    return serve
