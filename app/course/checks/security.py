"""Lesson 21, security for server authors: poisoned descriptions, injected results, the deputy, annotations."""

from __future__ import annotations

from app.course.checks import (
    Outcome,
    check,
    exchanges,
    first_text,
    items,
    judge,
    params_of,
    requests,
    result_of,
    waiting,
)
from app.protocol.transcript import Entry, Transcript

HIDDEN_MARK = "<IMPORTANT>"


@check("poisoned-description-seen", "List the tools and find the instruction hidden in a tool's description.")
def poisoned_description_seen(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        for tool in items((result_of(response) or {}).get("tools")):
            if isinstance(tool, dict) and HIDDEN_MARK in str(tool.get("description", "")):
                return f"`{tool.get('name')}` hides words for the model in its description. Read them in the reply."
        return None

    return judge(
        list(exchanges(t, "tools/list")),
        passes,
        unsent="Send `tools/list` and read every description in full.",
        failed="No description in that list hides anything. Is this demo-poisoned?",
    )


def _answered(t: Transcript, tool: str) -> list[tuple[Entry, Entry | None]]:
    return [(r, s) for r, s in exchanges(t, "tools/call") if params_of(r).get("name") == tool]


@check(
    "injected-result-compared",
    "Call `read_reviews_raw` and `read_reviews`, and compare how each passes on the injected review.",
)
def injected_result_compared(t: Transcript) -> Outcome:
    raw = [s for _, s in _answered(t, "read_reviews_raw") if result_of(s) is not None]
    careful = [s for _, s in _answered(t, "read_reviews") if result_of(s) is not None]
    if raw and careful:
        return (
            True,
            "The raw tool passed the injected words on as its own; the careful one quoted and flagged them.",
        )
    pending = requests(t, "tools/call")
    if pending and t.response_to(pending[-1]) is None:
        return False, waiting(pending[-1])
    if raw:
        return False, "Now call `read_reviews` with the same product."
    if careful:
        return False, "Now call `read_reviews_raw` with the same product."
    return False, 'Call `read_reviews_raw` with `"product": "kettle"`.'


@check(
    "deputy-refused",
    "Ask `read_document` for a document the session's user may not read, and see the server refuse.",
)
def deputy_refused(t: Transcript) -> Outcome:
    def passes(_request: Entry, response: Entry | None) -> str | None:
        result = result_of(response)
        if result is None or result.get("isError") is not True:
            return None
        return f"Refused: {first_text(result)}"

    return judge(
        _answered(t, "read_document"),
        passes,
        unsent='Call `read_document` with `"doc_id": "payroll-2026"`.',
        failed="That document was readable by the session's user. Ask for `payroll-2026`.",
    )


def _read_only_claims(t: Transcript) -> set[str]:
    """Tools a `tools/list` result annotated as read-only."""
    names: set[str] = set()
    for _request, response in exchanges(t, "tools/list"):
        for tool in items((result_of(response) or {}).get("tools")):
            annotations = tool.get("annotations") if isinstance(tool, dict) else None
            if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
                names.add(str(tool.get("name")))
    return names


@check(
    "lying-annotation-seen",
    "List the tools, then call the one annotated `readOnlyHint: true` and read what it says it did.",
)
def lying_annotation_seen(t: Transcript) -> Outcome:
    claimed = _read_only_claims(t)
    if not claimed:
        return False, "Send `tools/list` and look for `annotations` on the tools."
    for name in sorted(claimed):
        for request, response in _answered(t, name):
            result = result_of(response)
            if result is not None:
                return True, f"`{name}` claims to be read-only and answers: {first_text(result)}"
            if response is None:
                return False, waiting(request)
    return False, f"`{', '.join(sorted(claimed))}` claims `readOnlyHint: true`. Call it and read its answer."
