"""Lesson 4, the initialize handshake: ping, initialize, the initialized notification, negotiation."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    answered_with,
    check,
    error_of,
    error_words,
    exchanges,
    first_good_initialize,
    judge,
    no_initialize_reason,
    obj,
    params_of,
    refused,
    result_of,
    waiting_for_result,
)
from app.protocol.transcript import Entry, Transcript


@check("ping-answered", "Send a `ping` request and get its empty result.")
def ping_answered(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        if result_of(response) is None:
            return None
        return f"The server answered your ping (message #{request.seq}) with an empty result."

    return judge(
        list(exchanges(t, "ping")),
        passes,
        unsent="You have not sent a `ping` request yet (it needs an `id`: it is a request).",
        what="ping",
        failed=lambda _, response: (
            f"The server answered your ping with {error_words(error_of(response) or {})}."
        ),
    )


@check(
    "initialize-answered",
    "Send `initialize` with a `protocolVersion` and get a result that holds `serverInfo`.",
)
def initialize_answered(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if not isinstance(params_of(request).get("protocolVersion"), str) or result is None:
            return None
        info = result.get("serverInfo")
        if not isinstance(info, dict):
            return None
        return (
            f"The server introduced itself as {info.get('name')!r} and agreed on protocol "
            f"{result.get('protocolVersion')}."
        )

    def no_version(request: Entry) -> str | None:
        if isinstance(params_of(request).get("protocolVersion"), str):
            return None
        return 'Your latest `initialize` has no `params.protocolVersion` (a string such as "2025-06-18").'

    def failed(_request: Entry, response: Entry) -> str:
        error = error_of(response)
        if error is not None:
            return (
                f"The server answered with {error_words(error)}: params needs protocolVersion, "
                "capabilities and clientInfo (with name and version)."
            )
        return "The server's result has no `serverInfo`."

    return judge(
        list(exchanges(t, "initialize")),
        passes,
        unsent=no_initialize_reason(t),
        before_reply=no_version,
        failed=failed,
    )


@check(
    "initialize-rejected",
    "Send an `initialize` the server must refuse (leave out `clientInfo`, say) and read its error.",
)
def initialize_rejected(t: Transcript) -> Outcome:
    return judge(
        list(exchanges(t, "initialize")),
        refused,
        unsent=no_initialize_reason(t),
        failed=(
            "The server accepted every `initialize` so far. Remove a required field, such as "
            "`clientInfo`, and send it again."
        ),
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
    def passes(request: Entry, response: Entry | None) -> str | None:
        caps = params_of(request).get("capabilities")
        result = result_of(response)
        if not (isinstance(caps, dict) and caps and result is not None):
            return None
        theirs = result.get("capabilities")
        server = ", ".join(sorted(theirs)) if isinstance(theirs, dict) and theirs else "nothing"
        return f"You declared {', '.join(sorted(caps))}; the server declared {server}."

    def none_declared(request: Entry) -> str | None:
        caps = params_of(request).get("capabilities")
        if isinstance(caps, dict) and caps:
            return None
        return 'Your `capabilities` is empty. `{}` is valid, but declare one here, e.g. `"roots": {}`.'

    return judge(
        list(exchanges(t, "initialize")),
        passes,
        unsent=no_initialize_reason(t),
        before_reply=none_declared,
        failed=answered_with,
    )


LISTS = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}


@check(
    "used-declared-capability",
    "After the handshake, list something the server declared: `tools/list`, `resources/list` or `prompts/list`.",
)
def used_declared_capability(t: Transcript) -> Outcome:
    good = first_good_initialize(t)
    if good is None:
        return False, "First complete the handshake: `initialize`, then `notifications/initialized`."
    declared = obj((result_of(good[1]) or {}).get("capabilities"))
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
        return False, waiting_for_result(tried[0])
    return False, "Now send `tools/list` (or `resources/list`, `prompts/list`): the server declared them."


@check(
    "version-counter-offer",
    "Ask for a protocol version the server does not support and see the version it offers instead.",
)
def version_counter_offer(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        asked = params_of(request).get("protocolVersion")
        result = result_of(response)
        offered = result.get("protocolVersion") if result else None
        if isinstance(asked, str) and isinstance(offered, str) and offered != asked:
            return f"You asked for {asked!r}; with no error, the server offered {offered!r} instead."
        return None

    def failed(request: Entry, response: Entry) -> str:
        error = error_of(response)
        if error is not None:
            return (
                f"The server answered with {error_words(error)}. The version is not the problem: "
                "the rest of params (capabilities, clientInfo) must still be valid."
            )
        return (
            f"You asked for {params_of(request).get('protocolVersion')!r}, which the server supports, so it "
            'agreed. Ask for one it does not know, such as "1999-01-01".'
        )

    return judge(
        list(exchanges(t, "initialize")),
        passes,
        unsent=no_initialize_reason(t) + ' Ask for a version such as "1999-01-01".',
        failed=failed,
    )
