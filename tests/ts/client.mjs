// Drives an MCP Playground endpoint with the official TypeScript SDK client, as an outside client
// would, and prints one JSON object of what it saw (tests/web/test_endpoints_ts.py reads it).
// Usage: node client.mjs <endpoint url> <demo-orders|demo-assistant>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, server] = process.argv.slice(2);
const client = new Client({ name: "playground-ts-test", version: "1.0.0" }, { capabilities: { sampling: {} } });
const asked = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.push(request.params.messages[0].content.text);
  return { role: "assistant", content: { type: "text", text: "Walk the old town." }, model: "ts-test-model" };
});

const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const out = { sessionId: transport.sessionId, version: transport.protocolVersion, server: client.getServerVersion() };
if (server === "demo-assistant") {
  const call = await client.callTool({ name: "suggest_trip", arguments: { city: "Lisbon" } });
  Object.assign(out, { call: call.content[0].text, asked });
} else {
  out.tools = (await client.listTools()).tools.map((tool) => tool.name);
  out.call = (await client.callTool({ name: "get_order_status", arguments: { order_id: "481516" } })).content[0].text;
  out.resource = (await client.readResource({ uri: "policy://refunds" })).contents[0].text;
  out.prompt = (await client.getPrompt({ name: "triage", arguments: { ticket: "warm" } })).messages.length;
  out.ping = await client.ping();
}
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
