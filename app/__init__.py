"""MCP Playground: learn the Model Context Protocol by talking to real, sandboxed MCP servers."""
