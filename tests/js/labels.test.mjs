// The words a log headline uses for a server's message (static/console/labels.js): what the server
// chose is shown as text only, so a headline says nothing the entry below it does not.

import assert from "node:assert/strict";
import { test } from "node:test";

import { labels, shown } from "../../static/console/labels.js";

const answered = { answers: 3 };

test("an error reply's message is quoted, as the server's words", () => {
  const message = { jsonrpc: "2.0", id: 3, error: { code: -32601, message: "Method not found" } };
  const label = labels.received(message, { kind: "response" }, answered, "tools/call");
  assert.equal(label, "error -32601 for tools/call: “Method not found”");
});

test("a hostile server's error message cannot reorder, hide or run on in a headline", () => {
  const spoof = `PASSED \u2714 all checks passed\u202e\u200b${"x".repeat(500)}`;
  const message = { jsonrpc: "2.0", id: 3, error: { code: 0, message: spoof } };
  const label = labels.received(message, { kind: "response" }, answered, "x/logs");
  assert.doesNotMatch(label, /[\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/);
  assert.ok(label.startsWith("error 0 for x/logs: “PASSED") && label.endsWith("…”"), label);
  assert.ok(label.length < 120, label.length);
  const odd = { jsonrpc: "2.0", id: 3, error: { code: "<b>1</b>", message: 42 } };
  assert.equal(labels.received(odd, { kind: "response" }, answered, "ping"), 'error "<b>1</b>" for ping: “42”');
  const codeless = { jsonrpc: "2.0", id: 3, error: { message: "no code" } };
  assert.equal(
    labels.received(codeless, { kind: "response" }, answered, "ping"),
    "error (no code) for ping: “no code”",
  );
});

test("a server's own method names and ids are cut and cleaned the same way", () => {
  const method = `notifications/${"\u202e".repeat(3)}${"m".repeat(200)}`;
  const label = labels.received({ jsonrpc: "2.0", method }, { kind: "notification" }, {});
  assert.ok(!label.includes("\u202e") && label.length < 100, label);
  assert.equal(shown("plain"), "plain");
});
