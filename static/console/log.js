// The message log: one entry per message both ways, relay errors, server stderr (a burst of lines in one
// entry) and session events.
// Everything from the server is put in with textContent (jsonView builds text nodes too).

import { button, copyText, el } from "./dom.js";
import { jsonView } from "./jsonview.js";

const seconds = (ms) => `${(ms / 1000).toFixed(3)} s`;
// The newest entries the log keeps on the page. A server that prints in a loop sends thousands of
// lines; past this many, each new entry would make the page slower to lay out, so the oldest leave
// (the transcript export still holds every message).
export const MAX_SHOWN = 300;
// stderr lines this close together share a card (a traceback arrives as one burst), up to this size.
const STDERR_TOGETHER_MS = 500;
const STDERR_CARD_CHARS = 16_000;

export class MessageLog {
  /**
   * @param {HTMLOListElement} list
   * @param {{edit: Function|null, follow?: Function}} on edit(text) puts a message in the editor;
   *   follow(li) false: li is not worth scrolling the page or panel around the log for
   */
  constructor(list, on) {
    this.list = list;
    this.on = on;
    this.count = 0;
    this.dropped = 0; // entries taken off the page to keep it at MAX_SHOWN
    this.droppedNote = null;
    this.newest = null; // what the next animation frame brings into view
  }

  /** Bring the newest entry into view: by scrolling the log when it scrolls by itself (the
   * playground), else the panel around it (a step's console) unless `follow` says no, never a scroll
   * area in another. Once per animation frame however many entries arrive in it: each scroll lays
   * the page out. */
  reveal(li) {
    const pending = this.newest !== null;
    this.newest = li;
    if (pending) return;
    requestAnimationFrame(() => {
      const newest = this.newest;
      this.newest = null;
      if (!newest?.isConnected) return;
      if (this.list.scrollHeight > this.list.clientHeight) this.list.scrollTop = newest.offsetTop;
      else if (this.on.follow?.(newest) !== false) newest.scrollIntoView({ block: "nearest" });
    });
  }

  clear() {
    this.list.replaceChildren();
    this.count = 0;
    this.dropped = 0;
    this.droppedNote = null;
  }

  /** Keep the newest MAX_SHOWN entries, and say at the top how many older ones left the page. */
  trim() {
    const shown = this.list.children.length - (this.droppedNote ? 1 : 0);
    if (shown <= MAX_SHOWN) return;
    if (!this.droppedNote) {
      this.droppedNote = el("li", "log-entry log-note-entry note-warn");
      this.droppedNote.dataset.kind = "note";
      this.list.prepend(this.droppedNote);
    }
    for (let extra = shown - MAX_SHOWN; extra > 0; extra -= 1) {
      this.droppedNote.nextElementSibling?.remove();
      this.dropped += 1;
    }
    this.droppedNote.textContent =
      `${this.dropped} older ${this.dropped === 1 ? "entry is" : "entries are"} no longer shown here, to keep the ` +
      `page quick. "Export the transcript" saves every message.`;
  }

  entry(kind, { seq = null, label, time = null, rtt = null, direction, pair = null }) {
    const li = el("li", `log-entry log-${kind}`);
    li.dataset.kind = kind;
    if (seq !== null) li.dataset.seq = String(seq);
    if (pair) li.dataset.pair = pair; // a request and its reply share it, as on the diagram
    const head = el("div", "log-head");
    head.append(el("span", "log-dir", direction));
    if (seq !== null) head.append(el("span", "log-seq", `#${seq}`));
    head.append(el("span", "log-label", label));
    if (time !== null) head.append(el("span", "log-time", seconds(time)));
    if (rtt !== null && rtt !== undefined) head.append(el("span", "log-rtt", `${rtt.toFixed(1)} ms round trip`));
    li.append(head);
    this.list.append(li);
    this.count += 1;
    this.trim();
    this.reveal(li);
    return li;
  }

