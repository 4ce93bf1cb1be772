"""demo-orders as a real subprocess on raw stdio: the seed 003 session and version negotiation."""

from __future__ import annotations

import pytest

from app.protocol import messages
from tests.support import seed003
from tests.support.stdio import StdioServer

HANDSHAKE_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def init_params(version: str | None) -> dict:
    """initialize's params asking for `version` (None: without protocolVersion)."""
    params = messages.initialize(client_info={"name": "t", "version": "1"})["params"]
    if version is None:
        del params["protocolVersion"]
    else:
        params["protocolVersion"] = version
    return params


def test_seed_003_transcript_line_for_line() -> None:
    with StdioServer() as server:
        assert seed003.drive(server.call, server.send) == seed003.EXPECTED_LINES


@pytest.fixture(scope="module")
def server():
    with StdioServer() as s:
        yield s


@pytest.mark.parametrize("version", HANDSHAKE_REVISIONS)
def test_supported_revision_is_echoed(server: StdioServer, version: str) -> None:
    reply = server.call(1, "initialize", init_params(version))
    assert reply["result"]["protocolVersion"] == version


@pytest.mark.parametrize("version", ["1999-01-01", "2024-10-07"])
def test_unsupported_revision_gets_a_counter_offer_not_an_error(server: StdioServer, version: str) -> None:
    reply = server.call(2, "initialize", init_params(version))
    assert "error" not in reply
    assert reply["result"]["protocolVersion"] == "2025-11-25"


def test_missing_protocol_version_is_an_invalid_params_error(server: StdioServer) -> None:
    reply = server.call(3, "initialize", init_params(None))
    assert reply["error"]["code"] == -32602


def test_ping_before_initialize_works_and_tools_list_does_not() -> None:
    with StdioServer() as fresh:
        assert fresh.call(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert fresh.call(2, "tools/list")["error"]["code"] == -32602
