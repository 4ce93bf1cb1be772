"""What each kind of exercise test asks the learner's server, and how its answer is judged: a pass or
a failure with a reason in plain words (docs/authoring.md lists the kinds and their keys)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

from mcp.server.apps import APP_MIME_TYPE

from app.course.conversation import Conversation, Failed, cut, listed

METHOD_NOT_FOUND = -32601
# At most this many values in one completion result (2025-11-25 server/utilities/completion).
COMPLETION_VALUES_LIMIT = 100


async def _list_all(talk: Conversation, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(20):  # a server that pages forever is cut short
        result, _ = await talk.request(method, {"cursor": cursor} if cursor else {})
        items += _objects(result.get(key))
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
    return items


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list in an answer; none when it is not a list (a server may send anything)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _quoted(text: str) -> str:
    return repr(cut(text))


def _names(items: list[dict[str, Any]], key: str = "name") -> str:
    return listed([str(item.get(key)) for item in items]) or "none"


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
    answers = {"elicitation/create": {"result": spec["elicit"]}} if "elicit" in spec else None
    result, notes = await talk.request("tools/call", params, answers=answers)
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the call returned a result"
    texts = [
        c["text"]
        for c in _objects(result.get("content"))
        if c.get("type") == "text" and isinstance(c.get("text"), str)
    ]
    shown = " / ".join(_quoted(t) for t in texts) or "no text content"
    if "elicit" in spec:
        problem = _elicited(talk, spec, shown)
        if problem:
            return False, problem
    is_error = bool(result.get("isError"))
    if "is_error" in spec and is_error != bool(spec["is_error"]):
        if spec["is_error"]:
            return False, f"expected a result with `isError: true`; got a normal result: {shown}"
        return False, f"the call failed (`isError: true`): {shown}"
    if "text" in spec and not has_text(str(spec["text"]), texts):
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
    if "elicit" in spec:
        said = f"`{spec['call']}` asked the user, got `{spec['elicit']['action']}`, and answered {shown}"
    return True, said + (" with `isError: true`" if is_error else "")


def _elicited(talk: Conversation, spec: dict[str, Any], shown: str) -> str:
    """'' when the call asked the user with a form-mode `elicitation/create` that holds what the test
    names, else what went wrong, in words."""
    asked = [r for r in talk.asked if r.get("method") == "elicitation/create"]
    if not asked:
        return (f"expected `{spec['call']}` to ask the user with `elicitation/create` before it answers; "
                f"it answered without asking: {shown}")  # fmt: skip
    found = asked[0].get("params")
    params: dict[str, Any] = found if isinstance(found, dict) else {}
    if params.get("mode", "form") != "form":
        return (f"`{spec['call']}` asked in {params.get('mode')!r} mode, but the client declared form mode "
                "only, and a server must not use a mode the client did not declare")  # fmt: skip
    if "elicit_schema" in spec:
        problem = _missing(spec["elicit_schema"], params.get("requestedSchema"), "requestedSchema")
        if problem:
            return f"the elicitation's {problem}"
    return ""


# A number as a tool's text may write it: 212, 212.0, -0.5, 1e3.
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def has_text(expected: str, texts: list[str]) -> bool:
    """Whether one of `texts` is `expected`; a number counts by its value, as the languages write the
    same one differently (Python's str(212.0) is "212.0", JavaScript's String(212) "212")."""
    if expected in texts:
        return True
    if not _NUMBER.fullmatch(expected):
        return False
    return any(_NUMBER.fullmatch(t.strip()) and float(t) == float(expected) for t in texts)


async def _read(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    result, _ = await talk.request("resources/read", {"uri": spec["read"]})
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the read returned contents"
    contents = _objects(result.get("contents"))
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
    have = [a.get("name") for a in _objects(found.get("arguments"))]
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
        str(m["content"].get("text", ""))
        for m in _objects(result.get("messages"))
        if isinstance(m.get("content"), dict)
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


def _completing(params: dict[str, Any]) -> str:
    """What a completion request completes, in words."""
    ref, name = params["ref"], params["argument"]["name"]
    if ref.get("type") == "ref/prompt":
        return f"the argument `{name}` of the prompt `{ref.get('name')}`"
    return f"the variable `{name}` of `{ref.get('uri')}`"


async def _complete(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    params = spec["complete"]
    what = _completing(params)
    try:
        result, _ = await talk.request("completion/complete", params)
    except Failed as exc:
        if exc.error.get("code") == METHOD_NOT_FOUND and "error_code" not in spec:
            return False, (f"the server offers no completion: `completion/complete` got {exc.words} "
                           f"when asked for {what}")  # fmt: skip
        raise
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the completion came back"
    completion = result.get("completion")
    values = completion.get("values") if isinstance(completion, dict) else None
    if not isinstance(completion, dict) or not isinstance(values, list):
        return (
            False,
            f"the result of `completion/complete` has no `completion.values` list: {_quoted(json.dumps(result))}",
        )
    shown = ", ".join(f"`{v}`" for v in values[:12]) + (" …" if len(values) > 12 else "") or "no values"
    typed = repr(params["argument"]["value"])
    if len(values) > COMPLETION_VALUES_LIMIT:
        return (
            False,
            f"{len(values)} values came back for {what}; one answer holds at most {COMPLETION_VALUES_LIMIT}",
        )
    total, more = completion.get("total"), completion.get("hasMore")
    if total is not None and (not isinstance(total, int) or isinstance(total, bool)):
        return False, f"`completion.total` is {json.dumps(total)}, not a whole number"
    if more is not None and not isinstance(more, bool):
        return False, f"`completion.hasMore` is {json.dumps(more)}, not true or false"
    missing = [v for v in spec.get("values_include", []) if v not in values]
    if missing:
        wanted = ", ".join(f"`{v}`" for v in missing)
        return False, f"expected {what} to suggest {wanted} for {typed}; got {shown}"
    unwanted = [v for v in spec.get("values_exclude", []) if v in values]
    if unwanted:
        return (
            False,
            f"expected {what} not to suggest {', '.join(f'`{v}`' for v in unwanted)} for {typed}; got {shown}",
        )
    if "max_values" in spec and len(values) > spec["max_values"]:
        return False, f"expected at most {spec['max_values']} values for {what}; got {len(values)}: {shown}"
    return True, f"{what} with {typed} suggests {shown}"


# The domain lists a `ui://` resource may declare in `_meta.ui.csp` (MCP Apps 2026-01-26, UI Resource Format).
CSP_DOMAIN_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")


async def _app(talk: Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    """A tool linked to a `ui://` resource that reads as one HTML document of the MCP Apps MIME type
    (MCP Apps 2026-01-26: Resource Discovery, UI Resource Format, Content Requirements)."""
    name = spec["app"]
    tools = await _list_all(talk, "tools/list", "tools")
    tool = next((t for t in tools if t.get("name") == name), None)
    if tool is None:
        return False, f"tools/list has no tool named `{name}` (it has: {_names(tools)})"
    uri, problem = _ui_link(tool, spec)
    if problem:
        return False, problem
    try:
        result, _ = await talk.request("resources/read", {"uri": uri})
    except Failed as exc:
        return False, f"reading `{uri}` failed with {exc.words}: a tool's app must exist"
    contents = _objects(result.get("contents"))
    if len(contents) != 1:
        return False, f"`{uri}` reads as {len(contents)} contents; an app is one HTML document"
    html, problem = _ui_document(uri, contents[0], spec)
    if problem:
        return False, problem
    return True, f"`{name}` links `{uri}`, which reads as {len(html)} characters of HTML, `{APP_MIME_TYPE}`"


def _ui_link(tool: dict[str, Any], spec: dict[str, Any]) -> tuple[str, str]:
    """The `ui://` URI a listed tool links in `_meta.ui`, and what is wrong with the link ('' if nothing)."""
    name = tool.get("name")
    found = tool.get("_meta")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    ui: dict[str, Any] = meta["ui"] if isinstance(meta.get("ui"), dict) else {}
    uri = ui.get("resourceUri")
    if uri is None and "ui/resourceUri" in meta:
        return (
            "",
            f'`{name}` uses the deprecated flat key `_meta["ui/resourceUri"]`; use `_meta.ui.resourceUri`',
        )
    if uri is None:
        return "", f"`{name}` has no `_meta.ui.resourceUri`: nothing links it to an app"
    if not isinstance(uri, str) or not uri.startswith("ui://"):
        return "", f"`{name}`'s `_meta.ui.resourceUri` is {json.dumps(uri)}; an app's URI starts with `ui://`"
    if "resource_uri" in spec and uri != spec["resource_uri"]:
        return uri, f"`{name}` links {json.dumps(uri)}, expected {json.dumps(spec['resource_uri'])}"
    visibility = ui.get("visibility")
    if visibility is not None and (
        not isinstance(visibility, list)
        or not visibility
        or not all(v in ("model", "app") for v in visibility)
    ):
        return (
            uri,
            f"`{name}`'s `_meta.ui.visibility` is {json.dumps(visibility)}; it lists `model`, `app` or both",
        )
    # Left out, visibility means both (MCP Apps 2026-01-26, Resource Discovery: Visibility).
    if "visibility" in spec and set(visibility or ("model", "app")) != set(spec["visibility"]):
        return (
            uri,
            f"`{name}`'s visibility is {json.dumps(visibility)}, expected {json.dumps(spec['visibility'])}",
        )
    return uri, ""


def _ui_document(uri: str, content: dict[str, Any], spec: dict[str, Any]) -> tuple[str, str]:
    """The HTML of a `ui://` resource's one content, and what is wrong with it ('' if nothing)."""
    if content.get("mimeType") != APP_MIME_TYPE:
        return (
            "",
            f"`{uri}` is served as {json.dumps(content.get('mimeType'))}; an app must be `{APP_MIME_TYPE}`",
        )
    html = _html_of(content)
    if html is None:
        return "", f"`{uri}` has neither `text` nor a `blob` of UTF-8 text: an app's HTML goes in one of them"
    if "<!doctype html" not in html[:1000].lower():
        return html, f"`{uri}` is not an HTML5 document: it should start with `<!DOCTYPE html>`"
    if "html_contains" in spec and str(spec["html_contains"]) not in html:
        return html, f"expected the app's HTML to contain {str(spec['html_contains'])!r}"
    meta = content.get("_meta")
    ui = meta.get("ui") if isinstance(meta, dict) else None
    csp = ui.get("csp") if isinstance(ui, dict) else None
    for key in CSP_DOMAIN_KEYS:
        domains = csp.get(key) if isinstance(csp, dict) else None
        if domains is not None and not (
            isinstance(domains, list) and all(isinstance(d, str) for d in domains)
        ):
            return html, f"`_meta.ui.csp.{key}` of `{uri}` is {json.dumps(domains)}; it is a list of origins"
    return html, ""


def _html_of(content: dict[str, Any]) -> str | None:
    """A resource content's HTML: its `text`, or its base64 `blob` decoded; None when it has neither."""
    text, blob = content.get("text"), content.get("blob")
    if isinstance(text, str):
        return text
    if not isinstance(blob, str):
        return None
    try:
        return base64.b64decode(blob, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


RUNNERS: dict[str, Callable[[Conversation, dict[str, Any]], Any]] = {
    "tool": _tool,
    "call": _call,
    "read": _read,
    "resource": _resource,
    "template": _template,
    "prompt": _prompt,
    "get_prompt": _get_prompt,
    "capability": _capability,
    "complete": _complete,
    "app": _app,
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
