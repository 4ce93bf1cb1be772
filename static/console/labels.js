// The words the log and the announcements use for a message, both ways.

const id = (message) => JSON.stringify(message.id);

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
        return `error ${err.code} for ${what}: ${err.message}`;
      }
      return `result for ${what} (id ${id(message)})`;
    }
    if (info.kind === "request") return `${message.method} (a request from the server, id ${id(message)})`;
    if (info.kind === "notification") return `${message.method} (notification)`;
    if (info.kind === "response") return `a response with id ${id(message)}, which answers none of your requests`;
    return "a message";
  },
};
