"""Lesson 5, tools: tools/list, tools/call, `isError` and protocol errors."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    check,
    error_of,
    error_words,
    exchanges,
    first_text,
    judge,
    result_of,
)
from app.protocol.transcript import Entry, Transcript

NO_CALL = "You have not sent a `tools/call` request yet."


@check("tools-listed", "Send `tools/list` and get the server's tools with their input schemas.")
def tools_listed(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or not isinstance(result.get("tools"), list):
            return None
        names = [str(tool.get("name")) for tool in result["tools"] if isinstance(tool, dict)]
        return f"The server listed {len(names)} tool(s): {', '.join(names) or 'none'}."

    return judge(
        list(exchanges(t, "tools/list")),
        passes,
        unsent="You have not sent `tools/list` yet (complete the handshake first).",
        failed=lambda _, response: (
            f"The server answered with {error_words(error_of(response) or {})}. Did you finish the handshake?"
        ),
    )


@check("tool-called", "Call a tool with valid arguments and get a result that is not an error.")
def tool_called(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or result.get("isError") is True:
            return None
        return f"Message #{request.seq} returned: {first_text(result)}"

    def failed(_request: Entry, response: Entry) -> str:
        error = error_of(response)
        if error is not None:
            return f"The call was refused with {error_words(error)}. Check `name` and `arguments`."
        return "The tool reported an error (`isError: true`). Read its text and fix the arguments."

    return judge(list(exchanges(t, "tools/call")), passes, unsent=NO_CALL, failed=failed)


@check("tool-error-result", "Make a tool fail, so that its result says `isError: true`.")
def tool_error_result(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or result.get("isError") is not True:
            return None
        return f"Message #{request.seq} got a result with isError true: {first_text(result)}"

    def failed(_request: Entry, response: Entry) -> str:
        if error_of(response) is not None:
            return "That was a protocol error (an `error`), not a tool error. Keep `name` right; break `arguments`."
        return "The tool succeeded. Leave out a required argument, or give it the wrong type."

    return judge(list(exchanges(t, "tools/call")), passes, unsent=NO_CALL, failed=failed)


@check(
    "tool-call-protocol-error", "Send a `tools/call` whose params are malformed and read the protocol error."
)
def tool_call_protocol_error(t: Transcript) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        error = error_of(response)
        if error is None:
            return None
        return f"Message #{request.seq} was refused with {error_words(error)}: no tool ran."

    return judge(
        list(exchanges(t, "tools/call")),
        passes,
        unsent=NO_CALL,
        failed="The server ran a tool and sent a result. Remove `name` from params and send it again.",
    )
