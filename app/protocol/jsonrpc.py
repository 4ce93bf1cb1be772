"""Strict parsing and JSON-RPC 2.0 validation of one client frame, and the relay's error replies.

A bad frame is a value (FrameError), never an exception that kills the pump.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_types.jsonrpc import HEADER_MISMATCH

# The JSON-RPC and MCP codes are the SDK's names (mcp_types); the relay's own two are defined here.
RATE_LIMITED = -32001
"""The relay's own: too many messages in a short time (a server-defined code, -32000 to -32099)."""
SERVER_EXITED = -32002
"""The relay's own: the server exited before it answered this request."""
UNSUPPORTED_VERSION = UNSUPPORTED_PROTOCOL_VERSION

ERROR_NAMES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    RATE_LIMITED: "Rate limited",
    SERVER_EXITED: "Server exited",
    HEADER_MISMATCH: "Header mismatch",
}


@dataclass
class FrameError:
    """Why a frame was refused: the JSON-RPC error the relay answers with, and a plain explanation."""

    code: int
    reason: str  # short, for `data.reason`
    explanation: str  # a sentence or two for a learner
    id: Any = None  # the request's id when it could be read and is a valid id
    where: dict[str, int] = field(default_factory=dict)  # line, column, position of a parse error

    def reply(self) -> dict[str, Any]:
        data: dict[str, Any] = {"from": "relay", "reason": self.reason, **self.where}
        return {
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": ERROR_NAMES.get(self.code, "Error"), "data": data},
        }


@dataclass
class Frame:
    """A valid JSON-RPC message and the exact compact line to write to the server's stdin."""

    message: dict[str, Any]
    line: str
    items: int = 0  # its JSON values as `json_items` counted them: what reading it cost, with its bytes


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text} is too large to represent")
    return value


# Made once: json.dumps and json.loads with options build a new encoder or decoder on every call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_STRICT = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def to_line(message: Any) -> str:
    """One compact line; U+2028/U+2029 escaped so no reader can take them for line breaks."""
    return _COMPACT.encode(message).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def parse_json(text: str) -> tuple[Any, FrameError | None]:
    """Parse `text` as strict RFC 8259 JSON: no NaN or Infinity, no number that overflows a float."""
    try:
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _STRICT.decode(text)
    except json.JSONDecodeError as exc:
        return None, FrameError(
            PARSE_ERROR,
            f"{exc.msg} at line {exc.lineno}, column {exc.colno}",
            f"This is not valid JSON: {exc.msg.lower()} at line {exc.lineno}, column {exc.colno}. "
            "Nothing was sent to the server.",
            where={"line": exc.lineno, "column": exc.colno, "position": exc.pos},
        )
    except RecursionError:
        return None, FrameError(
            PARSE_ERROR, "nested too deeply", "The JSON is nested too deeply to read. Nothing was sent."
        )
    except ValueError as exc:  # NaN, Infinity, an overflowing number
        return None, FrameError(
            PARSE_ERROR,
            str(exc),
            f"This is not valid JSON: {exc}. JSON has no NaN or Infinity. Nothing was sent.",
        )
    return value, None


# The default of `json_items`' limit on one message (the setting `max_message_values`): far beyond any
# lesson's message, and what a frame of it costs to parse, check and record stays a few milliseconds.
MAX_ITEMS = 10_000
# A request id is read from a refused frame only when this cheap: a flood of refusals must not parse.
PEEK_ITEMS = 1000


def crude_items(text: str) -> int:
    """The braces, brackets and commas in `text`, strings and all: never fewer than `json_items`."""
    return text.count("{") + text.count("[") + text.count(",")


