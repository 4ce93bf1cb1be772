"""My first MCP server. Save (Ctrl+S), then talk to it from the console beside this editor."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("my-server")


# Lesson 11 starts here: add your first tool below, with @mcp.tool().


if __name__ == "__main__":
    mcp.run()  # serve MCP on stdin and stdout, as `python server.py` would
