"""The Streamable HTTP lesson's checks, on transcripts holding the HTTP exchanges an endpoint records."""

from __future__ import annotations

from app.course.checks import REGISTRY
from app.protocol.transcript import Transcript

SESSION = "3b1f0c2a9d8e7f6a5b4c3d2e"
JSON = {"content-type": "application/json"}


def opened() -> Transcript:
    t = Transcript(server="demo-orders", revision="2025-11-25")
    t.add_exchange("POST", 200, {"accept": "application/json, text/event-stream"},
                   {**JSON, "mcp-session-id": SESSION}, {"method": "initialize", "id": 1, "kind": "request"})  # fmt: skip
    return t


def run(name: str, t: Transcript) -> tuple[bool, str]:
    result = REGISTRY[name].run(t)
    return result.passed, result.reason


def test_nothing_yet_says_to_connect_a_client() -> None:
    empty = Transcript(server="demo-orders")
    for name in ("http-session-opened", "http-session-reused", "http-version-header", "http-stream-opened",
                 "http-answered-as-sse", "http-session-ended", "http-stateless-request",
                 "http-header-mismatch-refused"):  # fmt: skip
        assert run(name, empty) == (
            False,
            "No client has used your endpoint yet: connect one with the URL above.",
        )


def test_a_session_opened_and_reused_with_its_version() -> None:
    t = opened()
    assert run("http-session-opened", t)[0]
    assert run("http-session-reused", t) == (
        False,
        "Since `initialize`, no request has carried the session id yet.",
    )
    assert (
        run("http-version-header", t)[1]
        == "Make a request after `initialize`: its headers are what this check reads."
    )
    t.add_exchange("POST", 202, {"mcp-session-id": SESSION, "mcp-protocol-version": "2025-11-25"}, {},
                   {"method": "notifications/initialized", "kind": "notification"})  # fmt: skip
    assert run("http-session-reused", t) == (
        True, "Exchange #2: POST (notifications/initialized) carried the session id and was answered 202.")  # fmt: skip
    assert run("http-version-header", t) == (
        True,
        "All 1 requests after `initialize` said `MCP-Protocol-Version: 2025-11-25`.",
    )


def test_a_request_without_the_version_header_or_with_another_session_does_not_count() -> None:
    t = opened()
    t.add_exchange(
        "POST", 404, {"mcp-session-id": "someone-else"}, JSON, {"method": "ping", "id": 2, "kind": "request"}
    )
    assert run("http-session-reused", t)[0] is False
    assert run("http-version-header", t) == (
        False, "Exchange #2 (POST) said no `MCP-Protocol-Version`; the session agreed on 2025-11-25.")  # fmt: skip


def test_the_stream_and_an_sse_reply() -> None:
    t = opened()
    t.add_exchange("GET", 406, {"mcp-session-id": SESSION}, JSON)
    assert run("http-stream-opened", t) == (
        False, "Exchange #2: GET was answered 406; say `Accept: text/event-stream`.")  # fmt: skip
    t.add_exchange("GET", 200, {"mcp-session-id": SESSION, "accept": "text/event-stream"},
                   {"content-type": "text/event-stream"})  # fmt: skip
    assert run("http-stream-opened", t)[0]
    assert run("http-answered-as-sse", t) == (False, "Every reply so far came as one JSON body.")
    t.add_exchange("POST", 200, {"mcp-session-id": SESSION}, {"content-type": "text/event-stream"},
                   {"method": "tools/list", "id": 2, "kind": "request"})  # fmt: skip
    assert run("http-answered-as-sse", t) == (
        True,
        "Exchange #4: `tools/list` was answered as `text/event-stream`.",
    )


def test_a_delete_that_ended_the_session() -> None:
    t = opened()
    assert run("http-session-ended", t) == (
        False,
        "The session is still open: send DELETE with its `Mcp-Session-Id`.",
    )
    t.add_exchange("DELETE", 405, {"mcp-session-id": SESSION}, {})
    assert run("http-session-ended", t) == (False, "Exchange #2: DELETE was answered 405.")
    t.add_exchange("DELETE", 204, {"mcp-session-id": "someone-else"}, {})
    assert run("http-session-ended", t)[0] is False
    t.add_exchange("DELETE", 204, {"mcp-session-id": SESSION, "mcp-protocol-version": "2025-11-25"}, {})
    assert run("http-session-ended", t) == (
        True, "Exchange #4: DELETE with the session id was answered 204; the session has ended, and its id now "
        "answers 404.")  # fmt: skip


