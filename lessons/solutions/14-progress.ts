// My first MCP server. Save (Ctrl+S), then talk to it from the console
// beside this editor.

import { completable } from "@modelcontextprotocol/sdk/server/completable.js";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
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
    description: "Convert a temperature from degrees Celsius to degrees Fahrenheit, rounded to `digits` decimals.",
    inputSchema: {
      celsius: z.number().describe("Temperature in degrees Celsius"),
      digits: z.number().int().default(1),
    },
  },
  async ({ celsius, digits }) => {
    const fahrenheit = Number((celsius * 9 / 5 + 32).toFixed(digits)); // rounded to `digits` decimals
    return { content: [{ type: "text", text: String(fahrenheit) }] };
  },
);

server.registerTool(
  "count_words",
  {
    description: "Count the words in a text (anything between spaces is a word).",
    inputSchema: { text: z.string() },
    outputSchema: { result: z.number().int() },
  },
  async ({ text }) => {
    const result = text.split(/\s+/).filter((word) => word !== "").length;
    return { content: [{ type: "text", text: String(result) }], structuredContent: { result } };
  },
);

// What split_bill returns: its output schema.
const billShare = {
  each: z.number().describe("What each person pays, tip included"),
  people: z.number().int(),
  tip: z.number().describe("The whole tip, in the bill's currency"),
};

server.registerTool(
  "split_bill",
  {
    description: "Split a bill evenly, with an optional tip.",
    inputSchema: {
      total: z.number().gt(0).describe("The amount of the bill, before the tip"),
      people: z.number().int().min(1).max(20).describe("How many people share it"),
      tip_percent: z.number().min(0).max(30).default(0),
    },
    outputSchema: billShare,
  },
  async ({ total, people, tip_percent }) => {
    const tip = Number((total * tip_percent / 100).toFixed(2));
    const share = { each: Number(((total + tip) / people).toFixed(2)), people, tip };
    return {
      content: [{ type: "text", text: JSON.stringify(share, null, 2) }],
      structuredContent: share,
    };
  },
);

const MENU = new Map([
  ["espresso", 2.5],
  ["latte", 3.5],
  ["scone", 3.0],
]);

server.registerTool(
  "order",
  {
    description: "Order something from the menu; answers what it costs.",
    inputSchema: { item: z.string(), quantity: z.number().int().min(1).default(1) },
  },
  async ({ item, quantity }) => {
    const price = MENU.get(item);
    if (price === undefined) {
      const text = `"${item}" is not on the menu; we have ${[...MENU.keys()].join(", ")}.`;
      return { content: [{ type: "text", text }], isError: true };
    }
    return { content: [{ type: "text", text: `${quantity} x ${item}: ${(quantity * price).toFixed(2)}` }] };
  },
);

server.registerTool(
  "daily_special",
  { description: "Today's special, once the chef has set it." },
  async () => {
    // Nothing the model could change in its arguments would help: a server error.
    // (McpServer 1.32 still answers it as a result with `isError: true`, not as a JSON-RPC error.)
    throw new McpError(ErrorCode.InternalError, "The chef has not set today's special yet.");
  },
);

server.registerResource(
  "menu",
  "cafe://menu",
  { description: "Everything the café serves, with prices.", mimeType: "text/plain" },
  async (uri) => ({
    contents: [
      {
        uri: uri.href,
        mimeType: "text/plain",
        text: [...MENU].map(([item, price]) => `${item}: ${price.toFixed(2)}`).join("\n"),
      },
    ],
  }),
);

server.registerResource(
  "hours",
  "cafe://hours",
  { description: "Opening hours, by day.", mimeType: "application/json" },
  async (uri) => ({
    contents: [
      {
        uri: uri.href,
        mimeType: "application/json",
        text: JSON.stringify({ monday: "8-18", saturday: "9-14", sunday: "closed" }, null, 2),
      },
    ],
  }),
);

server.registerResource(
  "menu_item",
  new ResourceTemplate("cafe://menu/{item}", {
    list: undefined,
    // Suggest menu items for `item` as the user types.
    complete: { item: (value) => [...MENU.keys()].filter((item) => item.startsWith(value.toLowerCase())) },
  }),
  { description: "One item of the menu, with its price.", mimeType: "text/plain" },
  async (uri, { item }) => {
    const price = typeof item === "string" ? MENU.get(item) : undefined;
    if (price === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `"${item}" is not on the menu`, { uri: uri.href });
    }
    return { contents: [{ uri: uri.href, mimeType: "text/plain", text: `${item}: ${price.toFixed(2)}` }] };
  },
);

const MOODS = ["cheerful", "curious", "sleepy", "stressed", "thirsty"];

server.registerPrompt(
  "recommend",
  {
    description: "Ask for a drink that suits a mood.",
    // Suggest moods for `mood` as the user types.
    argsSchema: { mood: completable(z.string(), (value) => MOODS.filter((mood) => mood.startsWith(value.toLowerCase()))) },
  },
  ({ mood }) => ({
    messages: [
      {
        role: "user",
        content: { type: "text", text: `I feel ${mood} today. Which drink from the café menu would suit me, and why?` },
      },
    ],
  }),
);

server.registerPrompt(
  "review_order",
  {
    description: "Check an order against a budget, as the start of a conversation.",
    argsSchema: { order: z.string(), budget: z.string().optional() },
  },
  ({ order, budget = "10" }) => ({
    messages: [
      { role: "user", content: { type: "text", text: `Here is my order: ${order}. My budget is ${budget}.` } },
      {
        role: "assistant",
        content: { type: "text", text: "I will add up the prices from the menu and tell you whether it fits." },
      },
    ],
  }),
);

server.registerTool(
  "brew",
  {
    description: "Brew cups of coffee, reporting progress as each one is poured.",
    inputSchema: { cups: z.number().int().min(1).max(5) },
  },
  async ({ cups }, extra) => {
    const progressToken = extra._meta?.progressToken; // none: the client does not follow this call
    for (let cup = 1; cup <= cups; cup++) {
      await new Promise((resolve) => setTimeout(resolve, 100)); // pouring takes a moment
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress: cup, total: cups, message: `cup ${cup} of ${cups} poured` },
        });
      }
    }
    return { content: [{ type: "text", text: `${cups} cups are ready.` }] };
  },
);

// Serve MCP on stdin and stdout, as a host that starts this file expects.
await server.connect(new StdioServerTransport());
