// The MCP Apps sandbox proxy (MCP Apps 2026-01-26, "Sandbox proxy"), served only on the proxy's own
// origin (app/web/apps_proxy.py). It tells the console it is ready, takes the app's HTML from it, loads
// that HTML in a frame of its own (which inherits this page's Content-Security-Policy, built by the
// server from the app's declared domains), and passes every other message between the two unchanged.
// It makes no message of its own beyond `sandbox-proxy-ready`.

const SANDBOX_PREFIX = "ui/notifications/sandbox-";
const sites = (document.querySelector("meta[name=playground-site]")?.content || "").split(" ").filter(Boolean);
// The console that framed this page (it names itself; only the site's own origins count): the one
// origin messages go to and come from. The server lets only those origins frame this page.
const asked = new URLSearchParams(window.location.search).get("host");
const host = sites.includes(asked) ? asked : sites[0];
let view = null;

function toHost(message) {
  window.parent.postMessage(message, host);
}

function load(params) {
  if (view || typeof params?.html !== "string") return;
  view = document.createElement("iframe");
  // No forms, popups, top navigation, downloads or modals: only scripts, on this (the proxy's) origin.
  view.setAttribute("sandbox", "allow-scripts allow-same-origin");
  view.setAttribute("title", "MCP App");
  view.srcdoc = params.html;
  document.body.append(view);
}

window.addEventListener("message", (event) => {
  const data = event.data;
  if (event.source === window.parent && event.origin === host) {
    if (typeof data?.method === "string" && data.method.startsWith(SANDBOX_PREFIX)) {
      if (data.method === "ui/notifications/sandbox-resource-ready") load(data.params);
      return;
    }
    view?.contentWindow?.postMessage(data, window.location.origin);
  } else if (view && event.source === view.contentWindow) {
    toHost(data);
  }
});

toHost({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} });
