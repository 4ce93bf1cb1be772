// What each message between the console (an MCP Apps host) and an app means, in plain words: the log
// shows it under the message (MCP Apps 2026-01-26).

const WORDS = {
  "ui/notifications/sandbox-proxy-ready":
    "The sandbox proxy, on its own origin, has loaded and waits for the app's HTML. The app has not started yet.",
  "ui/notifications/sandbox-resource-ready":
    "The host hands the proxy the HTML it read from the ui:// resource, with the domains the resource declared. The proxy loads it under a Content-Security-Policy built from them.",
  "ui/initialize":
    "The app opens its session with the host: who it is and what it can do. The host answers with its own capabilities and the context (the tool, the theme, the size it may take).",
  "ui/notifications/initialized":
    "The app is ready. Only now may the host send it anything: the tool's input and result come next.",
  "ui/notifications/tool-input": "The host gives the app the arguments the tool was called with.",
  "ui/notifications/tool-input-partial":
    "The host gives the app the tool's arguments so far, while they are still being written.",
  "ui/notifications/tool-result": "The host gives the app the tool's result, the same result the server sent.",
  "ui/notifications/tool-cancelled": "The host tells the app that the tool call was cancelled.",
  "ui/notifications/size-changed": "The app tells the host how big its content is; the host resizes its frame.",
  "ui/notifications/host-context-changed":
    "The host tells the app that its context changed (theme, size, display mode).",
  "ui/resource-teardown": "The host is about to remove the app and lets it save its state first.",
  "ui/open-link": "The app asks the host to open a link. The host decides; here, you do.",
  "ui/message":
    "The app asks the host to add a message to the conversation. This console has no model: it shows it to you.",
  "ui/update-model-context":
    "The app offers the host context for the model. This console has no model: it only records it.",
  "ui/request-display-mode": "The app asks to change how it is shown. This console shows apps inline only.",
  "tools/call":
    "The app asks the host to call a tool of the server. The host asks you first; if you allow it, the call goes to the server under an id of the host's own.",
  "resources/read": "The app asks the host to read a resource of the server; the host reads it for the app.",
  "notifications/message": "A log line from the app to the host.",
  ping: "A ping between host and app: the other side answers at once.",
};

/** The words for a host-app message; `request`: the request a response answers, when known. */
export function appWords(message, request) {
  if (!message || typeof message !== "object") return "";
  if (typeof message.method === "string") return WORDS[message.method] || "A message of the MCP Apps extension.";
  if (request && "error" in message) return `The answer to ${request.method}: an error, so it did not happen.`;
  if (request) return `The answer to ${request.method}.`;
  return "";
}

/** A short label for the log's head. */
export function appLabel(message, from) {
  const side = from === "app" ? "app → host" : "host → app";
  if (typeof message?.method === "string") {
    return "id" in message
      ? `${side}: ${message.method} (request, id ${JSON.stringify(message.id)})`
      : `${side}: ${message.method}`;
  }
  if (message && "error" in message) return `${side}: error reply to id ${JSON.stringify(message.id)}`;
  return `${side}: reply to id ${JSON.stringify(message?.id)}`;
}
