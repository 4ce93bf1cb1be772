"""One sandboxed demo-server instance, with a small contract in the manner of JupyterHub's Spawner.

- `await start()`: fork it (through the fork server) and connect its pipes; raises SandboxError.
- `await stop(now=False)`: staged stop: close stdin, then SIGTERM, then SIGKILL to its process
  group, each stage with its own timeout; returns once the instance has exited.
- `poll()`: None while it runs, else its ExitStatus.
- read-only state: `pending` ("start" or "stop" while in progress); `exited` (an event, set at exit).

Lines in and out: `write_line()` sends one line to stdin; `read_line()` returns the next stdout line
(without its newline), or None at end of output; `read_stderr()` the next stderr line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import IO

from app.protocol.lines import LineReader, LineTooLong, LineWriter
from app.sandbox.errors import OutputLimitError, SandboxError
from app.sandbox.launcher import ExitStatus, Launcher
from app.workspace import Program

log = logging.getLogger(__name__)

# After stdin closes, the SDK server finishes its current work and exits on its own.
STOP_STDIN_TIMEOUT_S = 2.0
# A server with a SIGTERM handler (every one of ours) exits at once; this allows a busy machine.
STOP_TERM_TIMEOUT_S = 3.0
# SIGKILL cannot be caught; only a wedged kernel would take this long.
STOP_KILL_TIMEOUT_S = 5.0
# A learner sees stderr line by line; a longer line in pieces of this size. Also what is read of it
# ahead of the session.
STDERR_PIECE_BYTES = 32 * 1024
# What the web process reads of a server's stdout ahead of its session (app/protocol/lines.py). Far
# below the line cap on purpose: a buffer the size of the cap would let a flooding server run, and the
# web process wake for each of its writes, for the whole 10 s a flood may go on (three times the web
# process's CPU, measured with bench/output_flood.py).
STDOUT_BUFFER_BYTES = 64 * 1024


def _decode(raw: bytes) -> str:
    return raw.removesuffix(b"\r").decode("utf-8", errors="replace")


def pipe_end(fd: int, mode: str, loop: asyncio.AbstractEventLoop) -> IO[bytes]:
    """The file object a pipe transport of `loop` takes for `fd`, which it closes once with the
    transport.

    asyncio's transport closes the file object, so that owns `fd`. uvloop's closes `fd` itself (libuv)
    and then the file object too: a second close(2), which closes whatever file another thread has
    opened under the same number in between (uvloop issue 763): in the web process, a static file
    that a worker thread is serving as a session ends. Under uvloop, the file object therefore leaves
    `fd` to libuv. A uvloop that changes who closes it (the fix proposed upstream gives libuv a
    duplicate) fails tests/robustness/test_pipe_ends.py, which checks that each end is closed, once."""
    return os.fdopen(fd, mode, 0, closefd=not _is_uvloop(loop))


def _is_uvloop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        import uvloop
    except ImportError:  # uvicorn runs on asyncio's own loop then
        return False
    return isinstance(loop, uvloop.Loop)


class Instance:
    def __init__(self, launcher: Launcher, server: str, uid: int, *, max_line_bytes: int,
                 max_output_bytes: int, source: Program | None = None) -> None:  # fmt: skip
        self.launcher = launcher
        self.server = server
        self.source = source  # my-server only: the learner's file it runs
        self.uid = uid
        self.max_line_bytes = max_line_bytes
        self.max_output_bytes = max_output_bytes
        self.pid: int | None = None
        self.output_bytes = 0
        self.pending: str | None = None
        self.exited = asyncio.Event()
        self._status: ExitStatus | None = None
        self._stdin: LineWriter | None = None
        self._stdout: LineReader | None = None
        self._stderr: LineReader | None = None
        self._transports: list[asyncio.BaseTransport] = []

    def poll(self) -> ExitStatus | None:
        return self._status

    async def start(self) -> None:
        self.pending = "start"
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        try:
            self.pid = await self.launcher.spawn(
                self.server, self.uid, (in_r, out_w, err_w), self._on_exit, self.source
            )
        except BaseException:
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        loop = asyncio.get_running_loop()
        stdout = self._stdout = LineReader(ahead=STDOUT_BUFFER_BYTES, max_line=self.max_line_bytes)
        transport, _ = await loop.connect_read_pipe(lambda: stdout, pipe_end(out_r, "rb", loop))
        self._transports.append(transport)
        stderr = self._stderr = LineReader(ahead=STDERR_PIECE_BYTES, max_line=STDERR_PIECE_BYTES, split=True)
        transport, _ = await loop.connect_read_pipe(lambda: stderr, pipe_end(err_r, "rb", loop))
        self._transports.append(transport)
        stdin = self._stdin = LineWriter()
        await loop.connect_write_pipe(lambda: stdin, pipe_end(in_w, "wb", loop))
        self.pending = None

    @property
    def stdout(self) -> LineReader | None:
        """The stdout pipe's reader, once started (what it has read, whether it holds the pipe)."""
        return self._stdout

    def _on_exit(self, status: ExitStatus) -> None:
        self._status = status
        self.exited.set()

    async def write_line(self, line: str) -> None:
        """Write one message line to the server's stdin. Raises SandboxError once it has gone."""
        if self._stdin is None or self._status is not None:  # a closed pipe raises in write()
            raise SandboxError("The demo server has stopped.", reason="exited", status_code=410)
        try:
            await self._stdin.write(line.encode("utf-8") + b"\n")
        except (ConnectionError, BrokenPipeError) as exc:
            raise SandboxError("The demo server has stopped.", reason="exited", status_code=410) from exc

    async def read_line(self) -> str | None:
        """The next stdout line, decoded (bad UTF-8 shown as U+FFFD), or None at end of output. One
        message per line and no line cap in the SDK: `max_line_bytes` is ours, without the newline."""
        assert self._stdout is not None
        try:
            raw = await self._stdout.line()
        except LineTooLong as exc:
            raise OutputLimitError(
                f"The server wrote a line longer than {self.max_line_bytes} bytes; the session was ended."
            ) from exc
        if raw is None:
            return None
        self.output_bytes += len(raw) + 1
        if self.output_bytes > self.max_output_bytes:
            raise OutputLimitError(
                f"The server wrote more than {self.max_output_bytes} bytes in this session; it was ended."
            )
        return _decode(raw)

    async def read_stderr(self) -> str | None:
        """The next stderr line (long lines in pieces), or None at end."""
        assert self._stderr is not None
        raw = await self._stderr.line()
        return None if raw is None else raw.decode("utf-8", errors="replace")

    async def stop(self, now: bool = False) -> ExitStatus | None:
        """End the instance in stages; `now` skips the polite stage. Idempotent."""
        if self.pid is None:
            return None
        self.pending = "stop"
        try:
            if not now and self._status is None:
                self._close_stdin()
                if await self._wait(STOP_STDIN_TIMEOUT_S):
                    return self._status
            self._close_stdin()
            for sig, timeout in (
                (signal.SIGTERM, STOP_TERM_TIMEOUT_S),
                (signal.SIGKILL, STOP_KILL_TIMEOUT_S),
            ):
                if self._status is not None:
                    break
                self._signal(sig)
                if await self._wait(timeout):
                    break
            else:
                log.error("instance %s (pid %s) did not die after SIGKILL", self.server, self.pid)
            return self._status
        finally:
            self._close_pipes()
            self.pending = None

    def kill(self) -> None:
        """SIGKILL at once (the app is shutting down or the server broke a limit)."""
        if self.pid is not None and self._status is None:
            self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        if self.pid is None:
            return
        # The group is the instance's id, its server's pid. The fork server sends the signal: the web
        # process may have dropped root and cannot signal an instance's uid.
        self.launcher.signal(self.pid, sig)

    async def _wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
            return True
        except TimeoutError:
            return False

    def _close_stdin(self) -> None:
        if self._stdin is not None:
            self._stdin.close()

    def _close_pipes(self) -> None:
        self._close_stdin()
        for transport in self._transports:
            transport.close()
