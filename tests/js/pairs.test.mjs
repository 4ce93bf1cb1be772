// The console's bookkeeping of a session (static/console/pairs.js), frame by frame as the relay
// sends them (docs/websocket.md): `sent` with seq, `received` with `answers` for a paired reply.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Pairs } from "../../static/console/pairs.js";

/** Pairs on a clock the test moves by hand. */
function pairsAt(start = 1000) {
  const clock = { ms: start };
  return { pairs: new Pairs(() => clock.ms), clock };
}

const request = (seq, id, method = "ping") => ({ type: "sent", seq, message: { jsonrpc: "2.0", id, method } });
const result = (seq, answers, id) => ({ type: "received", seq, answers, message: { jsonrpc: "2.0", id, result: {} } });

test("a reply pairs with the request it answers, by the relay's `answers`", () => {
  const { pairs } = pairsAt();
  assert.deepEqual(pairs.sent(request(1, 1, "initialize"), "request"), { pairKey: "c:1", label: "initialize" });
  assert.deepEqual(pairs.sent(request(2, 2, "tools/list"), "request"), { pairKey: "c:2", label: "tools/list" });
  // Out of order, and with the same id as another request: the seq decides, not the id.
  assert.deepEqual(pairs.received(result(3, 2, 2), "response"), {
    pairKey: "c:2",
    label: "result",
    method: "tools/list",
  });
  const error = {
    type: "received",
    seq: 4,
    answers: 1,
    message: { jsonrpc: "2.0", id: 1, error: { code: -32602, message: "bad" } },
  };
  assert.deepEqual(pairs.received(error, "response"), { pairKey: "c:1", label: "error -32602", method: "initialize" });
  assert.equal(pairs.methodOf(1), "initialize");
});

test("requests wait until answered; the newest waiting id is what a cancel names", () => {
  const { pairs } = pairsAt();
  assert.equal(pairs.newestWaitingId(), null);
  pairs.sent(request(1, "a"), "request");
  pairs.sent(request(2, "b"), "request");
  pairs.sent(
    { type: "sent", seq: 3, message: { jsonrpc: "2.0", method: "notifications/initialized" } },
    "notification",
  );
  assert.deepEqual([...pairs.waiting.keys()], [1, 2]); // a notification waits for nothing
  assert.equal(pairs.newestWaitingId(), "b");
  pairs.received(result(4, 2, "b"), "response");
  assert.equal(pairs.newestWaitingId(), "a");
  pairs.received(result(5, 1, "a"), "response");
  assert.equal(pairs.waiting.size, 0);
  assert.equal(pairs.newestWaitingId(), null);
});

test("how long a request has waited comes from the clock; an answered one waits no more", () => {
  const { pairs, clock } = pairsAt(5000);
  pairs.sent(request(1, 1), "request");
  clock.ms += 1500;
  assert.equal(pairs.waitedMs(1), 1500);
  pairs.received(result(2, 1, 1), "response");
  assert.equal(pairs.waitedMs(1), null);
});

test("the relay answering for a request, or the learner giving up, ends its wait", () => {
  const { pairs } = pairsAt();
  pairs.sent(request(1, 7), "request");
  pairs.sent(request(2, "7"), "request"); // a different id: 7 and "7" are not the same
  pairs.sent(request(3, 8), "request");
  pairs.refused(7);
  assert.deepEqual([...pairs.waiting.keys()], [2, 3]);
  pairs.refused(null); // a refusal with no id (unparseable text) ends no wait
  pairs.refused(undefined);
  assert.deepEqual([...pairs.waiting.keys()], [2, 3]);
  pairs.giveUp(3);
  assert.deepEqual([...pairs.waiting.keys()], [2]);
  pairs.serverExited();
  assert.equal(pairs.waiting.size, 0);
});

test("a server's request pairs with the learner's reply to it, by id", () => {
  const { pairs } = pairsAt();
  const asked = {
    type: "received",
    seq: 4,
    message: { jsonrpc: "2.0", id: 0, method: "sampling/createMessage", params: {} },
  };
  assert.deepEqual(pairs.received(asked, "request"), { pairKey: "s:0:4", label: "sampling/createMessage" });
  const answer = { type: "sent", seq: 5, message: { jsonrpc: "2.0", id: 0, result: { role: "assistant" } } };
  assert.deepEqual(pairs.sent(answer, "response"), { pairKey: "s:0:4", label: "result" });
  const refusal = { type: "sent", seq: 6, message: { jsonrpc: "2.0", id: 0, error: { code: -1, message: "no" } } };
  assert.deepEqual(pairs.sent(refusal, "response"), { pairKey: "s:0:4", label: "error -1" });
  const stray = { type: "sent", seq: 7, message: { jsonrpc: "2.0", id: 99, result: {} } };
  assert.deepEqual(pairs.sent(stray, "response"), { pairKey: null, label: "result" });
  assert.equal(pairs.waiting.size, 0); // replies to the server wait for nothing
  assert.equal(pairs.isUsed(0), false); // the server's ids are not the learner's
});

