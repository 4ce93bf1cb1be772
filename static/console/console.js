// The playground console: wires the editor, the connection, the log, the diagram and the cards together.
// It speaks the envelope frames of docs/websocket.md; pairs.js keeps the session's bookkeeping.
// Text from the server only ever goes in as text.

import { AppHost } from "./apphost.js";
import { appLabel, appWords } from "./appwords.js";
import { CheckList } from "./checks.js";
import { Connection } from "./connection.js";
import { RequestCards } from "./cards.js";
import { Editor } from "./editor.js";
import { describe } from "./message.js";
import { button, el } from "./dom.js";
import { addTryButtons, takeHandoff } from "./examples.js";
import { followUps } from "./followups.js";
import { labels } from "./labels.js";
import { MessageLog } from "./log.js";
import { Pairs } from "./pairs.js";
import { SequenceDiagram } from "./sequence.js";
import { fillTemplates } from "./templatemenu.js";
import { findTemplate, pretty, templateGroups } from "./templates.js";
import { exportTranscript } from "./transcript.js";
import { Waits } from "./waits.js";

/** The template menu's entry that puts the step's own message back in the editor. */
const STEP_MESSAGE = { key: "step-message", label: "This step's own message" };

/** What a console signed out by a new resume code says (null for any other reason): a new server
 * would start as someone new, so the way on is the new code. */
function signedOut(reason) {
  if (!/^you were signed out/i.test(reason || "")) return null;
  return `${sentence(reason)} Enter it on "Continue on another device" (/resume) to go on as yourself.`;
}

/** A reason from the relay as a sentence of its own: "your instructor ended this console" reads
 * "Your instructor ended this console." (the relay's own sentences stay as they are). */
function sentence(text) {
  const said = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(said) ? said : `${said}.`;
}

// How long "Try it" waits for the reply to a message it sends first before it goes on regardless.
const TRY_WAIT_MS = 10_000;

/** Mark a log entry as the app lane's: a message between the console and an app, a call the host
 * made for one, or a note about one. */
function inAppLane(li) {
  li.dataset.lane = "app";
  return li;
}

class Console {
  constructor(root) {
    this.root = root;
    this.server = root.dataset.server;
    this.step = root.dataset.step || null;
    this.revision = root.dataset.rev || null;
    const $ = (sel) => root.querySelector(sel);
    this.ui = {
      state: $("[data-console-state]"),
      facts: $(".session-facts"),
      send: $("[data-action=send]"),
      newServer: $("[data-action=new-server]"),
      announcer: $("[data-console-announce]"),
      tools: $("[data-tool-feedback]"),
      template: $("select[data-templates]"),
    };
    this.entries = []; // every frame of this page, for the export when the server's copy is gone
    this.fullText = ""; // what the console said when the playground had no place for it
    this.pairs = new Pairs();

    this.announce = (text) => {
      this.ui.announcer.textContent = text;
    };
    this.editor = new Editor($("textarea.editor"), $("[data-editor-status]"), {
      send: (text) => this.sendText(text),
      note: (value, info) => this.idNote(value, info),
    });
    // While an app is open, its own traffic does not scroll the panel around the log: that would
    // carry the app's card out of view just as the learner is to use it.
    this.log = new MessageLog($("ol.log"), {
      edit: (text) => this.put(text),
      follow: (li) => !(li.dataset.lane === "app" && this.apps.showing),
    });
    this.diagram = new SequenceDiagram($("[data-sequence]"));
    this.cards = new RequestCards($("[data-cards]"), { send: (text) => this.sendText(text, true) });
    this.apps = new AppHost($("[data-app-box]"), {
      origin: root.dataset.appsOrigin || null,
      off: root.dataset.appsOff || "",
      send: (frame) => this.connection.send(frame),
      note: (text, kind) => inAppLane(this.log.note(text, kind)),
      revision: () => this.ui.facts.querySelector("[data-fact=revision]")?.textContent || this.revision,
      messageBytes: Number(root.dataset.maxMessageBytes),
      messagesPer10s: Number(root.dataset.maxMessagesPer10s),
    });
    this.checks = new CheckList($("ul.checks"), this.announce, $("[data-check-news]"), $("[data-next-hint]"));
    this.checks.showHint();
    this.waits = new Waits(
      $("[data-wait]"),
      this.pairs,
      {
        cancel: (id) =>
          this.put(
            pretty({
              jsonrpc: "2.0",
              method: "notifications/cancelled",
              params: { requestId: id, reason: "took too long" },
            }),
          ),
        serverAsking: () => this.cards.openMethods()[0] || null,
      },
      Number(root.dataset.replyTimeoutMs) || undefined,
    );
    this.echoes = 0;
    this.readies = 0; // fresh servers ready so far (Try-it waits for one it asked for)
    // The step's own message, which its checks are written for: a Try-it or a template replaces it
    // in the editor, and the menu brings it back.
    this.stepMessage = this.step ? this.editor.textarea.defaultValue.trim() : "";
    this.templates = templateGroups(this.server, this.revision);
    fillTemplates(this.ui.template, this.templates, this.stepMessage ? STEP_MESSAGE : null);
    this.connection = new Connection(this.server, this.step, {
      frame: (frame) => this.onFrame(frame),
      status: (kind, detail) => this.onConnection(kind, detail),
    });
    this.bind();
    this.connection.open(false);
    window.addEventListener("pagehide", () => this.connection.close());
  }

