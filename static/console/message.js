// What kind of JSON-RPC message a value is, in a few words: the one classification the console,
// the endpoint page and the instructor's view share. No DOM here, so Node's tests import it.
// Unit tests: tests/js/message.test.mjs.

/** What kind of JSON-RPC message a parsed value is, in a few words. */
export function describe(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return {
      kind: "other",
      words: Array.isArray(value)
        ? "an array (a batch): the relay will refuse it"
        : "not an object: not a JSON-RPC message",
    };
  }
  const hasId = Object.hasOwn(value, "id");
  if (typeof value.method === "string") {
    return hasId
      ? { kind: "request", words: `a request: ${value.method}, id ${JSON.stringify(value.id)}` }
      : { kind: "notification", words: `a notification: ${value.method} (no id, so no reply)` };
  }
  if (hasId && ("result" in value || "error" in value)) {
    return { kind: "response", words: `a response to id ${JSON.stringify(value.id)}` };
  }
  return { kind: "other", words: "valid JSON, but not a JSON-RPC message the relay will forward" };
}
