// "Do the dance by hand": the learner sends each request of a protected endpoint's OAuth flow from
// this page, one at a time, and sees each answer checked before the next is offered. The page is the
// client: it registers itself, makes its PKCE pair, opens the consent page, receives the code on the
// playground's own callback page (app/web/consent.py), and redeems it. Tokens stay in this page.

const STEPS = [
  "challenge",
  "resource-metadata",
  "server-metadata",
  "register",
  "authorize",
  "token",
  "call",
  "revoke",
  "reuse",
];

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function randomText(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function masked(secret) {
  return secret ? `${secret.slice(0, 4)}…` : secret;
}

/** The WWW-Authenticate parameters (name="value", ...) of a Bearer challenge. */
export function challengeParams(header) {
  const params = {};
  for (const match of (header || "").matchAll(/(\w+)="([^"]*)"/g)) params[match[1]] = match[2];
  return params;
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "by-hand", version: "1" } },
};

export class FlowByHand {
  constructor(root, endpointUrl) {
    this.root = root;
    this.url = endpointUrl;
    this.state = {};
    for (const name of STEPS) {
      this.button(name).addEventListener("click", () => this.run(name));
    }
    window.addEventListener("message", (event) => this.callback(event));
    this.enable("challenge");
  }

  button(name) {
    return this.root.querySelector(`[data-by-hand="${name}"] button`);
  }

  enable(name) {
    for (const step of STEPS) this.button(step).disabled = step !== name;
  }

  show(name, passed, text) {
    const item = this.root.querySelector(`[data-by-hand="${name}"]`);
    item.dataset.passed = passed ? "yes" : "no";
    item.querySelector("[data-mark]").textContent = passed ? "✓ " : "✗ ";
    item.querySelector("pre").textContent = text;
    item.querySelector("pre").hidden = false;
  }

  async run(name) {
    try {
      await this[name.replace(/-(\w)/g, (_, c) => c.toUpperCase())]();
    } catch (error) {
      this.show(name, false, `The request failed: ${error.message}`);
    }
  }

