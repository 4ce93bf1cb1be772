// My first MCP server. Save (Ctrl+S), then talk to it from the console
// beside this editor.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "my-server", version: "0.1.0" });

server.registerTool(
  "add",
  {
    description: "Add two whole numbers.",
    inputSchema: { a: z.number().int(), b: z.number().int() },
  },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);

server.registerTool(
  "to_fahrenheit",
  {
    description: "Convert a temperature from degrees Celsius to degrees Fahrenheit.",
    inputSchema: { celsius: z.number().describe("Temperature in degrees Celsius") },
  },
  async ({ celsius }) => ({ content: [{ type: "text", text: String(celsius * 9 / 5 + 32) }] }),
);

// Serve MCP on stdin and stdout, as a host that starts this file expects.
await server.connect(new StdioServerTransport());
