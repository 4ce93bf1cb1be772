"""Lesson 9, change over time: list_changed, subscriptions, progress, logging."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    check,
    exchanges,
    obj,
    params_of,
    requests,
    result_of,
    server_notifications,
    waiting,
)
from app.protocol.transcript import Transcript


@check(
    "list-changed-relisted",
    "Get a `notifications/tools/list_changed`, then list the tools again and see the new list.",
)
def list_changed_relisted(t: Transcript) -> Outcome:
    changes = server_notifications(t, "notifications/tools/list_changed")
    if not changes:
        return False, "No `notifications/tools/list_changed` yet. Call `open_returns_desk`."
    later = [(r, s) for r, s in exchanges(t, "tools/list") if r.seq > changes[0].seq]
    for _request, response in later:
        result = result_of(response)
        if result is not None and isinstance(result.get("tools"), list):
            names = [str(tool.get("name")) for tool in result["tools"] if isinstance(tool, dict)]
            return True, f"After the notification you listed again: {', '.join(names)}."
    if later:
        return False, waiting(later[0][0])
    return False, f"The server said its tools changed (message #{changes[0].seq}). Send `tools/list` again."


@check(
    "resource-update-received",
    "Subscribe to a resource, change it, and receive `notifications/resources/updated`.",
)
def resource_update_received(t: Transcript) -> Outcome:
    subscribed = [(r, s) for r, s in exchanges(t, "resources/subscribe") if result_of(s) is not None]
    if not subscribed:
        pending = requests(t, "resources/subscribe")
        if pending and t.response_to(pending[-1]) is None:
            return False, waiting(pending[-1])
        return False, "Subscribe first: `resources/subscribe` with the sensor's `uri`, and get `{}` back."
    first = min(s.seq for _, s in subscribed if s is not None)
    updates = server_notifications(t, "notifications/resources/updated", after=first)
    if updates:
        uri = params_of(updates[0]).get("uri")
        return (
            True,
            f"The server told you {uri} changed (message #{updates[0].seq}). Read it to see the new value.",
        )
    return False, "You are subscribed. Now change the temperature with the tool `set_temperature`."


@check(
    "progress-received",
    "Call a long tool with a `progressToken` in `_meta` and receive `notifications/progress` for it.",
)
def progress_received(t: Transcript) -> Outcome:
    calls = [r for r in requests(t, "tools/call") if "progressToken" in obj(params_of(r).get("_meta"))]
    if not calls:
        return False, 'Call `run_diagnostics` with `"_meta": {"progressToken": "p1"}` in params.'
    tokens = {repr(params_of(r)["_meta"]["progressToken"]) for r in calls}
    notes = [
        n for n in server_notifications(t, "notifications/progress")
        if repr(params_of(n).get("progressToken")) in tokens
    ]  # fmt: skip
    if notes:
        last = params_of(notes[-1])
        return True, (
            f"{len(notes)} progress notification(s) arrived; the latest says {last.get('progress')} "
            f"of {last.get('total')}."
        )
    return False, waiting(calls[-1], "call") + " Progress notifications should arrive before the result."


@check(
    "debug-log-seen", "Lower the log level to `debug` with `logging/setLevel` and receive a debug message."
)
def debug_log_seen(t: Transcript) -> Outcome:
    lowered = [
        (r, s) for r, s in exchanges(t, "logging/setLevel")
        if params_of(r).get("level") == "debug" and result_of(s) is not None
    ]  # fmt: skip
    if not lowered:
        return False, 'Send `logging/setLevel` with `"level": "debug"` (after the handshake) and get `{}`.'
    after = min(s.seq for _, s in lowered if s is not None)
    for note in server_notifications(t, "notifications/message", after=after):
        if params_of(note).get("level") == "debug":
            return True, f"A debug log line arrived (message #{note.seq}): {params_of(note).get('data')}"
    return False, "The level is `debug` now. Call `run_diagnostics`: it logs a debug line per sensor."
