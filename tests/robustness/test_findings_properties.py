"""Property-based tests of the explanations beside every message: whatever shape a client message
that passes the relay's checks has, or a line a server writes, explaining it gives findings and never
raises (an exception there closed the console's connection, or stopped the session reading its server)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.protocol.explain import client_findings, server_findings
from app.protocol.jsonrpc import check_message, to_line
from app.protocol.transcript import Transcript

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
# Where the explanations look values up: the fields they read, with any JSON value in them.
params = st.dictionaries(
    st.sampled_from(
        [
            "protocolVersion",
            "clientInfo",
            "capabilities",
            "name",
            "arguments",
            "uri",
            "_meta",
            "cursor",
            "level",
            "ref",
            "requestId",
            "progressToken",
        ]
    ),  # fmt: skip
    json_values,
    max_size=4,
)
client_methods = st.sampled_from(["initialize", "ping", "tools/call", "tools/list", "resources/read",
                                  "prompts/get", "server/discover", "completion/complete", "logging/setLevel",
                                  "notifications/initialized", "notifications/cancelled", "no/such"])  # fmt: skip
revisions = st.sampled_from([None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
server_fields = st.dictionaries(
    st.sampled_from(["id", "method", "params", "result", "error"]), json_values, max_size=4
)
error_shapes = st.fixed_dictionaries(
    {}, optional={"code": json_values, "message": json_values, "data": json_values}
)
result_shapes = st.dictionaries(
    st.sampled_from(
        [
            "protocolVersion",
            "capabilities",
            "serverInfo",
            "tools",
            "content",
            "isError",
            "structuredContent",
            "resources",
            "contents",
            "_meta",
        ]
    ),  # fmt: skip
    json_values,
    max_size=4,
)


def negotiated(revision: str | None) -> Transcript:
    t = Transcript("demo-orders")
    if revision is not None:
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": revision}}
        t.add_client(to_line(hello), hello)
        answer = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": revision}}
        t.add_server(to_line(answer), answer)
    return t


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(client_methods, params | json_values, st.booleans(), revisions)
@example("initialize", {"protocolVersion": ["2025-11-25"]}, True, None)
def test_a_client_message_the_relay_forwards_is_explained_without_raising(
    method: str, params: Any, with_id: bool, revision: str | None
) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if with_id:
        message["id"] = 5
    if check_message(message) is None:  # only what the relay forwards reaches the explanations
        assert isinstance(client_findings(message, negotiated(revision)), list)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    client_methods,
    server_fields,
    st.one_of(st.none(), error_shapes),
    st.one_of(st.none(), result_shapes),
    revisions,
)
@example("ping", {"id": "s1", "method": ["not", "a", "string"]}, None, None, "2025-11-25")
def test_any_line_a_server_writes_is_explained_without_raising(
    method: str, fields: dict[str, Any], error: Any, result: Any, revision: str | None
) -> None:
    t = negotiated(revision)
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
    t.add_client(to_line(request), request)
    message = {"jsonrpc": "2.0", "id": 1, **fields}
    if error is not None:
        message["error"] = error
    if result is not None:
        message["result"] = result
    entry = t.add_server(to_line(message), message)
    assert isinstance(server_findings(entry, t), list)