test("lines that pair with nothing are labelled for the diagram", () => {
  const { pairs } = pairsAt();
  const notification = { type: "received", seq: 1, message: { jsonrpc: "2.0", method: "notifications/progress" } };
  assert.deepEqual(pairs.received(notification, "notification"), { pairKey: null, label: "notifications/progress" });
  const orphan = { type: "received", seq: 2, message: { jsonrpc: "2.0", id: 5, result: {} } };
  assert.deepEqual(pairs.received(orphan, "response"), { pairKey: null, label: "reply to no request" });
  assert.deepEqual(pairs.received({ type: "received", seq: 3, message: null }, "other"), {
    pairKey: null,
    label: "not JSON",
  });
  assert.deepEqual(pairs.sent({ type: "sent", seq: 4, message: { jsonrpc: "2.0" } }, "other"), {
    pairKey: null,
    label: "message",
  });
});

test("the next free id is one more than the largest integer id used", () => {
  const { pairs } = pairsAt();
  assert.equal(pairs.nextFreeId, 1);
  pairs.sent(request(1, 1), "request");
  pairs.sent(request(2, 41), "request");
  pairs.sent(request(3, "99"), "request"); // a string id is not a number the next id follows
  pairs.sent(request(4, 2.5), "request");
  assert.equal(pairs.nextFreeId, 42);
  assert.equal(pairs.isUsed(41), true);
  assert.equal(pairs.isUsed("99"), true);
  assert.equal(pairs.isUsed(99), false);
});

test("a message prepared for sending takes a fresh id at once, before its frame is back", () => {
  const { pairs } = pairsAt();
  pairs.sent(request(1, 3), "request");
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: {} };
  const first = pairs.prepare(initialize);
  const second = pairs.prepare({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  assert.equal(first.id, 4);
  assert.equal(second.id, 5);
  assert.equal(initialize.id, 1); // the example itself is left as it is
  const note = pairs.prepare({ jsonrpc: "2.0", method: "notifications/initialized" });
  assert.equal("id" in note, false);
  assert.ok(pairs.hasSent("initialize") && pairs.hasSent("notifications/initialized"));
  assert.equal(pairs.hasSent("tools/call"), false);
});

test("a prepared request is settled only once it went out and its reply came, or it was refused", () => {
  const { pairs } = pairsAt();
  const first = pairs.prepare({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
  assert.equal(pairs.settled(first.id), false); // not even sent on yet: "Try it" waits
  pairs.sent(request(1, first.id, "initialize"), "request");
  assert.equal(pairs.settled(first.id), false); // waiting for its reply
  pairs.received(result(2, 1, first.id), "response");
  assert.equal(pairs.settled(first.id), true);
  const second = pairs.prepare({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  pairs.sent(request(3, second.id, "tools/list"), "request");
  pairs.refused(second.id);
  assert.equal(pairs.settled(second.id), true);
  const third = pairs.prepare({ jsonrpc: "2.0", id: 1, method: "ping" });
  pairs.sent(request(4, third.id), "request");
  pairs.serverExited();
  assert.equal(pairs.settled(third.id), true); // no reply will come
});

test("a reconnect that finds the old session gone says so, and starts the bookkeeping afresh", () => {
  const { pairs } = pairsAt();
  assert.equal(pairs.ready("s1", false), false); // the page's first session replaces nothing
  pairs.sent(request(1, 1, "initialize"), "request");
  assert.equal(pairs.ready("s1", true), false); // resumed: nothing lost
  assert.equal(pairs.waiting.size, 1);
  assert.equal(pairs.ready("s2", false), true); // the old session ended while the connection was down
  assert.equal(pairs.waiting.size, 0);
  assert.equal(pairs.nextFreeId, 1);
  assert.equal(pairs.hasSent("initialize"), false);
  assert.equal(pairs.ready("s2", false), false); // a restart keeps the session: not a loss
});

test("a new server the learner asked for is not a lost session", () => {
  const { pairs } = pairsAt();
  pairs.ready("s1", false);
  pairs.sent(request(1, 1), "request");
  pairs.leave();
  assert.equal(pairs.waiting.size, 0);
  assert.equal(pairs.ready("s2", false), false);
});

test("forgetting (a restart's fresh transcript) keeps the session", () => {
  const { pairs } = pairsAt();
  pairs.ready("s1", false);
  pairs.sent(request(1, 9, "initialize"), "request");
  pairs.forget();
  assert.equal(pairs.methodOf(1), undefined);
  assert.equal(pairs.isUsed(9), false);
  assert.equal(pairs.ready("s1", undefined), false); // a restart's ready frame has no `resumed`
});
