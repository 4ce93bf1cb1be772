"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

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


class BillShare(BaseModel):
    each: float = Field(description="What each person pays, tip included")
    people: int
    tip: float = Field(description="The whole tip, in the bill's currency")


@mcp.tool()
def split_bill(
    total: Annotated[float, Field(gt=0, description="The amount of the bill, before the tip")],
    people: Annotated[int, Field(ge=1, le=20, description="How many people share it")],
    tip_percent: Annotated[float, Field(ge=0, le=30)] = 0,
) -> BillShare:
    """Split a bill evenly, with an optional tip."""
    tip = round(total * tip_percent / 100, 2)
    return BillShare(each=round((total + tip) / people, 2), people=people, tip=tip)


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
