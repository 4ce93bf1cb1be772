// The "Connect your own client" panel: make an endpoint, show set-up for common clients, and watch
// what an outside client exchanges with the learner's server: every HTTP request with its status and
// MCP headers, every message in the console's own log and sequence diagram, and (on a lesson step)
// the step's hands-on checks. Server text is shown as text only.

import { inlineCode } from "./console/checks.js";
import { describe } from "./console/message.js";
import { labels } from "./console/labels.js";
import { MessageLog } from "./console/log.js";
import { Pairs } from "./console/pairs.js";
import { SequenceDiagram } from "./console/sequence.js";
import { FlowByHand } from "./oauth_by_hand.js";

const POLL_MS = 1000;

// A tool call each demo answers with no set-up, for the Python snippet; another server's first tool is
// called with no arguments.
const SAMPLE_CALLS = {
  "demo-orders": ["get_order_status", { order_id: "481516" }],
};

export function snippets(url, server = "") {
  const call = SAMPLE_CALLS[server];
  const calling = call
    ? [`        result = await client.call_tool(${JSON.stringify(call[0])}, ${JSON.stringify(call[1])})`]
    : ["        result = await client.call_tool(tools.tools[0].name, {})  # your first tool"];
  return {
    python: [
      "import asyncio",
      "",
      "from mcp import Client",
      "",
      "",
      "async def main():",
      '    # mode="legacy": the initialize handshake (2025-11-25), a session with an Mcp-Session-Id.',
      "    # Leave it out for 2026-07-28: no handshake, each request stands alone.",
      `    async with Client("${url}", mode="legacy") as client:`,
      "        tools = await client.list_tools()",
      "        print([tool.name for tool in tools.tools])",
      ...calling,
      "        print(result.content[0].text if result.content else result)",
      "",
      "",
      "asyncio.run(main())",
    ].join("\n"),
    inspector: "npx @modelcontextprotocol/inspector",
    vscode: JSON.stringify({ servers: { playground: { type: "http", url } } }, null, 2),
    "claude-code": `claude mcp add --transport http playground ${url}`,
    "claude-desktop": JSON.stringify(
      { mcpServers: { playground: { command: "npx", args: ["mcp-remote", url] } } },
      null,
      2,
    ),
  };
}

/** One line of the HTTP list: method, status, what it carried and the MCP headers it said. */
export function describeExchange(exchange) {
  const asked = exchange.request_headers || {};
  const answered = exchange.response_headers || {};
  const carried = exchange.carried;
  let what =
    exchange.method === "GET"
      ? "the stream of the server's own messages"
      : exchange.method === "DELETE"
        ? "end the session"
        : "";
  if (carried) {
    const id = "id" in carried ? `, id ${JSON.stringify(carried.id)}` : "";
    what =
      carried.kind === "response" ? `a reply to the server's request${id}` : `${carried.method} (${carried.kind}${id})`;
  }
  const said = [];
  for (const [name, label] of [
    ["mcp-session-id", "Mcp-Session-Id"],
    ["mcp-protocol-version", "MCP-Protocol-Version"],
    ["mcp-method", "Mcp-Method"],
    ["mcp-name", "Mcp-Name"],
    ["accept", "Accept"],
  ]) {
    if (asked[name]) said.push(`${label}: ${name === "mcp-session-id" ? `${asked[name].slice(0, 8)}…` : asked[name]}`);
  }
  const back = [];
  if (answered["content-type"]) back.push(answered["content-type"].split(";")[0]);
  if (answered["mcp-session-id"]) back.push(`new Mcp-Session-Id ${answered["mcp-session-id"].slice(0, 8)}…`);
  return {
    head: `#${exchange.number} ${exchange.method} → ${exchange.status}${what ? `: ${what}` : ""}`,
    detail: [
      said.length ? `sent ${said.join(" · ")}` : "sent no MCP headers",
      back.length ? `got ${back.join(" · ")}` : "",
    ]
      .filter(Boolean)
      .join("; "),
  };
}

/** One client session of the endpoint, in words (`short`: for its line in the list of sessions). */
function sessionWords(session, { short = false } = {}) {
  const revision = session.revision;
  if (short) {
    if (session.stateless) return "stateless requests (2026-07-28)";
    return `an MCP session, revision ${revision || "not agreed"}, ${session.ended ? "ended" : session.status}`;
  }
  if (session.stateless)
    return "A client is sending stateless requests (2026-07-28): no session, each request stands alone.";
  if (session.ended)
    return `The client's MCP session has ended (revision ${revision || "never agreed"}); what it did is below.`;
  return `A client is connected: an MCP session, revision ${revision || "not agreed yet"}, ${session.status}.`;
}

