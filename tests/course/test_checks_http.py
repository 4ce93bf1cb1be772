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
                 "http-answered-as-sse"):  # fmt: skip
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
