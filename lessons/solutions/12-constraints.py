"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

mcp = MCPServer("my-server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@mcp.tool()
def to_fahrenheit(
    celsius: Annotated[float, Field(description="Temperature in degrees Celsius")],
    digits: int = 1,
) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit, rounded to `digits` decimals."""
    return round(celsius * 9 / 5 + 32, digits)


@mcp.tool()
def count_words(text: str) -> int:
    """Count the words in a text (anything between spaces is a word)."""
    return len(text.split())


@mcp.tool()
def split_bill(
    total: Annotated[float, Field(gt=0, description="The amount of the bill")],
    people: Annotated[int, Field(ge=1, le=20, description="How many people share it")],
) -> float:
    """Split a bill evenly; answers what each person pays."""
    return round(total / people, 2)


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
