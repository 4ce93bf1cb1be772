"""demo-inventory: a server whose tool list changes while it runs, and which says so.

It declares `tools.listChanged` in initialize; opening or closing the returns desk adds or removes the
`return_item` tool and sends `notifications/tools/list_changed`, after which a client lists tools again.
"""

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from app.demos.stdio import serving

INFO = {
    "name": "demo-inventory",
    "title": "Warehouse inventory",
    "description": (
        "A warehouse whose tool list changes at run time: opening the returns desk adds a tool and "
        "sends notifications/tools/list_changed."
    ),
    # What the console's templates offer for this server.
    "samples": [{"method": "tools/call", "params": {"name": "count_stock", "arguments": {"item": "kettle"}}}],
}

server = MCPServer(
    "demo-inventory",
    instructions="Call open_returns_desk, watch for notifications/tools/list_changed, then list tools again.",
)

# Each sandboxed instance is its own forked process, so this state belongs to one learner's session.
STOCK: dict[str, int] = {"kettle": 12, "teapot": 4, "mug": 40}
RETURN_TOOL = "return_item"
desk_open = False


@server.tool(structured_output=False)
def count_stock(item: str) -> str:
    """How many of an item are on the shelves (kettle, teapot or mug)."""
    if item not in STOCK:
        raise ToolError(f"Unknown item {item!r}; this warehouse stocks: {', '.join(sorted(STOCK))}.")
    return f"{STOCK[item]} {item}(s) in stock."


def return_item(item: str, quantity: int = 1) -> str:
    """Put returned items back on the shelves. Exists only while the returns desk is open."""
    if item not in STOCK:
        raise ToolError(f"Unknown item {item!r}; this warehouse stocks: {', '.join(sorted(STOCK))}.")
    if not 1 <= quantity <= 100:
        raise ToolError("quantity must be between 1 and 100.")
    STOCK[item] += quantity
    return f"Took back {quantity} {item}(s); {STOCK[item]} in stock now."


async def _announce_change(ctx: Context) -> str:
    """Tell the client the tool list changed, in the way its revision allows; say how, for the learner."""
    # 2026-07-28 delivers change notifications only on a subscriptions/listen stream (the SDK's bus);
    # the handshake revisions get a plain notification on the connection.
    await ctx.notify_tools_changed()
    if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return (
            "In 2026-07-28 the change is announced only on subscriptions/listen streams that asked for "
            "toolsListChanged; nothing is sent outside such a stream."
        )
    await ctx.session.send_tool_list_changed()
    return "The server sent notifications/tools/list_changed: list the tools again to see the change."


@server.tool(structured_output=False)
async def open_returns_desk(ctx: Context) -> str:
    """Open the returns desk: adds the return_item tool and tells the client the tool list changed."""
    global desk_open
    if desk_open:
        return "The returns desk is already open; the tool list did not change, so no notification was sent."
    server.add_tool(return_item, name=RETURN_TOOL, structured_output=False)
    desk_open = True
    return f"The returns desk is open: the tool return_item was added. {await _announce_change(ctx)}"


@server.tool(structured_output=False)
async def close_returns_desk(ctx: Context) -> str:
    """Close the returns desk: removes the return_item tool and tells the client the tool list changed."""
    global desk_open
    if not desk_open:
        return (
            "The returns desk is already closed; the tool list did not change, so no notification was sent."
        )
    server.remove_tool(RETURN_TOOL)
    desk_open = False
    return f"The returns desk is closed: the tool return_item was removed. {await _announce_change(ctx)}"


serve = serving(server, NotificationOptions(tools_changed=True))  # what the sandbox calls

if __name__ == "__main__":
    serve()
