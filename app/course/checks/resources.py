"""Lesson 6, resources and prompts: read, get, arguments, and their errors."""

from __future__ import annotations

from collections.abc import Callable

from app.course.checks import Outcome, answered_with, check, error_of, exchanges, judge, refused, result_of
from app.protocol.transcript import Entry, Transcript


def _outcome(
    t: Transcript, method: str, good: Callable[[dict], str | None], want_error: bool, hint: str
) -> Outcome:
    def passes(request: Entry, response: Entry | None) -> str | None:
        if want_error:
            return refused(request, response)
        result = result_of(response)
        return good(result) if result is not None else None

    def failed(request: Entry, response: Entry) -> str:
        if not want_error and error_of(response) is not None:
            return f"{answered_with(request, response)} {hint}"
        return hint

    return judge(
        list(exchanges(t, method)), passes, unsent=f"You have not sent `{method}` yet.", failed=failed
    )


def _contents(result: dict) -> str | None:
    contents = result.get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[0], dict):
        return None
    return f"You read {contents[0].get('uri')}: {str(contents[0].get('text', '(binary)'))[:100]}"


def _messages(result: dict) -> str | None:
    messages = result.get("messages")
    if not isinstance(messages, list) or not messages:
        return None
    return f"The prompt came back as {len(messages)} message(s), ready for a model."


@check("resource-read", "Read a resource with `resources/read` and get its contents.")
def resource_read(t: Transcript) -> Outcome:
    return _outcome(t, "resources/read", _contents, False, "Use a `uri` that `resources/list` gave you.")


@check("resource-not-found", "Ask `resources/read` for a URI the server does not have and read its error.")
def resource_not_found(t: Transcript) -> Outcome:
    return _outcome(t, "resources/read", _contents, True, "That URI exists. Ask for one that does not.")


@check("prompt-got", "Get a prompt with `prompts/get`, giving its required argument.")
def prompt_got(t: Transcript) -> Outcome:
    return _outcome(t, "prompts/get", _messages, False, "Give the prompt's `name` and its `arguments`.")


@check("prompt-refused", "Send a `prompts/get` the server must refuse (leave out a required argument).")
def prompt_refused(t: Transcript) -> Outcome:
    return _outcome(t, "prompts/get", _messages, True, "The server accepted it. Leave out `arguments`.")
