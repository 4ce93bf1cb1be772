"""Serve an MCPServer on stdio with capabilities that MCPServer.run() cannot declare.

SDK 2.3's `MCPServer.run("stdio")` builds its initialize options without `NotificationOptions`, so
`listChanged` is always false in the handshake era. A demo that sends list-changed notifications must
declare them first (a server may only use what it declared), so it serves through the low-level server.
"""

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server


def serve_stdio(server: MCPServer, notifications: NotificationOptions) -> None:
    """Serve `server` on this process's stdin and stdout, declaring `notifications` in initialize."""
    lowlevel = server._lowlevel_server  # no public route to the initialize options in SDK 2.3
    options = lowlevel.create_initialization_options(notifications)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, options)

    anyio.run(main)