def json_items(text: str, limit: int) -> int:
    """How many objects, arrays and elements after the first of each the JSON `text` holds: its braces,
    brackets and commas outside strings, which valid JSON has no more of than values. What parsing
    costs grows with it (a 1 MiB line of `[],[],...` takes 100 ms to parse, a 1 MiB string 2 ms).

    Counted without parsing, and exactly only where it matters: the count over all the text is
    returned when it is within `limit`; over it, strings are set aside first. Any number returned
    over `limit` means the text holds more than `limit` values (or is not valid JSON)."""
    crude = crude_items(text)
    if crude <= limit:
        return crude
    plain = _without_escapes(text)
    quotes = plain.count('"')
    # Each string is a key or a value: at most 2 * items + 1 of them in valid JSON. More quotes than
    # that answer the question without splitting the text into that many pieces.
    if quotes > 4 * limit + 2:
        return (quotes + 1) // 4  # items >= (strings - 1) / 2, rounded up
    return crude_items("".join(plain.split('"')[0::2]))


def _without_escapes(text: str) -> str:
    """`text` less its escaped backslashes, then its escaped quotes, taken out left to right as a reader
    takes them: the quotes left are those that open and close strings."""
    return text.replace("\\\\", "").replace('\\"', "") if "\\" in text else text


def brackets_close(text: str) -> bool:
    """Whether every string, brace and bracket of `text` closes, as in any JSON text. Linear and without
    parsing, for a text too big to parse: one where they do not is not JSON at all (a parse error)."""
    pieces = _without_escapes(text).split('"')
    outside = "".join(pieces[0::2])
    balanced = outside.count("{") == outside.count("}") and outside.count("[") == outside.count("]")
    return len(pieces) % 2 == 1 and balanced


def _valid_id(value: Any) -> bool:
    # JSON-RPC allows string, number or null; MCP forbids null, and a float id is asking for trouble.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _invalid(reason: str, explanation: str, message: Any) -> FrameError:
    msg_id = message.get("id") if isinstance(message, dict) else None
    return FrameError(INVALID_REQUEST, reason, explanation, id=msg_id if _valid_id(msg_id) else None)


def check_message(message: Any) -> FrameError | None:
    """JSON-RPC 2.0 shape rules, as MCP narrows them. None when the message may be forwarded."""
    if isinstance(message, list):
        return _invalid(
            "batch", "A JSON array is a batch. Batches existed only in revision 2025-03-26; these "
            "servers accept one message per line.", message,
        )  # fmt: skip
    if not isinstance(message, dict):
        return _invalid(
            "not an object", 'A JSON-RPC message is a JSON object: {"jsonrpc": "2.0", ...}.', None
        )
    if message.get("jsonrpc") != "2.0":
        return _invalid(
            'jsonrpc must be "2.0"', 'Every message needs "jsonrpc": "2.0" (the string).', message
        )
    if "id" in message and not _valid_id(message["id"]):
        kind = "null" if message["id"] is None else type(message["id"]).__name__
        return _invalid(
            f"id must be a string or an integer, not {kind}",
            f"An id is a string or an integer. This one is {kind}; MCP forbids null ids.", message,
        )  # fmt: skip
    if "method" in message:
        if not isinstance(message["method"], str):
            return _invalid(
                "method must be a string", 'The "method" must be a string, such as "ping".', message
            )
        if "params" in message and not isinstance(message["params"], dict):
            return _invalid(
                "params must be an object",
                'MCP uses named parameters only: "params", when present, is a JSON object.', message,
            )  # fmt: skip
        if "result" in message or "error" in message:
            return _invalid(
                "a request has no result or error", "A message is a request or a response, not both.", message
            )
        return None
    # No method: a response, which a client sends only to answer a server's request.
    if "id" not in message:
        return _invalid(
            "no method and no id",
            'A request needs "method"; a response needs "id" and "result" or "error".',
            message,
        )
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        return _invalid(
            "a response has exactly one of result or error",
            'A response carries "result" or "error", exactly one of them. '
            'If you meant a request, add "method".', message,
        )  # fmt: skip
    if has_error:
        error = message["error"]
        if not (
            isinstance(error, dict)
            and type(error.get("code")) is int
            and isinstance(error.get("message"), str)
        ):
            return _invalid(
                "error must be an object with an integer code and a string message",
                'An error response\'s "error" is {"code": <integer>, "message": "<text>"}.', message,
            )  # fmt: skip
    return None


