// The envelope-mode WebSocket (docs/websocket.md), with reconnects that keep the session and transcript.

const SUBPROTOCOL = "playground.v1";
const BACKOFF_MS = [300, 1000, 2000, 4000, 8000]; // then every 8 s until it works
// Closes that are final: server exited (1011), ended on purpose (1000), playground full (1013).
const FINAL_CLOSES = new Set([1000, 1011, 1013]);

// A WebSocket's handshake cannot set a cookie: on a page served to a visitor without a learner
// identity (`data-identity="none"`), the first console asks for one (POST /api/identity) before it
// opens, once per page, so that its session and the checks it passes are the visitor's own. If that
// fails, the console still opens, counted by the visitor's address.
let identityReady = document.querySelector("[data-identity=none]") === null;
let identityAsked = null;

function identityFirst() {
  identityAsked ??= fetch("/api/identity", { method: "POST" }).then(
    () => {},
    () => {},
  );
  return identityAsked.then(() => {
    identityReady = true;
  });
}

export class Connection {
  /**
   * @param {string} server demo server name
   * @param {string|null} step lesson/step slug for hands-on checks
   * @param {{frame: Function, status: Function}} on callbacks: every frame; connection events
   */
  constructor(server, step, on) {
    this.server = server;
    this.step = step;
    this.on = on;
    this.ws = null;
    this.session = null;
    this.lastSeq = 0;
    this.attempt = 0;
    this.timer = null;
    this.finished = false; // closed for good: only a new start opens it again
    window.addEventListener("online", () => this.ws === null && !this.finished && this.retryNow());
  }

  url(resume) {
    const params = new URLSearchParams();
    if (this.step) params.set("step", this.step);
    if (resume && this.session) {
      params.set("session", this.session);
      params.set("last_seq", String(this.lastSeq));
    }
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = params.toString();
    return `${scheme}//${location.host}/ws/${encodeURIComponent(this.server)}${query ? `?${query}` : ""}`;
  }

  /** Open a connection: resume the current session when there is one, else a new server. */
  open(resume = false) {
    clearTimeout(this.timer);
    if (!identityReady) {
      identityFirst().then(() => this.open(resume));
      return;
    }
    this.finished = false;
    if (!resume) {
      this.session = null;
      this.lastSeq = 0;
    }
    if (this.ws) {
      // A socket still connecting (a restart asked for before the first server was up): it goes, with
      // a goodbye that ends its session at once, so one page never holds two sessions.
      const old = this.ws;
      this.ws = null;
      old.close(1000, "replaced by a new connection");
    }
    const ws = new WebSocket(this.url(resume), SUBPROTOCOL);
    this.ws = ws;
    this.on.status(resume ? "reconnecting" : "connecting", { attempt: this.attempt });
    ws.addEventListener("open", () => {
      this.attempt = 0;
    });
    ws.addEventListener("message", (event) => {
      if (this.ws !== ws) return; // an old socket we replaced
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return; // the relay only sends JSON frames
      }
      if (frame.type === "state" && frame.session) this.session = frame.session;
      if (typeof frame.seq === "number") this.lastSeq = Math.max(this.lastSeq, frame.seq);
      this.on.frame(frame);
    });
    ws.addEventListener("close", (event) => {
      if (this.ws !== ws) return; // an old socket we replaced
      this.ws = null;
      if (FINAL_CLOSES.has(event.code)) {
        this.finished = true;
        this.on.status("closed", { code: event.code, reason: event.reason });
        return;
      }
      this.scheduleReconnect();
    });
  }

  scheduleReconnect() {
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    this.on.status("lost", { attempt: this.attempt, delayMs: delay });
    this.timer = setTimeout(() => this.open(this.session !== null), delay);
  }

  /** A new server in `ms` (the playground was full). The one timer of the connection: any open
   * before then (a restart, a new server) cancels it, so it cannot replace the session that got in. */
  openLater(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.open(false), ms);
  }

  retryNow() {
    clearTimeout(this.timer);
    this.open(this.session !== null);
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  send(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Leave for good (the page is closing): no reconnect. */
  close() {
    clearTimeout(this.timer);
    this.finished = true;
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000, "the page was closed");
    }
  }
}
