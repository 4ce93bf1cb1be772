// The console as an MCP Apps host (MCP Apps 2026-01-26; docs/apps.md). When a tool the learner called
// has a UI (`_meta.ui.resourceUri` in its tools/list definition), the host reads that `ui://` resource through the relay and shows
// the app beside the reply, through the sandbox proxy on the second origin. The official bridge
// (`AppBridge`, vendored in static/vendor/ext-apps-bridge.js) speaks the app's protocol; this module
// carries its messages (recording each one in the transcript, where the log and diagram show it), asks
// the learner before an app calls a tool or opens a link, and answers a malformed message itself.

import { button, el } from "./dom.js";

export const APP_MIME = "text/html;profile=mcp-app";
export const EXTENSION = "io.modelcontextprotocol/ui";
// A connection may send so many frames in 10 s before the relay refuses more and then closes it
// (PLAYGROUND_MAX_MESSAGES_PER_10S): an app gets this share of them, so that no app can end the
// learner's session by talking.
const APP_SHARE = 0.4;
const TEARDOWN_MS = 2000;
const MIN_HEIGHT = 80;
const MAX_HEIGHT = 600;
// How long an app's question is shown before Allow takes a press (browsers' permission prompts wait so).
const ASK_ARMED_MS = 600;
let bridgeModule = null;

function loadBridge() {
  bridgeModule ??= import("/static/vendor/ext-apps-bridge.js");
  return bridgeModule;
}

/** The `ui://` resource a tool links to, if any (the flat key is the extension's deprecated form). */
export function uiResourceOf(tool) {
  const meta = tool?._meta;
  const uri = meta?.ui?.resourceUri ?? meta?.["ui/resourceUri"];
  return typeof uri === "string" ? uri : null;
}

/** Whether an app may call this tool: its visibility includes "app" (the default is both). */
export function appMayCall(tool) {
  const visibility = tool?._meta?.ui?.visibility;
  return !Array.isArray(visibility) || visibility.includes("app");
}

/** Why a message from an app is not one the host takes, or "" when it is (JSON-RPC 2.0 shapes). */
export function malformed(data) {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return "not a JSON-RPC message object";
  if (data.jsonrpc !== "2.0") return 'jsonrpc is not "2.0"';
  const hasId = "id" in data;
  if (hasId && !(typeof data.id === "string" || Number.isInteger(data.id)))
    return "its id is not a string or an integer";
  if ("method" in data) {
    if (typeof data.method !== "string") return "method is not a string";
    if ("params" in data && (data.params === null || typeof data.params !== "object" || Array.isArray(data.params)))
      return "params is not an object";
    return "";
  }
  if (!hasId) return "neither a method nor an id";
  if ("result" in data === "error" in data) return "a response needs exactly one of result and error";
  return "";
}

/** Messages carried between the bridge and the proxy's frame, as the SDK's Transport interface asks. */
class FrameTransport {
  constructor(frame, origin, host) {
    this.frame = frame;
    this.origin = origin;
    this.host = host;
    this.times = [];
    this.listener = (event) => this.take(event);
  }

  async start() {
    window.addEventListener("message", this.listener);
  }

  async send(message) {
    this.host.record("host", message);
    this.frame.contentWindow?.postMessage(message, this.origin);
  }

  async close() {
    window.removeEventListener("message", this.listener);
    this.onclose?.();
  }

  take(event) {
    if (event.source !== this.frame.contentWindow || event.origin !== this.origin) return;
    const data = event.data;
    const now = performance.now();
    this.times = this.times.filter((t) => now - t < 10_000);
    const { appMessagesPer10s, messageBytes } = this.host.limits;
    if (this.times.length >= appMessagesPer10s) {
      this.host.tooMany();
      return this.refuse(
        data,
        -32001,
        `More than ${appMessagesPer10s} messages in 10 s: this one was not read.`,
        false,
      );
    }
    this.times.push(now);
    let text;
    try {
      text = JSON.stringify(data);
    } catch {
      return this.refuse(data, -32700, "The message cannot be written as JSON.");
    }
    if (text === undefined) return this.refuse(data, -32700, "The message cannot be written as JSON.");
    // The relay's own limit, met here first: the message is never sent anywhere.
    const bytes = new TextEncoder().encode(text).length;
    if (bytes > messageBytes) {
      return this.refuse(data, -32600, `The message is ${bytes} bytes, over the ${messageBytes}-byte limit.`);
    }
    const problem = malformed(data);
    if (problem) return this.refuse(data, -32600, `Invalid Request: ${problem}.`);
    this.host.record("app", data, text);
    this.onmessage?.(data);
  }

