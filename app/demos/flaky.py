"""demo-flaky: a deliberately misbehaving server, for the lesson on errors.

Its tools misbehave on request: a line on stdout that is not JSON, a response whose id matches no
request, a reply that comes only after a delay (cancellable with `notifications/cancelled`), and a crash
with a chosen exit status. Raw stdio, because the SDK will not misbehave like this.
"""

import os
import select
import sys
import time
from typing import Any

from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from app.demos._rawwire import Message, error, parse, result, text_result, write_line, write_message

INFO = {
    "name": "demo-flaky",
    "title": "Flaky server (misbehaves on purpose)",
    "description": (
        "A server that breaks the rules when asked: a non-JSON line on stdout, a reply with an unknown id, "
        "a slow reply, a crash. See what the console and the relay do with each."
    ),
    # What the console's templates offer for this server.
    "samples": [{"method": "tools/call", "params": {"name": "slow_reply", "arguments": {"seconds": 3}}}],
}

SERVER_INFO = {"name": "demo-flaky", "version": "1.0.0"}
GARBAGE_LINE = "oops: this line is not JSON (a stray print to stdout)"
# A slow reply is bounded so that one call cannot hold a session for long.
MAX_DELAY_S = 10.0
DEFAULT_DELAY_S = 3.0
READ_CHUNK = 65536


def _schema(properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties or {}}


TOOLS = [
    {
        "name": "garbled_line",
        "description": "Writes a line that is not JSON to stdout, then answers normally.",
        "inputSchema": _schema(),
    },
    {
        "name": "unknown_id",
        "description": "Sends a response with an id nobody used, then the real answer.",
        "inputSchema": _schema(),
    },
    {
        "name": "slow_reply",
        "description": f"Answers only after `seconds` (default {DEFAULT_DELAY_S}, at most {MAX_DELAY_S}); "
        "send notifications/cancelled to call it off.",
        "inputSchema": _schema({"seconds": {"type": "number", "minimum": 0, "maximum": MAX_DELAY_S}}),
    },
    {
        "name": "crash",
        "description": "Writes a last word to stderr and exits with `status` (1-125, default 3).",
        "inputSchema": _schema({"status": {"type": "integer", "minimum": 1, "maximum": 125}}),
    },
]


class Server:
    """The session state: the handshake, and the slow replies still to send, keyed by request id."""

    def __init__(self) -> None:
        self.initialized = False
        self.pending: dict[Any, tuple[float, Message]] = {}
        self.stray_count = 0

    def on_message(self, message: Message) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            return  # a client's response to nothing this server asked: ignore it
        if "id" not in message:
            if method == "notifications/cancelled":
                # The spec: a cancelled request gets no response at all.
                self.pending.pop((message.get("params") or {}).get("requestId"), None)
            return
        id_, params = message["id"], message.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
            self.initialized = True
            reply: dict[str, Any] = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": SERVER_INFO,
            }
            write_message(result(id_, reply))
        elif method == "ping":
            write_message(result(id_, {}))
        elif method not in ("tools/list", "tools/call"):
            write_message(error(id_, METHOD_NOT_FOUND, "Method not found"))
        elif not self.initialized:
            write_message(error(id_, INVALID_REQUEST, "Server not initialized: send initialize first"))
        elif method == "tools/list":
            write_message(result(id_, {"tools": TOOLS}))
        else:
            self.call_tool(id_, params)

    def call_tool(self, id_: Any, params: dict[str, Any]) -> None:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "garbled_line":
            write_line(GARBAGE_LINE)
            write_message(result(id_, text_result("Answered after writing a line that is not JSON.")))
        elif name == "unknown_id":
            self.stray_count += 1
            stray = f"stray-{self.stray_count}"
            write_message(result(stray, text_result("This response answers a request nobody sent.")))
            write_message(
                result(id_, text_result(f"Answered after a response with the unknown id {stray!r}."))
            )
        elif name == "slow_reply":
            seconds = arguments.get("seconds", DEFAULT_DELAY_S)
            if (
                not isinstance(seconds, int | float)
                or isinstance(seconds, bool)
                or not 0 <= seconds <= MAX_DELAY_S
            ):
                write_message(result(id_, text_result(f"seconds must be 0 to {MAX_DELAY_S}.", is_error=True)))
                return
            reply = result(id_, text_result(f"Answered after {seconds} s."))
            self.pending[id_] = (time.monotonic() + seconds, reply)
        elif name == "crash":
            status = arguments.get("status", 3)
            if not isinstance(status, int) or isinstance(status, bool) or not 1 <= status <= 125:
                write_message(result(id_, text_result("status must be 1 to 125.", is_error=True)))
                return
            sys.stderr.write(f"demo-flaky: crashing on purpose with exit status {status}\n")
            sys.stderr.flush()
            os._exit(status)
        else:
            write_message(error(id_, INVALID_PARAMS, f"Unknown tool: {name}"))

    def send_due(self) -> float | None:
        """Send the slow replies whose time has come; return seconds until the next one (None: none)."""
        now = time.monotonic()
        for id_, (due, reply) in list(self.pending.items()):
            if due <= now:
                del self.pending[id_]
                write_message(reply)
        if not self.pending:
            return None
        return max(0.0, min(due for due, _ in self.pending.values()) - now)


def serve() -> None:
    """Serve on this process's stdin and stdout until stdin closes; pending slow replies are dropped."""
    server, buffered = Server(), b""
    stdin = sys.stdin.buffer.fileno()
    while True:
        # Waiting on the descriptor (not a line iterator) keeps the server answering while a reply is due.
        readable, _, _ = select.select([stdin], [], [], server.send_due())
        if not readable:
            continue
        chunk = os.read(stdin, READ_CHUNK)
        if not chunk:
            return
        *lines, buffered = (buffered + chunk).split(b"\n")
        for line in lines:
            message = parse(line)
            if message is not None:
                server.on_message(message)


if __name__ == "__main__":
    serve()
