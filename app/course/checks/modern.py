"""Lesson 19, 2026-07-28 in depth: subscriptions/listen, input_required over rounds, caching, extensions."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY

from app.course.checks import (
    Outcome,
    check,
    exchanges,
    judge,
    key,
    newest_first,
    params_of,
    requests,
    result_of,
    waiting,
)
from app.protocol.transcript import Entry, Transcript

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
APPS = "io.modelcontextprotocol/ui"


def _subscription_of(entry: Entry) -> Any:
    meta = params_of(entry).get("_meta")
    return meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None


def _acknowledged(t: Transcript) -> list[tuple[Entry, Entry]]:
    """Each listen request with the acknowledgment tagged with its id, oldest first."""
    acks = [e for e in t.server_messages() if e.is_notification and e.method == ACKNOWLEDGED]
    pairs = []
    for request in requests(t, "subscriptions/listen"):
        ack = next(
            (a for a in acks if a.seq > request.seq and _subscription_of(a) == request.message.get("id")),
            None,
        )
        if ack is not None:
            pairs.append((request, ack))
    return pairs


def _no_stream_yet(t: Transcript) -> str:
    pending = requests(t, "subscriptions/listen")
    if pending:
        return f"Waiting for the acknowledgment of your `subscriptions/listen` (message #{pending[-1].seq})."
    return "Open a stream: send `subscriptions/listen` with a `notifications` filter."


@check("listen-acknowledged", "Open a `subscriptions/listen` stream and read its acknowledgment.")
def listen_acknowledged(t: Transcript) -> Outcome:
    pairs = _acknowledged(t)
    if not pairs:
        return False, _no_stream_yet(t)
    request, ack = pairs[-1]
    agreed = params_of(ack).get("notifications")
    kinds = ", ".join(agreed) if isinstance(agreed, dict) and agreed else "nothing"
    stream = json.dumps(request.message.get("id"))
    closed = t.response_to(request)
    if closed is not None:
        return True, (
            f"Stream {stream} was acknowledged (message #{ack.seq}; the server agreed to: {kinds}), then "
            f"closed by the server's answer (message #{closed.seq})."
        )
    return (
        True,
        f"Stream {stream} is open (acknowledged in message #{ack.seq}); the server agreed to: {kinds}.",
    )


@check(
    "listen-notified",
    "With a stream open, wait for a change and receive a notification tagged with the stream's id.",
)
def listen_notified(t: Transcript) -> Outcome:
    pairs = _acknowledged(t)
    if not pairs:
        return False, _no_stream_yet(t)
    for request, ack in reversed(pairs):
        stream = request.message.get("id")
        for entry in t.server_messages():
            if entry.seq > ack.seq and entry.is_notification and entry.method != ACKNOWLEDGED:
                if _subscription_of(entry) == stream:
                    return (
                        True,
                        f"`{entry.method}` arrived on stream {json.dumps(stream)} (message #{entry.seq}).",
                    )
    request, _ = pairs[-1]
    closed = t.response_to(request)
    if closed is not None:
        return False, (
            f"Your stream {json.dumps(request.message.get('id'))} is closed: the server answered it (message "
            f"#{closed.seq}), which ends a stream. Open one that asks for `toolsListChanged` (the step's own "
            "message, in the Template menu) and wait."
        )
    return False, (
        "Your stream is open. Wait for a change it asked for: the late show's sales open or close every "
        "ten seconds."
    )


def _is_input_required(response: Entry | None) -> bool:
    return (result_of(response) or {}).get("resultType") == "input_required"


@check(
    "input-required-two-rounds",
    "Answer two `input_required` rounds in a row, each retry a new request with a new id, until the call completes.",
)
def input_required_two_rounds(t: Transcript) -> Outcome:
    calls = list(reversed(list(exchanges(t, "tools/call"))))  # oldest first
    ids_asked = {json.dumps(r.message.get("id")) for r, s in calls if _is_input_required(s)}
    second_rounds = [(r, s) for r, s in calls if "inputResponses" in params_of(r) and _is_input_required(s)]
    if not second_rounds:
        if any(_is_input_required(s) for _, s in calls):
            return False, (
                "You got a first question. Retry the call with a new id, `inputResponses` and the "
                "`requestState`: a second question follows."
            )
        if calls and calls[-1][1] is None:
            return False, waiting(calls[-1][0])
        return (
            False,
            'Call `book_seats` with `"elicitation": {}` declared, and get an `input_required` result.',
        )
    after = second_rounds[0][1]
    assert after is not None
    finals = [(r, s) for r, s in calls if r.seq > after.seq and "inputResponses" in params_of(r)]
    for request, response in finals:
        result = result_of(response)
        if result is None or result.get("resultType", "complete") != "complete":
            continue
        if json.dumps(request.message.get("id")) in ids_asked:
            return False, (
                f"Your last retry (message #{request.seq}) reused the id {json.dumps(request.message.get('id'))} "
                "of an earlier round. Each retry is a new request: give it a new id."
            )
        return True, f"Two rounds of questions, then the call completed (message #{request.seq})."
    if finals and finals[-1][1] is None:
        return False, waiting(finals[-1][0])
    return False, (
        "Now answer the second question: retry again with a new id, its key in `inputResponses`, and the "
        "newest `requestState`."
    )


@check("cache-hints-read", "Get a result that carries caching hints: `ttlMs` and `cacheScope`.")
def cache_hints_read(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response) or {}
        if not isinstance(result.get("ttlMs"), int) or "cacheScope" not in result:
            return None
        return (
            f"`{request.method}` may be reused for {result['ttlMs']} ms, "
            f"by a cache of scope {json.dumps(result['cacheScope'])}."
        )

    return judge(
        newest_first(t, [e for e in t.client_messages() if e.is_request]),
        passes,
        unsent="Send `tools/list` (or `server/discover`, or `resources/read`) with the envelope.",
        failed="That result has no caching hints. Try `tools/list` or `resources/read`.",
    )


def _declares_apps(request: Entry) -> bool:
    meta = params_of(request).get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and APPS in extensions


@check(
    "extension-fallback-compared",
    "Call the same tool with and without the MCP Apps extension declared, and compare the two answers.",
)
def extension_fallback_compared(t: Transcript) -> Outcome:
    answered = [(r, s) for r, s in exchanges(t, "tools/call") if result_of(s) is not None]
    with_apps = {key(params_of(r).get("name")) for r, _ in answered if _declares_apps(r)} - {None}
    without = {key(params_of(r).get("name")) for r, _ in answered if not _declares_apps(r)}
    both = sorted(str(name) for name in with_apps & without)
    if both:
        return True, f"`{both[0]}` answered both ways: the core fallback and the extension's own answer."
    pending = requests(t, "tools/call")
    if pending and t.response_to(pending[-1]) is None:
        return False, waiting(pending[-1])
    if with_apps:
        return False, "Now call the same tool without `extensions` in the envelope's clientCapabilities."
    if without:
        return (
            False,
            f'Now call it again declaring `"extensions": {{"{APPS}": {{...}}}}` in clientCapabilities.',
        )
    return False, "Call `seat_map`, declaring the MCP Apps extension in the envelope's clientCapabilities."
