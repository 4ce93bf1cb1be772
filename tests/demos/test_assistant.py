"""demo-assistant: sampling, roots and elicitation only when declared; plain refusals otherwise."""

from __future__ import annotations

import pytest

from tests.support.rawclient import RawClient, envelope

ALL = {"sampling": {}, "roots": {}, "elicitation": {}}


def tool_text(response: dict) -> str:
    return response["result"]["content"][0]["text"]


@pytest.fixture
def client():
    with RawClient("app.demos.assistant") as c:
        yield c


def test_sampling_request_is_answered_by_the_client(client: RawClient) -> None:
    client.initialize(ALL)
    call = client.request("tools/call", {"name": "suggest_trip", "arguments": {"city": "Pune"}})
    asked = client.read()
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"]["messages"][0]["content"]["text"] == "Suggest a one-day trip in Pune."
    client.respond(
        asked["id"],
        {"role": "assistant", "content": {"type": "text", "text": "See the fort."}, "model": "me"},
    )
    reply, between = client.until_response(call)
    assert between == []
    assert tool_text(reply) == "Trip idea for Pune, written by me: See the fort."


def test_roots_request_lists_the_shared_folders(client: RawClient) -> None:
    client.initialize(ALL)
    call = client.request("tools/call", {"name": "find_itineraries", "arguments": {}})
    asked = client.read()
    assert asked["method"] == "roots/list"
    client.respond(asked["id"], {"roots": [{"uri": "file:///home/me/trips", "name": "trips"}]})
    assert "trips: file:///home/me/trips" in tool_text(client.until_response(call)[0])


def test_elicitation_accept_and_client_error(client: RawClient) -> None:
    client.initialize(ALL)
    args = {"name": "book_train", "arguments": {"destination": "Goa"}}
    call = client.request("tools/call", args)
    asked = client.read()
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["requestedSchema"]["required"] == ["travellers"]
    client.respond(asked["id"], {"action": "accept", "content": {"travellers": 2}})
    assert tool_text(client.until_response(call)[0]) == "Booked 2 ticket(s) to Goa, any seats."

    call = client.request("tools/call", args)
    asked = client.read()
    client.send({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "User rejected"}})
    assert "refused the elicitation: User rejected" in tool_text(client.until_response(call)[0])


@pytest.mark.parametrize(
    ("tool", "arguments", "capability"),
    [
        ("suggest_trip", {"city": "Pune"}, "sampling"),
        ("find_itineraries", {}, "roots"),
        ("book_train", {"destination": "Goa"}, "elicitation"),
    ],
)
def test_without_the_capability_nothing_is_sent_and_the_tool_says_why(
    client: RawClient, tool: str, arguments: dict, capability: str
) -> None:
    # Declare the other two, so only the missing one can explain the refusal.
    client.initialize({name: {} for name in ALL if name != capability})
    reply = client.call(
        "tools/call", {"name": tool, "arguments": arguments}
    )  # fails on any request in between
    assert reply["result"]["isError"] is True
    assert f"did not declare the '{capability}' capability" in tool_text(reply)
    assert "Nothing was sent" in tool_text(reply)
    assert client.call("ping")["result"] == {}  # and no request turned up later either


def test_the_2026_revision_refuses_server_requests_in_plain_words(client: RawClient) -> None:
    reply = client.call(
        "tools/call", {"_meta": envelope(ALL), "name": "suggest_trip", "arguments": {"city": "Pune"}}
    )
    assert reply["result"]["isError"] is True
    assert "may not send requests to the client" in tool_text(reply)
