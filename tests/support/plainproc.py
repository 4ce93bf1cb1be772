"""A plain subprocess behind the relay's process interface (app/sandbox/process.py), no sandbox:
the session layer's fast tests run a real demo server this way, in milliseconds per start."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile

from app.sandbox.errors import OutputLimitError, SandboxError
from app.sandbox.launcher import ExitStatus
from app.sandbox.process import ServerProcess
from app.workspace import Program, typescript
from tests.support import preloaded

# Demo servers by module; a test may add its own.
MODULES = {"demo-orders": "app.demos.orders", "exits": "tests.support.plainproc"}
STOP_TIMEOUT_S = 10.0
LINE_LIMIT = 1024 * 1024


class PlainProcess:
    def __init__(self, server: str, proc: asyncio.subprocess.Process) -> None:
        self.server = server
        self.proc = proc
        self.exited = asyncio.Event()
        self._status: ExitStatus | None = None
        self._waiter = asyncio.create_task(self._wait())

    async def _wait(self) -> None:
        code = await self.proc.wait()
        self._status = ExitStatus(code, None) if code >= 0 else ExitStatus(None, -code)
        self.exited.set()

    def poll(self) -> ExitStatus | None:
        return self._status

    async def write_line(self, line: str) -> None:
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing() or self._status is not None:
            raise SandboxError("The server has stopped.", reason="exited", status_code=410)
        stdin.write(line.encode() + b"\n")
        try:
            await stdin.drain()
        except (ConnectionError, BrokenPipeError) as exc:
            raise SandboxError("The server has stopped.", reason="exited", status_code=410) from exc

    async def read_line(self) -> str | None:
        assert self.proc.stdout is not None
        try:
            raw = await self.proc.stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raw = exc.partial
        except asyncio.LimitOverrunError as exc:
            raise OutputLimitError("line too long") from exc
        return raw.rstrip(b"\n").decode("utf-8", errors="replace")

    async def read_stderr(self) -> str | None:
        assert self.proc.stderr is not None
        raw = await self.proc.stderr.readline()
        return raw.rstrip(b"\n").decode("utf-8", errors="replace") if raw else None

    async def stop(self, now: bool = False) -> ExitStatus | None:
        if self._status is None:
            if self.proc.stdin is not None and not now:
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.exited.wait(), 2.0 if not now else 0)
            except TimeoutError:
                self.kill()
                await asyncio.wait_for(self.exited.wait(), STOP_TIMEOUT_S)
        return self._status

    def kill(self) -> None:
        if self._status is None:
            self.proc.kill()
            # asyncio's wait() returns only once every pipe has closed, and output left unread (a
            # paced flood) never reaches its end: nothing more is read after a kill.
            for fd in (1, 2):
                pipe = self.proc._transport.get_pipe_transport(fd)  # type: ignore[attr-defined]
                if pipe is not None:
                    pipe.close()


class PlainSource:
    """Starts plain subprocesses and counts every acquire and release, so tests can check each process
    is released exactly once."""

    def __init__(self, modules: dict[str, str] | None = None) -> None:
        self.modules = MODULES if modules is None else modules  # server name -> module run with -m
        self.servers = list(self.modules)
        self.acquired: list[PlainProcess] = []
        self.released: list[ServerProcess] = []
        self.sources: list[str] = []  # every learner file started, in order
        # The processes' TMPDIR, as the sandbox gives each instance one: what they leave is seen here.
        self.tmp = tempfile.mkdtemp(prefix="plain-tmp-")
        self._folders: list[str] = [self.tmp]

    def remove_files(self) -> None:
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)

    async def acquire(self, server: str, source: Program | None = None) -> PlainProcess:
        if server not in self.modules and source is None:
            raise SandboxError(
                f"There is no server named {server!r}.", reason="unknown_server", status_code=404
            )
        command = preloaded.interpreter()
        if source is not None:  # a learner's file: as `python server.py` or Node would, unsandboxed
            self.sources.append(source.text)
            folder = tempfile.mkdtemp(prefix="plain-server-")
            self._folders.append(folder)
            name = "server.py" if source.runtime == "python" else "server.mjs"
            target = [os.path.join(folder, name)]
            with open(target[0], "w", encoding="utf-8") as out:
                out.write(source.text)
            if source.runtime == "node":
                os.symlink(typescript.NODE_MODULES, os.path.join(folder, "node_modules"))
                command = [str(typescript.NODE), "--enable-source-maps"]
        else:
            target = ["-m", self.modules[server]]
        proc = await asyncio.create_subprocess_exec(
            *command, *target,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT, env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.getcwd(), "TMPDIR": self.tmp},
            cwd=os.path.dirname(target[0]) if source is not None else self.tmp,  # what it writes stays there
            start_new_session=True,
        )  # fmt: skip
        process = PlainProcess(server, proc)
        self.acquired.append(process)
        return process

    async def release(self, process: ServerProcess) -> None:
        assert process not in self.released, "a process was released twice"
        self.released.append(process)
        await process.stop()


if __name__ == "__main__":
    # The "exits" server: reads one line, says so on stderr, and exits with status 3.
    sys.stdin.readline()
    print("leaving now", file=sys.stderr, flush=True)
    sys.exit(3)