  bind() {
    const on = (action, fn) => this.root.querySelector(`[data-action=${action}]`).addEventListener("click", fn);
    on("send", () => this.sendText(this.editor.text));
    on("template", () => this.useTemplate());
    on("next-id", () => this.nextId());
    on("restart", () => this.restart());
    on("new-server", () => this.newServer());
    on("clear", () => {
      this.log.clear();
      this.diagram.clear();
      this.entries = [];
      this.announce("The log is cleared.");
    });
    on("export", () => exportTranscript(this.connection.session, this.server, this.entries));
    // Arrow keys scroll the log and the diagram here; they must not turn the lesson's page (course.js).
    this.root.addEventListener("keydown", (event) => {
      if (event.key === "ArrowLeft" || event.key === "ArrowRight") event.stopPropagation();
    });
  }

  // ---- sending ----

  sendText(text, fromCard = false) {
    if (!this.connection.send({ type: "send", text })) {
      if (this.root.dataset.state === "full") {
        // Waiting for a place: say so again, not "reconnecting", which is not what is happening.
        this.setState("full", `Nothing was sent. ${this.fullText}`);
      } else if (this.connection.finished) {
        // Closed for good (the server exited, or the session ended): no reconnect is coming.
        this.setState("exited", "Nothing was sent: this server has stopped. Start a new server, then send again.");
      } else {
        this.setState(
          "lost",
          "Not connected, so nothing was sent. The console is reconnecting; send again in a moment.",
        );
      }
      return;
    }
    this.waits.startSending();
    if (fromCard) this.editor.textarea.focus();
  }

  /** Put a message in the editor. Only "Use template" puts a template: anything else leaves the
   * menu on its placeholder, so that it never names a message the editor does not hold. */
  put(text, { template = false } = {}) {
    if (!template) this.ui.template.value = "";
    this.editor.setText(text);
    this.editor.textarea.focus();
    this.editor.textarea.scrollIntoView({ block: "nearest" });
    // Then Send too, just below the editor: on a phone the log above may have grown meanwhile.
    this.ui.send.scrollIntoView({ block: "nearest" });
    this.announce("The message is in the editor. Ctrl+Enter sends it.");
  }

