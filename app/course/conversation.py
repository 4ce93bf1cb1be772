"""One conversation of an exercise run with the learner's server: the opening, requests and their
replies by id, and the notifications seen meanwhile.

The course owns what it needs of a server (`ServerLines`) and knows no process: the web layer hands
it a sandboxed instance, `check-lessons` one from its own pool, the tests a plain subprocess.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Protocol

from app.protocol import messages

# Each test's reply must come within this.
REPLY_LIMIT_S = 5.0


class ServerLines(Protocol):
    """The learner's server as an exercise run sees it: one JSON-RPC message a line, each way."""

    async def write_line(self, line: str) -> None:
        """Write one line to its stdin; raises (the run's `gone` exception) once it has exited."""
        ...

    async def read_line(self) -> str | None:
        """Its next stdout line, None once it has ended."""
        ...


class Stop(Exception):
    """The run cannot go on: the server exited, or did not answer in time."""


class Conversation:
    """One client of the learner's server: ids, replies by id, and the notifications seen meanwhile."""

    def __init__(self, server: ServerLines, revision: str, gone: type[Exception]) -> None:
        self.server = server
        self.gone = gone
        self.revision = revision
        self.next_id = 1
        self.capabilities: dict[str, Any] = {}

    async def open(self) -> None:
        if self.revision == messages.STATELESS_REVISION:
            result, _ = await self.request("server/discover", {})
            self.capabilities = result.get("capabilities") or {}
            return
        message = messages.initialize(
            self._id(), self.revision, client_info={"name": "exercise", "version": "1"}
        )
        reply, _ = await self._exchange(message)
        if "error" in reply:
            raise Stop(f"the server refused `initialize`: {error_words(reply['error'])}")
        result = reply.get("result") or {}
        self.capabilities = result.get("capabilities") or {}
        await self._write(messages.initialized())

    async def _write(self, message: dict[str, Any]) -> None:
        try:
            await self.server.write_line(json.dumps(message))
        except self.gone:  # it exited (a syntax error, a crash at import) before this could be sent
            what = message.get("method") or "a reply"
            raise Stop(f"the server exited before `{what}` could be sent to it") from None

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    async def request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(result, notifications seen before it); raises Failed with the error when it is one."""
        if self.revision == messages.STATELESS_REVISION:
            params = {**params, "_meta": {**params.get("_meta", {}), **messages.envelope()}}
        reply, notes = await self._exchange(messages.request(self._id(), method, params))
        if "error" in reply:
            raise Failed(reply["error"], notes)
        result = reply.get("result")
        return (result if isinstance(result, dict) else {}), notes

    async def _exchange(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        await self._write(message)
        notes: list[dict[str, Any]] = []
        deadline = time.monotonic() + REPLY_LIMIT_S
        while True:
            try:
                line = await asyncio.wait_for(self.server.read_line(), max(deadline - time.monotonic(), 0.01))
            except TimeoutError:
                raise Stop(
                    f"the server did not answer `{message['method']}` within {REPLY_LIMIT_S:g} s"
                ) from None
            if line is None:
                raise Stop(f"the server exited while answering `{message['method']}`")
            try:
                incoming = json.loads(line)
            except ValueError:
                raise Stop(f"the server wrote a line that is not JSON on stdout: {line[:120]!r} "
                            "(print to stderr, never stdout)") from None  # fmt: skip
            if not isinstance(incoming, dict):
                raise Stop(f"the server wrote JSON that is not one message: {line[:120]!r}")
            if "method" in incoming and "id" in incoming:  # a request of its own: we offer nothing
                refusal = {"jsonrpc": "2.0", "id": incoming["id"],
                           "error": {"code": -32601, "message": "the exercise client offers no features"}}  # fmt: skip
                await self._write(refusal)
            elif "method" in incoming:
                notes.append(incoming)
            elif incoming.get("id") == message["id"]:
                return incoming, notes


class Failed(Exception):
    def __init__(self, error: Any, notes: list[dict[str, Any]]) -> None:
        self.error = error if isinstance(error, dict) else {}
        self.notes = notes


def error_words(error: dict[str, Any]) -> str:
    return f"{error.get('code')} ({error.get('message', '')})"
