"""Tests for the notes server of lesson 24. They pass on 24-server.py and fail on every 24-broken-*.py."""

import pytest
from jsonschema import Draft202012Validator
from mcp import Client, MCPError
from server import mcp  # the guard at the end of server.py keeps the import from starting the server


@pytest.fixture
async def client():
    # mode="legacy": the initialize handshake, then a 2025-11-25 session, as in the playground's console.
    async with Client(mcp, mode="legacy") as connected:
        yield connected


async def listed(client, name):
    """The tool called `name` as tools/list describes it."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert name in tools, f"{name!r} is not listed; the server lists {sorted(tools)}"
    return tools[name]


# Listing and schemas


@pytest.mark.anyio
async def test_the_three_tools_are_listed_with_descriptions(client):
    tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} == {"add", "read_note", "note_stats"}
    for tool in tools:
        assert tool.description, f"{tool.name} has no description for the model"


@pytest.mark.anyio
async def test_add_requires_two_integers(client):
    schema = (await listed(client, "add")).input_schema
    assert sorted(schema["required"]) == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"
    assert schema["properties"]["b"]["type"] == "integer"


@pytest.mark.anyio
async def test_read_note_requires_a_title(client):
    schema = (await listed(client, "read_note")).input_schema
    assert schema["required"] == ["title"]
    assert schema["properties"]["title"]["type"] == "string"


# Calls


@pytest.mark.anyio
@pytest.mark.parametrize(("a", "b", "total"), [(2, 3, 5), (-4, 4, 0), (7, -10, -3)])
async def test_add_adds(client, a, b, total):
    result = await client.call_tool("add", {"a": a, "b": b})
    assert not result.is_error, result.content
    assert result.structured_content == {"result": total}
    assert result.content[0].text == str(total)


@pytest.mark.anyio
async def test_read_note_answers_the_note(client):
    result = await client.call_tool("read_note", {"title": "shopping"})
    assert not result.is_error, result.content
    assert result.content[0].text == "milk, eggs and bread"


# Errors


@pytest.mark.anyio
async def test_a_missing_note_is_a_tool_execution_error(client):
    result = await client.call_tool("read_note", {"title": "holidays"})
    assert result.is_error
    assert "holidays" in result.content[0].text  # the model can see which title failed


@pytest.mark.anyio
async def test_add_without_b_is_refused(client):
    result = await client.call_tool("add", {"a": 2})
    assert result.is_error


@pytest.mark.anyio
async def test_a_wrong_type_is_refused(client):
    result = await client.call_tool("add", {"a": "two", "b": 3})
    assert result.is_error


@pytest.mark.anyio
async def test_an_unknown_tool_fails(client):
    # The spec lists an unknown tool among the protocol errors (JSON-RPC error, MCPError here);
    # this SDK answers with an isError result. The test accepts either and rejects a success.
    try:
        result = await client.call_tool("delete_all_notes", {})
    except MCPError:
        return
    assert result.is_error


# Structured output


@pytest.mark.anyio
async def test_note_stats_publishes_its_output_schema(client):
    schema = (await listed(client, "note_stats")).output_schema
    assert schema is not None, "note_stats declares no outputSchema"
    assert set(schema["required"]) == {"title", "words", "characters"}
    assert schema["properties"]["words"]["type"] == "integer"
    assert schema["properties"]["characters"]["type"] == "integer"


@pytest.mark.anyio
async def test_note_stats_answers_with_structured_content(client):
    tool = await listed(client, "note_stats")
    result = await client.call_tool("note_stats", {"title": "shopping"})
    assert not result.is_error, result.content
    Draft202012Validator(tool.output_schema).validate(result.structured_content)
    assert result.structured_content == {"title": "shopping", "words": 4, "characters": 20}


@pytest.mark.anyio
async def test_note_stats_of_a_missing_note_is_an_error(client):
    result = await client.call_tool("note_stats", {"title": "holidays"})
    assert result.is_error
    assert result.structured_content is None
