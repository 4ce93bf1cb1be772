"""Hands-on checks: named predicates over a learner's live session transcript.

A lesson lists check names in a ```checks block; the WebSocket route calls `evaluate(step,
transcript)` after every message and pushes each result as a `check` frame. A reason says what
is still missing while a check fails, and what was seen once it passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from app.course.models import Step
from app.protocol.transcript import Entry, Transcript

Outcome = tuple[bool, str]


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class Check:
    name: str
    goal: str  # what the learner should do: the checklist item on the step page (Markdown inline)
    predicate: Callable[[Transcript], Outcome]

    def run(self, transcript: Transcript) -> CheckResult:
        passed, reason = self.predicate(transcript)
        return CheckResult(self.name, passed, reason)


REGISTRY: dict[str, Check] = {}


def check(
    name: str, goal: str
) -> Callable[[Callable[[Transcript], Outcome]], Callable[[Transcript], Outcome]]:
    def register(predicate: Callable[[Transcript], Outcome]) -> Callable[[Transcript], Outcome]:
        if name in REGISTRY:
            raise ValueError(f"two hands-on checks are named {name!r}")
        REGISTRY[name] = Check(name, goal, predicate)
        return predicate

    return register


def get(name: str) -> Check | None:
    return REGISTRY.get(name)


def evaluate(step: Step, transcript: Transcript) -> list[CheckResult]:
    """Every check of `step` against the transcript, in the lesson's order."""
    return [REGISTRY[name].run(transcript) for name in step.checks]


# --- Reading a transcript -------------------------------------------------------------------


def _requests(t: Transcript, method: str) -> list[Entry]:
    return [e for e in t.client_messages() if e.is_request and e.method == method]


def _exchanges(t: Transcript, method: str) -> Iterator[tuple[Entry, Entry | None]]:
    """Each client request of `method` with its response (None while unanswered), newest first."""
    for request in reversed(_requests(t, method)):
        yield request, t.response_to(request)


def _result(response: Entry | None) -> dict[str, Any] | None:
    if response is None:
        return None
    result = response.message.get("result")
    return result if isinstance(result, dict) else None


def _error(response: Entry | None) -> dict[str, Any] | None:
    if response is None:
        return None
    error = response.message.get("error")
    return error if isinstance(error, dict) else None


def _params(request: Entry) -> dict[str, Any]:
    params = request.message.get("params")
    return params if isinstance(params, dict) else {}


def _first_good_initialize(t: Transcript) -> tuple[Entry, Entry] | None:
    for request in _requests(t, "initialize"):
        response = t.response_to(request)
        result = _result(response)
        if response is not None and result is not None and isinstance(result.get("serverInfo"), dict):
            return request, response
    return None


def _error_words(error: dict[str, Any]) -> str:
    return f"error {error.get('code')} ({error.get('message')})"


NO_INITIALIZE = "You have not sent an `initialize` request yet."
NOT_A_REQUEST = (
    "Your `initialize` has no `id`, so it is a notification and the server will not answer it. Add an id."
)


def _no_initialize_reason(t: Transcript) -> str:
    if any(e.is_notification and e.method == "initialize" for e in t.client_messages()):
        return NOT_A_REQUEST
    return NO_INITIALIZE


# --- Lesson 4: the initialize handshake -----------------------------------------------------


@check("ping-answered", "Send a `ping` request and get its empty result.")
def ping_answered(t: Transcript) -> Outcome:
    exchanges = list(_exchanges(t, "ping"))
    for request, response in exchanges:
        if _result(response) is not None:
            return True, f"The server answered your ping (message #{request.seq}) with an empty result."
    if not exchanges:
        return False, "You have not sent a `ping` request yet (it needs an `id`: it is a request)."
    request, response = exchanges[0]
    if response is None:
        return False, f"Waiting for the reply to your ping (message #{request.seq})."
    return False, f"The server answered your ping with {_error_words(_error(response) or {})}."


@check(
    "initialize-answered",
    "Send `initialize` with a `protocolVersion` and get a result that holds `serverInfo`.",
)
def initialize_answered(t: Transcript) -> Outcome:
    exchanges = list(_exchanges(t, "initialize"))
    for request, response in exchanges:
        result = _result(response)
        if isinstance(_params(request).get("protocolVersion"), str) and result is not None:
            info = result.get("serverInfo")
            if isinstance(info, dict):
                return True, (
                    f"The server introduced itself as {info.get('name')!r} and agreed on protocol "
                    f"{result.get('protocolVersion')}."
                )
    if not exchanges:
        return False, _no_initialize_reason(t)
    request, response = exchanges[0]
    if not isinstance(_params(request).get("protocolVersion"), str):
        return (
            False,
            'Your latest `initialize` has no `params.protocolVersion` (a string such as "2025-06-18").',
        )
    if response is None:
        return False, f"Waiting for the reply to your `initialize` (message #{request.seq})."
    error = _error(response)
    if error is not None:
        return False, (
            f"The server answered with {_error_words(error)}: params needs protocolVersion, "
            "capabilities and clientInfo (with name and version)."
        )
    return False, "The server's result has no `serverInfo`."