/** A fetch's options for a JSON body. */
const json = (method, value) => ({
  method,
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify(value),
});

class EndpointPanel {
  constructor(root) {
    this.root = root;
    this.server = root.dataset.server;
    this.$ = (selector) => root.querySelector(selector);
    this.endpoint = null;
    this.session = null;
    this.pinned = false; // the learner chose a client session other than the newest
    this.after = 0;
    this.exchangesAfter = 0;
    this.step = root.dataset.step || "";
    this.log = new MessageLog(this.$("[data-endpoint-log]"), { edit: null, announce: () => {} });
    this.pairs = new Pairs();
    this.diagram = new SequenceDiagram(this.$("[data-endpoint-sequence]"));
    this.$("[data-action=make-endpoint]").addEventListener("click", () => this.make());
    this.$("[data-scope-form]")?.addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      this.setToolScopes({ ...this.toolScopes, [form.get("tool")]: form.get("scope") });
    });
    this.$("[data-client-form]")?.addEventListener("submit", (event) => {
      event.preventDefault();
      this.registerClient(new FormData(event.target));
    });
    this.$("[data-action=approval-code]")?.addEventListener("click", () => this.approvalCode());
    this.$("[data-action=copy-endpoint]").addEventListener("click", () =>
      navigator.clipboard?.writeText(this.endpoint?.url || ""),
    );
    this.listMine();
  }

  /** The learner's endpoints (of any server): a URL is shown only once, so an old one can only be ended. */
  async listMine() {
    const holder = this.$("[data-endpoint-mine]");
    const reply = await fetch("/api/endpoints").catch(() => null);
    if (!reply?.ok) return;
    const mine = (await reply.json()).filter((item) => !this.endpoint || item.id !== this.endpoint.id);
    holder.hidden = mine.length === 0;
    const list = holder.querySelector("ul");
    list.replaceChildren(
      ...mine.map((item) => {
        const li = document.createElement("li");
        li.dataset.endpointId = item.id;
        const words = document.createElement("span");
        const live = item.live_sessions
          ? `, ${item.live_sessions} client session${item.live_sessions === 1 ? "" : "s"} on it now`
          : "";
        const kind = item.auth === "oauth" ? " (protected)" : "";
        words.textContent = `${item.server}${kind}, made ${new Date(item.created_at * 1000).toLocaleString()}${live}`;
        const end = document.createElement("button");
        end.type = "button";
        end.className = "secondary small";
        end.textContent = "End it";
        end.addEventListener("click", async () => {
          end.disabled = true;
          await fetch(`/api/endpoints/${encodeURIComponent(item.id)}`, { method: "DELETE" }).catch(() => null);
          this.listMine();
        });
        li.append(words, " ", end);
        return li;
      }),
    );
  }

  async make() {
    const error = this.$("[data-endpoint-error]");
    error.hidden = true;
    const reply = await fetch("/api/endpoints", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        server: this.$("[data-endpoint-server]")?.value || this.server,
        auth: this.$("[data-endpoint-protect]")?.checked ? "oauth" : "none",
      }),
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
    for (const [name, text] of Object.entries(snippets(body.url, body.server))) {
      const slot = this.$(`[data-snippet="${name}"]`);
      if (slot) slot.textContent = text;
    }
    this.$("[data-endpoint-protected]").hidden = body.auth !== "oauth";
    this.$("[data-endpoint-clients]").hidden = body.auth !== "oauth";
    this.$("[data-endpoint-approval]").hidden = body.auth !== "oauth";
    this.$("[data-endpoint-scopes]").hidden = body.auth !== "oauth";
    this.$("[data-flow-by-hand]").hidden = body.auth !== "oauth";
    if (body.auth === "oauth") this.byHand = new FlowByHand(this.$("[data-flow-by-hand]"), body.url);
    this.toolScopes = {};
    this.$("[data-endpoint]").hidden = false;
    this.$("[data-action=make-endpoint]").hidden = true;
    this.$("[data-endpoint-options]").hidden = true;
    this.listMine();
    this.poll();
  }

  async poll() {
    try {
      const query = new URLSearchParams({ after: String(this.after), exchanges_after: String(this.exchangesAfter) });
      if (this.session) query.set("session", this.session);
      if (this.step) query.set("step", this.step);
      const reply = await fetch(`/api/endpoints/${encodeURIComponent(this.endpoint.id)}/traffic?${query}`);
      if (reply.ok) this.show(await reply.json());
      if (this.endpoint.auth === "oauth") await this.pollFlow();
    } finally {
      setTimeout(() => this.poll(), POLL_MS);
    }
  }

  show(body) {
    this.showChecks(body.checks || []);
    const sessions = body.sessions || [];
    if (!sessions.length) return;
    this.showSessions(sessions);
    // The newest client session is followed, unless the learner chose another in the list.
    const shown = (this.pinned && sessions.find((s) => s.id === this.session)) || sessions.at(-1);
    if (shown.id !== this.session) this.follow(shown.id);
    this.$("[data-endpoint-status]").textContent = sessionWords(shown);
    // Traffic of another session than the one followed (the learner just chose, or a newer one came):
    // the next poll fetches the right one.
    if (body.session !== this.session) return;
    for (const frame of body.frames || []) {
      this.showFrame(frame);
      if (frame.seq) this.after = Math.max(this.after, frame.seq); // the next poll asks only for newer ones
    }
    for (const exchange of body.exchanges || []) this.showExchange(exchange);
  }

  /** Follow this client session from its start: its messages, diagram and HTTP requests. */
  follow(id) {
    this.session = id;
    this.after = 0;
    this.exchangesAfter = 0;
    this.log.clear();
    this.pairs.forget();
    this.diagram.clear();
    this.$("[data-endpoint-exchanges]").replaceChildren();
    for (const item of this.$("[data-endpoint-sessions]").querySelectorAll("button")) {
      item.setAttribute("aria-pressed", String(item.dataset.session === id));
    }
  }

  /** Every client session the endpoint has had, oldest first: choosing one shows its traffic. */
  showSessions(sessions) {
    const list = this.$("[data-endpoint-sessions]");
    list.hidden = sessions.length < 2;
    const items = sessions.map((session, index) => {
      const li = document.createElement("li");
      const choose = document.createElement("button");
      choose.type = "button";
      choose.className = "secondary small";
      choose.dataset.session = session.id;
      choose.setAttribute("aria-pressed", String(session.id === this.session));
      choose.textContent = `Client session ${index + 1}`;
      choose.addEventListener("click", () => {
        this.pinned = index < sessions.length - 1; // the newest: back to following whatever comes
        this.follow(session.id); // the next poll fetches its traffic from the start
      });
      li.append(choose, ` ${sessionWords(session, { short: true })}`);
      return li;
    });
    list.querySelector("ol").replaceChildren(...items);
  }

  showFrame(frame) {
    const message = frame.message;
    const info = message && typeof message === "object" ? describe(message) : { kind: "other" };
    if (frame.type === "sent") {
      const { pairKey, label } = this.pairs.sent(frame, info.kind);
      this.log.sent(frame, labels.sent(message, info), pairKey);
      this.diagram.add({ seq: frame.seq, dir: "c2s", label, kind: info.kind, pairKey });
    } else if (frame.type === "received") {
      const { pairKey, label, method } = this.pairs.received(frame, info.kind);
      this.log.received(frame, labels.received(message, info, frame, method), pairKey);
      const error = info.kind === "response" && message && "error" in message;
      this.diagram.add({ seq: frame.seq, dir: "s2c", label, kind: error ? "error" : info.kind, pairKey });
    } else if (frame.type === "relay_error") {
      const err = frame.error || {};
      this.log.relayError(frame);
      this.diagram.add({ dir: "relay", label: `${err.code} ${err.message}`, kind: "error" });
    }
  }

  /**
   * A request about this endpoint (`/api/endpoints/{id}/<what>`): its JSON answer, or null once the
   * element at `errorPlace` says why it failed.
   */
  async ask(what, init, errorPlace, failed) {
    const error = this.$(errorPlace);
    error.hidden = true;
    const url = `/api/endpoints/${encodeURIComponent(this.endpoint.id)}/${what}`;
    const reply = await fetch(url, init).catch(() => null);
    const body = reply ? await reply.json().catch(() => ({})) : {};
    if (reply?.ok) return body;
    error.textContent = body.error?.message || failed;
    error.hidden = false;
    // The message sits under the button that was pressed, which may be at the bottom of the window.
    error.scrollIntoView({ block: "nearest" });
    return null;
  }

  /** The tools of this protected endpoint that need a scope of the learner's choosing. */
  async setToolScopes(tools) {
    const body = await this.ask("scopes", json("PUT", { tools }), "[data-scope-error]", "The scope could not be set.");
    if (!body) return;
    this.toolScopes = body.tools;
    this.$("[data-scope-list]").replaceChildren(
      ...Object.entries(this.toolScopes).map(([tool, scope]) => {
        const item = document.createElement("li");
        const words = document.createElement("span");
        words.textContent = `${tool} needs ${scope}`;
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "secondary small";
        remove.textContent = "Remove";
        remove.addEventListener("click", () => {
          const rest = { ...this.toolScopes };
          delete rest[tool];
          this.setToolScopes(rest);
        });
        item.append(words, " ", remove);
        return item;
      }),
    );
  }

  /** A one-time approval code, for answering a consent page in a browser that is not this one. */
  async approvalCode() {
    const failed = "No approval code could be made: try again.";
    const body = await this.ask("approval-code", { method: "POST" }, "[data-approval-error]", failed);
    if (!body) return;
    const until = new Date(Date.now() + body.expires_in * 1000);
    this.$("[data-approval-code]").textContent = body.code;
    const expires = this.$("[data-approval-expires]");
    expires.dateTime = until.toISOString();
    expires.textContent = until.toLocaleTimeString();
    this.$("[data-approval-made]").hidden = false;
  }

  /** A client registered by hand for this protected endpoint: its id (and secret), shown once. */
  async registerClient(form) {
    const client = {
      client_name: form.get("client_name"),
      redirect_uri: form.get("redirect_uri"),
      confidential: form.get("confidential") === "on",
    };
    const failed = "The client could not be registered.";
    const body = await this.ask("clients", json("POST", client), "[data-client-error]", failed);
    if (!body) return;
    const shown = { client_id: body.client_id, redirect_uris: body.redirect_uris };
    if (body.client_secret) shown.client_secret = body.client_secret;
    const made = this.$("[data-client-made]");
    made.querySelector("pre").textContent = JSON.stringify(shown, null, 2);
    made.hidden = false;
  }

  /** A protected endpoint's authorization flow, step by step (app/web/oauth_log.py). */
  async pollFlow() {
    const id = encodeURIComponent(this.endpoint.id);
    const reply = await fetch(`/api/endpoints/${id}/auth?after=${this.flowAfter || 0}`).catch(() => null);
    if (!reply?.ok) return;
    const body = await reply.json();
    this.flowAfter = body.next_after;
    const list = this.$("[data-endpoint-flow]");
    for (const event of body.events) {
      const item = document.createElement("li");
      item.dataset.step = event.step;
      // A refusal may be a redirect (302 with error= back to the client), so its error marks it too.
      const refused = event.status >= 400 || Boolean(event.detail?.error);
      item.className = refused ? "exchange-refused" : "exchange-ok";
      const head = document.createElement("p");
      head.className = "exchange-head";
      head.textContent = `${event.title} (${event.request} → ${event.status})`;
      const meaning = document.createElement("p");
      meaning.className = "exchange-detail";
      meaning.textContent = event.meaning;
      const reference = document.createElement("p");
      reference.className = "hint";
      reference.textContent = event.reference;
      const detail = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = "What was sent (secrets masked)";
      const pre = document.createElement("pre");
      pre.className = "code";
      pre.textContent = JSON.stringify(event.detail, null, 2);
      detail.append(summary, pre);
      item.append(head);
      if (refused && event.detail?.error_description) {
        const why = document.createElement("p");
        why.className = "exchange-why";
        why.textContent = `${event.detail.error}: ${event.detail.error_description}`;
        item.append(why);
      }
      item.append(meaning, reference, detail);
      list.append(item);
    }
    if (body.events.length) this.$("[data-endpoint-flow-box]").hidden = false;
  }

  showExchange(exchange) {
    const words = describeExchange(exchange);
    const item = document.createElement("li");
    item.dataset.exchange = String(exchange.number);
    item.dataset.method = exchange.method;
    item.dataset.status = String(exchange.status);
    item.className = exchange.status >= 400 ? "exchange-refused" : "exchange-ok";
    const head = document.createElement("p");
    head.className = "exchange-head";
    head.textContent = words.head;
    const detail = document.createElement("p");
    detail.className = "exchange-detail";
    detail.textContent = words.detail;
    item.append(head, detail);
    this.$("[data-endpoint-exchanges]").append(item);
    this.exchangesAfter = Math.max(this.exchangesAfter, exchange.number);
  }

  showChecks(results) {
    for (const result of results) {
      const item = this.root.querySelector(`li.check[data-check="${CSS.escape(result.check)}"]`);
      if (!item) continue;
      item.dataset.passed = result.passed ? "true" : "false";
      const mark = item.querySelector(".mark");
      mark.className = `mark mark-${result.passed ? "done" : "new"}`;
      // What a screen reader says of the mark, kept with it (the page renders it once, at load).
      const hidden = mark.querySelector(".visually-hidden");
      if (hidden) hidden.textContent = result.passed ? "Passed: " : "Not passed yet: ";
      item.querySelector(".check-reason").replaceChildren(...inlineCode(result.reason || ""));
    }
  }
}

const root = document.querySelector("[data-endpoint-panel]");
if (root) new EndpointPanel(root);
