"""What lessons 12 and 24 say the Python SDK answers, asked of the installed SDK: lesson 24's notes
server as the lesson prints it, in process, through the SDK's own `Client`, one test for each row
of the lesson's table of failures. A new SDK that answers otherwise fails here before a learner
reads a claim that no longer holds."""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import ValidationError

from app.config import PROJECT_ROOT

LESSON = PROJECT_ROOT / "lessons" / "24-testing-your-server.md"


def notes_server() -> Any:
    """The lesson's `server.py`, run as a test imports it (not as `__main__`), with two tools more
    for the rows the notes server has no tool for."""
    text = LESSON.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    source = next(block for block in blocks if block.startswith('"""A small notes server'))
    namespace: dict[str, Any] = {"__name__": "server"}
    exec(compile(source, str(LESSON), "exec"), namespace)  # noqa: S102
    mcp = namespace["mcp"]

    @mcp.tool()
    def crash() -> str:
        """A tool with a bug."""
        raise RuntimeError("the database password is hunter2")

    @mcp.tool()
    def daily_special() -> str:
        """Lesson 12's tool that fails with a protocol error."""
        raise MCPError(code=INTERNAL_ERROR, message="The chef has not set today's special yet.")

    return mcp


async def call(name: str, arguments: Any) -> Any:
    """One call over a fresh in-memory connection. (Not an async fixture: the client's task group
    must end in the task that began it, and pytest-asyncio tears fixtures down in another.)"""
    async with Client(notes_server(), mode="legacy") as client:
        return await client.call_tool(name, arguments)


def text_of(result: Any) -> str:
    return result.content[0].text


async def test_a_tool_error_is_a_result_whose_text_is_the_prefix_and_the_message() -> None:
    result = await call("read_note", {"title": "holidays"})
    assert result.is_error
    assert text_of(result).startswith("Error executing tool read_note: There is no note titled 'holidays'")


async def test_any_other_exception_is_a_result_that_names_only_the_tool() -> None:
    result = await call("crash", {})
    assert result.is_error
    assert text_of(result) == "Error executing tool crash"


async def test_a_close_match_is_converted_and_the_rest_refused_naming_the_argument() -> None:
    converted = await call("add", {"a": "3", "b": 4})
    assert not converted.is_error, converted.content
    assert converted.structured_content == {"result": 7}
    refused = await call("add", {"a": "x", "b": 4})
    assert refused.is_error
    assert re.search(r"\ba\b", text_of(refused)), text_of(refused)


async def test_a_missing_argument_is_a_result_naming_it() -> None:
    result = await call("add", {"a": 1})
    assert result.is_error
    assert re.search(r"\bb\b", text_of(result)), text_of(result)


async def test_an_argument_the_tool_does_not_take_is_dropped() -> None:
    result = await call("add", {"a": 2, "b": 3, "c": 100})
    assert not result.is_error, result.content
    assert result.structured_content == {"result": 5}


async def test_mcp_error_in_a_tool_is_a_json_rpc_error() -> None:
    async with Client(notes_server(), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("daily_special", {})
    assert raised.value.code == INTERNAL_ERROR
    assert "today's special" in str(raised.value)


async def test_an_unknown_tool_is_a_result_not_an_error() -> None:
    result = await call("delete_all_notes", {})
    assert result.is_error
    assert text_of(result).startswith("Unknown tool: delete_all_notes")


async def test_arguments_as_a_list_never_leave_the_client() -> None:
    async with Client(notes_server(), mode="legacy") as client:
        with pytest.raises(ValidationError):
            await client.call_tool("add", [2, 3])  # type: ignore[arg-type]
