"""demo-orders: the server most lessons talk to. A tool to look up an order, a resource, a prompt, and
a second tool with an MCP App (an order-status card, lesson 25)."""

from pathlib import Path

from mcp.server.apps import Apps
from mcp.server.mcpserver import MCPServer

from app.demos.stdio import serving
from app.protocol import messages

INFO = {
    "name": "demo-orders",
    "title": "Orders desk",
    "description": (
        "A small shop's order desk: a tool to look up an order, the refund policy, a triage prompt, and an "
        "order-status card (an MCP App)."
    ),
    # What the console's templates offer for this server (a tool, resource and prompt it really has).
    "samples": [
        {"method": "tools/call", "params": {"name": "get_order_status", "arguments": {"order_id": "123456"}}},
        {"method": "resources/read", "params": {"uri": "policy://refunds"}},
        {
            "method": "prompts/get",
            "params": {"name": "triage", "arguments": {"ticket": "My parcel never arrived."}},
        },
    ],
}

ORDER_CARD_URI = "ui://orders/order-card.html"
# Read when the module loads, before the sandbox forks its instances from it.
ORDER_CARD_HTML = (Path(__file__).parent / "apps" / "order-card.html").read_text(encoding="utf-8")
apps = Apps()


@apps.tool(resource_uri=ORDER_CARD_URI, visibility=["model", "app"])
async def show_order(order_id: str) -> dict[str, str]:
    """Show ONE order's status as a card (an MCP App); a plain result for other clients. order_id is 6 digits."""
    return await get_order_status(order_id)


apps.add_html_resource(ORDER_CARD_URI, ORDER_CARD_HTML)

# The extension's tools and resources are taken when the server is built: define them first.
server = MCPServer("demo-orders", extensions=[apps])


# The handlers are `async def`: they answer at once, on the event loop. A plain `def` would run on a
# worker thread (the SDK's rule for sync tools), a hop that cost as much as the rest of the call.
@server.tool()
async def get_order_status(order_id: str) -> dict:
    """Return the status of ONE order. order_id is exactly 6 digits."""
    # The bad-input answer is a normal result, not a protocol error: lesson 5 contrasts the two.
    if not (order_id.isdigit() and len(order_id) == 6):
        return {"error": "order_id must be exactly 6 digits"}
    return {"order_id": order_id, "status": "shipped"}


@server.resource("policy://refunds")
async def refund_policy() -> str:
    """The refund policy text."""
    return "Refunds above 5000 rupees need approval."


@server.prompt()
async def triage(ticket: str) -> str:
    """A prompt template for ticket triage."""
    return f"Classify this ticket as billing, technical or other: {ticket}"


# Requests the fork server sends once before forking, so every instance starts warm.
WARM_UP = [
    *messages.handshake(1, client_info=messages.WARM_UP_CLIENT_INFO),
    messages.request(2, "tools/list"),
    messages.request(3, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}}),
    messages.request(4, "tools/call", {"name": "get_order_status", "arguments": {}}),
    messages.request(5, "resources/list"),
    messages.request(6, "resources/read", {"uri": "policy://refunds"}),
    messages.request(7, "prompts/list"),
    messages.request(8, "prompts/get", {"name": "triage", "arguments": {"ticket": "warm"}}),
    messages.request(9, "ping"),
]


serve = serving(server)  # what the sandbox calls

if __name__ == "__main__":
    serve()
