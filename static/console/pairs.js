// The console's bookkeeping of one session, without the DOM: which request a reply answers, the
// requests still waiting for their reply, the ids used, and whether a reconnect lost the session.
// `kind` is the message's JSON-RPC kind ("request", "notification", "response", "other") as
// message.js `describe` tells it. Unit tests: tests/js/pairs.test.mjs.

const idKey = (id) => JSON.stringify(id);

/** "result", or "error <code>" for an error reply: the arrow's label on the diagram. */
function outcome(message) {
  return message && "error" in message ? `error ${message.error?.code}` : "result";
}

export class Pairs {
  /** @param {() => number} now a clock in milliseconds (the page's performance.now) */
  constructor(now = () => performance.now()) {
    this.now = now;
    this.session = null; // the session the frames below belong to
    this.forget();
  }

  /** A fresh session or transcript: nothing sent yet, nothing waiting. */
  forget() {
    this.methods = new Map(); // seq of a client request -> its method
    this.waiting = new Map(); // seq of a client request still without a reply -> {method, id, sentAt}
    this.serverRequests = new Map(); // JSON of a server request's id -> its pair key
    this.usedIds = new Set(); // JSON of every id the learner's requests used
    this.sentIds = new Set(); // JSON of the ids of requests the relay has sent on (their `sent` frames)
    this.sentMethods = new Set(); // methods sent: what an example's "before" may skip
  }

  /**
   * A session is ready. True when it replaces one this page held and lost: the connection dropped
   * and, by the time it came back, the old session had ended (it was not resumed). A restart keeps
   * its session; a new server asked for by the learner comes after `leave()`.
   */
  ready(session, resumed) {
    const lost = !resumed && this.session !== null && session !== this.session;
    this.session = session;
    if (lost) this.forget();
    return lost;
  }

  /** The learner left this session for a new one: what comes next replaces nothing. */
  leave() {
    this.session = null;
    this.forget();
  }

  /** A message the learner sent (a `sent` frame): {pairKey, label} for the diagram. */
  sent(frame, kind) {
    const message = frame.message || {};
    if (typeof message.method === "string") this.sentMethods.add(message.method);
    if (kind === "request") {
      this.methods.set(frame.seq, message.method);
      this.usedIds.add(idKey(message.id));
      this.sentIds.add(idKey(message.id));
      this.waiting.set(frame.seq, { method: message.method, id: message.id, sentAt: this.now() });
      return { pairKey: `c:${frame.seq}`, label: message.method };
    }
    if (kind === "response") {
      return { pairKey: this.serverRequests.get(idKey(message.id)) || null, label: outcome(message) };
    }
    return { pairKey: null, label: message.method || "message" };
  }

  /**
   * A line from the server (a `received` frame; the relay sets `answers` to the seq of the request
   * it answers): {pairKey, label, method} where method is the answered request's, if any.
   */
  received(frame, kind) {
    const message = frame.message;
    if (frame.answers) {
      this.waiting.delete(frame.answers);
      return { pairKey: `c:${frame.answers}`, label: outcome(message), method: this.methods.get(frame.answers) };
    }
    if (kind === "request") {
      const pairKey = `s:${idKey(message.id)}:${frame.seq}`;
      this.serverRequests.set(idKey(message.id), pairKey);
      return { pairKey, label: message.method };
    }
    return { pairKey: null, label: message ? message.method || "reply to no request" : "not JSON" };
  }

  /** The relay answered for the request with this id (the server can no longer answer it). */
  refused(id) {
    if (id === null || id === undefined) return;
    for (const [seq, request] of this.waiting) {
      if (idKey(request.id) === idKey(id)) this.waiting.delete(seq);
    }
  }

  /** The server stopped: no request still waiting will get its reply. */
  serverExited() {
    this.waiting.clear();
  }

  /** The learner stopped waiting for this request (they cancel it: no reply is due). */
  giveUp(seq) {
    this.waiting.delete(seq);
  }

  /** The method of the client request sent as `seq`, if this page saw it. */
  methodOf(seq) {
    return this.methods.get(seq);
  }

  /** How long the request sent as `seq` has waited, in ms (null once answered). */
  waitedMs(seq) {
    const request = this.waiting.get(seq);
    return request ? this.now() - request.sentAt : null;
  }

  /** The id of the newest request still waiting for its reply, or null. */
  newestWaitingId() {
    const waiting = [...this.waiting.values()];
    return waiting.length ? waiting[waiting.length - 1].id : null;
  }

  isUsed(id) {
    return this.usedIds.has(idKey(id));
  }

  /** One more than the largest integer id used so far (1 at first). */
  get nextFreeId() {
    let max = 0;
    for (const key of this.usedIds) {
      const n = Number(key);
      if (Number.isInteger(n)) max = Math.max(max, n);
    }
    return max + 1;
  }

  /**
   * A message about to be sent for the learner ("Try it" sends what an example needs first): it
   * takes a fresh id if it has one, at once, so the next one cannot take the same id before the
   * `sent` frame is back. Returns the copy to send.
   */
  prepare(message) {
    const copy = { ...message };
    if ("id" in copy) {
      copy.id = this.nextFreeId;
      this.usedIds.add(idKey(copy.id));
    }
    if (typeof copy.method === "string") this.sentMethods.add(copy.method);
    return copy;
  }

  /** Whether the request with this id went out and is no longer waiting: answered, refused, or
   * its server gone. */
  settled(id) {
    const key = idKey(id);
    return this.sentIds.has(key) && ![...this.waiting.values()].some((request) => idKey(request.id) === key);
  }

  hasSent(method) {
    return this.sentMethods.has(method);
  }
}
