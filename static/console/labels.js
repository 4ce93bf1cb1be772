// The words the log and the announcements use for a message, both ways. What the server chose (a
// method name, an error's message) is shown as its text only: no controls that reorder or hide
// characters, and a long one cut, so a server cannot make a headline say what the log does not.

// Bidirectional marks, overrides and isolates, the zero-width space and the byte-order mark (not the
// joiners, which scripts and emoji need).
const INVISIBLE = /[\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;
const SHOWN_CHARS = 80;

/** A server's text as a label shows it. */
export function shown(text, most = SHOWN_CHARS) {
  const plain = String(text).replace(INVISIBLE, "");
  return plain.length > most ? `${plain.slice(0, most - 1)}…` : plain;
}

const id = (message) => shown(JSON.stringify(message.id));

export const labels = {
  sent(message, info) {
    if (info.kind === "request") return `${message.method} (request, id ${id(message)})`;
    if (info.kind === "notification") return `${message.method} (notification)`;
    if (info.kind === "response")
      return `${"error" in message ? "error reply" : "reply"} to the server's request id ${id(message)}`;
    return "message";
  },
  /** `method`: the method of the request this line answers (pairs.js), when the page knows it. */
  received(message, info, frame, method) {
    if (!message) return "a line that is not JSON";
    if (frame.answers) {
      const what = method || `#${frame.answers}`;
      if ("error" in message) {
        const err = message.error || {};
        const code = "code" in err ? shown(JSON.stringify(err.code)) : "(no code)";
        return `error ${code} for ${what}: “${shown(err.message ?? "")}”`;
      }
      return `result for ${what} (id ${id(message)})`;
    }
    if (info.kind === "request") return `${shown(message.method)} (a request from the server, id ${id(message)})`;
    if (info.kind === "notification") return `${shown(message.method)} (notification)`;
    if (info.kind === "response") return `a response with id ${id(message)}, which answers none of your requests`;
    return "a message";
  },
};