@check(
    "initialize-rejected",
    "Send an `initialize` the server must refuse (leave out `clientInfo`, say) and read its error.",
)
def initialize_rejected(t: Transcript) -> Outcome:
    exchanges = list(_exchanges(t, "initialize"))
    for request, response in exchanges:
        error = _error(response)
        if error is not None:
            return True, f"Message #{request.seq} was refused with {_error_words(error)}."
    if not exchanges:
        return False, _no_initialize_reason(t)
    if exchanges[0][1] is None:
        return False, f"Waiting for the reply to your `initialize` (message #{exchanges[0][0].seq})."
    return False, (
        "The server accepted every `initialize` so far. Remove a required field, such as "
        "`clientInfo`, and send it again."
    )


@check(
    "initialized-after-reply",
    "Once the `initialize` result has arrived, send `notifications/initialized` (a notification: no `id`).",
)
def initialized_after_reply(t: Transcript) -> Outcome:
    good = _first_good_initialize(t)
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
    exchanges = list(_exchanges(t, "initialize"))
    for request, response in exchanges:
        caps = _params(request).get("capabilities")
        result = _result(response)
        if isinstance(caps, dict) and caps and result is not None:
            theirs = result.get("capabilities")
            server = ", ".join(sorted(theirs)) if isinstance(theirs, dict) and theirs else "nothing"
            return True, f"You declared {', '.join(sorted(caps))}; the server declared {server}."
    if not exchanges:
        return False, _no_initialize_reason(t)
    request, response = exchanges[0]
    caps = _params(request).get("capabilities")
    if not isinstance(caps, dict) or not caps:
        return False, 'Your `capabilities` is empty. `{}` is valid, but declare one here, e.g. `"roots": {}`.'
    if response is None:
        return False, f"Waiting for the reply to your `initialize` (message #{request.seq})."
    return False, f"The server answered with {_error_words(_error(response) or {})}."


LISTS = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}


@check(
    "used-declared-capability",
    "After the handshake, list something the server declared: `tools/list`, `resources/list` or `prompts/list`.",
)
def used_declared_capability(t: Transcript) -> Outcome:
    good = _first_good_initialize(t)
    if good is None:
        return False, "First complete the handshake: `initialize`, then `notifications/initialized`."
    declared = (_result(good[1]) or {}).get("capabilities") or {}
    ready = next(
        (e for e in t.client_messages() if e.is_notification and e.method == "notifications/initialized"
         and e.seq > good[1].seq),
        None,
    )  # fmt: skip
    if ready is None:
        return False, "Finish the handshake first: send `notifications/initialized`."
    tried = []
    for method, feature in LISTS.items():
        for request, response in _exchanges(t, method):
            if request.seq < ready.seq:
                continue
            tried.append(method)
            result = _result(response)
            if feature in declared and result is not None and isinstance(result.get(feature), list):
                return True, (
                    f"The server declared `{feature}`, so you could list them: "
                    f"{len(result[feature])} {feature} came back."
                )
    if tried:
        return False, f"Waiting for a result to your `{tried[0]}`."
    return False, "Now send `tools/list` (or `resources/list`, `prompts/list`): the server declared them."


@check(
    "version-counter-offer",
    "Ask for a protocol version the server does not support and see the version it offers instead.",
)
def version_counter_offer(t: Transcript) -> Outcome:
    exchanges = list(_exchanges(t, "initialize"))
    for request, response in exchanges:
        asked = _params(request).get("protocolVersion")
        result = _result(response)
        offered = result.get("protocolVersion") if result else None
        if isinstance(asked, str) and isinstance(offered, str) and offered != asked:
            return True, f"You asked for {asked!r}; with no error, the server offered {offered!r} instead."
    if not exchanges:
        return False, _no_initialize_reason(t) + ' Ask for a version such as "1999-01-01".'
    request, response = exchanges[0]
    asked = _params(request).get("protocolVersion")
    if response is None:
        return False, f"Waiting for the reply to your `initialize` (message #{request.seq})."
    error = _error(response)
    if error is not None:
        return False, (
            f"The server answered with {_error_words(error)}. The version is not the problem: "
            "the rest of params (capabilities, clientInfo) must still be valid."
        )
    return False, (
        f"You asked for {asked!r}, which the server supports, so it agreed. "
        'Ask for one it does not know, such as "1999-01-01".'
    )
