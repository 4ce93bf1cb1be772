// The official TypeScript SDK client on a protected endpoint: on 401 it discovers the playground's
// authorization server, registers, and sends the owner to the consent page; the owner's "browser"
// here is fetch with their cookie, allowing with a form post as the page's button does. It calls a
// tool with a token of mcp:read, gets 403 insufficient_scope, and steps up. Prints what it saw as
// JSON (tests/web/test_endpoints_ts.py reads it).
// Usage: node oauth_client.mjs <endpoint url> <site base URL> <owner's Cookie header value>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError, auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, site, cookie] = process.argv.slice(2);
const REDIRECT = "http://127.0.0.1:9/callback";
const seen = { consents: [], scopes: [] };
let code;

/** The owner in their browser: opens the authorization URL, sees the consent page, allows. */
async function consent(authorizationUrl) {
  const asked = await fetch(authorizationUrl, { redirect: "manual" });
  const page = new URL(asked.headers.get("location"), site);
  const shown = await fetch(page, { headers: { cookie } });
  seen.consents.push(shown.status);
  const answered = await fetch(page, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, origin: site, "content-type": "application/x-www-form-urlencoded" },
    body: "answer=allow",
  });
  const back = new URL(answered.headers.get("location"));
  seen.iss = back.searchParams.get("iss");
  code = back.searchParams.get("code");
}

const stored = {};
const authProvider = {
  get redirectUrl() {
    return REDIRECT;
  },
  get clientMetadata() {
    return { client_name: "playground-ts-test", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" };
  },
  clientInformation: () => stored.client,
  saveClientInformation: (info) => {
    stored.client = info;
  },
  tokens: () => stored.tokens,
  saveTokens: (tokens) => {
    stored.tokens = tokens;
    seen.scopes.push(tokens.scope);
  },
  redirectToAuthorization: (authorizationUrl) => consent(authorizationUrl),
  saveCodeVerifier: (verifier) => {
    stored.verifier = verifier;
  },
  codeVerifier: () => stored.verifier,
};

/** Run `step`; on the 403 of a step-up, authorize again for the challenged scope and run it again on
 * the same session. SDK 1.32 answers the 403 by refreshing its token first, and a refresh cannot widen
 * a token's scope (RFC 6749 section 6), so it gives up ("403 after trying upscoping";
 * typescript-sdk#2255, fixed in its 2.x client): here, as an application would, the refresh token
 * is set aside and a new authorization asks the owner for the wider scope. */
async function steppedUp(transport, step) {
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof StreamableHTTPError && error.code === 403)) throw error;
    seen.refreshedFirst = true;
    stored.tokens = { ...stored.tokens, refresh_token: undefined };
    const result = await auth(authProvider, { serverUrl: new URL(url), scope: "mcp:read mcp:tools" });
    if (result !== "REDIRECT") throw new Error(`expected a new authorization, got ${result}`);
    await transport.finishAuth(code);
    return await step();
  }
}

const client = new Client({ name: "playground-ts-test", version: "1.0.0" });
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
try {
  await client.connect(transport);
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
  // The owner has allowed: the code from the redirect gets the tokens, and a new connection uses them.
  await transport.finishAuth(code);
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
  await client.connect(transport);
}
seen.tools = (await client.listTools()).tools.map((tool) => tool.name);
const call = await steppedUp(transport, () =>
  client.callTool({ name: "get_order_status", arguments: { order_id: "481516" } }),
);
seen.call = call.content[0].text;
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(seen));
