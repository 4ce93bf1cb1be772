"""Lesson 25, MCP Apps: declaring the extension, a tool's `ui://` resource, the host<->app handshake,
app-initiated tool calls the learner allows or declines, and the learner's own app.

The app lane (host<->app messages, `Transcript.app_messages()`) carries the app's own request ids; a
call the learner allowed reaches the server as a client request the transcript marks as made by
the app, under a fresh relay id, so the two are matched by order, never by id.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from app.course.checks import (
    Outcome,
    answered_with,
    check,
    error_of,
    error_words,
    exchanges,
    first_text,
    judge,
    newest_first,
    obj,
    params_of,
    requests,
    result_of,
)
from app.protocol.transcript import Entry, Transcript

UI_SCHEME = "ui://"
UI_INITIALIZE = "ui/initialize"
UI_INITIALIZED = "ui/notifications/initialized"
TOOL_INPUT = "ui/notifications/tool-input"
TOOL_RESULT = "ui/notifications/tool-result"

NO_APP = (
    "No app has started yet. After the handshake, send `tools/list` (the console finds a tool's app in "
    "its definition), then call `show_order` with an order id: the console renders its app."
)
NO_APP_CALL = "Press the app's Refresh button: it asks the host to call `get_order_status` for it."


# --- Declaring the extension --------------------------------------------------------------------


def apps_settings(capabilities: Any) -> Any:
    """The settings a client's capabilities give MCP Apps, or None when they do not declare it."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return extensions.get(EXTENSION_ID) if isinstance(extensions, dict) else None


def _declared_capabilities(request: Entry) -> Any:
    """What a request declares: `initialize`'s capabilities, or a 2026-07-28 request's envelope."""
    params = params_of(request)
    if request.method == "initialize":
        return params.get("capabilities")
    meta = params.get("_meta")
    return meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None


def _declares_apps(request: Entry) -> bool:
    settings = apps_settings(_declared_capabilities(request))
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


@check(
    "apps-extension-declared",
    f"Declare MCP Apps (`{EXTENSION_ID}` with `mimeTypes`) in your client capabilities, and get an answer.",
)
def apps_extension_declared(t: Transcript) -> Outcome:
    sent = [e for e in t.client_messages() if e.is_request and t.made_by(e) is None]

    def passes(request: Entry, response: Entry | None) -> str | None:
        if not _declares_apps(request) or result_of(response) is None:
            return None
        where = "`initialize`" if request.method == "initialize" else f"`{request.method}`'s envelope"
        return f"Message #{request.seq} declared MCP Apps in {where}, and the server answered it."

    def problem(request: Entry) -> str | None:
        settings = apps_settings(_declared_capabilities(request))
        if settings is None:
            if request.method == "initialize":
                return (
                    f'Your `initialize` (message #{request.seq}) declares no MCP Apps: add `"extensions": '
                    f'{{"{EXTENSION_ID}": {{"mimeTypes": ["{APP_MIME_TYPE}"]}}}}` to `capabilities`.'
                )
            return None
        if not _declares_apps(request):
            return (
                f"Message #{request.seq} names the extension, but its settings need `mimeTypes` holding "
                f"`{APP_MIME_TYPE}`: the setting is required, and it says which kind of app you can show."
            )
        return None

    # The newest request that declares anything decides the reason; others are not about Apps.
    declaring = [e for e in sent if e.method == "initialize" or apps_settings(_declared_capabilities(e))]
    return judge(
        newest_first(t, declaring),
        passes,
        unsent="Send `initialize` declaring the MCP Apps extension in `capabilities.extensions`.",
        failed=answered_with,
        before_reply=problem,
    )


# --- The tool's UI resource ---------------------------------------------------------------------


def ui_link(tool: Any) -> str | None:
    """The `ui://` URI a listed tool links in `_meta.ui.resourceUri`, else None."""
    meta = tool.get("_meta") if isinstance(tool, dict) else None
    ui = meta.get("ui") if isinstance(meta, dict) else None
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    return uri if isinstance(uri, str) and uri.startswith(UI_SCHEME) else None


def _visibility(tool: dict[str, Any]) -> str:
    ui = obj(obj(tool.get("_meta")).get("ui"))
    seen = ui.get("visibility") if isinstance(ui, dict) else None
    if not isinstance(seen, list):
        return 'none given, so `["model", "app"]`'
    return ", ".join(f"`{v}`" for v in seen) or "empty"


