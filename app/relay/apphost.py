"""What the relay does for the console as an MCP Apps host (docs/websocket.md, "MCP Apps").

The console renders an app and carries its messages; the relay records them in the transcript, so
that the log, the sequence diagram, an instructor following the session and the hands-on checks all
see the app's lane. A request the console makes of the server for the host or for an app goes with
a fresh id the relay picks, never used by the session's client before, so that an app's ids and the
learner's never meet on the server's side.
"""

from __future__ import annotations

from typing import Any, Literal

from app.protocol.jsonrpc import Frame, FrameError, to_line
from app.protocol.transcript import Entry, Maker, Transcript

# What the host asks of a server, for itself or for an app: reads and tool calls, never a handshake.
CALLABLE = frozenset({"tools/call", "tools/list", "resources/read", "resources/list", "resources/templates/list",
                      "prompts/list", "ping"})  # fmt: skip


def app_frame(entry: Entry) -> dict[str, Any]:
    """The console's frame for one host-app message, live or replayed."""
    return {"type": "app", "seq": entry.seq, "at_ms": round(entry.at_ms, 3),
            "from": "host" if entry.direction == "to_app" else "app", "message": entry.message}  # fmt: skip


def direction_of(sender: Any) -> Literal["to_app", "from_app"] | None:
    if sender == "host":
        return "to_app"
    if sender == "app":
        return "from_app"
    return None


def host_request(frame: Frame, by: Maker, transcript: Transcript) -> Frame | FrameError:
    """The request `frame` holds, under a fresh id, ready for the server; or why it may not go."""
    message = frame.message
    if "method" not in message or "id" not in message:
        return FrameError(-32600, "a call is a request",
                          'A "call" frame carries a request: a method and an id.')  # fmt: skip
    if message["method"] not in CALLABLE:
        return FrameError(-32600, f"the host does not make {message['method']!r} requests",
                          "The console's Apps host reads and calls tools; it never sends that method.")  # fmt: skip
    # The seq this request will have: unique among the host's ids, unless the session's client took it
    # as a request id of its own. The transcript keeps those ids in a set, so a candidate costs one
    # look: searching the lines instead costs seconds of the web process's core a call once a learner
    # fills their messages with nested values that read like ids.
    number = transcript.last_seq + 1
    while transcript.used_request_id(f"{by}-{number}"):
        number += 1
    fresh = f"{by}-{number}"
    rewritten = {**message, "id": fresh}
    return Frame(rewritten, to_line(rewritten), frame.items)
