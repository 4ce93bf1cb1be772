// The replies a server's own request card offers, prefilled (static/console/cards.js repliesFor).
import assert from "node:assert/strict";
import { test } from "node:test";

import { repliesFor } from "../../static/console/cards.js";

test("a form elicitation is accepted with content that fits its schema", () => {
  const [accept] = repliesFor({
    id: 7,
    method: "elicitation/create",
    params: {
      mode: "form",
      message: "Which seat?",
      requestedSchema: { type: "object", properties: { seat: { type: "string", enum: ["aisle", "window"] } } },
    },
  });
  assert.deepEqual(JSON.parse(accept.text), {
    jsonrpc: "2.0",
    id: 7,
    result: { action: "accept", content: { seat: "aisle" } },
  });
});

test("a URL-mode elicitation is accepted without content: the answer is given on the page it opens", () => {
  const replies = repliesFor({
    id: 8,
    method: "elicitation/create",
    params: {
      mode: "url",
      message: "Sign in",
      url: "https://example.com/sign-in",
      elicitationId: "e-1",
    },
  });
  assert.deepEqual(
    replies.map((r) => r.label),
    ["Accept (open the link)", "Decline", "Cancel"],
  );
  assert.deepEqual(JSON.parse(replies[0].text), { jsonrpc: "2.0", id: 8, result: { action: "accept" } });
});

test("an unknown request is answered Method not found", () => {
  const [only] = repliesFor({ id: 9, method: "frobnicate" });
  assert.equal(JSON.parse(only.text).error.code, -32601);
});
