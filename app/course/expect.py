"""Run an `expect` block against a live demo server: send its messages, compare the reply."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from app.course.models import Expect
from app.protocol.lineclient import LineClient, NoLine, StreamClosed

# A cold demo server imports the SDK first (about 0.4 s); a busy machine can take many times that.
REPLY_TIMEOUT_S = 30.0
# Server-sent notifications or requests skipped while waiting for one reply.
MAX_SKIPPED = 50
PROBE_ID = "expect-no-reply-probe"
ANY_ID = object()  # a raw line has no id of its own: its reply is the next response


class Channel(Protocol):
    """One live server: send a message, receive the next message it writes."""

    def send(self, message: dict[str, Any]) -> None: ...

    def send_line(self, line: str) -> None: ...

    def receive(self) -> Any: ...


class ExpectFailed(AssertionError):
    pass


class NotJson(str):
    """A line the server wrote that is not JSON (an `along` pattern can never match it)."""


def parse_line(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return NotJson(line.rstrip("\n"))


def contains(actual: Any, pattern: Any, path: str = "reply") -> str | None:
    """Where `actual` fails to contain `pattern` (None when it does).

    Objects: every key of the pattern present, recursively. Arrays: every item of the pattern
    contained in some item of the actual array. Anything else: equal, and of the same JSON type.
    """
    if isinstance(pattern, dict):
        if not isinstance(actual, dict):
            return f"{path} is {json.dumps(actual)}, not an object"
        for key, value in pattern.items():
            if key not in actual:
                return f"{path}.{key} is missing"
            problem = contains(actual[key], value, f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(pattern, list):
        if not isinstance(actual, list):
            return f"{path} is {json.dumps(actual)}, not an array"
        for item in pattern:
            if all(contains(candidate, item) is not None for candidate in actual):
                return f"no item of {path} contains {json.dumps(item)}"
        return None
    if type(actual) is not type(pattern) or actual != pattern:
        return f"{path} is {json.dumps(actual)}, not {json.dumps(pattern)}"
    return None


def _reply_to(
    channel: Channel, request_id: Any, expect: Expect | None = None, seen: list[Any] | None = None
) -> dict[str, Any]:
    """The next response (to `request_id`, unless it is ANY_ID), answering server requests on the way."""
    answers = dict(expect.answers) if expect else {}
    for _ in range(MAX_SKIPPED):
        message = channel.receive()
        if not isinstance(message, dict):
            if seen is not None:
                seen.append(message)
            continue
        if "method" not in message and (request_id is ANY_ID or message.get("id") == request_id):
            return message
        if seen is not None:
            seen.append(message)
        method = message.get("method")
        if "id" in message and method in answers:
            channel.send({"jsonrpc": "2.0", "id": message["id"], **answers[method]})
    raise ExpectFailed(f"no reply to id {request_id!r} among {MAX_SKIPPED} messages")


def run_expect(expect: Expect, channel: Channel) -> None:
    """Raise ExpectFailed, saying what differs, unless the live server behaves as the block claims."""
    for message in expect.before:
        channel.send(message)
        if "id" in message:
            _reply_to(channel, message["id"], expect)
    if expect.send_line is not None:
        channel.send_line(expect.send_line)
    else:
        assert expect.send is not None
        channel.send(expect.send)
    if expect.reply is None:
        # Nothing may come back: a ping sent right after must get the next reply.
        channel.send({"jsonrpc": "2.0", "id": PROBE_ID, "method": "ping"})
        first = channel.receive()
        if not (isinstance(first, dict) and first.get("id") == PROBE_ID):
            raise ExpectFailed(f"expected no reply, but the server sent {json.dumps(first)}")
        return
    seen: list[Any] = []
    request_id = ANY_ID if expect.send is None else expect.send["id"]
    reply = _reply_to(channel, request_id, expect, seen)
    for pattern in expect.along:
        if all(contains(message, pattern, "message") is not None for message in seen):
            raise ExpectFailed(
                f"the server sent no message containing {json.dumps(pattern)} before its reply; "
                f"it sent {json.dumps(seen)}"
            )
    problem = contains(reply, expect.reply)
    if problem:
        raise ExpectFailed(f"{problem}; the whole reply was {json.dumps(reply)}")


class ProcessChannel(LineClient):
    """A demo server module run as a plain subprocess on stdio (for `check-lessons`)."""

    def __init__(self, module: str, cwd: str, python: Sequence[str] = ()) -> None:
        super().__init__(module, cwd, read_timeout_s=REPLY_TIMEOUT_S, python=python)

    def receive(self) -> Any:
        try:
            return parse_line(self.read_line())
        except NoLine:
            raise ExpectFailed(f"the server sent nothing for {REPLY_TIMEOUT_S} s") from None
        except StreamClosed:
            raise ExpectFailed(f"the server exited with status {self.proc.wait()}") from None