  /** Answer a message the host does not take (a request gets its error; nothing else does). */
  refuse(data, code, reason, note = true) {
    const id = typeof data?.id === "string" || Number.isInteger(data?.id) ? data.id : null;
    if (note) this.host.note(`The app sent a message the host refused: ${reason}`, "warn");
    if (data && typeof data === "object" && "method" in data && !("id" in data)) return; // a notification: no reply
    const reply = { jsonrpc: "2.0", id, error: { code, message: reason } };
    if (note) this.host.record("host", reply);
    this.frame.contentWindow?.postMessage(reply, this.origin);
  }
}

export class AppHost {
  /**
   * @param {HTMLElement} box where apps appear
   * @param {{origin: string|null, off: string, send: Function, note: Function, revision: Function,
   *   messageBytes: number, messagesPer10s: number}} on the proxy's origin (null: Apps are off, `off`
   *   says why); send(frame) to the relay; note(text, kind) in the log; revision() the session's
   *   revision; the relay's limits on a client's messages (the page has them from the settings)
   */
  constructor(box, on) {
    this.box = box;
    this.on = on;
    this.limits = {
      messageBytes: on.messageBytes,
      appMessagesPer10s: Math.max(1, Math.floor(on.messagesPer10s * APP_SHARE)),
    };
    this.tools = new Map(); // name -> tool, from the tools/list replies of this session
    this.calls = new Map(); // seq of a host call -> {resolve}
    this.echoes = []; // host calls sent, waiting for the relay's `sent` echo (in order)
    this.current = null; // {frame, bridge, transport, card}
    this.stateless = false; // the learner's last tool call was a 2026-07-28 request
    this.numbered = 0;
    this.warnedMany = false;
  }

  note(text, kind = "info") {
    this.on.note(text, kind);
  }

  /** Record a host-app message in the transcript (the relay echoes it back as an `app` frame). */
  record(from, message, text = JSON.stringify(message)) {
    this.on.send({ type: "app", from, text });
  }

  tooMany() {
    if (this.warnedMany) return;
    this.warnedMany = true;
    this.note(
      `The app sends more than ${this.limits.appMessagesPer10s} messages in 10 s: the host leaves the rest unread.`,
      "warn",
    );
  }

  // ---- what the relay says ----

  /** A `sent` frame: one of the host's calls went out (under the relay's fresh id). A replayed one
   * after a reconnect is an echo this page missed (a replay holds only frames it has not seen). */
  onSent(frame) {
    if (!frame.by) return;
    const waiting = this.echoes.shift();
    if (waiting) this.calls.set(frame.seq, waiting);
  }

  /** A `received` frame; `sent`: the `sent` frame of the request it answers. */
  onReceived(frame, sent) {
    if (!frame.answers || !frame.message) return;
    const request = sent?.message;
    const result = frame.message.result;
    if (request?.method === "tools/list" && Array.isArray(result?.tools)) {
      for (const tool of result.tools) if (typeof tool?.name === "string") this.tools.set(tool.name, tool);
    }
    const waiting = this.calls.get(frame.answers);
    if (waiting) {
      this.calls.delete(frame.answers);
      waiting.resolve(frame.message);
      return;
    }
    // A replayed reply renders nothing: its app, if any, was rendered (or passed up) when it came.
    if (request?.method === "tools/call" && !sent.by && result && !frame.replayed) this.toolAnswered(request, result);
  }

  /** A relay_error: one of the host's calls was refused before it reached the server. */
  onRefused(frame) {
    const index = this.echoes.findIndex((w) => w.id === frame.id);
    if (index >= 0) this.echoes.splice(index, 1)[0].resolve({ error: frame.error });
  }

  /** The connection dropped: a call the relay has not echoed may never have reached it, so it fails
   * now rather than hang its app; one it echoed is answered by the reconnect's replay. */
  connectionLost() {
    for (const waiting of this.echoes) waiting.resolve({ error: { code: -32001, message: "The connection dropped." } });
    this.echoes = [];
  }

  /** The session ended or restarted: the app goes with it. */
  reset() {
    this.tools.clear();
    for (const waiting of [...this.calls.values(), ...this.echoes])
      waiting.resolve({ error: { message: "The session ended." } });
    this.calls.clear();
    this.echoes = [];
    this.unmount();
  }

