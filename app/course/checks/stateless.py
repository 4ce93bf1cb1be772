"""Lesson 10, the stateless revision: server/discover, the `_meta` envelope, -32022, input_required."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, UNSUPPORTED_PROTOCOL_VERSION

from app.course.checks import (
    Outcome,
    check,
    error_of,
    error_words,
    exchanges,
    judge,
    newest_first,
    params_of,
    requests,
    result_of,
    waiting,
)
from app.protocol.transcript import Entry, Transcript

VERSION = PROTOCOL_VERSION_META_KEY
CAPABILITIES = CLIENT_CAPABILITIES_META_KEY


def _meta(entry: Entry) -> dict[str, Any]:
    meta = params_of(entry).get("_meta")
    return meta if isinstance(meta, dict) else {}


@check(
    "server-discover-answered",
    "Ask `server/discover`, with the `_meta` envelope, and read what the server supports.",
)
def server_discover_answered(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or not isinstance(result.get("supportedVersions"), list):
            return None
        return f"The server supports {', '.join(map(str, result['supportedVersions']))}, with no handshake."

    def failed(request: Entry, response: Entry) -> str:
        error = error_of(response) or {}
        if VERSION not in _meta(request) or CAPABILITIES not in _meta(request):
            return f"The server answered {error_words(error)}: `params._meta` needs both envelope keys."
        return f"The server answered {error_words(error)}."

    return judge(
        list(exchanges(t, "server/discover")),
        passes,
        unsent="You have not sent `server/discover` yet.",
        failed=failed,
    )


@check(
    "envelope-request-answered",
    "Send a request other than `server/discover`, with both `_meta` envelope keys, and get a result.",
)
def envelope_request_answered(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or VERSION not in _meta(request):
            return None
        return (
            f"`{request.method}` carried its own revision ({_meta(request)[VERSION]}) and got a "
            f"result of type {result.get('resultType')!r}."
        )

    def failed(request: Entry, response: Entry) -> str:
        error = error_words(error_of(response) or {})
        missing = [key for key in (VERSION, CAPABILITIES) if key not in _meta(request)]
        if missing:
            return f"`params._meta` lacks {', '.join(missing)}: the server refused with {error}."
        return f"The server answered {error}."

    return judge(
        newest_first(t, [e for e in t.client_messages() if e.is_request and e.method != "server/discover"]),
        passes,
        unsent="Send `tools/list` (or another request) with the `_meta` envelope in params.",
        failed=failed,
    )


@check(
    "unsupported-version-seen", "Ask for a revision the server does not support and read the `-32022` error."
)
def unsupported_version_seen(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        error = error_of(response)
        if error is None or error.get("code") != UNSUPPORTED_PROTOCOL_VERSION:
            return None
        data: dict[str, Any] = error["data"] if isinstance(error.get("data"), dict) else {}
        return f"You asked for {data.get('requested')!r}; the server supports {data.get('supported')}."

    return judge(
        newest_first(t, [e for e in t.client_messages() if e.is_request]),
        passes,
        unsent='Send a request whose envelope names an older revision, such as "2025-11-25".',
        failed="The server accepted the revision you named. Put one it does not support in the envelope.",
    )


@check(
    "input-required-completed",
    "Get an `input_required` result, then retry the call, as a new request with a new id, with "
    "`inputResponses` and `requestState`.",
)
def input_required_completed(t: Transcript) -> Outcome:
    calls = list(exchanges(t, "tools/call"))
    interim = [(r, s) for r, s in calls if (result_of(s) or {}).get("resultType") == "input_required"]
    if not interim:
        if calls and calls[0][1] is None:
            return False, waiting(calls[0][0])
        if calls and error_of(calls[0][1]) is not None:
            return False, (
                f"The call was refused with {error_words(error_of(calls[0][1]) or {})}. "
                'Declare `"elicitation": {}` in the envelope\'s clientCapabilities.'
            )
        return False, "Call `transfer` with elicitation declared, and get an `input_required` result."
    first = min(s.seq for _, s in interim if s is not None)
    retries = [(r, s) for r, s in calls if r.seq > first and "inputResponses" in params_of(r)]
    reused = [r for r, _ in retries if _reuses_an_id(r, interim)]
    for request, response in retries:
        result = result_of(response)
        if (
            request not in reused
            and result is not None
            and result.get("resultType", "complete") == "complete"
        ):
            return True, f"The retry (message #{request.seq}) completed the call, as a new request."
    if reused:
        return False, (
            f"The retry (message #{reused[-1].seq}) reused the id {json.dumps(reused[-1].message.get('id'))} "
            "of a call that got `input_required`. A retry is a new request: give it a new id."
        )
    if retries:
        request, response = retries[0]
        if response is None:
            return False, waiting(request)
        return False, (
            "The retry did not complete. Send the call again, with a new id, `inputResponses` (keyed as in "
            "`inputRequests`) and the `requestState` you were given."
        )
    return (
        False,
        "Now retry the `tools/call` as a new request (a new id), adding `inputResponses` and the `requestState` you got.",
    )


def _reuses_an_id(retry: Entry, interim: list[tuple[Entry, Entry | None]]) -> bool:
    """2026-07-28 basic/patterns/mrtr: a retry is an independent request, so its JSON-RPC id is new."""
    return any(r.seq < retry.seq and r.message.get("id") == retry.message.get("id") for r, _ in interim)


@check(
    "legacy-fallback",
    "Probe an older server with `server/discover`, get an error that is not a modern one, and fall "
    "back to `initialize`.",
)
def legacy_fallback(t: Transcript) -> Outcome:
    probes = [(r, s) for r, s in exchanges(t, "server/discover") if error_of(s) is not None]
    if not probes:
        pending = requests(t, "server/discover")
        if pending and t.response_to(pending[-1]) is None:
            return False, waiting(pending[-1])
        return False, "Send `server/discover` first: the probe a dual-era client makes."
    after = min(s.seq for _, s in probes if s is not None)
    for request, response in exchanges(t, "initialize"):
        result = result_of(response)
        if request.seq > after and result is not None:
            return True, f"The probe failed, and the handshake agreed on {result.get('protocolVersion')}."
    return False, "The server does not know `server/discover`: fall back to `initialize`."
