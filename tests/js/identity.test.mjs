// A console on a page served to a visitor without a learner identity (static/console/connection.js):
// a WebSocket's handshake cannot set a cookie, so it asks for one first, once per page.

import assert from "node:assert/strict";
import { test } from "node:test";

const made = [];
class FakeSocket extends EventTarget {
  constructor(url) {
    super();
    this.url = url;
    made.push(this);
  }
  close() {}
}

const asked = [];
let answer;
globalThis.WebSocket = FakeSocket;
globalThis.window = new EventTarget();
globalThis.location = { protocol: "http:", host: "playground.example" };
globalThis.document = { querySelector: (selector) => (selector === "[data-identity=none]" ? {} : null) };
globalThis.fetch = (url, init) => {
  asked.push([url, init?.method]);
  return new Promise((resolve) => {
    answer = resolve;
  });
};
const { Connection } = await import("../../static/console/connection.js");

const consoleFor = (server) => new Connection(server, null, { frame: () => {}, status: () => {} });

test("the first console asks for an identity and opens only once it is answered; others ask no more", async () => {
  const first = consoleFor("demo-orders");
  const second = consoleFor("demo-tasks");
  first.open();
  second.open();
  assert.deepEqual(asked, [["/api/identity", "POST"]]);
  assert.equal(made.length, 0); // no handshake before the cookie exists
  answer({ status: 204 });
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(
    made.map((socket) => new URL(socket.url).pathname),
    ["/ws/demo-orders", "/ws/demo-tasks"],
  );
  consoleFor("demo-orders").open(); // a later console opens at once
  assert.equal(made.length, 3);
  assert.equal(asked.length, 1);
});
