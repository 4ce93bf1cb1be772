"""One conversation of an exercise run with the learner's server: the opening, requests and their
replies by id, the notifications seen meanwhile, and the answers to the server's own requests
(elicitation, when an exercise says how the user answers; anything else is refused).

The course owns what it needs of a server (`ServerLines`) and knows no process: the web layer hands
it a sandboxed instance, `check-lessons` one from its own pool, the tests a plain subprocess.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Protocol

from app.protocol import messages
from app.protocol.jsonrpc import MAX_ITEMS, json_items
from app.protocol.text import clip

# Each test's reply must come within this.
REPLY_LIMIT_S = 5.0
# What a server may write while one request is open, and the notifications kept of it: a server that
# writes megabyte lines of `[{},{},...]` without end would otherwise hold the web process's core and
# gigabytes of its memory for one exercise run. A line holds at most MAX_ITEMS values, as on the relay.
READ_LIMIT_BYTES = 4 * 1024 * 1024
NOTES_KEPT = 200


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

    def __init__(
        self,
        server: ServerLines,
        revision: str,
        gone: type[Exception],
        *,
        client_capabilities: dict[str, Any] | None = None,
    ) -> None:
        self.server = server
        self.gone = gone
        self.revision = revision
        self.next_id = 1
        self.capabilities: dict[str, Any] = {}  # the server's
        self.client_capabilities = client_capabilities or {}  # what this client declares
        # The server's own requests seen while the last request was open (answered or refused).
        self.asked: list[dict[str, Any]] = []

    async def open(self) -> None:
        if self.revision == messages.STATELESS_REVISION:
            result, _ = await self.request("server/discover", {})
            self.capabilities = _object(result.get("capabilities"))
            return
        message = messages.initialize(
            self._id(),
            self.revision,
            capabilities=self.client_capabilities,
            client_info={"name": "exercise", "version": "1"},
        )
        reply, _ = await self._exchange(message)
        if "error" in reply:
            raise Stop(f"the server refused `initialize`: {error_words(reply['error'])}")
        self.capabilities = _object(_object(reply.get("result")).get("capabilities"))
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
        self, method: str, params: dict[str, Any], *, answers: dict[str, dict[str, Any]] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(result, notifications seen before it); raises Failed with the error when it is one.

        `answers` says how to answer the server's own requests meanwhile, by method (the reply's
        `result` or `error`); every other request of the server is refused. `asked` keeps them all."""
        if self.revision == messages.STATELESS_REVISION:
            envelope = messages.envelope(self.client_capabilities)
            params = {**params, "_meta": {**params.get("_meta", {}), **envelope}}
        message = messages.request(self._id(), method, params)
        reply, notes = await self._exchange(message, answers or {})
        if "error" in reply:
            raise Failed(reply["error"], notes)
        result = reply.get("result")
        return (result if isinstance(result, dict) else {}), notes

    async def _exchange(
        self, message: dict[str, Any], answers: dict[str, dict[str, Any]] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        await self._write(message)
        notes: list[dict[str, Any]] = []
        self.asked = []
        method = message["method"]
        deadline = time.monotonic() + REPLY_LIMIT_S
        read = 0
        while True:
            try:
                line = await asyncio.wait_for(self.server.read_line(), deadline - time.monotonic())
            except TimeoutError:
                raise Stop(f"the server did not answer `{method}` within {REPLY_LIMIT_S:g} s") from None
            except self.gone as exc:  # what it wrote is past a limit: the instance was ended
                raise Stop(f"the server was stopped while answering `{method}`: {exc}") from None
            if line is None:
                raise Stop(f"the server exited while answering `{method}`")
            read += len(line)
            if read > READ_LIMIT_BYTES:
                raise Stop(
                    f"the server wrote more than {READ_LIMIT_BYTES // 2**20} MiB while answering `{method}`"
                )
            if json_items(line, MAX_ITEMS) > MAX_ITEMS:  # not parsed: that is what it would cost
                raise Stop(
                    f"the server wrote a message of more than {MAX_ITEMS:,} values while answering `{method}`"
                )
            try:
                incoming = json.loads(line)
            except (ValueError, RecursionError):  # a line of 100,000 `[` is not JSON either
                raise Stop(f"the server wrote a line that is not JSON on stdout: {line[:120]!r} "
                            "(print to stderr, never stdout)") from None  # fmt: skip
            if not isinstance(incoming, dict):
                raise Stop(f"the server wrote JSON that is not one message: {line[:120]!r}")
            if "method" in incoming and "id" in incoming:  # a request of its own
                if len(self.asked) < NOTES_KEPT:
                    self.asked.append(incoming)
                await self._write(_answer(incoming, (answers or {}).get(str(incoming["method"]))))
            elif "method" in incoming:
                if len(notes) < NOTES_KEPT:
                    notes.append(incoming)
            elif incoming.get("id") == message["id"]:
                return incoming, notes
            if time.monotonic() > deadline:  # it keeps writing, and has not answered
                raise Stop(f"the server did not answer `{method}` within {REPLY_LIMIT_S:g} s")


def _answer(request: dict[str, Any], answer: dict[str, Any] | None) -> dict[str, Any]:
    """The reply to a request of the server: the exercise's answer, or a refusal (it offers nothing else)."""
    if answer is None:
        answer = {"error": {"code": -32601, "message": "the exercise client offers no features"}}
    return {"jsonrpc": "2.0", "id": request["id"], **answer}


class Failed(Exception):
    def __init__(self, error: Any, notes: list[dict[str, Any]]) -> None:
        self.error = error if isinstance(error, dict) else {}
        self.words = error_words(error)  # as sent, even when it is not an object
        self.notes = notes


# A value quoted in a reason is cut here: the reason says what came back, not all of it.
QUOTED_CHARS = 160


def cut(text: str, most: int = QUOTED_CHARS) -> str:
    return clip(text, most)


def error_words(error: Any) -> str:
    """A JSON-RPC error as a reason quotes it: its code and message (whatever the server sent)."""
    if not isinstance(error, dict):
        return f"an error that is not an object: {cut(json.dumps(error, default=str))}"
    return f"{cut(str(error.get('code')))} ({cut(str(error.get('message', '')))})"


def listed(words: list[str], most: int = 10) -> str:
    """`a`, `b`, `c` and 7 more: a list in a reason, short whatever the server sent."""
    shown = ", ".join(f"`{cut(word, 80)}`" for word in words[:most])
    return shown + (f" and {len(words) - most} more" if len(words) > most else "")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
