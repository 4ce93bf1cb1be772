"""Plain-language findings about each message, for the console's envelope mode.

The `mcp` wire mode never calls this: it must not alter or delay traffic.
"""

from __future__ import annotations

from typing import Any

import pydantic
from mcp_types import PROTOCOL_VERSION_META_KEY, methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from app.protocol.jsonrpc import ERROR_NAMES, INVALID_PARAMS, UNSUPPORTED_VERSION
from app.protocol.revisions import extension_of, table_problems
from app.protocol.transcript import Entry, Transcript

Finding = dict[str, str]
META_VERSION = PROTOCOL_VERSION_META_KEY
NEVER_RELEASED = {"2024-10-07": "2024-10-07 was never a released MCP revision (the first is 2024-11-05)."}
ALL_CLIENT_METHODS = {method for method, _ in methods.CLIENT_REQUESTS}
ALL_CLIENT_NOTIFICATIONS = {method for method, _ in methods.CLIENT_NOTIFICATIONS}
SERVER_REQUEST_HINTS = {
    "sampling/createMessage": "The server asks your model for a completion. Answer with a result holding "
    "role, content and model, using the same id.",
    "roots/list": 'The server asks which folders it may work in. Answer with {"roots": [...]} and the same id.',
    "elicitation/create": "The server asks the user for input. Answer with an action (accept, decline or "
    "cancel) and, on accept, the content.",
    "ping": "The server checks that you are alive: answer with an empty result and the same id.",
}
ERROR_HINTS = {
    -32700: "The server could not parse the message as JSON.",
    -32600: "The message is JSON but not a valid JSON-RPC request.",
    -32601: "The server has no such method (or not in this revision, or not before initialize).",
    -32602: "The method exists, but its params are wrong or missing.",
    -32603: "The server failed while handling the request.",
    UNSUPPORTED_VERSION: "The server does not support the protocol version this request asked for.",
}


def finding(level: str, text: str, ref: str = "") -> Finding:
    return {"level": level, "text": text, "ref": ref}


def _request_version(message: dict[str, Any], transcript: Transcript) -> str:
    """The revision a client message should be read against."""
    params = _object(message.get("params"))
    meta_version = _object(params.get("_meta")).get(META_VERSION)
    if isinstance(meta_version, str) and meta_version in KNOWN_PROTOCOL_VERSIONS:
        return meta_version
    asked = params.get("protocolVersion")
    if (
        message.get("method") == "initialize"
        and isinstance(asked, str)
        and asked in HANDSHAKE_PROTOCOL_VERSIONS
    ):
        return asked
    return transcript.revision or LATEST_HANDSHAKE_VERSION


