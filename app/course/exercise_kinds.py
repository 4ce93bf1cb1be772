"""What each kind of exercise test asks the learner's server, and how its answer is judged: a pass or
a failure with a reason in plain words (docs/authoring.md lists the kinds and their keys)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from app.course.conversation import Conversation


async def _list_all(talk: Conversation, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(20):  # a server that pages forever is cut short
        result, _ = await talk.request(method, {"cursor": cursor} if cursor else {})
        items += [item for item in result.get(key) or [] if isinstance(item, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items


# A text quoted in a reason is cut here: the reason says what came back, not all of it.
QUOTED_CHARS = 160


def _quoted(text: str) -> str:
    return repr(text) if len(text) <= QUOTED_CHARS else repr(text[:QUOTED_CHARS]) + "…"


def _names(items: list[dict[str, Any]], key: str = "name") -> str:
    names = [f"`{item.get(key)}`" for item in items]
    return ", ".join(names) if names else "none"


async def _tool(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    tools = await _list_all(talk, "tools/list", "tools")
    tool = next((t for t in tools if t.get("name") == spec["tool"]), None)
    if tool is None:
        return False, f"tools/list has no tool named `{spec['tool']}` (it has: {_names(tools)})"
    if spec.get("description") and not str(tool.get("description") or "").strip():
        return False, f"`{spec['tool']}` has no description: a model reads it to know when to call the tool"
    for key, field_name in (("input_schema", "inputSchema"), ("output_schema", "outputSchema")):
        if key not in spec:
            continue
        schema = tool.get(field_name)
        if spec[key] is True:
            if not isinstance(schema, dict):
                return False, f"`{spec['tool']}` has no `{field_name}`"
            continue
        problem = _missing(spec[key], schema, field_name)
        if problem:
            return False, f"`{spec['tool']}`: {problem}"
    return True, f"`{spec['tool']}` is listed" + (
        " with the expected schema" if "input_schema" in spec else ""
    )


async def _call(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    # A call to a tool that does not exist may come back `isError: true` too (the SDK answers so):
    # a test that expects a tool error must not pass on a server without the tool.
    tools = await _list_all(talk, "tools/list", "tools")
    if not any(t.get("name") == spec["call"] for t in tools):
        return False, f"tools/list has no tool named `{spec['call']}` to call (it has: {_names(tools)})"
    params: dict[str, Any] = {"name": spec["call"], "arguments": spec.get("arguments", {})}
    token = f"exercise-{talk.next_id}"
    if spec.get("progress"):
        params["_meta"] = {"progressToken": token}
    result, notes = await talk.request("tools/call", params)
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the call returned a result"
    texts = [
        c.get("text", "")
        for c in result.get("content") or []
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    shown = " / ".join(_quoted(t) for t in texts) or "no text content"
    is_error = bool(result.get("isError"))
    if "is_error" in spec and is_error != bool(spec["is_error"]):
        if spec["is_error"]:
            return False, f"expected a result with `isError: true`; got a normal result: {shown}"
        return False, f"the call failed (`isError: true`): {shown}"
    if "text" in spec and str(spec["text"]) not in texts:
        return False, f"expected the text {str(spec['text'])!r}; got {shown}"
    if "text_contains" in spec and not any(str(spec["text_contains"]) in t for t in texts):
        return False, f"expected a text containing {str(spec['text_contains'])!r}; got {shown}"
    if "structured" in spec:
        problem = _missing(spec["structured"], result.get("structuredContent"), "structuredContent")
        if problem:
            return False, problem
    seen = [n.get("method") for n in notes]
    for method in spec.get("notifies", []):
        if method not in seen:
            return (
                False,
                f"expected the notification `{method}` during the call; saw {', '.join(map(str, seen)) or 'none'}",
            )
    for method in spec.get("never_notifies", []):
        if method in seen:
            return False, f"expected no `{method}` during the call, but it was sent"
    if spec.get("progress"):
        mine = [n for n in notes if n.get("method") == "notifications/progress"
                and (n.get("params") or {}).get("progressToken") == token]  # fmt: skip
        if not mine:
            return False, "expected `notifications/progress` with the call's progressToken; none came"
    said = f"`{spec['call']}` answered {shown}"
    return True, said + (" with `isError: true`" if is_error else "")


async def _read(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    result, _ = await talk.request("resources/read", {"uri": spec["read"]})
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the read returned contents"
    contents = [c for c in result.get("contents") or [] if isinstance(c, dict)]
    texts = [str(c.get("text", "")) for c in contents]
    shown = " / ".join(_quoted(t) for t in texts) or "no text"
    if "text" in spec and str(spec["text"]) not in texts:
        return False, f"expected the text {str(spec['text'])!r}; got {shown}"
    if "text_contains" in spec and not any(str(spec["text_contains"]) in t for t in texts):
        return False, f"expected a text containing {str(spec['text_contains'])!r}; got {shown}"
    if "mime_type" in spec and not any(c.get("mimeType") == spec["mime_type"] for c in contents):
        types = ", ".join(str(c.get("mimeType")) for c in contents) or "none"
        return False, f"expected the mimeType {spec['mime_type']!r}; got {types}"
    return True, f"`{spec['read']}` reads {shown}"


async def _resource(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    resources = await _list_all(talk, "resources/list", "resources")
    found = next((r for r in resources if r.get("uri") == spec["resource"]), None)
    if found is None:
        return False, f"resources/list has no `{spec['resource']}` (it has: {_names(resources, 'uri')})"
    if "name" in spec and found.get("name") != spec["name"]:
        return False, f"`{spec['resource']}` is named {found.get('name')!r}, expected {spec['name']!r}"
    return True, f"`{spec['resource']}` is listed"


async def _template(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    templates = await _list_all(talk, "resources/templates/list", "resourceTemplates")
    if not any(t.get("uriTemplate") == spec["template"] for t in templates):
        return (
            False,
            f"resources/templates/list has no `{spec['template']}` (it has: {_names(templates, 'uriTemplate')})",
        )
    return True, f"the template `{spec['template']}` is listed"


async def _prompt(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    prompts = await _list_all(talk, "prompts/list", "prompts")
    found = next((p for p in prompts if p.get("name") == spec["prompt"]), None)
    if found is None:
        return False, f"prompts/list has no prompt named `{spec['prompt']}` (it has: {_names(prompts)})"
    wanted = spec.get("arguments") or []
    have = [a.get("name") for a in found.get("arguments") or [] if isinstance(a, dict)]
    missing = [name for name in wanted if name not in have]
    if missing:
        return False, f"`{spec['prompt']}` takes no argument named {', '.join(f'`{m}`' for m in missing)}"
    return True, f"`{spec['prompt']}` is listed"


async def _get_prompt(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    result, _ = await talk.request(
        "prompts/get", {"name": spec["get_prompt"], "arguments": spec.get("arguments", {})}
    )
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the prompt came back"
    texts = [
        str((m.get("content") or {}).get("text", ""))
        for m in result.get("messages") or []
        if isinstance(m, dict)
    ]
    if "text_contains" in spec and not any(str(spec["text_contains"]) in t for t in texts):
        shown = " / ".join(_quoted(t) for t in texts) or "no messages"
        return False, f"expected a message containing {str(spec['text_contains'])!r}; got {shown}"
    return True, f"`{spec['get_prompt']}` gives {len(texts)} message(s)"


async def _capability(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    value: Any = talk.capabilities
    for part in str(spec["capability"]).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    wanted = spec.get("value", True)
    if wanted is True and value is not None and value is not False:
        return True, f"the server declares `{spec['capability']}`"
    if value == wanted:
        return True, f"`{spec['capability']}` is {json.dumps(value)}"
    return (
        False,
        f"expected the capability `{spec['capability']}` to be {json.dumps(wanted)}; it is {json.dumps(value)}",
    )


RUNNERS: dict[str, Callable[[Conversation, dict[str, Any]], Any]] = {
    "tool": _tool,
    "call": _call,
    "read": _read,
    "resource": _resource,
    "template": _template,
    "prompt": _prompt,
    "get_prompt": _get_prompt,
    "capability": _capability,
}


def _missing(expected: Any, actual: Any, where: str) -> str:
    """'' when `actual` holds everything `expected` says (objects: at least these keys; lists: these
    items, in any order), else what is missing, in words."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"`{where}` is not an object"
        for key, value in expected.items():
            if key not in actual:
                return f"`{where}` has no `{key}`"
            problem = _missing(value, actual[key], f"{where}.{key}")
            if problem:
                return problem
        return ""
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"`{where}` is not a list"
        for item in expected:
            if not any(not _missing(item, have, where) for have in actual):
                return f"`{where}` does not hold {json.dumps(item)}"
        return ""
    if expected != actual:
        return f"`{where}` is {json.dumps(actual)}, expected {json.dumps(expected)}"
    return ""
