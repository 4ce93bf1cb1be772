"""Lesson 20, the tasks extension: -32021 naming it, a task handle, polling to the result, cancelling."""

from __future__ import annotations

import json

from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

from app.course.checks import (
    Outcome,
    check,
    error_of,
    error_words,
    exchanges,
    items,
    judge,
    key,
    params_of,
    requests,
    result_of,
    waiting,
)
from app.protocol.transcript import Entry, Transcript

EXTENSION = "io.modelcontextprotocol/tasks"


def _created(t: Transcript) -> dict[str, Entry]:
    """Task ids the server handed out in this session, with the response that did."""
    made: dict[str, Entry] = {}
    for _request, response in exchanges(t, "tools/call"):
        result = result_of(response) or {}
        if (
            result.get("resultType") == "task"
            and isinstance(result.get("taskId"), str)
            and response is not None
        ):
            made[result["taskId"]] = response
    return made


def _names_the_extension(error: dict) -> bool:
    data = error.get("data")
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    extensions = required.get("extensions") if isinstance(required, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


@check(
    "task-extension-required",
    "Call `render_video` without declaring the tasks extension and read the `-32021` error that names it.",
)
def task_extension_required(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        error = error_of(response)
        if (
            error is None
            or error.get("code") != MISSING_REQUIRED_CLIENT_CAPABILITY
            or not _names_the_extension(error)
        ):
            return None
        return f"Refused with -32021: the call needs `{EXTENSION}` in your capabilities."

    def failed(_request: Entry, response: Entry) -> str:
        error = error_of(response)
        if error is not None:
            return f"The server answered {error_words(error)}."
        return "The server answered with a result: leave `extensions` out of the envelope to see the refusal."

    return judge(
        list(exchanges(t, "tools/call")),
        passes,
        unsent="Call `render_video` with an envelope whose clientCapabilities are `{}`.",
        failed=failed,
    )


@check(
    "task-created",
    'Declare the tasks extension and get a task handle (`"resultType": "task"`) from `tools/call`.',
)
def task_created(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        result = result_of(response) or {}
        if result.get("resultType") != "task":
            return None
        return f"Task {result.get('taskId')} is {result.get('status')}; poll it every {result.get('pollIntervalMs')} ms."

    def failed(_request: Entry, response: Entry) -> str:
        error = error_of(response)
        if error is not None and error.get("code") == MISSING_REQUIRED_CLIENT_CAPABILITY:
            return (
                f'Refused with -32021: declare `"extensions": {{"{EXTENSION}": {{}}}}` in clientCapabilities.'
            )
        if error is not None:
            return f"The server answered {error_words(error)}."
        return "A plain result, not a task: the server decides per call. Call `render_video`."

    return judge(
        list(exchanges(t, "tools/call")),
        passes,
        unsent="Call `render_video`, declaring the tasks extension in the envelope.",
        failed=failed,
    )


def _polls(t: Transcript, method: str) -> list[tuple[Entry, Entry | None]]:
    """Requests of `method` (newest first) naming a task this session created."""
    made = _created(t)
    return [(r, s) for r, s in exchanges(t, method) if key(params_of(r).get("taskId")) in made]


def _no_task(t: Transcript) -> str:
    if not _created(t):
        return "Create a task first: call `render_video` with the tasks extension declared."
    if requests(t, "tasks/get"):
        return "That `tasks/get` named no task of yours: copy the `taskId` the server gave you."
    return "Now poll: send `tasks/get` with the `taskId` the server gave you."


@check(
    "task-completed",
    "Poll `tasks/get` with your task's id until its status is `completed`, and read the result inside.",
)
def task_completed(t: Transcript) -> Outcome:
    polls = _polls(t, "tasks/get")
    for _request, response in polls:
        result = result_of(response) or {}
        if result.get("status") == "completed" and isinstance(result.get("result"), dict):
            inner = items(result["result"].get("content")) or [{}]
            text = inner[0].get("text", "") if isinstance(inner[0], dict) else ""
            return True, f"Completed (message #{response.seq if response else '?'}): {text}"
    if not polls:
        return False, _no_task(t)
    request, response = polls[0]
    if response is None:
        return False, waiting(request)
    answer = result_of(response)
    if answer is None:
        return False, f"The poll was refused with {error_words(error_of(response) or {})}."
    return False, (
        f"Status {json.dumps(answer.get('status'))}: {answer.get('statusMessage', '')} "
        f"Poll again after {answer.get('pollIntervalMs')} ms."
    )


@check(
    "task-cancelled", "Cancel a working task with `tasks/cancel`, then see it `cancelled` with `tasks/get`."
)
def task_cancelled(t: Transcript) -> Outcome:
    cancels = [(r, s) for r, s in _polls(t, "tasks/cancel") if result_of(s) is not None]
    if not cancels:
        pending = _polls(t, "tasks/cancel")
        if pending and pending[0][1] is None:
            return False, waiting(pending[0][0])
        if pending:
            return False, f"The cancel was refused with {error_words(error_of(pending[0][1]) or {})}."
        if not _created(t):
            return (
                False,
                "Create a long task first: `render_video` with `seconds` at 30, the extension declared.",
            )
        return False, "Send `tasks/cancel` with your task's `taskId`."
    first = min(r.seq for r, _ in cancels)
    cancelled_ids = {params_of(r).get("taskId") for r, _ in cancels}
    later = [
        (r, s)
        for r, s in _polls(t, "tasks/get")
        if r.seq > first and params_of(r).get("taskId") in cancelled_ids
    ]
    for request, response in later:
        status = (result_of(response) or {}).get("status")
        if status == "cancelled":
            return (
                True,
                f"The cancel was acknowledged and `tasks/get` (message #{request.seq}) shows it cancelled.",
            )
        if status == "completed":
            return (
                False,
                "That task had already finished: cancelling is cooperative. Cancel one still working.",
            )
    if later and later[0][1] is None:
        return False, waiting(later[0][0])
    return False, "The cancel was acknowledged with an empty result. Now poll `tasks/get` to see the status."
