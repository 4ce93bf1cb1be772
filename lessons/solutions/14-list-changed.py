"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

import asyncio
import sys
from typing import Annotated

from mcp.server.mcpserver import AssistantMessage, Context, MCPServer, Message, UserMessage
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
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


MENU = {"espresso": 2.50, "latte": 3.50, "scone": 3.00}


@mcp.tool()
def order(item: str, quantity: Annotated[int, Field(ge=1)] = 1) -> str:
    """Order something from the menu; answers what it costs."""
    if item not in MENU:
        raise ToolError(f"{item!r} is not on the menu; we have {', '.join(MENU)}.")
    return f"{quantity} x {item}: {quantity * MENU[item]:.2f}"


@mcp.tool()
def daily_special() -> str:
    """Today's special, once the chef has set it."""
    # Nothing the model could change in its arguments would help: a server error.
    raise MCPError(code=INTERNAL_ERROR, message="The chef has not set today's special yet.")


@mcp.resource("cafe://menu", mime_type="text/plain")
def menu() -> str:
    """Everything the café serves, with prices."""
    return "\n".join(f"{item}: {price:.2f}" for item, price in MENU.items())


@mcp.resource("cafe://hours", mime_type="application/json")
def hours() -> dict[str, str]:
    """Opening hours, by day."""
    return {"monday": "8-18", "saturday": "9-14", "sunday": "closed"}


@mcp.resource("cafe://menu/{item}", mime_type="text/plain")
def menu_item(item: str) -> str:
    """One item of the menu, with its price."""
    if item not in MENU:
        raise ResourceNotFoundError(f"{item!r} is not on the menu")
    return f"{item}: {MENU[item]:.2f}"


@mcp.prompt()
def recommend(mood: str) -> str:
    """Ask for a drink that suits a mood."""
    return f"I feel {mood} today. Which drink from the café menu would suit me, and why?"


@mcp.prompt()
def review_order(order: str, budget: str = "10") -> list[Message]:
    """Check an order against a budget, as the start of a conversation."""
    return [
        UserMessage(f"Here is my order: {order}. My budget is {budget}."),
        AssistantMessage("I will add up the prices from the menu and tell you whether it fits."),
    ]


@mcp.tool()
async def brew(cups: Annotated[int, Field(ge=1, le=5)], ctx: Context) -> str:
    """Brew cups of coffee, reporting progress as each one is poured."""
    for cup in range(1, cups + 1):
        await asyncio.sleep(0.1)  # pouring takes a moment
        await ctx.report_progress(cup, cups, f"cup {cup} of {cups} poured")
    return f"{cups} cups are ready."


@mcp.tool()
def clean_machine() -> str:
    """Clean the coffee machine."""
    print("cleaning: rinse, descale, rinse", file=sys.stderr)  # a log line: stderr, never stdout
    return "The machine is clean."


def order_food(dish: str) -> str:
    """Order a dish from the kitchen (only once the kitchen is open)."""
    return f"One {dish}, coming up."


@mcp.tool()
def open_kitchen() -> str:
    """Open the kitchen, which adds the order_food tool."""
    mcp.add_tool(order_food)  # no notification: this server declared "listChanged": false
    return "The kitchen is open: list the tools again to find order_food."


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
