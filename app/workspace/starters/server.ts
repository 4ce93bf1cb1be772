// My first MCP server. Save (Ctrl+S), then talk to it from the console
// beside this editor.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "my-server", version: "0.1.0" });


// Lesson 11 starts here: add your first tool below,
// with server.registerTool().


// Serve MCP on stdin and stdout, as a host that starts this file expects.
await server.connect(new StdioServerTransport());