def parse_client_text(text: str, max_bytes: int, max_items: int = MAX_ITEMS) -> Frame | FrameError:
    """Everything the relay does with one client frame before it may reach the server."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        return FrameError(
            INVALID_REQUEST,
            f"message is {size} bytes, over the {max_bytes}-byte limit",
            f"This message is {size} bytes; the playground forwards at most {max_bytes}. Nothing was sent.",
            id=edge_id(text),  # so that a client waiting for its answer gets this one
        )
    items = json_items(text, max_items)
    if items > max_items:  # before parsing: that is what it would cost
        if not brackets_close(text):
            return FrameError(
                PARSE_ERROR,
                "its strings, braces or brackets do not all close",
                "This is not valid JSON: some of its strings, braces or brackets never close. "
                "Nothing was sent to the server.",
            )
        return too_many_items_error(max_items, edge_id(text))
    if not text.strip():
        return FrameError(
            PARSE_ERROR, "empty message", "The message is empty. Type a JSON-RPC message first."
        )
    message, error = parse_json(text)
    if error is not None:
        return error
    line = to_line(message)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return FrameError(
            PARSE_ERROR,
            "a string holds an unpaired surrogate escape",
            "A string holds an escape such as \\ud800 that is half of a character: it cannot become UTF-8. "
            "Nothing was sent.",
        )
    problem = check_message(message)
    if problem is not None:
        return problem
    return Frame(message, line, items)


def too_many_items_error(max_items: int, request_id: Any = None) -> FrameError:
    return FrameError(
        INVALID_REQUEST,
        f"message holds more than {max_items} JSON values",
        f"This message holds more than {max_items} JSON values (objects, arrays and the items in them); "
        f"the playground forwards at most {max_items}, since each one takes time to read. Nothing was sent.",
        id=request_id,
    )


def binary_frame_error() -> FrameError:
    return FrameError(
        INVALID_REQUEST,
        "binary frame",
        "The playground takes text frames of JSON only; this was a binary frame.",
    )


def rate_limit_error(limit: int, window_s: float, retry_after_s: float, request_id: Any = None) -> FrameError:
    return FrameError(
        RATE_LIMITED,
        f"more than {limit} messages in {window_s:g} s",
        f"Slow down: at most {limit} messages in {window_s:g} seconds. Try again in {retry_after_s:.0f} s. "
        "Nothing was sent.",
        id=request_id,
    )


# A request's id where clients write it, read from the ends of a message too costly to parse: first
# (after "jsonrpc"), as the Python SDK writes a request, or last, as the TypeScript SDK does. A quote
# that is not escaped is never inside a string, so a match at the very start or the very end of valid
# JSON is the top-level object's own id.
_ID_VALUE = r'(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")'
_ID_FIRST = re.compile(r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID_VALUE + r"\s*[,}]")
_ID_LAST = re.compile(r',\s*"id"\s*:\s*' + _ID_VALUE + r"\s*\}\s*\Z")
_ID_EDGE_CHARS = 512


def edge_id(text: str) -> Any:
    """The id at the start or the end of a message, read without parsing the rest; else None."""
    found = _ID_FIRST.match(text[:_ID_EDGE_CHARS]) or _ID_LAST.search(text[-_ID_EDGE_CHARS:])
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if _valid_id(value) else None


def readable_id(text: str, max_bytes: int) -> Any:
    """The id of a message we will not forward, when it can be read cheaply and is a valid id; else None."""
    if len(text) > max_bytes or crude_items(text) > PEEK_ITEMS:
        return edge_id(text)
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    value = message.get("id") if isinstance(message, dict) else None
    return value if _valid_id(value) else None


def server_exited_error(request_id: Any, ended: str) -> FrameError:
    """`ended`: how, as the end of "the server ..." ("exited with status 1", "was killed by SIGKILL")."""
    return FrameError(
        SERVER_EXITED,
        f"the server {ended} before answering",
        f"The server {ended} before it answered this request; no answer will come.",
        id=request_id,
    )
