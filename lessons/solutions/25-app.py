"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

import asyncio
import sys
import uuid
from typing import Annotated

from mcp.server.apps import Apps
from mcp.server.mcpserver import AssistantMessage, Context, MCPServer, Message, UserMessage
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import BaseModel, Field

# Lesson 25: an app. The extension's tools and resources are taken when the server is built, so
# they come before `mcp = MCPServer(...)`, which names the extension.
apps = Apps()
MENU_APP_URI = "ui://cafe/menu.html"
MENU_APP_HTML = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>Café menu</title>
<style>output { display: block; margin: 8px 0; } #menu { white-space: pre; }</style>
</head>
<body>
<output id="menu">Waiting for the menu...</output>
<button id="order">Order a latte</button>
<output id="said"></output>
<script>
let nextId = 1;
const waiting = new Map();
function ask(method, params) {
  const id = nextId++;
  window.parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
  return new Promise((resolve, reject) => waiting.set(id, {resolve, reject}));
}
function tell(method, params) {
  window.parent.postMessage({jsonrpc: "2.0", method, params}, "*");
}
function resized() {
  const page = document.documentElement;
  tell("ui/notifications/size-changed", {width: page.scrollWidth, height: page.scrollHeight});
}
function textOf(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join(" ");
}
window.addEventListener("message", (event) => {
  const m = event.data;
  if (event.source !== window.parent || !m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined && waiting.has(m.id)) {
    const {resolve, reject} = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) reject(new Error(m.error.message)); else resolve(m.result);
  } else if (m.method === "ui/notifications/tool-result") {
    document.getElementById("menu").textContent = textOf(m.params);
    resized();
  } else if (m.method !== undefined && m.id !== undefined) {
    window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");  // ping, teardown
  }
});
document.getElementById("order").onclick = async () => {
  const said = document.getElementById("said");
  try {
    said.textContent = textOf(await ask("tools/call", {name: "order", arguments: {item: "latte"}}));
  } catch (error) {
    said.textContent = "Not ordered: " + error.message;
  }
  resized();
};
ask("ui/initialize", {protocolVersion: "2026-01-26", appInfo: {name: "cafe-menu", version: "1.0.0"},
                      appCapabilities: {}})
  .then(() => tell("ui/notifications/initialized", {}));
</script>
</body>
</html>
"""


@apps.tool(resource_uri=MENU_APP_URI, visibility=["model", "app"])
def show_menu() -> str:
    """Show the café's menu, with prices (hosts with MCP Apps show it as a card with an order button)."""
    return "\n".join(f"{item}: {price:.2f}" for item, price in MENU.items())


apps.add_html_resource(MENU_APP_URI, MENU_APP_HTML, name="Café menu card")

mcp = MCPServer(
    "my-server",
    version="1.0.0",
    instructions="A small café: its menu, bills and coffee machine. Open a tab before adding to it.",
    extensions=[apps],
)


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


TABS: dict[str, list[str]] = {}  # tab_id -> the items on it; gone when the server stops


class TabOpened(BaseModel):
    tab_id: str = Field(description="Pass this to add_to_tab")


@mcp.tool()
def open_tab() -> TabOpened:
    """Open a tab to order on; tabs are forgotten when the server stops."""
    tab_id = uuid.uuid4().hex
    TABS[tab_id] = []
    return TabOpened(tab_id=tab_id)


@mcp.tool()
def add_to_tab(tab_id: str, item: str) -> str:
    """Add a menu item to a tab opened with open_tab; answers the tab's total."""
    if tab_id not in TABS:
        raise ToolError(f"No open tab {tab_id!r}: call open_tab and use the tab_id it returns.")
    if item not in MENU:
        raise ToolError(f"{item!r} is not on the menu; we have {', '.join(MENU)}.")
    TABS[tab_id].append(item)
    return f"Tab total: {sum(MENU[i] for i in TABS[tab_id]):.2f}"


class TableDetails(BaseModel):
    people: int = Field(ge=1, le=8, description="How many people")
    outside: bool = Field(default=False, description="A table on the terrace")


@mcp.tool()
async def book_table(day: str, ctx: Context) -> str:
    """Book a table for a day; asks the user how many people are coming and where they want to sit."""
    if ctx.client_capabilities is None or ctx.client_capabilities.elicitation is None:
        raise ToolError("This client cannot ask the user questions (it declared no elicitation).")
    answer = await ctx.elicit(f"A table for {day}: how many people, and inside or outside?", TableDetails)
    if answer.action == "accept":
        where = "outside" if answer.data.outside else "inside"
        return f"A table for {answer.data.people} on {day}, {where}."
    if answer.action == "decline":
        return "No table booked: you said no."
    return "No table booked yet: ask again when you are ready."  # cancel: the form was dismissed


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
