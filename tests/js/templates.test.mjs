// The console's templates, built from the samples /api/servers serves (INFO["samples"] in app/demos).
import assert from "node:assert/strict";
import { test } from "node:test";

import { findTemplate, loadServers, samplesFrom, templateGroups } from "../../static/console/templates.js";

const SERVERS = [
  {
    name: "demo-orders",
    samples: [
      { method: "tools/call", params: { name: "get_order_status", arguments: { order_id: "123456" } } },
      { method: "resources/read", params: { uri: "policy://refunds" } },
      { method: "prompts/get", params: { name: "triage", arguments: { ticket: "late" } } },
    ],
  },
  { name: "my-server", samples: [{ method: "tools/list" }, { method: "resources/list" }, { method: "prompts/list" }] },
];

test("a server's own tool, resource and prompt fill the templates", () => {
  const groups = templateGroups("demo-orders", "2025-11-25", SERVERS);
  const call = findTemplate(groups, "tools-call");
  assert.equal(call.label, "tools/call (get_order_status)");
  assert.deepEqual(call.build(4), {
    jsonrpc: "2.0",
    id: 4,
    method: "tools/call",
    params: { name: "get_order_status", arguments: { order_id: "123456" } },
  });
  assert.deepEqual(findTemplate(groups, "resources-read").build(5).params, { uri: "policy://refunds" });
  assert.deepEqual(findTemplate(groups, "prompts-get").build(6).params, {
    name: "triage",
    arguments: { ticket: "late" },
  });
});

test("a server without a tool sample, or one the page does not know, gets placeholders", () => {
  for (const server of ["my-server", "no-such-server"]) {
    const groups = templateGroups(server, "2025-11-25", SERVERS);
    assert.equal(findTemplate(groups, "tools-call").build(1).params.name, "TOOL_NAME");
    assert.equal(findTemplate(groups, "resources-read").build(1).params.uri, "RESOURCE_URI");
    assert.ok(findTemplate(groups, "tools-list"));
  }
  assert.deepEqual(samplesFrom(undefined).tool, ["TOOL_NAME", {}]);
});

test("in the stateless revision every request carries the envelope", () => {
  const groups = templateGroups("demo-orders", "2026-07-28", SERVERS);
  const call = findTemplate(groups, "tools-call").build(2);
  assert.equal(call.params.name, "get_order_status");
  assert.equal(call.params._meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
});

test("without a page (no fetch answer, no stored copy) the module still loads, with no servers", () => {
  // Node has fetch but no server at a relative URL and no localStorage: the import above survived.
  const groups = templateGroups("demo-orders", "2025-11-25");
  assert.equal(findTemplate(groups, "tools-call").build(1).params.name, "TOOL_NAME");
});

test("the last answer of /api/servers is kept and used when the app cannot answer", async () => {
  const stored = new Map();
  globalThis.localStorage = { getItem: (k) => stored.get(k) ?? null, setItem: (k, v) => stored.set(k, v) };
  const realFetch = globalThis.fetch;
  try {
    globalThis.fetch = async (url) => ({ ok: true, json: async () => (url === "/api/servers" ? SERVERS : null) });
    assert.deepEqual(await loadServers(), SERVERS);
    globalThis.fetch = async () => {
      throw new TypeError("offline");
    };
    assert.deepEqual(await loadServers(), SERVERS);
    globalThis.fetch = async () => ({ ok: false, status: 503 });
    assert.deepEqual(await loadServers(), SERVERS);
    stored.clear();
    assert.deepEqual(await loadServers(), []);
  } finally {
    globalThis.fetch = realFetch;
    delete globalThis.localStorage;
  }
});

test("the console declares MCP Apps, in initialize and in each 2026-07-28 request", () => {
  const apps = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
  for (const revision of ["2024-11-05", "2025-06-18", "2025-11-25"]) {
    const groups = templateGroups("demo-orders", revision, SERVERS);
    const init = groups.flatMap((g) => g.items).find((item) => item.build(1).method === "initialize");
    assert.deepEqual(init.build(1).params.capabilities.extensions, apps, revision);
  }
  const call = findTemplate(templateGroups("demo-orders", "2026-07-28", SERVERS), "tools-call").build(3);
  assert.deepEqual(call.params._meta["io.modelcontextprotocol/clientCapabilities"], { extensions: apps });
});