  /** Send a request to the server for the host or an app; resolves with the reply message. */
  call(by, method, params) {
    this.numbered += 1;
    const id = `${by}-call-${this.numbered}`;
    const message = { jsonrpc: "2.0", id, method, params: this.withEnvelope(params) };
    return new Promise((resolve) => {
      const waiting = { id, resolve };
      if (!this.on.send({ type: "call", by, text: JSON.stringify(message) })) {
        resolve({ error: { message: "Not connected." } });
        return;
      }
      this.echoes.push(waiting);
    });
  }

  /** 2026-07-28 requests carry their revision and the client's capabilities, Apps declared. */
  withEnvelope(params) {
    if (this.on.revision() !== "2026-07-28" && !this.stateless) return params;
    return {
      ...params,
      _meta: {
        ...(params?._meta || {}),
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { extensions: { [EXTENSION]: { mimeTypes: [APP_MIME] } } },
      },
    };
  }

  // ---- rendering ----

  async toolAnswered(request, result) {
    const name = request.params?.name;
    if (typeof name !== "string") return;
    // The learner's call says which revision the session speaks, when the console has not learned it.
    this.stateless = request.params?._meta?.["io.modelcontextprotocol/protocolVersion"] === "2026-07-28";
    // A host finds a tool's app in its definition, from tools/list: a tool this session has not
    // listed is called as a plain tool (the console sends nothing of its own unasked).
    const tool = this.tools.get(name);
    const uri = uiResourceOf(tool);
    if (!uri) return;
    if (!uri.startsWith("ui://"))
      return this.note(`The tool ${name} links to ${uri}, which is not a ui:// resource: no app.`, "warn");
    if (!this.on.origin)
      return this.note(`The tool ${name} has an app (${uri}), but Apps are off here: ${this.on.off}`, "warn");
    const read = await this.call("host", "resources/read", { uri });
    const content = read.result?.contents?.[0];
    if (!content) return this.note(`The host could not read ${uri}: ${read.error?.message || "no contents"}.`, "warn");
    if (content.mimeType !== APP_MIME) {
      return this.note(
        `${uri} came as ${content.mimeType || "no MIME type"}, not ${APP_MIME}: a host renders only that.`,
        "warn",
      );
    }
    const html = typeof content.text === "string" ? content.text : decodeBlob(content.blob);
    if (html === null) return this.note(`${uri} has neither text nor a base64 blob: nothing to render.`, "warn");
    await this.mount({ tool, uri, html, ui: content._meta?.ui || {}, request, result });
  }