def _object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: learners send anything."""
    return value if isinstance(value, dict) else {}


def _describe_validation(exc: pydantic.ValidationError, version: str) -> list[Finding]:
    out = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "missing":
            text = f"{where} is required in {version}."
        else:
            text = f"{where}: {error['msg']}."
        out.append(finding("error", text, f"spec {version}"))
    return out


def _initialized(transcript: Transcript) -> bool:
    return any(e.method == "initialize" and transcript.response_to(e) for e in transcript.client_messages())


def client_findings(message: dict[str, Any], transcript: Transcript) -> list[Finding]:
    """What a learner should know about a message they are sending (call before it is recorded)."""
    out: list[Finding] = []
    method = message.get("method")
    version = _request_version(message, transcript)
    if method is None:
        return [
            finding("info", "A response: it answers a request the server sent you, by its id.", "lesson 8")
        ]
    if "id" not in message:
        out.append(finding("info", "A notification carries no id, so it gets no reply.", "JSON-RPC 2.0"))
        if (method, version) not in methods.CLIENT_NOTIFICATIONS:
            out.append(finding("info", f"{method} is not a notification of {version}: the server ignores "
                               "notifications it does not know.", "JSON-RPC 2.0"))  # fmt: skip
        elif method == "notifications/initialized" and not _initialized(transcript):
            out.append(finding("warning", "Send notifications/initialized after the initialize reply, "
                               "not before.", "lifecycle"))  # fmt: skip
        return out
    out.extend(_id_findings(message["id"], version, transcript))
    if method == "initialize":
        requested = _object(message.get("params")).get("protocolVersion")
        if isinstance(requested, str) and requested in NEVER_RELEASED:
            out.append(finding("warning", NEVER_RELEASED[requested], "versioning"))
        elif isinstance(requested, str) and requested not in KNOWN_PROTOCOL_VERSIONS:
            out.append(finding("info", f"{requested} is not a revision this server knows: expect a counter-offer "
                               "of the version it supports, not an error.", "versioning"))  # fmt: skip
    elif (
        method not in ("ping", "server/discover")
        and transcript.revision is None
        and version in HANDSHAKE_PROTOCOL_VERSIONS
    ):
        out.append(finding("warning", "Before initialize completes, only ping should be sent: expect an "
                           "error.", "lifecycle"))  # fmt: skip
    extension = extension_of(method, version)
    if extension is not None:
        out.append(finding("info", f"{method} belongs to the {extension} extension, not to revision {version} itself: "
                           "a server that declared the extension answers it; another answers -32601 Method not "
                           "found.", "extension"))  # fmt: skip
        return out
    if (method, version) not in methods.CLIENT_REQUESTS:
        if method in ALL_CLIENT_METHODS:
            out.append(finding("warning", f"{method} is not part of revision {version}.", f"spec {version}"))
        else:
            out.append(finding("info", f"{method} is not an MCP method: expect -32601 Method not found.",
                               "JSON-RPC 2.0"))  # fmt: skip
        return out
    try:
        methods.validate_client_request(method, version, message.get("params"))
    except pydantic.ValidationError as exc:
        out.extend(_describe_validation(exc, version))
    # mcp_types checks older revisions against 2025-11-25 shapes; our table knows what they lacked.
    for problem in table_problems(message, version, method):
        out.append(finding("warning", f"{problem[0].upper()}{problem[1:]}.", f"spec {version}"))
    return out


def _id_findings(request_id: Any, version: str, transcript: Transcript) -> list[Finding]:
    """A request id in use: every revision forbids one a request still waiting has; the handshake
    revisions forbid any this session has used (2026-07-28 has no session, and allows it again)."""
    waiting = transcript.open_request(request_id)
    if waiting is not None:
        return [finding("warning", f"A request with id {request_id!r} ({waiting.method}) still waits for its "
                        "reply: a request's id must not be that of one the sender has had no reply to, "
                        "or the replies cannot be told apart.", f"spec {version}, basic §Requests")]  # fmt: skip
    if version in HANDSHAKE_PROTOCOL_VERSIONS and transcript.used_request_id(request_id):
        return [finding("warning", f"Id {request_id!r} was used by an earlier request of this session: in "
                        f"{version} a request's id must not have been used by the sender in the same "
                        "session.", f"spec {version}, basic §Requests")]  # fmt: skip
    return []


def _before_any_handshake(request: Entry, transcript: Transcript) -> bool:
    """A handshake-era request sent while no initialize had been answered (nor a revision adopted)."""
    if transcript.revision is not None or request.method in ("initialize", "ping", "server/discover"):
        return False
    params = request.message.get("params") if isinstance(request.message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return not (isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta)  # a stateless request is not


def server_findings(entry: Entry, transcript: Transcript) -> list[Finding]:
    """What a learner should know about a line the server wrote (call after it is recorded)."""
    message = entry.message
    if not isinstance(message, dict):
        return [finding("error", "This line is not a JSON-RPC message. A server must write only JSON-RPC "
                        "messages to stdout, one per line; logs belong on stderr.", "stdio transport")]  # fmt: skip
    out: list[Finding] = []
    if "method" in message:
        if not isinstance(message["method"], str):  # a list or an object: no name to look up
            return [finding("error", "This message's \"method\" is not a string, so it is not a valid request "
                            "or notification (an invalid request is answered with -32600 Invalid Request).",
                            "JSON-RPC 2.0")]  # fmt: skip
        if "id" in message:
            hint = SERVER_REQUEST_HINTS.get(
                message["method"], "The server sends you a request: answer it by id."
            )
            out.append(finding("info", hint, "lesson 8"))
        else:
            out.append(
                finding("info", f"A notification from the server ({message['method']}): no reply.", "")
            )
        return out
    if entry.answers is None:
        out.append(finding("warning", f"This response's id {message.get('id')!r} matches no request you sent "
                           "and have not yet had answered.", "JSON-RPC 2.0"))  # fmt: skip
        return out
    request = transcript.entry(entry.answers)
    if request is None:  # long ago, let go of
        return [finding("info", f"Answers your request #{entry.answers}.", "")]
    out.append(
        finding(
            "info", f"Answers your {request.method} (#{request.seq}) after {entry.rtt_ms or 0:.1f} ms.", ""
        )
    )
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        name = ERROR_NAMES.get(code, "") if isinstance(code, int) else ""
        hint = (
            ERROR_HINTS.get(code, "An error defined by the server.") if isinstance(code, int) else "An error."
        )
        if code == INVALID_PARAMS and _before_any_handshake(request, transcript):
            hint = (
                "No handshake has happened in this session yet, and this server answers nothing but ping "
                "before one: send initialize first (then notifications/initialized), and this request again."
            )
            out.append(finding("error", f"Error {code}{' ' + name if name else ''}: {hint}", "lifecycle"))
        else:
            out.append(finding("error", f"Error {code}{' ' + name if name else ''}: {hint}", "JSON-RPC 2.0"))
    else:
        revision = transcript.revision
        if revision is not None:
            for problem in table_problems(message, revision, request.method):
                out.append(finding("warning", f"The server's reply has {problem}.", f"spec {revision}"))
    if request.method == "initialize" and isinstance(message.get("result"), dict):
        asked = (request.message.get("params") or {}).get("protocolVersion")
        got = (message.get("result") or {}).get("protocolVersion")
        if asked != got:
            out.append(finding("info", f"You asked for {asked}; the server counter-offered {got}. A client that "
                               "cannot speak it should disconnect.", "versioning"))  # fmt: skip
        else:
            out.append(finding("info", f"Agreed on {got}. Now send notifications/initialized.", "lifecycle"))
    return out
