"""A raw stdio MCP client for tests: reads every line a demo server writes, with a deadline.

Unlike `StdioServer`, it does not assume the next line answers the last request: server-initiated
requests (`sampling/createMessage`, `roots/list`, ...) and notifications arrive in between, and some
demo servers write lines that are not JSON at all. A reader thread per pipe puts lines on a queue, so
every wait has a deadline and no test sleeps.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import IO, Any

from tests.support.appserver import ROOT

# A cold start imports the SDK (about 0.4 s here); a busy machine can take many times that.
READ_TIMEOUT_S = 60.0
# How long close() lets the server leave on its own after stdin closes, before it is killed.
EXIT_TIMEOUT_S = 30.0

Message = dict[str, Any]

HANDSHAKE_CLIENT_INFO = {"name": "playground-tests", "version": "1"}
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


def envelope(capabilities: dict[str, Any] | None = None, version: str = "2026-07-28") -> dict[str, Any]:
    """The `_meta` every 2026-07-28 request carries."""
    return {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: capabilities or {}}


class RawClient:
    """One demo server as a subprocess; `lines` holds every stdout line in arrival order."""

    def __init__(self, module: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        self._stdout: queue.Queue[str | None] = queue.Queue()
        self._stderr: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for pipe, sink in ((self.proc.stdout, self._stdout), (self.proc.stderr, self._stderr)):
            threading.Thread(target=_pump, args=(pipe, sink), daemon=True).start()
        self._next_id = 1000

    # -- writing -----------------------------------------------------------------------------------
    def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def send(self, message: Message) -> None:
        self.send_line(json.dumps(message))

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def request(self, method: str, params: dict[str, Any] | None = None, id_: Any = None) -> Any:
        """Send a request and return its id (a fresh one unless given)."""
        if id_ is None:
            self._next_id += 1
            id_ = self._next_id
        message: Message = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return id_

    def respond(self, id_: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "result": result})

    # -- reading -----------------------------------------------------------------------------------
    def read_line(self, timeout: float = READ_TIMEOUT_S) -> str:
        """The next stdout line, without its newline; fails if none comes in time or stdout closes."""
        return _next_line(self._stdout, "stdout", timeout)

    def read(self, timeout: float = READ_TIMEOUT_S) -> Message:
        return json.loads(self.read_line(timeout))

    def until_response(self, id_: Any, timeout: float = READ_TIMEOUT_S) -> tuple[Message, list[Message]]:
        """Read until the response to `id_`; returns it and every message that came before it."""
        before: list[Message] = []
        while True:
            message = self.read(timeout)
            if message.get("id") == id_ and "method" not in message:
                return message, before
            before.append(message)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Message:
        """Request and response, failing if anything else arrives in between."""
        response, before = self.until_response(self.request(method, params))
        assert before == [], f"unexpected messages before the response: {before}"
        return response

    def stderr_line(self, timeout: float = READ_TIMEOUT_S) -> str:
        return _next_line(self._stderr, "stderr", timeout)

    def wait_exit(self, timeout: float = READ_TIMEOUT_S) -> int:
        return self.proc.wait(timeout)

    # -- handshake ---------------------------------------------------------------------------------
    def initialize(self, capabilities: dict[str, Any] | None = None, version: str = "2025-11-25") -> Message:
        """The handshake: initialize, then notifications/initialized; returns the initialize result."""
        reply = self.call(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": HANDSHAKE_CLIENT_INFO,
            },
        )
        self.notify("notifications/initialized")
        return reply["result"]

    def close(self) -> int:
        """Close stdin, wait for the exit; kill the server if it does not leave."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pump(pipe: IO[bytes], sink: queue.Queue[str | None]) -> None:
    for raw in pipe:
        sink.put(raw.decode("utf-8", errors="replace").rstrip("\n"))
    sink.put(None)
    pipe.close()


def _next_line(lines: queue.Queue, stream: str, timeout: float) -> str:
    """The next line a reader thread queued; None in the queue means the stream closed."""
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no {stream} line from the server within {timeout} s") from None
    if line is None:
        raise AssertionError(f"the server closed its {stream}")
    return line