  async mount({ tool, uri, html, ui, request, result }) {
    this.unmount();
    const { AppBridge } = await loadBridge();
    const card = el("section", "app-card");
    card.dataset.appUri = uri;
    const head = el("div", "app-head");
    head.append(el("strong", "", "App: "), el("code", "", uri), el("span", "hint", ` from the tool ${tool.name}`));
    head.append(button("Close the app", () => this.close(), "small secondary app-close"));
    const asks = el("div", "app-asks");
    asks.setAttribute("role", "status");
    const frame = el("iframe", "app-frame");
    frame.title = `The app of ${tool.name} (${uri})`;
    frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
    frame.style.height = `${MIN_HEIGHT * 2}px`;
    const csp = JSON.stringify(ui.csp && typeof ui.csp === "object" ? ui.csp : {});
    const query = new URLSearchParams({ host: window.location.origin, csp });
    frame.src = `${this.on.origin}/apps/proxy?${query}`;
    card.append(head, asks, frame);
    this.box.append(card);
    this.box.hidden = false;
    card.scrollIntoView({ block: "nearest" }); // the log's entries below must not hide what was opened

    const bridge = new AppBridge(
      null,
      { name: "mcp-playground-console", version: "1.0.0" },
      { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} },
      {
        hostContext: {
          toolInfo: { id: request.id, tool },
          theme: window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light",
          displayMode: "inline",
          availableDisplayModes: ["inline"],
          containerDimensions: { maxHeight: MAX_HEIGHT },
          platform: "web",
          locale: navigator.language,
        },
      },
    );
    const transport = new FrameTransport(frame, this.on.origin, this);
    const app = { frame, bridge, transport, card, asks, questions: [] }; // questions: shown first to last
    this.current = app;
    let loaded = false;
    bridge.onsandboxready = () => {
      // Once a mount: the proxy saying it is ready again means its page was reloaded, which an app
      // can do itself, with another policy in its address. The declared one stands: nothing more loads.
      if (loaded) {
        this.note("The app's sandbox page loaded again; the host loads an app once. Call the tool again to show it.");
        return;
      }
      loaded = true;
      bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
    };
    bridge.oninitialized = () => {
      bridge.sendToolInput({ arguments: request.params?.arguments || {} });
      bridge.sendToolResult(result);
    };
    bridge.onsizechange = ({ height }) => {
      if (typeof height === "number") frame.style.height = `${Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, height))}px`;
    };
    bridge.oncalltool = (params) => this.appCallsTool(app, params);
    bridge.onreadresource = (params) => this.appReads(params);
    bridge.onopenlink = (params) => this.appOpensLink(app, params);
    bridge.onmessage = async () => {
      this.note(
        "The app asked to add a message to the conversation (this console has no model; it is in the app lane).",
      );
      return {};
    };
    bridge.onupdatemodelcontext = async () => ({});
    bridge.onrequestdisplaymode = async () => ({ mode: "inline" });
    await bridge.connect(transport);
  }

  /** Close as a host does: `ui/resource-teardown` first, so the app may save its state (at most a
   * couple of seconds), then the frame goes. */
  async close() {
    const app = this.current;
    if (!app) return;
    await Promise.race([
      app.bridge.teardownResource({}).catch(() => {}),
      new Promise((r) => setTimeout(r, TEARDOWN_MS)),
    ]);
    if (this.current === app) this.unmount();
  }

  /** Whether an app's card is open. */
  get showing() {
    return this.current !== null;
  }

  unmount() {
    const app = this.current;
    if (!app) return;
    this.current = null;
    app.transport.close();
    app.card.remove();
    this.box.hidden = this.box.childElementCount === 0;
  }

  // ---- what an app may ask ----

  async appCallsTool(app, params) {
    const name = params?.name;
    const tool = this.tools.get(name);
    // A host rejects a tool its app may not call (MCP Apps, "Visibility"); one the server did not list
    // is none the host can vouch for.
    if (!tool) throw rpcError(-32602, `The server did not list a tool named ${JSON.stringify(name)}.`);
    if (!appMayCall(tool))
      throw rpcError(-32602, `The tool ${name} is not visible to apps (its visibility has no "app").`);
    const allowed = await this.ask(
      app,
      `The app asks to call the tool ${name} with ${JSON.stringify(params?.arguments ?? {})}.`,
    );
    if (!allowed) throw rpcError(-32001, "The user declined this tool call.");
    const reply = await this.call("app", "tools/call", { name, arguments: params?.arguments ?? {} });
    if (reply.error) throw rpcError(reply.error.code ?? -32603, reply.error.message || "The call failed.");
    return reply.result;
  }

  async appReads(params) {
    const reply = await this.call("app", "resources/read", { uri: params?.uri });
    if (reply.error) throw rpcError(reply.error.code ?? -32603, reply.error.message || "The read failed.");
    return reply.result;
  }

  async appOpensLink(app, params) {
    const url = String(params?.url || "");
    if (!/^https?:\/\//i.test(url)) return { isError: true };
    const allowed = await this.ask(app, `The app asks to open ${url} in a new tab.`);
    if (!allowed) return { isError: true };
    window.open(url, "_blank", "noopener,noreferrer");
    return {};
  }

  /** Ask the learner, in the app's card, as a real host asks its user: one question at a time, the
   * app's later ones waiting unseen, so that a click meant for one never lands on the next. */
  ask(app, question) {
    return new Promise((resolve) => {
      const row = el("div", "app-ask");
      const allow = button("Allow", () => done(true), "small");
      const deny = button("Deny", () => done(false));
      row.append(el("p", "", question), allow, deny);
      row.hidden = true;
      const show = () => {
        row.hidden = false;
        row.scrollIntoView({ block: "nearest" }); // the app waits on this answer
        // An app can ask while the learner is typing in it, or clicking the question before: the keys
        // and clicks they meant for that must not answer. Focus goes to Deny, and Allow takes no press
        // until the question has been seen.
        deny.focus({ preventScroll: true });
        allow.disabled = true;
        setTimeout(() => {
          allow.disabled = false;
        }, ASK_ARMED_MS);
      };
      const done = (answer) => {
        row.remove();
        app.questions.shift();
        this.note(`${question} You ${answer ? "allowed" : "declined"} it.`);
        resolve(answer);
        app.questions[0]?.();
      };
      app.asks.append(row);
      app.questions.push(show);
      if (app.questions.length === 1) show();
    });
  }
}

function rpcError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

function decodeBlob(blob) {
  if (typeof blob !== "string") return null;
  try {
    const bytes = Uint8Array.from(atob(blob), (c) => c.charCodeAt(0));
    return new TextDecoder().decode(bytes);
  } catch {
    return null;
  }
}
