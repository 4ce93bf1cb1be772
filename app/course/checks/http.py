"""The Streamable HTTP lesson: checks over what an outside client did with the learner's endpoint.

They read the session's HTTP exchanges (kept in its transcript by app/web/endpoints.py) besides its
messages: the method, the status and the MCP headers of every request.
"""

from __future__ import annotations

from app.course.checks import Outcome, check
from app.protocol.transcript import HttpExchange, Transcript

NO_CLIENT = "No client has used your endpoint yet: connect one with the URL above."


def _initialize(t: Transcript) -> HttpExchange | None:
    """The exchange that opened the session: initialize POSTed and answered with a session id."""
    return next(
        (x for x in t.exchanges if x.method == "POST" and (x.carried or {}).get("method") == "initialize"
         and x.status == 200 and "mcp-session-id" in x.response_headers),
        None,
    )  # fmt: skip


def _later(t: Transcript, opened: HttpExchange) -> list[HttpExchange]:
    return [x for x in t.exchanges if x.number > opened.number]


@check(
    "http-session-opened", "Connect a client: its `initialize`, POSTed, is answered with an `Mcp-Session-Id`."
)
def http_session_opened(t: Transcript) -> Outcome:
    opened = _initialize(t)
    if opened is None:
        return (
            False,
            NO_CLIENT if not t.exchanges else "Your client has not opened a session with `initialize` yet.",
        )
    asked = opened.request_headers.get("mcp-protocol-version")
    return True, (
        f"Exchange #{opened.number}: POST with `initialize` answered 200 with `Mcp-Session-Id` "
        f"{opened.response_headers['mcp-session-id'][:8]}…; the revision agreed is {t.revision}"
        + (f" (the client also sent `MCP-Protocol-Version: {asked}`)." if asked else ".")
    )


@check(
    "http-session-reused",
    "Make a second request on the same session: it carries the `Mcp-Session-Id` it was given.",
)
def http_session_reused(t: Transcript) -> Outcome:
    opened = _initialize(t)
    if opened is None:
        return False, NO_CLIENT if not t.exchanges else "Open a session first: POST `initialize`."
    session = opened.response_headers["mcp-session-id"]
    for x in _later(t, opened):
        if x.request_headers.get("mcp-session-id") == session and x.status in (200, 202):
            carried = (x.carried or {}).get("method") or "the GET stream"
            return True, (f"Exchange #{x.number}: {x.method} ({carried}) carried the session id and was "
                          f"answered {x.status}.")  # fmt: skip
    return False, "Since `initialize`, no request has carried the session id yet."


@check(
    "http-version-header",
    "After `initialize`, the client names the revision in `MCP-Protocol-Version` on every request.",
)
def http_version_header(t: Transcript) -> Outcome:
    opened = _initialize(t)
    if opened is None:
        return False, NO_CLIENT if not t.exchanges else "Open a session first: POST `initialize`."
    later = _later(t, opened)
    if not later:
        return False, "Make a request after `initialize`: its headers are what this check reads."
    missing = [x for x in later if x.request_headers.get("mcp-protocol-version") != t.revision]
    if missing:
        x = missing[0]
        said = x.request_headers.get("mcp-protocol-version")
        return False, (f"Exchange #{x.number} ({x.method}) said "
                       + (f"`MCP-Protocol-Version: {said}`" if said else "no `MCP-Protocol-Version`")
                       + f"; the session agreed on {t.revision}.")  # fmt: skip
    return True, f"All {len(later)} requests after `initialize` said `MCP-Protocol-Version: {t.revision}`."


@check(
    "http-stream-opened",
    "Open the session's GET stream (`Accept: text/event-stream`), where the server's own messages come.",
)
def http_stream_opened(t: Transcript) -> Outcome:
    for x in t.exchanges:
        if x.method == "GET" and x.status == 200:
            return (
                True,
                f"Exchange #{x.number}: GET answered 200 with `{x.response_headers.get('content-type', '')}`.",
            )
    refused = [x for x in t.exchanges if x.method == "GET"]
    if refused:
        return (
            False,
            f"Exchange #{refused[-1].number}: GET was answered {refused[-1].status}; say `Accept: text/event-stream`.",
        )
    return False, NO_CLIENT if not t.exchanges else "No GET on this session yet."


@check(
    "http-answered-as-sse",
    "Ask for a reply as an event stream: POST a request with `Accept: text/event-stream`.",
)
def http_answered_as_sse(t: Transcript) -> Outcome:
    for x in t.exchanges:
        if (x.method == "POST" and x.status == 200 and (x.carried or {}).get("kind") == "request"
                and x.response_headers.get("content-type", "").startswith("text/event-stream")):  # fmt: skip
            return (
                True,
                f"Exchange #{x.number}: `{(x.carried or {}).get('method')}` was answered as `text/event-stream`.",
            )
    return False, NO_CLIENT if not t.exchanges else "Every reply so far came as one JSON body."
