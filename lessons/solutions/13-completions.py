"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

from typing import Annotated

from mcp.server.mcpserver import AssistantMessage, MCPServer, Message, UserMessage
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)
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


MOODS = ["cheerful", "curious", "sleepy", "stressed", "thirsty"]


@mcp.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    """Suggest menu items for `cafe://menu/{item}` and moods for the `recommend` prompt."""
    if isinstance(ref, ResourceTemplateReference) and ref.uri == "cafe://menu/{item}":
        options = list(MENU)  # the template's one variable, `item`
    elif isinstance(ref, PromptReference) and ref.name == "recommend":
        options = MOODS  # the prompt's one argument, `mood`
    else:
        return None  # nothing to suggest: the SDK answers with an empty list of values
    matches = [option for option in options if option.startswith(argument.value.lower())]
    return Completion(values=matches[:100], total=len(matches), has_more=len(matches) > 100)


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