MODERN = {"accept": "application/json, text/event-stream", "content-type": "application/json",
          "mcp-protocol-version": "2026-07-28"}  # fmt: skip


def stateless() -> Transcript:
    """The endpoint's instance for 2026-07-28 requests: no initialize, no session id."""
    return Transcript(server="demo-orders")


def test_a_stateless_request_names_its_method() -> None:
    t = stateless()
    t.add_exchange("POST", 200, {**MODERN, "mcp-method": "tools/list"}, {"content-type": "text/event-stream"},
                   {"method": "server/discover", "id": 1, "kind": "request"})  # fmt: skip
    assert run("http-stateless-request", t) == (False, "No 2026-07-28 request has been answered yet.")
    t.add_exchange("POST", 200, {**MODERN, "mcp-method": "tools/list"}, {"content-type": "text/event-stream"},
                   {"method": "tools/list", "id": 2, "kind": "request"})  # fmt: skip
    assert run("http-stateless-request", t) == (
        True, "Exchange #2: `tools/list` with `Mcp-Method: tools/list` and `MCP-Protocol-Version: 2026-07-28`, "
        "no session id, was answered 200.")  # fmt: skip


def test_stateless_checks_on_a_handshake_session_say_what_to_send_instead() -> None:
    message = ("This is a session opened with `initialize`: send a 2026-07-28 request instead, with its version in "
               "`params._meta` and no session id.")  # fmt: skip
    assert run("http-stateless-request", opened()) == (False, message)
    assert run("http-header-mismatch-refused", opened()) == (False, message)


def test_a_request_refused_for_headers_that_disagree_with_its_body() -> None:
    t = stateless()
    t.add_exchange("POST", 200, {**MODERN, "mcp-method": "tools/call", "mcp-name": "get_order_status"}, JSON,
                   {"method": "tools/call", "id": 1, "kind": "request"})  # fmt: skip
    assert run("http-header-mismatch-refused", t) == (
        False, "No request has been refused for its headers yet: send one whose `Mcp-Name` or `Mcp-Method` "
        "disagrees with its body.")  # fmt: skip
    t.add_exchange("POST", 400, {**MODERN, "mcp-method": "tools/call", "mcp-name": "cancel_order"}, JSON,
                   {"method": "tools/call", "id": 2, "kind": "request"})  # fmt: skip
    assert run("http-header-mismatch-refused", t) == (
        True, "Exchange #2: `tools/call` said `Mcp-Name: cancel_order`, which is not the name in its body; it was "
        "refused 400 (`-32020`, header mismatch).")  # fmt: skip


def test_the_refusal_names_the_header_that_disagreed() -> None:
    cases = [
        ({**MODERN, "mcp-method": "tools/list"}, "the body's method was `tools/call` and the request said "
         "`Mcp-Method: tools/list`"),
        ({k: v for k, v in MODERN.items() if k != "mcp-protocol-version"} | {"mcp-method": "tools/call"},
         "`tools/call` named its version in `params._meta` and said no `MCP-Protocol-Version`"),
        ({**MODERN, "mcp-protocol-version": "2025-11-25", "mcp-method": "tools/call"},
         "`tools/call` named its version in `params._meta` and said `MCP-Protocol-Version: 2025-11-25`"),
        ({**MODERN, "mcp-method": "tools/call"}, "`tools/call` came without the `Mcp-Name` its body needs"),
    ]  # fmt: skip
    for headers, said in cases:
        t = stateless()
        t.add_exchange("POST", 400, headers, JSON, {"method": "tools/call", "id": 7, "kind": "request"})
        assert run("http-header-mismatch-refused", t) == (
            True,
            f"Exchange #1: {said}; it was refused 400 (`-32020`, header mismatch).",
        )