  body(li, message, raw) {
    const actions = el("div", "log-actions");
    const text = raw;
    actions.append(
      button("Copy", async (event) => {
        const ok = await copyText(text);
        event.target.textContent = ok ? "Copied" : "Copy failed";
        setTimeout(() => {
          event.target.textContent = "Copy";
        }, 1500);
      }),
    );
    if (this.on.edit) {
      // a read-only log (an instructor following a learner) has no editor
      actions.append(
        button("Edit in the editor", () => this.on.edit(message === null ? raw : JSON.stringify(message, null, 2))),
      );
    }
    li.querySelector(".log-head").append(actions);
    li.append(message === null ? el("pre", "log-raw", raw) : jsonView(message));
  }

  findings(li, findings) {
    if (!findings || findings.length === 0) return;
    const ul = el("ul", "findings");
    for (const f of findings) {
      const item = el("li", `finding finding-${f.level}`);
      item.append(el("span", "finding-level", f.level), el("span", "finding-text", f.text));
      if (f.ref) item.append(el("span", "finding-ref", f.ref));
      ul.append(item);
    }
    li.append(ul);
  }

  /** `pair`: the key a request and its reply share (pairs.js), if any. */
  sent(frame, label, pair = null) {
    const li = this.entry("sent", { seq: frame.seq, label, time: frame.at_ms, direction: "→ sent", pair });
    this.body(li, frame.message, frame.line);
    this.findings(li, frame.findings);
    if (frame.replayed) li.dataset.replayed = "true";
    return li;
  }

  received(frame, label, pair = null) {
    const li = this.entry("received", {
      seq: frame.seq,
      label,
      time: frame.at_ms,
      rtt: frame.rtt_ms,
      direction: "← received",
      pair,
    });
    if (frame.message === null) li.append(el("p", "log-note", "This line is not JSON: a client cannot read it."));
    this.body(li, frame.message, frame.raw);
    this.findings(li, frame.findings);
    if (frame.replayed) li.dataset.replayed = "true";
    if (frame.message && "error" in frame.message) li.classList.add("is-error");
    return li;
  }

  /** A message between the console (an MCP Apps host) and an app; `words` say what it means. */
  app(frame, label, words) {
    const li = this.entry("app", { seq: frame.seq, label, time: frame.at_ms, direction: "⇄ app" });
    li.dataset.from = frame.from;
    this.body(li, frame.message, JSON.stringify(frame.message));
    if (words) li.append(el("p", "log-note", words));
    if (frame.replayed) li.dataset.replayed = "true";
    if (frame.message && "error" in frame.message) li.classList.add("is-error");
    return li;
  }

  relayError(frame) {
    const err = frame.error || {};
    const li = this.entry("relay_error", {
      label: `relay error ${err.code}: ${err.message}`,
      time: frame.at_ms,
      direction: "⨯ relay",
    });
    li.classList.add("is-error");
    if (frame.explanation) li.append(el("p", "log-note", frame.explanation));
    const data = err.data || {};
    if (data.line !== undefined) li.append(el("p", "log-note", `Where: line ${data.line}, column ${data.column}.`));
    this.body(
      li,
      { jsonrpc: "2.0", id: frame.id ?? null, error: err },
      JSON.stringify({ jsonrpc: "2.0", id: frame.id ?? null, error: err }),
    );
    return li;
  }

  /** A stderr line joins the card of the lines just before it (a traceback is one card, not one a
   * line), while they come close together and the card is not too long; else it starts a new card. */
  stderr(frame) {
    const last = this.list.lastElementChild;
    const pre = last?.dataset.kind === "stderr" ? last.querySelector("pre") : null;
    const close = pre && frame.at_ms - Number(last.dataset.lastAt) <= STDERR_TOGETHER_MS;
    if (close && pre.textContent.length + frame.text.length <= STDERR_CARD_CHARS) {
      pre.textContent += `\n${frame.text}`;
      last.dataset.lastAt = String(frame.at_ms);
      this.reveal(last);
      return last;
    }
    const li = this.entry("stderr", { label: "server log (stderr)", time: frame.at_ms, direction: "stderr" });
    li.dataset.lastAt = String(frame.at_ms);
    li.append(el("pre", "log-raw", frame.text));
    return li;
  }

  note(text, kind = "info") {
    const li = el("li", `log-entry log-note-entry note-${kind}`, text);
    li.dataset.kind = "note";
    this.list.append(li);
    this.trim();
    this.reveal(li);
    return li;
  }
}
