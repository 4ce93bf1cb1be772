// What the console offers to send after a reply that asks for it (static/console/followups.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { followUps } from "../../static/console/followups.js";

const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
};
const CALL = {
  jsonrpc: "2.0",
  id: 4,
  method: "tools/call",
  params: { _meta: ENVELOPE, name: "book_seats", arguments: { count: 2 } },
};

test("an input_required result gives the retry: a new id, an answer for each question, the state as given", () => {
  const asked = {
    jsonrpc: "2.0",
    id: 4,
    result: {
      resultType: "input_required",
      inputRequests: {
        where: {
          method: "elicitation/create",
          params: {
            message: "Which section?",
            requestedSchema: {
              type: "object",
              properties: { section: { type: "string", enum: ["balcony", "stalls"] } },
            },
          },
        },
      },
      requestState: "x".repeat(400),
    },
  };
  const [retry] = followUps(CALL, asked, 5);
  assert.equal(retry.label, "Answer and retry");
  assert.deepEqual(JSON.parse(retry.text), {
    jsonrpc: "2.0",
    id: 5,
    method: "tools/call",
    params: {
      _meta: ENVELOPE,
      name: "book_seats",
      arguments: { count: 2 },
      inputResponses: { where: { action: "accept", content: { section: "balcony" } } },
      requestState: "x".repeat(400),
    },
  });
});

test("a second round replaces the first round's answers and state, and a round without state drops it", () => {
  const first = JSON.parse(
    followUps(
      CALL,
      {
        id: 4,
        result: { resultType: "input_required", requestState: "s1", inputRequests: { a: { method: "roots/list" } } },
      },
      5,
    )[0].text,
  );
  const second = JSON.parse(
    followUps(
      first,
      { id: 5, result: { resultType: "input_required", inputRequests: { b: { method: "roots/list" } } } },
      6,
    )[0].text,
  );
  assert.deepEqual(Object.keys(second.params.inputResponses), ["b"]);
  assert.ok(Array.isArray(second.params.inputResponses.b.roots));
  assert.equal("requestState" in second.params, false);
});

test("a task handle gives tasks/get and tasks/cancel with its id, in the request's envelope", () => {
  const created = {
    id: 4,
    result: { resultType: "task", taskId: "3f6c1d2e-0000-4000-8000-000000000000", status: "working" },
  };
  const [poll, cancel] = followUps(CALL, created, 9);
  assert.deepEqual(JSON.parse(poll.text), {
    jsonrpc: "2.0",
    id: 9,
    method: "tasks/get",
    params: { _meta: ENVELOPE, taskId: created.result.taskId },
  });
  assert.equal(JSON.parse(cancel.text).method, "tasks/cancel");
});

test("a 2025-11-25 task result gives the same, without an envelope", () => {
  const request = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "render", task: { ttl: 60000 } } };
  const [poll] = followUps(request, { id: 2, result: { task: { taskId: "t-1", status: "working" } } }, 3);
  assert.deepEqual(JSON.parse(poll.text).params, { taskId: "t-1" });
});

test("other replies, errors and replies to nothing give no follow-up", () => {
  assert.deepEqual(followUps(CALL, { id: 4, result: { content: [] } }, 5), []);
  assert.deepEqual(followUps(CALL, { id: 4, error: { code: -32602, message: "no" } }, 5), []);
  assert.deepEqual(followUps(undefined, { id: 4, result: { resultType: "task", taskId: "t" } }, 5), []);
});
