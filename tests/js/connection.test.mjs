// The console's WebSocket (static/console/connection.js) against a fake socket: reconnects that keep
// the session, the backoff between them, and the closes after which it never reconnects.

import assert from "node:assert/strict";
import { afterEach, beforeEach, mock, test } from "node:test";

class FakeSocket extends EventTarget {
  static OPEN = 1;
  static made = [];
  constructor(url, protocol) {
    super();
    this.url = new URL(url);
    this.protocol = protocol;
    this.readyState = 0;
    this.sent = [];
    this.closedWith = null;
    FakeSocket.made.push(this);
  }
  send(text) {
    this.sent.push(text);
  }
  close(code, reason) {
    this.closedWith = { code, reason };
  }
  // What the browser does when the relay acts:
  opened() {
    this.readyState = FakeSocket.OPEN;
    this.dispatchEvent(new Event("open"));
  }
  frame(frame) {
    this.dispatchEvent(Object.assign(new Event("message"), { data: JSON.stringify(frame) }));
  }
  lost(code, reason = "") {
    this.readyState = 3;
    this.dispatchEvent(Object.assign(new Event("close"), { code, reason }));
  }
}

globalThis.WebSocket = FakeSocket;
globalThis.window = new EventTarget();
globalThis.location = { protocol: "https:", host: "playground.example" };
globalThis.document = { querySelector: () => null }; // a page whose visitor already has an identity
const { Connection } = await import("../../static/console/connection.js");

function connect() {
  const frames = [];
  const statuses = [];
  const connection = new Connection("demo-orders", "lesson/step", {
    frame: (frame) => frames.push(frame),
    status: (status, detail) => statuses.push([status, detail]),
  });
  return { connection, frames, statuses };
}

const latest = () => FakeSocket.made.at(-1);

beforeEach(() => {
  FakeSocket.made = [];
  mock.timers.enable({ apis: ["setTimeout"] });
});
afterEach(() => mock.timers.reset());

test("it opens the server's route with the step and the envelope subprotocol, over wss on https", () => {
  const { connection, statuses } = connect();
  connection.open();
  const socket = latest();
  assert.equal(socket.url.protocol, "wss:");
  assert.equal(socket.url.pathname, "/ws/demo-orders");
  assert.equal(socket.url.searchParams.get("step"), "lesson/step");
  assert.equal(socket.url.searchParams.get("session"), null);
  assert.equal(socket.protocol, "playground.v1");
  assert.deepEqual(statuses, [["connecting", { attempt: 0 }]]);
  socket.opened();
  assert.equal(connection.send({ type: "send", text: "{}" }), true);
  assert.deepEqual(socket.sent, ['{"type":"send","text":"{}"}']);
});

test("a lost connection reconnects after a growing delay, resuming the session from the last seq", () => {
  const { connection, statuses } = connect();
  connection.open();
  const first = latest();
  first.opened();
  first.frame({ type: "state", session: "s-1" });
  first.frame({ type: "received", seq: 7, message: {} });
  first.lost(1006);
  assert.deepEqual(statuses.at(-1), ["lost", { attempt: 1, delayMs: 300 }]);
  assert.equal(FakeSocket.made.length, 1, "no reconnect before the delay");
  mock.timers.tick(300);
  const second = latest();
  assert.equal(FakeSocket.made.length, 2);
  assert.equal(second.url.searchParams.get("session"), "s-1");
  assert.equal(second.url.searchParams.get("last_seq"), "7");
  second.lost(1006); // failed again before opening: the delay grows
  assert.deepEqual(statuses.at(-1), ["lost", { attempt: 2, delayMs: 1000 }]);
  mock.timers.tick(999);
  assert.equal(FakeSocket.made.length, 2);
  mock.timers.tick(1);
  latest().opened(); // once open, the next loss starts from the shortest delay again
  latest().lost(1006);
  assert.deepEqual(statuses.at(-1), ["lost", { attempt: 1, delayMs: 300 }]);
});

test("the delay stops growing at its longest", () => {
  const { connection, statuses } = connect();
  connection.open();
  for (let i = 0; i < 8; i += 1) {
    latest().lost(1006);
    mock.timers.tick(statuses.at(-1)[1].delayMs);
  }
  assert.deepEqual(
    statuses.filter(([s]) => s === "lost").map(([, d]) => d.delayMs),
    [300, 1000, 2000, 4000, 8000, 8000, 8000, 8000],
  );
});

for (const [code, why] of [
  [1000, "ended on purpose"],
  [1011, "the server exited"],
  [1013, "the playground is full"],
]) {
  test(`a close ${code} (${why}) is final: no reconnect`, () => {
    const { connection, statuses } = connect();
    connection.open();
    latest().opened();
    latest().lost(code, why);
    assert.deepEqual(statuses.at(-1), ["closed", { code, reason: why }]);
    assert.equal(connection.finished, true);
    mock.timers.tick(60_000);
    assert.equal(FakeSocket.made.length, 1);
    assert.equal(connection.send({ type: "send", text: "{}" }), false);
  });
}

test("a socket replaced by a new start is closed with a goodbye, and its late events are ignored", () => {
  const { connection, frames, statuses } = connect();
  connection.open();
  const old = latest();
  connection.open(); // a restart before the first server was up
  assert.deepEqual(old.closedWith, { code: 1000, reason: "replaced by a new connection" });
  const current = latest();
  assert.notEqual(current, old);
  old.frame({ type: "state", session: "old" });
  old.lost(1006);
  assert.equal(frames.length, 0);
  assert.equal(statuses.filter(([s]) => s === "lost").length, 0);
  assert.equal(connection.session, null);
});

test("a frame that is not JSON is dropped; the session keeps going", () => {
  const { connection, frames } = connect();
  connection.open();
  const socket = latest();
  socket.opened();
  socket.dispatchEvent(Object.assign(new Event("message"), { data: "not json" }));
  socket.frame({ type: "state", session: "s-2" });
  assert.equal(frames.length, 1);
  assert.equal(connection.session, "s-2");
});

test("openLater is the one timer: an open before it fires cancels it", () => {
  const { connection } = connect();
  connection.openLater(5000); // the playground was full
  connection.open(); // the learner restarts first
  mock.timers.tick(5000);
  assert.equal(FakeSocket.made.length, 1);
});

test("close() leaves for good: a goodbye, and no reconnect however long", () => {
  const { connection } = connect();
  connection.open();
  const socket = latest();
  socket.opened();
  connection.close();
  assert.deepEqual(socket.closedWith, { code: 1000, reason: "the page was closed" });
  socket.lost(1000);
  mock.timers.tick(60_000);
  assert.equal(FakeSocket.made.length, 1);
});
