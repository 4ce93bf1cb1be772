// The one classification of a JSON-RPC message (static/console/message.js), as the console, the
// endpoint page and the instructor's view show it.

import assert from "node:assert/strict";
import { test } from "node:test";

import { describe } from "../../static/console/message.js";

test("a request, a notification and a response are told apart by id, method, result and error", () => {
  assert.equal(describe({ jsonrpc: "2.0", id: 1, method: "tools/list" }).kind, "request");
  assert.equal(describe({ jsonrpc: "2.0", method: "notifications/initialized" }).kind, "notification");
  assert.equal(describe({ jsonrpc: "2.0", id: 1, result: {} }).kind, "response");
  assert.equal(describe({ jsonrpc: "2.0", id: 1, error: { code: -32601, message: "no" } }).kind, "response");
});

test("an id of null still makes a request: the words show it as the relay will see it", () => {
  const info = describe({ jsonrpc: "2.0", id: null, method: "ping" });
  assert.equal(info.kind, "request");
  assert.match(info.words, /ping, id null/);
});

test("what the relay will not forward is 'other', with the reason in words", () => {
  assert.match(describe([{ jsonrpc: "2.0", id: 1, method: "ping" }]).words, /batch/);
  for (const value of [null, 3, "ping", true]) assert.equal(describe(value).kind, "other");
  // An id with neither method nor result/error is not a message; nor is a method that is not a string.
  assert.equal(describe({ jsonrpc: "2.0", id: 1 }).kind, "other");
  assert.equal(describe({ jsonrpc: "2.0", id: 1, method: 7 }).kind, "other");
});
