// Message templates for the editor. Each fills in the next unused id; none is sent until the learner sends it.

export const HANDSHAKE_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
export const STATELESS_REVISION = "2026-07-28";

// A tool, resource and prompt each demo server really has, so the templates work as they are.
const SAMPLES = {
  "demo-orders": { tool: ["get_order_status", { order_id: "123456" }], uri: "policy://refunds",
    prompt: ["triage", { ticket: "My parcel never arrived." }] },
  "demo-assistant": { tool: ["suggest_trip", { city: "Pune" }] },
  "demo-inventory": { tool: ["count_stock", { item: "kettle" }] },
  "demo-monitor": { tool: ["set_temperature", { celsius: 24 }], uri: "sensor://greenhouse/temperature" },
  "demo-legacy": { tool: ["get_forecast", { city: "Oslo" }] },
  "demo-stateless": { tool: ["convert", { amount: 10, from_currency: "EUR", to_currency: "INR" }] },
  "demo-flaky": { tool: ["slow_reply", { seconds: 3 }] },
};
const FALLBACK = { tool: ["TOOL_NAME", {}], uri: "RESOURCE_URI", prompt: ["PROMPT_NAME", {}] };

function initialize(revision) {
  return {
    method: "initialize",
    params: {
      protocolVersion: revision,
      capabilities: { roots: { listChanged: true }, sampling: {}, ...(revision >= "2025-06-18" ? { elicitation: {} } : {}) },
      clientInfo: { name: "playground-console", version: "1.0.0" },
    },
  };
}

/** The template list: [{group, items: [{key, label, build(id, context) -> message}]}]; `context.waiting`
 * is the id of the newest request still waiting for its reply, when there is one. */
export function templateGroups(server, revision) {
  const s = { ...FALLBACK, ...(SAMPLES[server] || {}) };
  const stateless = revision === STATELESS_REVISION;
  const meta = { "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION, "io.modelcontextprotocol/clientCapabilities": {} };
  const request = (method, params) => (id) => {
    const full = stateless ? { ...(params || {}), _meta: meta } : params;
    return { jsonrpc: "2.0", id, method, ...(full ? { params: full } : {}) };
  };
  const notification = (method, params) => () => ({ jsonrpc: "2.0", method, ...(params ? { params } : {}) });
  return [
    { group: "Handshake", items: [
      ...HANDSHAKE_REVISIONS.map((rev) => ({ key: `initialize-${rev}`, label: `initialize (${rev})`,
        build: (id) => ({ jsonrpc: "2.0", id, ...initialize(rev) }) })),
      { key: "initialized", label: "notifications/initialized", build: notification("notifications/initialized") },
      { key: "discover", label: `server/discover (${STATELESS_REVISION})`,
        build: (id) => ({ jsonrpc: "2.0", id, method: "server/discover", params: { _meta: meta } }) },
    ] },
    { group: "Any time", items: [
      { key: "ping", label: "ping", build: request("ping") },
      // Cancels the newest request still waiting (the console passes its id), else names id 1 to edit.
      { key: "cancelled", label: "notifications/cancelled",
        build: (_id, context = {}) => notification("notifications/cancelled",
          { requestId: context.waiting ?? 1, reason: "took too long" })() },
    ] },
    { group: "Tools", items: [
      { key: "tools-list", label: "tools/list", build: request("tools/list") },
      { key: "tools-call", label: `tools/call (${s.tool[0]})`, build: request("tools/call", { name: s.tool[0], arguments: s.tool[1] }) },
    ] },
    { group: "Resources", items: [
      { key: "resources-list", label: "resources/list", build: request("resources/list") },
      { key: "resources-read", label: "resources/read", build: request("resources/read", { uri: s.uri }) },
    ] },
    { group: "Prompts", items: [
      { key: "prompts-list", label: "prompts/list", build: request("prompts/list") },
      { key: "prompts-get", label: "prompts/get", build: request("prompts/get", { name: s.prompt[0], arguments: s.prompt[1] }) },
    ] },
  ];
}

export function findTemplate(groups, key) {
  for (const group of groups) {
    const item = group.items.find((it) => it.key === key);
    if (item) return item;
  }
  return null;
}

export const pretty = (message) => JSON.stringify(message, null, 2);
