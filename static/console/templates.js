// Message templates for the editor. Each fills in the next unused id; none is sent until the learner sends it.

export const HANDSHAKE_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
export const STATELESS_REVISION = "2026-07-28";

// Each server's sample messages (INFO["samples"] in app/demos), from one request per page. The
// last answer is kept, so a console opened while the app cannot answer still has its templates.
const SERVERS_URL = "/api/servers";
const CACHE_KEY = "playground-servers";
const FETCH_TIMEOUT_MS = 5000; // a console waits this long at most for its templates
const FALLBACK = { tool: ["TOOL_NAME", {}], uri: "RESOURCE_URI", prompt: ["PROMPT_NAME", {}] };

export async function loadServers() {
  try {
    const reply = await fetch(SERVERS_URL, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!reply.ok) throw new Error(`${SERVERS_URL}: ${reply.status}`);
    const servers = await reply.json();
    try {
      localStorage.setItem(CACHE_KEY, JSON.stringify(servers));
    } catch {
      /* storage off: no copy */
    }
    return servers;
  } catch {
    try {
      return JSON.parse(localStorage.getItem(CACHE_KEY)) || [];
    } catch {
      return [];
    }
  }
}

// Awaited before the console starts, so templateGroups() can stay synchronous.
const SERVERS = await loadServers();

/** A tool, resource and prompt from a server's samples ([{method, params}]), placeholders for the rest. */
export function samplesFrom(samples = []) {
  const params = (method) => samples.find((s) => s.method === method)?.params;
  const tool = params("tools/call");
  const read = params("resources/read");
  const prompt = params("prompts/get");
  return {
    tool: tool ? [tool.name, tool.arguments || {}] : FALLBACK.tool,
    uri: read ? read.uri : FALLBACK.uri,
    prompt: prompt ? [prompt.name, prompt.arguments || {}] : FALLBACK.prompt,
  };
}

const APPS = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };

function initialize(revision) {
  return {
    method: "initialize",
    params: {
      protocolVersion: revision,
      capabilities: {
        roots: { listChanged: true },
        sampling: {},
        ...(revision >= "2025-06-18" ? { elicitation: {} } : {}),
        // The console renders MCP Apps (apphost.js): it says so, as a host does.
        extensions: APPS,
      },
      clientInfo: { name: "playground-console", version: "1.0.0" },
    },
  };
}

/** The template list: [{group, items: [{key, label, build(id, context) -> message}]}]; `context.waiting`
 * is the id of the newest request still waiting for its reply, when there is one. */
export function templateGroups(server, revision, servers = SERVERS) {
  const s = samplesFrom(servers.find((it) => it.name === server)?.samples);
  const stateless = revision === STATELESS_REVISION;
  // A client SHOULD name itself in every 2026-07-28 request (basic §_meta).
  const meta = {
    "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION,
    "io.modelcontextprotocol/clientCapabilities": { extensions: APPS },
    "io.modelcontextprotocol/clientInfo": { name: "playground-console", version: "1.0.0" },
  };
  const request = (method, params) => (id) => {
    const full = stateless ? { ...(params || {}), _meta: meta } : params;
    return { jsonrpc: "2.0", id, method, ...(full ? { params: full } : {}) };
  };
  const notification = (method, params) => () => ({ jsonrpc: "2.0", method, ...(params ? { params } : {}) });
  return [
    {
      group: "Handshake",
      items: [
        ...HANDSHAKE_REVISIONS.map((rev) => ({
          key: `initialize-${rev}`,
          label: `initialize (${rev})`,
          build: (id) => ({ jsonrpc: "2.0", id, ...initialize(rev) }),
        })),
        { key: "initialized", label: "notifications/initialized", build: notification("notifications/initialized") },
        {
          key: "discover",
          label: `server/discover (${STATELESS_REVISION})`,
          build: (id) => ({ jsonrpc: "2.0", id, method: "server/discover", params: { _meta: meta } }),
        },
      ],
    },
    {
      group: "Any time",
      items: [
        { key: "ping", label: "ping", build: request("ping") },
        // Cancels the newest request still waiting (the console passes its id), else names id 1 to edit.
        {
          key: "cancelled",
          label: "notifications/cancelled",
          build: (_id, context = {}) =>
            notification("notifications/cancelled", { requestId: context.waiting ?? 1, reason: "took too long" })(),
        },
      ],
    },
    {
      group: "Tools",
      items: [
        { key: "tools-list", label: "tools/list", build: request("tools/list") },
        {
          key: "tools-call",
          label: `tools/call (${s.tool[0]})`,
          build: request("tools/call", { name: s.tool[0], arguments: s.tool[1] }),
        },
      ],
    },
    {
      group: "Resources",
      items: [
        { key: "resources-list", label: "resources/list", build: request("resources/list") },
        { key: "resources-read", label: "resources/read", build: request("resources/read", { uri: s.uri }) },
      ],
    },
    {
      group: "Prompts",
      items: [
        { key: "prompts-list", label: "prompts/list", build: request("prompts/list") },
        {
          key: "prompts-get",
          label: "prompts/get",
          build: request("prompts/get", { name: s.prompt[0], arguments: s.prompt[1] }),
        },
      ],
    },
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