@check(
    "ui-tool-listed",
    "Send `tools/list` and find a tool whose `_meta.ui.resourceUri` names a `ui://` resource.",
)
def ui_tool_listed(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        tools = (result_of(response) or {}).get("tools")
        for tool in tools if isinstance(tools, list) else []:
            uri = ui_link(tool)
            if uri is not None:
                return f"`{tool.get('name')}` links the app `{uri}` (visibility: {_visibility(tool)})."
        return None

    def failed(_request: Entry, response: Entry) -> str:
        if error_of(response) is not None:
            return f"The server answered with {error_words(error_of(response) or {})}. Did you finish the handshake?"
        return "No tool in that list has `_meta.ui.resourceUri`. Look again: `show_order` should have one."

    return judge(
        list(exchanges(t, "tools/list")),
        passes,
        unsent="You have not sent `tools/list` yet (complete the handshake first).",
        failed=failed,
    )


def _ui_contents(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    contents = (result or {}).get("contents")
    return [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []


@check(
    "ui-resource-read",
    f"Read a tool's `ui://` resource with `resources/read` and get HTML served as `{APP_MIME_TYPE}`.",
)
def ui_resource_read(t: Transcript) -> Outcome:
    reads = requests(t, "resources/read")
    ui_reads = [r for r in reads if str(params_of(r).get("uri", "")).startswith(UI_SCHEME)]

    def passes(request: Entry, response: Entry | None) -> str | None:
        for content in _ui_contents(result_of(response)):
            if content.get("mimeType") == APP_MIME_TYPE:
                size = len(str(content.get("text") or content.get("blob") or ""))
                return f"`{params_of(request).get('uri')}` came back as `{APP_MIME_TYPE}`: {size} characters of HTML."
        return None

    def failed(_request: Entry, response: Entry) -> str:
        if error_of(response) is not None:
            return (
                f"The server answered with {error_words(error_of(response) or {})}. Copy the URI exactly "
                "from the tool's `_meta.ui.resourceUri`."
            )
        types = ", ".join(str(c.get("mimeType")) for c in _ui_contents(result_of(response))) or "none"
        return f"That read came back with the MIME type(s) {types}, not `{APP_MIME_TYPE}`."

    unsent = "Send `resources/read` with the `uri` from `show_order`'s `_meta.ui.resourceUri`."
    if reads and not ui_reads:
        unsent = f"You read `{params_of(reads[-1]).get('uri')}`, which is not a `ui://` resource. " + unsent
    return judge(newest_first(t, ui_reads), passes, unsent=unsent, failed=failed)


# --- The app lane ---------------------------------------------------------------------------------


def _id_of(entry: Entry) -> str:
    return json.dumps(entry.message.get("id")) if isinstance(entry.message, dict) else ""


def _answer(lane: list[Entry], request: Entry) -> Entry | None:
    """The host's answer to an app's request: the first host-to-app response after it with its id."""
    wanted = _id_of(request)
    return next(
        (
            e
            for e in lane
            if e.seq > request.seq and e.direction == "to_app" and e.is_response and _id_of(e) == wanted
        ),
        None,
    )


def _from_app(lane: list[Entry], method: str) -> list[Entry]:
    return [e for e in lane if e.direction == "from_app" and e.method == method]


def _handshakes(lane: list[Entry]) -> list[tuple[Entry, Entry | None, Entry | None]]:
    """Each app's `ui/initialize`, the host's answer, and the app's `initialized` after it; oldest first."""
    found = []
    for request in (e for e in _from_app(lane, UI_INITIALIZE) if e.is_request):
        answer = _answer(lane, request)
        after = answer.seq if answer is not None else request.seq
        initialized = next((e for e in _from_app(lane, UI_INITIALIZED) if e.seq > after), None)
        found.append((request, answer, initialized))
    return found


def _initialized(lane: list[Entry]) -> Outcome:
    """Whether an app finished its handshake with the host, and the reason in words."""
    handshakes = _handshakes(lane)
    for request, answer, initialized in reversed(handshakes):
        result = result_of(answer)
        if result is None or initialized is None:
            continue
        info = result.get("hostInfo")
        host = f"`{info.get('name')}`" if isinstance(info, dict) else "the host"
        return True, (
            f"The app asked `{UI_INITIALIZE}` (message #{request.seq}); {host} answered with protocol version "
            f"{json.dumps(result.get('protocolVersion'))} (#{(answer or request).seq}); the app then sent "
            f"`{UI_INITIALIZED}` (#{initialized.seq})."
        )
    if not handshakes:
        return False, NO_APP
    request, answer, _ = handshakes[-1]
    if answer is None:
        return (
            False,
            f"The app asked `{UI_INITIALIZE}` (message #{request.seq}); waiting for the host's answer.",
        )
    if error_of(answer) is not None:
        return (
            False,
            f"The host refused the app's `{UI_INITIALIZE}` with {error_words(error_of(answer) or {})}.",
        )
    return False, f"The host answered (#{answer.seq}); waiting for the app's `{UI_INITIALIZED}`."


@check(
    "app-initialized",
    f"Watch an app start: its `{UI_INITIALIZE}` answered by the host, then its `{UI_INITIALIZED}`.",
)
def app_initialized(t: Transcript) -> Outcome:
    return _initialized(t.app_messages())


@check(
    "app-tool-data-delivered",
    f"After the app's handshake, see the host send it `{TOOL_INPUT}` and then `{TOOL_RESULT}`.",
)
def app_tool_data_delivered(t: Transcript) -> Outcome:
    lane = t.app_messages()
    started, reason = _initialized(lane)
    if not started:
        return False, reason
    to_app = [e for e in lane if e.direction == "to_app" and e.is_notification]
    for _, _, initialized in reversed(_handshakes(lane)):
        if initialized is None:
            continue
        given = next((e for e in to_app if e.method == TOOL_INPUT and e.seq > initialized.seq), None)
        if given is None:
            continue
        done = next((e for e in to_app if e.method == TOOL_RESULT and e.seq > given.seq), None)
        if done is None:
            return (
                False,
                f"The app got the tool's arguments (message #{given.seq}); waiting for `{TOOL_RESULT}`.",
            )
        arguments = json.dumps(params_of(given).get("arguments"))
        said = first_text(params_of(done))
        return True, (
            f"The app got the arguments {arguments} (message #{given.seq}), then the tool's result "
            f"(#{done.seq})" + (f": {said}" if said else ".")
        )
    return False, f"The app is ready; waiting for the host's `{TOOL_INPUT}`."


def _app_calls(lane: list[Entry]) -> list[tuple[Entry, Entry | None]]:
    """Each `tools/call` an app asked the host for, with the host's answer to the app; newest first."""
    asked = [e for e in _from_app(lane, "tools/call") if e.is_request]
    return [(request, _answer(lane, request)) for request in reversed(asked)]


def _relayed(t: Transcript, request: Entry, answer: Entry) -> Entry | None:
    """The client request the host sent the server for an app's call, answered with a result."""
    name = params_of(request).get("name")
    for sent in t.client_messages():
        if (
            request.seq < sent.seq < answer.seq
            and sent.is_request
            and sent.method == "tools/call"
            and t.made_by(sent) == "app"
            and params_of(sent).get("name") == name
            and result_of(t.response_to(sent)) is not None
        ):
            return sent
    return None


def _allowed(t: Transcript) -> Outcome:
    """Whether an app's `tools/call` reached the server and its result came back to the app."""
    calls = _app_calls(t.app_messages())
    for request, answer in calls:
        if result_of(answer) is None or answer is None:
            continue
        sent = _relayed(t, request, answer)
        if sent is None:
            continue
        name = params_of(request).get("name")
        said = first_text(result_of(answer) or {})
        return True, (
            f"The app's `tools/call` of `{name}` (message #{request.seq}) reached the server as message "
            f"#{sent.seq}, and the result came back to the app (#{answer.seq})"
            + (f": {said}" if said else ".")
        )
    if not calls:
        return False, NO_APP_CALL
    request, answer = calls[0]
    if answer is None:
        return (
            False,
            f"The app's `tools/call` (message #{request.seq}) waits for you: choose Allow in the console.",
        )
    if error_of(answer) is not None:
        return False, (
            f"The host answered the app's call (#{request.seq}) with {error_words(error_of(answer) or {})}. "
            "Press the app's button again and choose Allow."
        )
    return (
        False,
        f"The host answered the app (#{answer.seq}), but no call made for the app reached the server.",
    )


@check(
    "app-call-allowed",
    "Press the app's Refresh button and allow its `tools/call`: the server answers, and the app gets the result.",
)
def app_call_allowed(t: Transcript) -> Outcome:
    return _allowed(t)


@check(
    "app-call-declined",
    "Press Refresh again and decline: the host answers the app with an error, and nothing reaches the server.",
)
def app_call_declined(t: Transcript) -> Outcome:
    calls = _app_calls(t.app_messages())
    relayed = [e for e in t.client_messages() if e.is_request and t.made_by(e) == "app"]
    for request, answer in calls:
        error = error_of(answer)
        if answer is None or error is None:
            continue
        if any(request.seq < sent.seq < answer.seq for sent in relayed):
            continue  # it reached the server: the error came from there, not from your refusal
        return True, (
            f"You declined the app's `tools/call` (message #{request.seq}): the host answered the app with "
            f"{error_words(error)} (#{answer.seq}), and the server never saw the call."
        )
    if not calls:
        return False, NO_APP_CALL
    request, answer = calls[0]
    if answer is None:
        return False, f"The app's `tools/call` (message #{request.seq}) waits for you: choose Deny this time."
    return False, "That call was allowed. Press the app's button once more and choose Deny."


@check(
    "own-app-round-trip",
    "Open your own app in the console: the host answers its `ui/initialize`, and a `tools/call` it makes "
    "reaches your server and comes back.",
)
def own_app_round_trip(t: Transcript) -> Outcome:
    started, reason = _initialized(t.app_messages())
    if not started:
        if reason == NO_APP:
            return False, (
                "No app has started yet. Save your server, complete the handshake (declaring MCP Apps), "
                "send `tools/list`, and call your tool that has an app."
            )
        return False, reason
    allowed, why = _allowed(t)
    if not allowed:
        if why == NO_APP_CALL:
            return False, "Your app is running. Press its button, so that it calls a tool through the host."
        return False, why
    return True, f"{reason} Then: {why}"
