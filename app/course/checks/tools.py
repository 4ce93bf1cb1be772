"""Lesson 5, tools: tools/list, tools/call, `isError` and protocol errors."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    check,
    error_of,
    error_words,
    exchanges,
    first_text,
    result_of,
    waiting,
)
from app.protocol.transcript import Transcript

NO_CALL = "You have not sent a `tools/call` request yet."


@check("tools-listed", "Send `tools/list` and get the server's tools with their input schemas.")
def tools_listed(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "tools/list"))
    for _, response in seen:
        result = result_of(response)
        if result is not None and isinstance(result.get("tools"), list):
            names = [str(tool.get("name")) for tool in result["tools"] if isinstance(tool, dict)]
            return True, f"The server listed {len(names)} tool(s): {', '.join(names) or 'none'}."
    if not seen:
        return False, "You have not sent `tools/list` yet (complete the handshake first)."
    request, response = seen[0]
    if response is None:
        return False, waiting(request)
    return (
        False,
        f"The server answered with {error_words(error_of(response) or {})}. Did you finish the handshake?",
    )


@check("tool-called", "Call a tool with valid arguments and get a result that is not an error.")
def tool_called(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "tools/call"))
    for request, response in seen:
        result = result_of(response)
        if result is not None and result.get("isError") is not True:
            return True, f"Message #{request.seq} returned: {first_text(result)}"
    if not seen:
        return False, NO_CALL
    request, response = seen[0]
    if response is None:
        return False, waiting(request)
    error = error_of(response)
    if error is not None:
        return False, f"The call was refused with {error_words(error)}. Check `name` and `arguments`."
    return False, "The tool reported an error (`isError: true`). Read its text and fix the arguments."


@check("tool-error-result", "Make a tool fail, so that its result says `isError: true`.")
def tool_error_result(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "tools/call"))
    for request, response in seen:
        result = result_of(response)
        if result is not None and result.get("isError") is True:
            return True, f"Message #{request.seq} got a result with isError true: {first_text(result)}"
    if not seen:
        return False, NO_CALL
    request, response = seen[0]
    if response is None:
        return False, waiting(request)
    if error_of(response) is not None:
        return (
            False,
            "That was a protocol error (an `error`), not a tool error. Keep `name` right; break `arguments`.",
        )
    return False, "The tool succeeded. Leave out a required argument, or give it the wrong type."


@check(
    "tool-call-protocol-error", "Send a `tools/call` whose params are malformed and read the protocol error."
)
def tool_call_protocol_error(t: Transcript) -> Outcome:
    seen = list(exchanges(t, "tools/call"))
    for request, response in seen:
        error = error_of(response)
        if error is not None:
            return True, f"Message #{request.seq} was refused with {error_words(error)}: no tool ran."
    if not seen:
        return False, NO_CALL
    request, response = seen[0]
    if response is None:
        return False, waiting(request)
    return False, "The server ran a tool and sent a result. Remove `name` from params and send it again."