  async challenge() {
    const reply = await fetch(this.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify(INITIALIZE),
    });
    const header = reply.headers.get("www-authenticate") || "";
    const params = challengeParams(header);
    const passed = reply.status === 401 && Boolean(params.resource_metadata);
    this.show("challenge", passed, `HTTP ${reply.status}\nWWW-Authenticate: ${header}`);
    if (passed) {
      this.state.metadataUrl = params.resource_metadata;
      this.state.scope = params.scope || "mcp:read";
      this.enable("resource-metadata");
    }
  }

  async resourceMetadata() {
    const reply = await fetch(this.state.metadataUrl);
    const body = await reply.json();
    const passed = reply.ok && body.resource === this.url && body.authorization_servers?.length > 0;
    this.show("resource-metadata", passed, `HTTP ${reply.status}\n${JSON.stringify(body, null, 2)}`);
    if (passed) {
      this.state.issuer = body.authorization_servers[0];
      this.enable("server-metadata");
    }
  }

  async serverMetadata() {
    const reply = await fetch(`${this.state.issuer}/.well-known/oauth-authorization-server`);
    const body = await reply.json();
    const passed =
      reply.ok && body.issuer === this.state.issuer && body.code_challenge_methods_supported?.includes("S256");
    this.show("server-metadata", passed, `HTTP ${reply.status}\n${JSON.stringify(body, null, 2)}`);
    if (passed) {
      this.state.server = body;
      this.enable("register");
    }
  }

  async register() {
    this.state.redirect = `${location.origin}/oauth/callback`;
    const request = {
      client_name: "By hand, in the panel",
      redirect_uris: [this.state.redirect],
      token_endpoint_auth_method: "none",
    };
    const reply = await fetch(this.state.server.registration_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
    const body = await reply.json();
    const passed = reply.status === 201 && Boolean(body.client_id);
    this.show(
      "register",
      passed,
      `POST ${JSON.stringify(request)}\nHTTP ${reply.status}\n${JSON.stringify(body, null, 2)}`,
    );
    if (passed) {
      this.state.clientId = body.client_id;
      this.enable("authorize");
    }
  }

  async authorize() {
    this.state.verifier = randomText(48);
    this.state.challenge = base64url(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(this.state.verifier)),
    );
    this.state.expected = randomText(16);
    const query = new URLSearchParams({
      response_type: "code",
      client_id: this.state.clientId,
      redirect_uri: this.state.redirect,
      code_challenge: this.state.challenge,
      code_challenge_method: "S256",
      state: this.state.expected,
      scope: this.state.scope,
      resource: this.url,
    });
    const target = `${this.state.server.authorization_endpoint}?${query}`;
    this.show(
      "authorize",
      false,
      `PKCE verifier (kept here): ${masked(this.state.verifier)}\nchallenge (sent): ${this.state.challenge}\n` +
        `Opening ${target}\nAnswer on the consent page; the code comes back here.`,
    );
    window.open(target, "_blank");
  }

  callback(event) {
    if (event.origin !== location.origin || event.data?.type !== "oauth-callback" || !this.state.expected) return;
    const { code, state, iss, error } = event.data;
    const passed = Boolean(code) && state === this.state.expected && iss === this.state.issuer;
    const why = state !== this.state.expected ? "\nThe state does not match what this page sent: refused." : "";
    this.show(
      "authorize",
      passed,
      `code: ${masked(code) || "(none)"}\nstate: ${state}\niss: ${iss}${error ? `\nerror: ${error}` : ""}${why}`,
    );
    if (passed) {
      this.state.code = code;
      this.enable("token");
    }
  }

  async token() {
    const form = new URLSearchParams({
      grant_type: "authorization_code",
      code: this.state.code,
      redirect_uri: this.state.redirect,
      client_id: this.state.clientId,
      code_verifier: this.state.verifier,
      resource: this.url,
    });
    const reply = await fetch(this.state.server.token_endpoint, { method: "POST", body: form });
    const body = await reply.json();
    const passed = reply.ok && Boolean(body.access_token);
    const shown = { ...body, access_token: masked(body.access_token), refresh_token: masked(body.refresh_token) };
    this.show("token", passed, `HTTP ${reply.status}\n${JSON.stringify(shown, null, 2)}`);
    if (passed) {
      this.state.accessToken = body.access_token;
      this.enable("call");
    }
  }

  /** The endpoint's answer to initialize sent with the page's access token. */
  async withToken() {
    const reply = await fetch(this.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        Authorization: `Bearer ${this.state.accessToken}`,
      },
      body: JSON.stringify(INITIALIZE),
    });
    const sent = `Authorization: Bearer ${masked(this.state.accessToken)}\nHTTP ${reply.status}\n`;
    return { reply, sent };
  }

  async call() {
    const { reply, sent } = await this.withToken();
    this.show("call", reply.ok, sent + (await reply.text()).slice(0, 2000));
    if (reply.ok) this.enable("revoke");
  }

  async revoke() {
    const form = new URLSearchParams({ token: this.state.accessToken, client_id: this.state.clientId });
    const reply = await fetch(this.state.server.revocation_endpoint, { method: "POST", body: form });
    const shown = `POST token=${masked(this.state.accessToken)}&client_id=${this.state.clientId}\nHTTP ${reply.status}`;
    this.show("revoke", reply.ok, shown);
    if (reply.ok) this.enable("reuse");
  }

  async reuse() {
    const { reply, sent } = await this.withToken();
    const header = reply.headers.get("www-authenticate") || "";
    const passed = reply.status === 401 && challengeParams(header).error === "invalid_token";
    this.show("reuse", passed, `${sent}WWW-Authenticate: ${header}`);
    if (passed) this.enable(null);
  }
}
