"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("my-server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
