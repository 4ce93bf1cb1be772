"""Validate a JSON-RPC example for one protocol revision.

`mcp_types.methods` knows which methods exist in which revision, but checks every handshake
revision against the 2025-11-25 shapes. The fields and features that older revisions lack come
from the table below (taken from each revision's schema.json), so an example marked
`rev=2024-11-05` that uses `clientInfo.title` is caught.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_types import methods
from mcp_types.jsonrpc import jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS
from pydantic import ValidationError

BATCH_REVISIONS = ("2025-03-26",)  # JSON-RPC batches were added in 2025-03-26 and removed in 2025-06-18
# Requests an extension adds to a revision (its own document defines them, not the revision's schema):
# method -> (extension id, the first revision it extends). Their params are the extension's to define,
# so only the JSON-RPC shape is checked; a server answers them only if it declared the extension.
EXTENSION_REQUESTS: dict[str, tuple[str, str]] = {
    "tasks/get": ("io.modelcontextprotocol/tasks", "2026-07-28"),
    "tasks/update": ("io.modelcontextprotocol/tasks", "2026-07-28"),
    "tasks/cancel": ("io.modelcontextprotocol/tasks", "2026-07-28"),
}


def extension_of(method: Any, revision: str) -> str | None:
    """The extension whose request `method` is in `revision`, or None."""
    found = EXTENSION_REQUESTS.get(method) if isinstance(method, str) else None
    if found is None or revision not in KNOWN_PROTOCOL_VERSIONS:
        return None
    extension, since = found
    return (
        extension if KNOWN_PROTOCOL_VERSIONS.index(revision) >= KNOWN_PROTOCOL_VERSIONS.index(since) else None
    )


@dataclass(frozen=True)
class Rule:
    """`path` inside a message of `method` exists only from revision `since` on.

    Path segments are keys; `[]` after a key means "every item of that list"; a last segment
    `key=value` matches only that value (for content types).
    """

    method: str
    path: str
    since: str
    what: str


RULES: tuple[Rule, ...] = (
    # initialize request
    Rule("initialize", "params.clientInfo.title", "2025-06-18", "a display title in clientInfo"),
    Rule("initialize", "params.clientInfo.description", "2025-11-25", "clientInfo.description"),
    Rule("initialize", "params.clientInfo.icons", "2025-11-25", "clientInfo.icons"),
    Rule("initialize", "params.clientInfo.websiteUrl", "2025-11-25", "clientInfo.websiteUrl"),
    Rule("initialize", "params.capabilities.elicitation", "2025-06-18", "the elicitation capability"),
    Rule("initialize", "params.capabilities.elicitation.form", "2025-11-25", "elicitation.form"),
    Rule("initialize", "params.capabilities.elicitation.url", "2025-11-25", "elicitation.url"),
    Rule("initialize", "params.capabilities.sampling.context", "2025-11-25", "sampling.context"),
    Rule("initialize", "params.capabilities.sampling.tools", "2025-11-25", "sampling.tools"),
    Rule("initialize", "params.capabilities.tasks", "2025-11-25", "the tasks capability"),
    # initialize result
    Rule("initialize", "result.serverInfo.title", "2025-06-18", "a display title in serverInfo"),
    Rule("initialize", "result.serverInfo.description", "2025-11-25", "serverInfo.description"),
    Rule("initialize", "result.serverInfo.icons", "2025-11-25", "serverInfo.icons"),
    Rule("initialize", "result.serverInfo.websiteUrl", "2025-11-25", "serverInfo.websiteUrl"),
    Rule("initialize", "result.capabilities.completions", "2025-03-26", "the completions capability"),
    Rule("initialize", "result.capabilities.tasks", "2025-11-25", "the tasks capability"),
    # lists
    Rule("tools/list", "result.tools[].annotations", "2025-03-26", "tool annotations"),
    Rule("tools/list", "result.tools[].title", "2025-06-18", "a tool title"),
    Rule("tools/list", "result.tools[].outputSchema", "2025-06-18", "a tool outputSchema"),
    Rule("tools/list", "result.tools[].icons", "2025-11-25", "tool icons"),
    Rule("tools/list", "result.tools[].execution", "2025-11-25", "tool execution"),
    Rule("resources/list", "result.resources[].title", "2025-06-18", "a resource title"),
    Rule("resources/list", "result.resources[].icons", "2025-11-25", "resource icons"),
    Rule("resources/templates/list", "result.resourceTemplates[].title", "2025-06-18", "a template title"),
    Rule("resources/templates/list", "result.resourceTemplates[].icons", "2025-11-25", "template icons"),
    Rule("prompts/list", "result.prompts[].title", "2025-06-18", "a prompt title"),
    Rule("prompts/list", "result.prompts[].arguments[].title", "2025-06-18", "a prompt argument title"),
    Rule("prompts/list", "result.prompts[].icons", "2025-11-25", "prompt icons"),
    # tools/call
    Rule("tools/call", "params.task", "2025-11-25", "a task-augmented call"),
    Rule("tools/call", "result.structuredContent", "2025-06-18", "structuredContent"),
    Rule("tools/call", "result.content[].type=audio", "2025-03-26", "audio content"),
    Rule("tools/call", "result.content[].type=resource_link", "2025-06-18", "resource_link content"),
    # notifications
    Rule("notifications/progress", "params.message", "2025-03-26", "a progress message"),
)


def _older(revision: str, since: str) -> bool:
    return KNOWN_PROTOCOL_VERSIONS.index(revision) < KNOWN_PROTOCOL_VERSIONS.index(since)


def _matches(node: Any, segments: list[str]) -> Iterator[Any]:
    if not segments:
        yield node
        return
    head, rest = segments[0], segments[1:]
    if not isinstance(node, dict):
        return
    if "=" in head and not rest:
        key, value = head.split("=", 1)
        if node.get(key) == value:
            yield node
        return
    many = head.endswith("[]")
    key = head[:-2] if many else head
    if key not in node:
        return
    if many:
        for item in node[key] if isinstance(node[key], list) else ():
            yield from _matches(item, rest)
    else:
        yield from _matches(node[key], rest)


def table_problems(message: dict[str, Any], revision: str, method: str | None) -> list[str]:
    """What in `message` (of `method`, or answering it) did not exist yet in `revision`."""
    if revision not in HANDSHAKE_PROTOCOL_VERSIONS or method is None:
        return []
    problems = []
    for rule in RULES:
        if rule.method == method and _older(revision, rule.since):
            if any(True for _ in _matches(message, rule.path.split("."))):
                problems.append(f"{rule.what} ({rule.path}) exists only from {rule.since}, not in {revision}")
    return problems


def validate_message(
    message: Any, revision: str, *, reply_to: str | None = None, sender: str = "client"
) -> list[str]:
    """Problems with `message` as revision `revision` defines it; an empty list means valid."""
    if revision not in KNOWN_PROTOCOL_VERSIONS:
        return [f"unknown revision {revision!r}; known: {', '.join(KNOWN_PROTOCOL_VERSIONS)}"]
    if isinstance(message, list):
        if revision not in BATCH_REVISIONS:
            return [f"a batch (JSON array) is valid only in {', '.join(BATCH_REVISIONS)}, not in {revision}"]
        if not message:
            return ["an empty batch is not valid"]
        return [
            p for item in message for p in validate_message(item, revision, reply_to=reply_to, sender=sender)
        ]
    try:
        jsonrpc_message_adapter.validate_python(message)
    except ValidationError as exc:
        return [f"not a JSON-RPC 2.0 message: {_first_error(exc)}"]
    id_problem = _id_problem(message)
    if id_problem:
        return [id_problem]
    method = message.get("method")
    try:
        if method is not None:
            _validate_call(message, revision, sender)
        elif "result" in message:
            if reply_to is None:
                return ["a response example must say which request it answers: reply-to=<method>"]
            method = reply_to
            _validate_result(message["result"], revision, reply_to)
    except KeyError:
        return [f"{method!r} is not a {sender} {_kind(message)} in revision {revision}"]
    except ValidationError as exc:
        return [f"{method}: {_first_error(exc)}"]
    return table_problems(message, revision, method)


def _id_problem(message: dict[str, Any]) -> str | None:
    """MCP ids are strings or integers in every revision's schema, never null: JSON-RPC 2.0 answers an
    unreadable request with a null id, which MCP's schema does not have (from 2025-11-25 such an
    error response may leave its id out)."""
    if "id" not in message:
        return None
    value = message["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    return f"an id is a string or an integer, not {json.dumps(value)}"


def _kind(message: dict[str, Any]) -> str:
    return "request" if "id" in message else "notification"


def _validate_call(message: dict[str, Any], revision: str, sender: str) -> None:
    method, params = message["method"], message.get("params")
    if sender == "client" and "id" in message and extension_of(method, revision) is not None:
        if params is not None and not isinstance(params, dict):
            raise KeyError(method)  # params, when present, are an object in every MCP request
        return
    if sender == "client":
        if "id" in message:
            methods.validate_client_request(method, revision, params)
        else:
            methods.validate_client_notification(method, revision, params)
    elif "id" in message:
        methods.parse_server_request(method, revision, params)
    else:
        methods.parse_server_notification(method, revision, params)


def _validate_result(result: dict[str, Any], revision: str, reply_to: str) -> None:
    if (reply_to, revision) in methods.SERVER_RESULTS:
        methods.validate_server_result(reply_to, revision, result)
    else:
        methods.validate_client_result(reply_to, revision, result)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "message"
    return f"{where}: {err['msg']}"


def parse_strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity (RFC 8259 has neither)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)
