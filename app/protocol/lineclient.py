"""One MCP server module run as a plain subprocess, spoken to in lines on its stdin and stdout.

Used by `make check-lessons` (app/course/expect.py) and by the tests. A reader thread per pipe
queues every line in arrival order, so every read has a deadline and nothing assumes that the next
line answers the last request: server requests, notifications and lines that are not JSON at all
arrive in between.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Self

from app.protocol import messages

# A cold server imports the SDK first (about 0.4 s here); a busy machine can take many times that.
READ_TIMEOUT_S = 30.0
# How long close() lets the server leave on its own once stdin closes, before it is killed.
EXIT_TIMEOUT_S = 10.0
# The child's environment: these from ours, nothing else (it never inherits os.environ whole).
ENV_ALLOWED = ("PATH", "LANG", "LC_ALL", "HOME")

Message = dict[str, Any]


class LineClientError(Exception):
    """The server did not write the line a caller waited for."""


class NoLine(LineClientError):
    """No line came within the deadline."""


class StreamClosed(LineClientError):
    """The server closed the stream (most often: it exited)."""


class LineClient:
    """`python -m module` in `cwd`; write lines to its stdin, read its stdout and stderr line by line."""

    def __init__(
        self, module: str, cwd: str | Path, read_timeout_s: float = READ_TIMEOUT_S, python: Sequence[str] = ()
    ) -> None:
        """`python`: the command that runs `-m module` (this interpreter unless given)."""
        env = {k: os.environ[k] for k in ENV_ALLOWED if k in os.environ}
        env["PYTHONPATH"] = str(cwd)
        self.read_timeout_s = read_timeout_s
        self.proc = subprocess.Popen(
            [*(python or [sys.executable]), "-m", module], cwd=cwd, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self._stdout: queue.Queue[str | None] = queue.Queue()
        self._stderr: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=_pump, args=(pipe, sink), daemon=True)
            for pipe, sink in ((self.proc.stdout, self._stdout), (self.proc.stderr, self._stderr))
        ]
        for reader in self._readers:
            reader.start()
        self._next_id = 1000

    # -- writing -----------------------------------------------------------------------------------
    def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_line(json.dumps(message))

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send(messages.notification(method, params))

    def request(self, method: str, params: dict[str, Any] | None = None, id_: Any = None) -> Any:
        """Send a request and return its id (a fresh one unless given)."""
        if id_ is None:
            self._next_id += 1
            id_ = self._next_id
        self.send(messages.request(id_, method, params))
        return id_

    def respond(self, id_: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "result": result})

    # -- reading -----------------------------------------------------------------------------------
    def read_line(self, timeout: float | None = None) -> str:
        """The next stdout line, without its newline. NoLine, StreamClosed when there is none."""
        return _next_line(self._stdout, "stdout", self.read_timeout_s if timeout is None else timeout)

    def read(self, timeout: float | None = None) -> Any:
        """The next stdout line as JSON (ValueError when it is not JSON)."""
        return json.loads(self.read_line(timeout))

    def until_response(self, id_: Any, timeout: float | None = None) -> tuple[Message, list[Any]]:
        """Read until the response to `id_`; return it and every message that came before it."""
        before: list[Any] = []
        while True:
            message = self.read(timeout)
            if isinstance(message, dict) and message.get("id") == id_ and "method" not in message:
                return message, before
            before.append(message)

    def stderr_line(self, timeout: float | None = None) -> str:
        return _next_line(self._stderr, "stderr", self.read_timeout_s if timeout is None else timeout)

    def wait_exit(self, timeout: float | None = None) -> int:
        return self.proc.wait(self.read_timeout_s if timeout is None else timeout)

    # -- ending ------------------------------------------------------------------------------------
    def close(self) -> int:
        """Close stdin and wait for the exit (killing a server that does not leave); its status."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it had gone already
        try:
            status = self.proc.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        for reader in self._readers:
            reader.join(EXIT_TIMEOUT_S)  # each ends at its pipe's end, and closes it
        return status

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pump(pipe: IO[bytes], sink: queue.Queue[str | None]) -> None:
    with pipe:
        for raw in pipe:
            sink.put(raw.decode("utf-8", errors="replace").rstrip("\n"))
    sink.put(None)


def _next_line(lines: queue.Queue[str | None], stream: str, timeout: float) -> str:
    """The next line a reader thread queued; None in the queue means the stream closed."""
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise NoLine(f"no {stream} line from the server within {timeout} s") from None
    if line is None:
        lines.put(None)  # closed for every later read too
        raise StreamClosed(f"the server closed its {stream}")
    return line
