"""Hands-on checks: named predicates over a learner's live session transcript.

A lesson lists check names in a ```checks block; a console on that step runs a `StepChecker`
after new messages (coalesced by the relay) and pushes each changed result as a `check` frame. A
reason says what is still missing while a check fails, and what was seen once it passes.

The registry and the helpers for reading a transcript live here; the checks themselves live in
one module per lesson (imported at the bottom, which registers them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from app.course.models import Step
from app.protocol.transcript import Entry, Transcript

log = logging.getLogger(__name__)

Outcome = tuple[bool, str]


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    reason: str


# What a check reads: a session's transcript, or the steps of a protected endpoint's authorization
# flows (their kinds in order, as the endpoint panel records them: "challenge", "resource_metadata",
# "authorize", "consent", "token", "token_refused", "refresh", "insufficient_scope", "revoke").
TRANSCRIPT = "transcript"
AUTHORIZATION = "authorization"


@dataclass(frozen=True)
class Check:
    name: str
    goal: str  # what the learner should do: the checklist item on the step page (Markdown inline)
    predicate: Callable[[Any], Outcome]
    reads: str = TRANSCRIPT

    def run(self, read: Any) -> CheckResult:
        """The result on what the check reads (`reads`): a Transcript, or a flow's steps."""
        passed, reason = self.predicate(read)
        return CheckResult(self.name, passed, reason)


REGISTRY: dict[str, Check] = {}


def check(
    name: str, goal: str, reads: str = TRANSCRIPT
) -> Callable[[Callable[[Any], Outcome]], Callable[[Any], Outcome]]:
    def register(predicate: Callable[[Any], Outcome]) -> Callable[[Any], Outcome]:
        if name in REGISTRY:
            raise ValueError(f"two hands-on checks are named {name!r}")
        REGISTRY[name] = Check(name, goal, predicate, reads)
        return predicate

    return register


# One round of a step's checks may take this long; checks not reached wait for the next round.
ROUND_BUDGET_S = 0.02
UNREADABLE = (
    "This check could not read a message of this session: it is not shaped as MCP says. Restart the "
    "server and send the messages the step asks for."
)


class StepChecker:
    """A step's checks on one session, run incrementally.

    A check that has passed on a transcript stays passed (it is recorded as progress), so a round
    runs only the checks still open; a round stops when it has used its time budget, and says so;
    only results that changed since the last round are returned. A new transcript (a restart)
    starts over.
    """

    def __init__(self, step: Step, budget_s: float = ROUND_BUDGET_S) -> None:
        self.step = step
        self.budget_s = budget_s
        self._transcript: Transcript | None = None
        self._passed: set[str] = set()
        self._shown: dict[str, tuple[bool, str]] = {}
        self._resume = 0  # where an unfinished round stopped: the next one goes on from there
        self._broken: set[str] = set()  # checks that raised on this session, logged once

    def run(self, transcript: Transcript) -> tuple[list[CheckResult], bool]:
        """(results that changed, whether every open check had its turn)."""
        if transcript is not self._transcript:
            self._transcript, self._passed, self._shown, self._resume = transcript, set(), {}, 0
            self._broken = set()
        with transcript.reading():
            return self._round(transcript)

    def _round(self, transcript: Transcript) -> tuple[list[CheckResult], bool]:
        began = time.perf_counter()
        changed: list[CheckResult] = []
        ran = 0
        for index in range(self._resume, len(self.step.checks)):
            name = self.step.checks[index]
            if name in self._passed:
                continue
            if ran and time.perf_counter() - began > self.budget_s:
                self._resume = index
                return changed, False
            if REGISTRY[name].reads != TRANSCRIPT:  # read by the endpoint panel, never by a console
                continue
            result = self._run(name, transcript)
            ran += 1
            if result.passed:
                self._passed.add(name)
            if self._shown.get(name) != (result.passed, result.reason):
                self._shown[name] = (result.passed, result.reason)
                changed.append(result)
        self._resume = 0
        return changed, True

    def _run(self, name: str, transcript: Transcript) -> CheckResult:
        return run_guarded(name, transcript, self.step.slug, self._broken)


def run_guarded(name: str, read: Any, step_slug: str, logged: set[str]) -> CheckResult:
    """One check's result; a check that trips on a message it cannot read has not passed, and the
    others go on (each reads the guarded way, `items`, `obj`, `key`: this is the last guard). Logged
    once per name in `logged`: the message stays in the transcript, and so would the error."""
    try:
        return REGISTRY[name].run(read)
    except Exception:
        if name not in logged:
            logged.add(name)
            log.warning("hands-on check %s could not read what it reads on step %s", name, step_slug,
                        exc_info=True)  # fmt: skip
        return CheckResult(name, False, UNREADABLE)


# --- Reading a transcript -------------------------------------------------------------------


def requests(t: Transcript, method: str) -> list[Entry]:
    """The learner's requests of `method`, oldest first (not those the console made as an Apps host)."""
    return [e for e in t.client_messages() if e.is_request and e.method == method and t.made_by(e) is None]


def exchanges(t: Transcript, method: str) -> Iterator[tuple[Entry, Entry | None]]:
    """Each client request of `method` with its response (None while unanswered), newest first."""
    for request in reversed(requests(t, method)):
        yield request, t.response_to(request)


def result_of(response: Entry | None) -> dict[str, Any] | None:
    if response is None or not isinstance(response.message, dict):
        return None
    result = response.message.get("result")
    return result if isinstance(result, dict) else None


