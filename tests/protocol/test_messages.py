"""The one builder of the messages that open a conversation, against the SDK's types per revision."""

from __future__ import annotations

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from app.protocol import messages
from app.protocol.revisions import validate_message

HANDSHAKE_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


@pytest.mark.parametrize("revision", [*HANDSHAKE_REVISIONS, messages.STATELESS_REVISION])
def test_the_opening_message_is_valid_in_its_revision(revision: str) -> None:
    opening = messages.opening(revision, id_=7)
    assert validate_message(opening, revision) == []
    assert opening["id"] == 7
    if revision == messages.STATELESS_REVISION:
        assert opening["method"] == "server/discover"
        assert opening["params"]["_meta"] == {
            PROTOCOL_VERSION_META_KEY: revision,
            CLIENT_CAPABILITIES_META_KEY: {},
        }
    else:
        assert opening["method"] == "initialize"
        assert opening["params"]["protocolVersion"] == revision


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_the_handshake_is_initialize_then_the_initialized_notification(revision: str) -> None:
    caps = {"roots": {"listChanged": True}}
    first, second = messages.handshake(
        3, revision, capabilities=caps, client_info={"name": "t", "version": "1"}
    )
    assert validate_message(first, revision) == [] and validate_message(second, revision) == []
    assert first["params"]["capabilities"] == caps and first["params"]["clientInfo"]["name"] == "t"
    assert second == {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_each_call_builds_a_new_message() -> None:
    # Callers change what they get (a test deletes clientInfo): that must not leak into the next one.
    one = messages.initialize()
    one["params"]["clientInfo"]["name"] = "changed"
    one["params"]["capabilities"]["sampling"] = {}
    assert messages.initialize()["params"] == {
        "protocolVersion": messages.NEWEST_HANDSHAKE_REVISION,
        "capabilities": {},
        "clientInfo": messages.CONSOLE_CLIENT_INFO,
    }