  /** "Try it": first send what the example needs and this session has not sent (usually the
   * handshake), each request with a fresh id and after the reply to the one before (a notification
   * such as `notifications/initialized` must follow the `initialize` result, not race it), then put
   * the example in the editor. */
  async tryExample(text, before = []) {
    if (this.opensASession(text) && this.pairs.hasSent("initialize")) {
      // A session has one handshake: this example's answer is a fresh server's.
      const started = this.readies;
      this.restart();
      const deadline = performance.now() + TRY_WAIT_MS;
      while (this.readies === started && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      this.log.note("Try it started a fresh server: a session has one initialize, and this example opens one.");
    }
    const sent = [];
    const echoed = this.echoes;
    for (const message of before) {
      if (typeof message.method === "string" && this.pairs.hasSent(message.method)) continue;
      const copy = this.pairs.prepare(message);
      this.sendText(JSON.stringify(copy));
      sent.push(copy.method || "a response");
      if ("id" in copy && typeof copy.method === "string") await this.settled(copy.id);
    }
    // Their echoes in the log come first, and the log's scroll to them: then the example, and Send
    // in view (on a phone the log scrolls the page itself).
    const deadline = performance.now() + TRY_WAIT_MS;
    while (this.echoes < echoed + sent.length && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    this.put(text);
    this.tell(sent.length ? `Sent first what this example needs: ${sent.join(", ")}. Now send the example.` : "");
  }

  /** Whether this text is an `initialize` request, which only a fresh session answers as the page shows. */
  opensASession(text) {
    try {
      return JSON.parse(text)?.method === "initialize";
    } catch (_) {
      return false;
    }
  }

  /** Until the request with this id is answered (or refused, or its server gone), at most
   * TRY_WAIT_MS: a server that never answers does not hold the example back for ever. */
  async settled(id) {
    const deadline = performance.now() + TRY_WAIT_MS;
    while (!this.pairs.settled(id) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  useTemplate() {
    if (this.ui.template.value === STEP_MESSAGE.key) {
      this.put(this.stepMessage, { template: true });
      return this.tell("This step's own message is back in the editor, as the page first had it.");
    }
    const item = findTemplate(this.templates, this.ui.template.value);
    if (!item) return this.tell("Pick a message in the Template menu first, then press Use template.");
    const waiting = this.pairs.newestWaitingId();
    this.put(pretty(item.build(this.pairs.nextFreeId, { waiting })), { template: true });
    if (item.key === "cancelled") {
      this.tell(
        waiting === null
          ? "No request is waiting for its reply, so this names id 1: put the id of the request to cancel."
          : `This cancels request ${JSON.stringify(waiting)}, the newest one still waiting.`,
      );
    }
  }

  nextId() {
    const result = this.editor.check();
    if (!result.ok) return this.tell("Fix the JSON first: the next id goes into a valid message.");
    if (!result.idSpan)
      return this.tell("This message has no id (a notification has none), so there is nothing to change.");
    const id = this.pairs.nextFreeId;
    const [a, b] = result.idSpan;
    const text = this.editor.text;
    this.editor.setText(text.slice(0, a) + String(id) + text.slice(b));
    this.tell(`The id is now ${id}.`);
  }

  idNote(value, info) {
    if (info.kind !== "request") return "";
    if (this.pairs.isUsed(value.id)) {
      return `The id ${JSON.stringify(value.id)} was already used in this session; “Next id” picks ${this.pairs.nextFreeId}.`;
    }
    return "";
  }

  tell(text) {
    this.ui.tools.textContent = text;
  }

  restart() {
    if (this.connection.send({ type: "restart" })) return;
    this.newServer();
  }

  newServer() {
    this.noteUnanswered("you asked for a new server");
    this.log.note("A new server: a fresh session and transcript start here.");
    this.forget();
    this.pairs.leave();
    this.connection.open(false);
  }

  /** Before a fresh start: the learner's requests that will now never be answered, and why. */
  noteUnanswered(why) {
    const unanswered = [...this.pairs.waiting.values()];
    if (!unanswered.length) return;
    const named = unanswered.map((w) => `${w.method} (id ${JSON.stringify(w.id)})`).join(", ");
    const one = unanswered.length === 1;
    this.log.note(`${one ? "This request gets" : "These requests get"} no reply, since ${why}: ${named}.`, "warn");
  }

  forget() {
    this.apps.reset();
    this.diagram.clear();
    this.cards.clear();
    this.pairs.forget();
    this.waits.reset();
  }

  // ---- what the relay says ----

  onFrame(frame) {
    if (["sent", "received", "relay_error", "stderr", "app"].includes(frame.type)) this.entries.push(frame);
    switch (frame.type) {
      case "state":
        return this.onState(frame);
      case "sent":
        return this.onSent(frame);
      case "received":
        return this.onReceived(frame);
      case "relay_error":
        return this.onRelayError(frame);
      case "stderr":
        return this.log.stderr(frame);
      case "app":
        return this.onApp(frame);
      case "check":
        return this.checks.update(frame);
      case "full":
        return this.onFull(frame);
      default:
        return undefined;
    }
  }

  onState(frame) {
    const facts = {
      session: frame.session,
      status: frame.status,
      revision: frame.revision || this.revision || "not negotiated yet",
    };
    this.showFacts(facts);
    if (frame.status === "starting") {
      this.connection.lastSeq = 0; // a restart begins a fresh transcript
      this.noteUnanswered("the server was restarted");
      this.log.note("Restarting: the old server ends, a fresh one starts.");
      this.forget();
      this.setState("starting", "Starting a fresh server…");
    } else if (frame.status === "ready" && frame.reason && this.root.dataset.state === "ready") {
      // Running, but it has not answered anything yet: a learner's own server that never began serving.
      this.log.note(`Your server is running but has not answered: ${frame.reason}`, "warn");
      this.setState("ready", `Running, but not answering: ${frame.reason}`);
    } else if (frame.status === "ready") {
      if (!frame.resumed) this.readies += 1;
      if (!frame.resumed && this.pairs.session !== null && frame.session !== this.pairs.session)
        this.noteUnanswered("your previous server ended while you were away");
      const lost = this.pairs.ready(frame.session, frame.resumed);
      if (frame.resumed) {
        this.setState("ready", `Reconnected to your ${this.server}: nothing was lost.`);
        this.log.note("Reconnected: the same server and transcript.");
      } else {
        if (lost) {
          this.connection.lastSeq = 0; // the new session's transcript starts again at 1
          this.log.note("Your previous server had ended while you were away; this is a new one.", "warn");
          this.forget();
        }
        this.setState("ready", `Ready: your own ${this.server} is running. Send a message.`);
      }
      this.editor.check();
    } else if (frame.status === "exited" && signedOut(frame.reason)) {
      this.pairs.serverExited();
      this.waits.reset();
      this.log.note(signedOut(frame.reason), "warn");
      this.setState("signed-out", signedOut(frame.reason));
    } else if (frame.status === "exited") {
      const exit = frame.exit_status?.text;
      // The relay's own reason (a flood, a line over the limit) is a sentence of its own; otherwise
      // the reason only repeats the exit ("the server exited with status 1").
      const stopped = frame.reason && frame.reason !== `the server ${exit}` ? sentence(frame.reason) : null;
      const said = stopped || `The server ${exit || "stopped"}.`;
      this.pairs.serverExited();
      this.waits.reset();
      this.log.note(said, "error");
      this.setState("exited", `${said} Its session is over: start a new server to go on.`);
    }
  }

  onSent(frame) {
    this.echoes += 1; // the relay's echo of a message sent (Try-it waits for its own)
    this.checks.noteSent();
    const message = frame.message || {};
    const info = describe(message);
    const { pairKey, label } = this.pairs.sent(frame, info.kind);
    if (info.kind === "response") this.cards.answered(message.id);
    if (frame.by) this.apps.onSent(frame);
    else this.waits.stopSending();
    const by =
      { host: " (the console's own, as the app's host)", app: " (for the app: you allowed it)" }[frame.by] || "";
    const li = this.log.sent(frame, labels.sent(message, info) + by, pairKey);
    if (frame.by) inAppLane(li);
    this.diagram.add({ seq: frame.seq, dir: "c2s", label, kind: info.kind, pairKey });
    if (!frame.replayed) this.announce(`Sent: ${labels.sent(message, info)}.`);
    this.editor.check(); // the id note may change
  }

  onReceived(frame) {
    const message = frame.message;
    const info = message ? describe(message) : { kind: "other" };
    const { pairKey, label, method } = this.pairs.received(frame, info.kind);
    if (frame.answers) {
      this.waits.refresh();
      if (method === "initialize" && message.result) this.showFacts({ revision: message.result.protocolVersion });
    } else if (info.kind === "request") {
      this.cards.add(message); // a replayed one arrived while the connection was down: still unanswered
    }
    const words = labels.received(message, info, frame, method);
    const li = this.log.received(frame, words, pairKey);
    if (frame.answers) {
      this.offerFollowUps(li, frame);
      const sent = this.entries.find((e) => e.type === "sent" && e.seq === frame.answers);
      if (sent?.by) inAppLane(li);
      this.apps.onReceived(frame, sent);
    }
    this.diagram.add({
      seq: frame.seq,
      dir: "s2c",
      label,
      kind: info.kind === "response" && "error" in message ? "error" : info.kind,
      pairKey,
    });
    if (!frame.replayed) this.announce(`Received: ${words}.`);
  }

  /** Under a reply that asks for a next message (an input_required result, a task), buttons that
   * put that message in the editor, filled in from the reply (followups.js). */
  offerFollowUps(li, frame) {
    const request = this.entries.find((e) => e.type === "sent" && e.seq === frame.answers)?.message;
    const next = followUps(request, frame.message, this.pairs.nextFreeId);
    if (!next.length) return;
    const row = el("div", "follow-ups");
    row.append(el("span", "hint", "Next: "));
    for (const { label, text } of next) row.append(button(label, () => this.put(text), "small secondary follow-up"));
    li.append(row);
  }

  /** A message between the console, as an MCP Apps host, and an app: its own lane. */
  onApp(frame) {
    const message = frame.message || {};
    const request =
      "method" in message
        ? null
        : this.entries.findLast(
            (e) => e.type === "app" && e.from !== frame.from && e.message?.id === message.id && "method" in e.message,
          )?.message;
    const label = appLabel(message, frame.from);
    inAppLane(this.log.app(frame, label, appWords(message, request)));
    const kind =
      "method" in message ? ("id" in message ? "request" : "notification") : "error" in message ? "error" : "response";
    this.diagram.add({
      seq: frame.seq,
      dir: frame.from === "app" ? "a2h" : "h2a",
      label: message.method || "reply",
      kind,
    });
  }

  onRelayError(frame) {
    this.apps.onRefused(frame);
    this.pairs.refused(frame.id); // the relay answered for a request the server can no longer answer
    this.waits.stopSending();
    const err = frame.error || {};
    this.log.relayError(frame);
    this.diagram.add({ dir: "relay", label: `${err.code} ${err.message}`, kind: "error" });
    this.announce(`The relay refused the message: ${err.message}.`);
  }

  onFull(frame) {
    const wait = Math.max(1, Number(frame.retry_after_s) || 30);
    // The situation and the advice, not the message's own "try again in": the console does that itself.
    const said = frame.situation
      ? [frame.situation, frame.advice && `${frame.advice}.`].filter(Boolean).join(" ")
      : frame.message || "The playground is full.";
    this.fullText = `${said} Trying again by itself in ${wait} s…`;
    this.setState("full", this.fullText);
    this.showFacts({ status: "waiting for a place" });
    this.connection.openLater(wait * 1000);
  }

  onConnection(kind, detail) {
    if (kind === "connecting") this.setState("connecting", `Starting your ${this.server}…`);
    else if (kind === "reconnecting") this.setState("reconnecting", `Reconnecting (attempt ${detail.attempt})…`);
    else if (kind === "lost") {
      this.waits.stopSending();
      this.apps.connectionLost();
      this.setState(
        "lost",
        `The connection dropped. Reconnecting in ${(detail.delayMs / 1000).toFixed(1)} s; your transcript is kept.`,
      );
    } else if (kind === "closed") {
      if (detail.code === 1013) return; // onFull already said it and will retry
      if (this.ui.state.dataset.state === "exited") return; // its state frame has said why
      if (this.ui.state.dataset.state === "signed-out") return; // so has a sign-out
      if (detail.code === 1000 && signedOut(detail.reason)) {
        this.log.note(signedOut(detail.reason), "warn");
        this.setState("signed-out", signedOut(detail.reason));
      } else if (detail.code === 1000) {
        const said = detail.reason ? sentence(detail.reason) : "The session ended.";
        this.log.note(said, "warn");
        this.setState("exited", `${said} Start a new server to go on.`);
      } else {
        this.setState(
          "exited",
          `The server stopped: ${detail.reason || "no reason given"}. Start a new server to go on.`,
        );
      }
    }
  }

  setState(state, text) {
    const el = this.ui.state;
    el.dataset.state = state;
    el.textContent = text;
    this.root.dataset.state = state;
    this.ui.send.disabled = false; // sending while not ready says why instead of doing nothing
    this.ui.newServer.hidden = state !== "exited";
    if (state === "exited") this.ui.newServer.focus({ preventScroll: true });
  }

  showFacts(facts) {
    for (const [key, value] of Object.entries(facts)) {
      const slot = this.ui.facts.querySelector(`[data-fact=${key}]`);
      if (slot && value) slot.textContent = String(value);
    }
  }
}

function start() {
  const root = document.querySelector("section.console[data-server]");
  const app = root ? new Console(root) : null;
  addTryButtons(document, app ? (text, before) => app.tryExample(text, before) : null);
  const handoff = app && takeHandoff();
  if (handoff) app.put(handoff);
}

start();
