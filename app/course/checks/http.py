"""The Streamable HTTP lesson: checks over what an outside client did with the learner's endpoint.

They read the session's HTTP exchanges (kept in its transcript by app/relay/httptransport.py) besides its
messages: the method, the status and the MCP headers of every request. 2026-07-28 requests have no
session: the endpoint's one instance for them keeps their exchanges (a request refused for its headers
is kept only once that instance has started).
"""

from __future__ import annotations

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from app.course.checks import Outcome, check
from app.protocol.exchanges import HttpExchange
from app.protocol.transcript import Transcript

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


@check("http-session-ended", "End the session: `DELETE` with its `Mcp-Session-Id`, answered 204.")
def http_session_ended(t: Transcript) -> Outcome:
    opened = _initialize(t)
    if opened is None:
        return False, NO_CLIENT if not t.exchanges else "Open a session first: POST `initialize`."
    session = opened.response_headers["mcp-session-id"]
    deletes = [x for x in _later(t, opened) if x.method == "DELETE"]
    for x in deletes:
        if x.status == 204 and x.request_headers.get("mcp-session-id") == session:
            return True, (f"Exchange #{x.number}: DELETE with the session id was answered 204; the session has "
                          "ended, and its id now answers 404.")  # fmt: skip
    if deletes:
        return False, f"Exchange #{deletes[-1].number}: DELETE was answered {deletes[-1].status}."
    return False, "The session is still open: send DELETE with its `Mcp-Session-Id`."


def _stateless_posts(t: Transcript) -> list[HttpExchange]:
    """POSTed requests without a session id: 2026-07-28 requests, on the endpoint's stateless instance."""
    return [x for x in t.exchanges if x.method == "POST" and "mcp-session-id" not in x.request_headers
            and (x.carried or {}).get("kind") == "request"]  # fmt: skip


HANDSHAKE_SESSION = ("This is a session opened with `initialize`: send a 2026-07-28 request instead, with its "
                     "version in `params._meta` and no session id.")  # fmt: skip


@check(
    "http-stateless-request",
    "Send a 2026-07-28 request without a session, its method named in `Mcp-Method`, and get its answer.",
)
def http_stateless_request(t: Transcript) -> Outcome:
    if not t.exchanges:
        return False, NO_CLIENT
    if _initialize(t) is not None:
        return False, HANDSHAKE_SESSION
    for x in _stateless_posts(t):
        method = (x.carried or {}).get("method")
        if x.status == 200 and x.request_headers.get("mcp-method") == method:
            version = x.request_headers.get("mcp-protocol-version")
            return True, (f"Exchange #{x.number}: `{method}` with `Mcp-Method: {method}` and "
                          f"`MCP-Protocol-Version: {version}`, no session id, was answered 200.")  # fmt: skip
    return False, "No 2026-07-28 request has been answered yet."


@check(
    "http-header-mismatch-refused",
    "Send a 2026-07-28 request whose headers disagree with its body, and see it refused with 400.",
)
def http_header_mismatch_refused(t: Transcript) -> Outcome:
    if not t.exchanges:
        return False, NO_CLIENT
    if _initialize(t) is not None:
        return False, HANDSHAKE_SESSION
    for x in _stateless_posts(t):
        if x.status == 400:
            return (
                True,
                f"Exchange #{x.number}: {_mismatch(x)}; it was refused 400 (`-32020`, header mismatch).",
            )
    return False, ("No request has been refused for its headers yet: send one whose `Mcp-Name` or `Mcp-Method` "
                   "disagrees with its body.")  # fmt: skip


def _mismatch(x: HttpExchange) -> str:
    """Which header disagreed, as far as the exchange tells (the body's name or URI is not kept)."""
    method = (x.carried or {}).get("method")
    said = x.request_headers
    if said.get("mcp-method") != method:
        named = f"`Mcp-Method: {said['mcp-method']}`" if "mcp-method" in said else "no `Mcp-Method`"
        return f"the body's method was `{method}` and the request said {named}"
    version = said.get("mcp-protocol-version")
    if version not in MODERN_PROTOCOL_VERSIONS:
        named = f"`MCP-Protocol-Version: {version}`" if version else "no `MCP-Protocol-Version`"
        return f"`{method}` named its version in `params._meta` and said {named}"
    if "mcp-name" in said:
        return f"`{method}` said `Mcp-Name: {said['mcp-name']}`, which is not the name in its body"
    return f"`{method}` came without the `Mcp-Name` its body needs"
