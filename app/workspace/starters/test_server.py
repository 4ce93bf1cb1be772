"""Tests for my server.py: "Save and run the tests" runs pytest on this file beside your saved server.py."""

import pytest
from mcp import Client
from server import mcp  # your MCPServer; the `if __name__ == "__main__"` guard keeps it from running


@pytest.mark.anyio
async def test_the_server_answers() -> None:
    # The SDK's client, connected to your server in memory; "legacy": the initialize handshake first.
    async with Client(mcp, mode="legacy") as client:
        tools = await client.list_tools()
    # Lesson 24 starts here: say what your server must list, answer and refuse.
    assert tools.tools is not None
