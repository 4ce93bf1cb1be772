"""Lesson 4, the initialize handshake: ping, initialize, the initialized notification, negotiation."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    check,
    error_of,
    error_words,
    exchanges,
    first_good_initialize,
    no_initialize_reason,
    params_of,
    result_of,
)
from app.protocol.transcript import Transcript


@check("ping-answered", "Send a `ping` request and get its empty result.")
def ping_answered(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "ping"))
    for request, response in seen:
        if result_of(response) is not None:
            return True, f"The server answered your ping (message #{request.seq}) with an empty result."
    if not seen:
        return False, "You have not sent a `ping` request yet (it needs an `id`: it is a request)."
    request, response = seen[0]
    if response is None:
        return False, f"Waiting for the reply to your ping (message #{request.seq})."
    return False, f"The server answered your ping with {error_words(error_of(response) or {})}."


@check(
    "initialize-answered",
    "Send `initialize` with a `protocolVersion` and get a result that holds `serverInfo`.",
)
def initialize_answered(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "initialize"))
    for request, response in seen:
        result = result_of(response)
        if isinstance(params_of(request).get("protocolVersion"), str) and result is not None:
            info = result.get("serverInfo")
            if isinstance(info, dict):
                return True, (
                    f"The server introduced itself as {info.get('name')!r} and agreed on protocol "
                    f"{result.get('protocolVersion')}."
                )
    if not seen:
        return False, no_initialize_reason(t)
    request, response = seen[0]
    if not isinstance(params_of(request).get("protocolVersion"), str):
        return (
            False,
            'Your latest `initialize` has no `params.protocolVersion` (a string such as "2025-06-18").',
        )
    if response is None:
        return False, f"Waiting for the reply to your `initialize` (message #{request.seq})."
    error = error_of(response)
    if error is not None:
        return False, (
            f"The server answered with {error_words(error)}: params needs protocolVersion, "
            "capabilities and clientInfo (with name and version)."
        )
    return False, "The server's result has no `serverInfo`."


@check(
    "initialize-rejected",
    "Send an `initialize` the server must refuse (leave out `clientInfo`, say) and read its error.",
)
def initialize_rejected(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "initialize"))
    for request, response in seen:
        error = error_of(response)
        if error is not None:
            return True, f"Message #{request.seq} was refused with {error_words(error)}."
    if not seen:
        return False, no_initialize_reason(t)
    if seen[0][1] is None:
        return False, f"Waiting for the reply to your `initialize` (message #{seen[0][0].seq})."
    return False, (
        "The server accepted every `initialize` so far. Remove a required field, such as "
        "`clientInfo`, and send it again."
    )


@check(
    "initialized-after-reply",
    "Once the `initialize` result has arrived, send `notifications/initialized` (a notification: no `id`).",
)
def initialized_after_reply(t: Transcript) -> Outcome:
    good = first_good_initialize(t)
    sent = [e for e in t.client_messages() if e.method == "notifications/initialized"]
    if good is None:
        return False, "First get a successful result for `initialize`; the notification comes after it."
    reply = good[1]
    for entry in sent:
        if entry.is_notification and entry.seq > reply.seq:
            return True, (
                f"You sent `notifications/initialized` (message #{entry.seq}) after the server's "
                f"reply (message #{reply.seq}), and it got no reply, as a notification should."
            )
    if any(e.is_request for e in sent):
        return False, (
            "Your `notifications/initialized` carries an `id`, which makes it a request. "
            "A notification has no id: remove it."
        )
    if sent:
        return False, "You sent `notifications/initialized` before the `initialize` reply. Send it again now."
    return False, "The server has answered `initialize`: now send `notifications/initialized`."


@check(
    "client-capabilities-declared",
    "Send `initialize` declaring a client capability, such as `roots` or `sampling`, and get a result.",
)
def client_capabilities_declared(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "initialize"))
    for request, response in seen:
        caps = params_of(request).get("capabilities")
        result = result_of(response)
        if isinstance(caps, dict) and caps and result is not None:
            theirs = result.get("capabilities")
            server = ", ".join(sorted(theirs)) if isinstance(theirs, dict) and theirs else "nothing"
            return True, f"You declared {', '.join(sorted(caps))}; the server declared {server}."
    if not seen:
        return False, no_initialize_reason(t)
    request, response = seen[0]
    caps = params_of(request).get("capabilities")
    if not isinstance(caps, dict) or not caps:
        return False, 'Your `capabilities` is empty. `{}` is valid, but declare one here, e.g. `"roots": {}`.'
    if response is None:
        return False, f"Waiting for the reply to your `initialize` (message #{request.seq})."
    return False, f"The server answered with {error_words(error_of(response) or {})}."


LISTS = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}


@check(
    "used-declared-capability",
    "After the handshake, list something the server declared: `tools/list`, `resources/list` or `prompts/list`.",
)
def used_declared_capability(t: Transcript) -> Outcome:
    good = first_good_initialize(t)
    if good is None:
        return False, "First complete the handshake: `initialize`, then `notifications/initialized`."
    declared = (result_of(good[1]) or {}).get("capabilities") or {}
    ready = next(
        (e for e in t.client_messages() if e.is_notification and e.method == "notifications/initialized"
         and e.seq > good[1].seq),
        None,
    )  # fmt: skip
    if ready is None:
        return False, "Finish the handshake first: send `notifications/initialized`."
    tried = []
    for method, feature in LISTS.items():
        for request, response in exchanges(t, method):
            if request.seq < ready.seq:
                continue
            tried.append(method)
            result = result_of(response)
            if feature in declared and result is not None and isinstance(result.get(feature), list):
                count = len(result[feature])
                what = feature if count != 1 else feature.removesuffix("s")  # "1 tool", "2 tools"
                return (
                    True,
                    f"The server declared `{feature}`, so you could list them: {count} {what} came back.",
                )
    if tried:
        return False, f"Waiting for a result to your `{tried[0]}`."
    return False, "Now send `tools/list` (or `resources/list`, `prompts/list`): the server declared them."


@check(
    "version-counter-offer",
    "Ask for a protocol version the server does not support and see the version it offers instead.",
)
def version_counter_offer(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "initialize"))
    for request, response in seen:
        asked = params_of(request).get("protocolVersion")
        result = result_of(response)
        offered = result.get("protocolVersion") if result else None
        if isinstance(asked, str) and isinstance(offered, str) and offered != asked:
            return True, f"You asked for {asked!r}; with no error, the server offered {offered!r} instead."
    if not seen:
        return False, no_initialize_reason(t) + ' Ask for a version such as "1999-01-01".'
    request, response = seen[0]
    asked = params_of(request).get("protocolVersion")
    if response is None:
        return False, f"Waiting for the reply to your `initialize` (message #{request.seq})."
    error = error_of(response)
    if error is not None:
        return False, (
            f"The server answered with {error_words(error)}. The version is not the problem: "
            "the rest of params (capabilities, clientInfo) must still be valid."
        )
    return False, (
        f"You asked for {asked!r}, which the server supports, so it agreed. "
        'Ask for one it does not know, such as "1999-01-01".'
    )
