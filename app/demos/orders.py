"""demo-orders: one tool, one resource and one prompt, the server most lessons talk to."""

from mcp.server.mcpserver import MCPServer

INFO = {
    "name": "demo-orders",
    "title": "Orders desk",
    "description": "A small shop's order desk: a tool to look up an order, the refund policy, a triage prompt.",
}

server = MCPServer("demo-orders")


@server.tool()
def get_order_status(order_id: str) -> dict:
    """Return the status of ONE order. order_id is exactly 6 digits."""
    # The bad-input answer is a normal result, not a protocol error: lesson 5 contrasts the two.
    if not (order_id.isdigit() and len(order_id) == 6):
        return {"error": "order_id must be exactly 6 digits"}
    return {"order_id": order_id, "status": "shipped"}


@server.resource("policy://refunds")
def refund_policy() -> str:
    """The refund policy text."""
    return "Refunds above 5000 rupees need approval."


@server.prompt()
def triage(ticket: str) -> str:
    """A prompt template for ticket triage."""
    return f"Classify this ticket as billing, technical or other: {ticket}"


# Requests the fork server sends once before forking, so every instance starts warm.
WARM_UP = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "warm-up", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_order_status", "arguments": {"order_id": "123456"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "get_order_status", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 5, "method": "resources/list"},
    {"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "policy://refunds"}},
    {"jsonrpc": "2.0", "id": 7, "method": "prompts/list"},
    {"jsonrpc": "2.0", "id": 8, "method": "prompts/get", "params": {"name": "triage", "arguments": {"ticket": "warm"}}},
    {"jsonrpc": "2.0", "id": 9, "method": "ping"},
]  # fmt: skip


def serve() -> None:
    """Serve MCP on this process's stdin and stdout (the sandbox calls this)."""
    server.run("stdio")


if __name__ == "__main__":
    serve()