def error_of(response: Entry | None) -> dict[str, Any] | None:
    if response is None or not isinstance(response.message, dict):
        return None
    error = response.message.get("error")
    return error if isinstance(error, dict) else None


def params_of(entry: Entry) -> dict[str, Any]:
    params = entry.message.get("params") if isinstance(entry.message, dict) else None
    return params if isinstance(params, dict) else {}


def items(value: Any) -> list[Any]:
    """A list in a message, or none when it is not one: a server (or a learner) may send anything."""
    return value if isinstance(value, list) else []


def obj(value: Any) -> dict[str, Any]:
    """An object in a message, or an empty one when it is not one."""
    return value if isinstance(value, dict) else {}


def key(value: Any) -> str | int | None:
    """A value a message names something by (a tool, a task, a URI, a cursor), if it can be one: a
    text or a whole number, never a list or an object."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def error_words(error: dict[str, Any]) -> str:
    return f"error {error.get('code')} ({error.get('message')})"


def first_text(result: dict[str, Any]) -> str:
    """The first text item of a tool result's `content`, shortened for a reason line."""
    for item in items(result.get("content")):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            text = " ".join(item["text"].split())
            return text if len(text) <= 120 else text[:117] + "..."
    return ""


def server_notifications(t: Transcript, method: str, after: int = 0) -> list[Entry]:
    return [e for e in t.server_messages() if e.is_notification and e.method == method and e.seq > after]


# --- What a check says while the server has not answered yet: every such text is here ------------


def waiting(request: Entry, what: str | None = None) -> str:
    """The learner's request is still open; `what` names it (default: its method, as code)."""
    return (
        f"Waiting for the reply to your {what or '`' + str(request.method) + '`'} (message #{request.seq})."
    )


def waiting_for_result(method: str) -> str:
    """A request of `method` was sent after the step's condition, and no good result has come yet."""
    return f"Waiting for a result to your `{method}`."


def waiting_for_tool(method: str, reply: Entry) -> str:
    """The learner answered the server's request; the tool call that asked it has not finished."""
    return f"You answered `{method}` (message #{reply.seq}). Waiting for the tool's result."


# --- The skeleton most checks share ---------------------------------------------------------------

Exchange = tuple[Entry, Entry | None]  # a request and its response (None while unanswered)


def newest_first(t: Transcript, sent: list[Entry]) -> list[Exchange]:
    """Each of the learner's requests in `sent` (oldest first) with its response, newest first."""
    return [(request, t.response_to(request)) for request in reversed(sent)]


def judge(
    seen: list[Exchange],
    passes: Callable[[Entry, Entry | None], str | None],
    *,
    unsent: str,
    failed: Callable[[Entry, Entry], str] | str,
    what: str | None = None,
    before_reply: Callable[[Entry], str | None] | None = None,
) -> Outcome:
    """A check over exchanges, newest first: passed if any one `passes` (its reason); else why not.

    Why not, in order: nothing sent (`unsent`); a problem of the newest request itself
    (`before_reply`); its reply still awaited (`waiting`); else what its reply shows (`failed`).
    """
    for request, response in seen:
        reason = passes(request, response)
        if reason:
            return True, reason
    if not seen:
        return False, unsent
    request, response = seen[0]
    problem = before_reply(request) if before_reply is not None else None
    if problem:
        return False, problem
    if response is None:
        return False, waiting(request, what)
    return False, failed(request, response) if callable(failed) else failed


def refused(request: Entry, response: Entry | None) -> str | None:
    """A `passes` for checks that want an error reply."""
    error = error_of(response)
    return None if error is None else f"Message #{request.seq} was refused with {error_words(error)}."


def answered_with(_request: Entry, response: Entry) -> str:
    """A `failed` that names the error the reply carried."""
    return f"The server answered with {error_words(error_of(response) or {})}."


def first_good_initialize(t: Transcript) -> tuple[Entry, Entry] | None:
    for request in requests(t, "initialize"):
        response = t.response_to(request)
        result = result_of(response)
        if response is not None and result is not None and isinstance(result.get("serverInfo"), dict):
            return request, response
    return None


NO_INITIALIZE = "You have not sent an `initialize` request yet."
NOT_A_REQUEST = (
    "Your `initialize` has no `id`, so it is a notification and the server will not answer it. Add an id."
)


def no_initialize_reason(t: Transcript) -> str:
    if any(e.is_notification and e.method == "initialize" for e in t.client_messages()):
        return NOT_A_REQUEST
    return NO_INITIALIZE


# Importing the lesson modules registers their checks.
from app.course.checks import (  # noqa: E402
    apps,
    authorization,
    changes,
    client_features,
    elicitation,
    errors,
    features,
    handshake,
    http,
    jsonrpc,
    modern,
    resources,
    security,
    stateless,
    tasks,
    tools,
    transports,
)

__all__ = [
    "AUTHORIZATION",
    "REGISTRY",
    "TRANSCRIPT",
    "Check",
    "CheckResult",
    "Exchange",
    "Outcome",
    "StepChecker",
    "apps",
    "authorization",
    "changes",
    "check",
    "client_features",
    "elicitation",
    "errors",
    "features",
    "handshake",
    "http",
    "jsonrpc",
    "modern",
    "resources",
    "security",
    "stateless",
    "tasks",
    "tools",
    "transports",
]
