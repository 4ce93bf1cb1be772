// The "Connect your own client" panel: make an endpoint, show set-up for common clients, and watch
// what an outside client exchanges with the learner's server. Server text is shown as text only.

const POLL_MS = 1000;

export function snippets(url) {
  return {
    python: [
      "import asyncio",
      "",
      "from mcp import Client",
      "",
      "",
      "async def main():",
      `    async with Client("${url}") as client:`,
      "        tools = await client.list_tools()",
      "        print([tool.name for tool in tools.tools])",
      "",
      "",
      "asyncio.run(main())",
    ].join("\n"),
    inspector: "npx @modelcontextprotocol/inspector",
    vscode: JSON.stringify({ servers: { playground: { type: "http", url } } }, null, 2),
    "claude-code": `claude mcp add --transport http playground ${url}`,
    "claude-desktop": JSON.stringify({ mcpServers: { playground: { command: "npx", args: ["mcp-remote", url] } } }, null, 2),
  };
}

/** One line of the traffic list for a transcript entry (as /api/endpoints/ID/traffic gives it). */
export function describe(entry) {
  const message = entry.message && typeof entry.message === "object" ? entry.message : null;
  const arrow = entry.direction === "client" ? "client → server" : entry.direction === "server" ? "server → client" : "refused by the relay";
  let what = "a line that is not JSON";
  if (message && typeof message.method === "string") what = "id" in message ? `request ${message.method} (id ${JSON.stringify(message.id)})` : `notification ${message.method}`;
  else if (message && "error" in message) what = `error for id ${JSON.stringify(message.id)}`;
  else if (message && "result" in message) what = `result for id ${JSON.stringify(message.id)}`;
  const rtt = entry.rtt_ms == null ? "" : `, ${entry.rtt_ms.toFixed(1)} ms after its request (#${entry.answers})`;
  return `#${entry.seq} ${arrow}: ${what}${rtt}`;
}

class EndpointPanel {
  constructor(root) {
    this.root = root;
    this.server = root.dataset.server;
    this.$ = (selector) => root.querySelector(selector);
    this.endpoint = null;
    this.session = null;
    this.after = 0;
    this.$("[data-action=make-endpoint]").addEventListener("click", () => this.make());
    this.$("[data-action=copy-endpoint]").addEventListener("click", () => navigator.clipboard?.writeText(this.endpoint?.url || ""));
  }

  async make() {
    const error = this.$("[data-endpoint-error]");
    error.hidden = true;
    const reply = await fetch("/api/endpoints", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ server: this.server }),
    });
    const body = await reply.json().catch(() => ({}));
    if (!reply.ok) {
      error.textContent = body.error?.message || `The endpoint could not be made (HTTP ${reply.status}).`;
      error.hidden = false;
      return;
    }
    this.endpoint = body;
    this.$("[data-endpoint-url]").textContent = body.url;
    const expires = this.$("[data-endpoint-expires]");
    expires.dateTime = new Date(body.expires_at * 1000).toISOString();
    expires.textContent = new Date(body.expires_at * 1000).toLocaleString();
    for (const [name, text] of Object.entries(snippets(body.url))) {
      const slot = this.$(`[data-snippet="${name}"]`);
      if (slot) slot.textContent = text;
    }
    this.$("[data-endpoint]").hidden = false;
    this.$("[data-action=make-endpoint]").hidden = true;
    this.poll();
  }

  async poll() {
    try {
      const query = new URLSearchParams({ after: String(this.after) });
      if (this.session) query.set("session", this.session);
      const reply = await fetch(`/api/endpoints/${encodeURIComponent(this.endpoint.id)}/traffic?${query}`);
      if (reply.ok) this.show(await reply.json());
    } finally {
      setTimeout(() => this.poll(), POLL_MS);
    }
  }

  show(body) {
    const list = this.$("[data-endpoint-traffic]");
    const newest = body.sessions.at(-1);
    if (!newest) return;
    if (newest.id !== this.session) {
      // The first client session, or a newer one: follow it from its start.
      this.session = newest.id;
      this.after = 0;
      list.replaceChildren();
      if (body.session !== newest.id) return; // the next poll fetches it
    }
    this.$("[data-endpoint-status]").textContent =
      `A client is connected: ${newest.stateless ? "stateless requests (2026-07-28)" : "an MCP session"}, ` +
      `revision ${newest.revision || "not negotiated yet"}, ${newest.status}.`;
    for (const entry of body.entries) {
      const item = document.createElement("li");
      item.className = `traffic-${entry.direction}`;
      item.dataset.seq = String(entry.seq);
      const head = document.createElement("p");
      head.textContent = describe(entry);
      const line = document.createElement("pre");
      line.className = "code";
      line.textContent = entry.line;
      item.append(head, line);
      list.append(item);
      this.after = entry.seq;
    }
  }
}

const root = document.querySelector("[data-endpoint-panel]");
if (root) new EndpointPanel(root);
