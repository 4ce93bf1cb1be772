"""The few JSON-RPC helpers the raw-stdio demo servers share (the SDK cannot play those two servers).

One message per line on stdout, UTF-8, flushed at once; nothing else is ever written there except on
purpose (demo-flaky's garbage line).
"""

import json
import sys
from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR

Message = dict[str, Any]


def write_line(text: str) -> None:
    sys.stdout.buffer.write(text.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def write_message(message: Message) -> None:
    write_line(json.dumps(message, separators=(",", ":"), ensure_ascii=False))


def result(id_: Any, value: Message) -> Message:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def error(id_: Any, code: int, message: str, data: Any = None) -> Message:
    body: Message = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": body}


def parse(line: bytes) -> Message | None:
    """The message on one input line; a bad line is answered here and gives None (so does a blank one)."""
    if not line.strip():
        return None
    try:
        message = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        write_message(error(None, PARSE_ERROR, "Parse error", str(exc)))
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        write_message(error(None, INVALID_REQUEST, "Invalid Request: expected one JSON-RPC 2.0 object"))
        return None
    return message


def text_result(text: str, *, is_error: bool = False) -> Message:
    """A tools/call result holding one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}
