// Feedback on every wait: a message on its way, requests waiting for their reply, and what a long
// silence means. The status line is announced; the ticking seconds are not.

const SLOW_MS = 10000; // after this, explain what a time-out means (the page may set another)

export class Waits {
  /**
   * @param {HTMLElement} line role=status element
   * @param {import("./pairs.js").Pairs} pairs whose requests are still waiting, and since when
   * @param {{cancel: Function, serverAsking: Function}} on cancel(id) puts notifications/cancelled for
   *   that id in the editor; serverAsking() names a server request the learner has not answered
   */
  constructor(line, pairs, on, slowMs = SLOW_MS) {
    this.line = line;
    this.pairs = pairs;
    this.slowMs = slowMs;
    this.on = on;
    this.sending = false;
    this.explained = new Set(); // seqs whose long wait is explained already
    this.ticker = null;
  }

  startSending() {
    this.sending = true;
    this.render();
  }

  /** The message went out, or was refused, or the connection dropped: no longer sending. */
  stopSending() {
    this.sending = false;
    this.render();
  }

  /** What is waiting changed (a reply came); a message on its way is still on its way. */
  refresh() {
    this.render();
  }

  reset() {
    this.sending = false;
    this.explained.clear();
    this.render();
  }

  render() {
    clearInterval(this.ticker);
    this.line.replaceChildren();
    const pending = this.pairs.waiting;
    this.line.dataset.waiting = String(this.sending || pending.size > 0);
    if (this.sending) {
      this.line.textContent = "Sending…";
      return;
    }
    const [seq, oldest] = [...pending.entries()][0] || [];
    if (!oldest) return;
    const more = pending.size > 1 ? ` (and ${pending.size - 1} more)` : "";
    const text = document.createElement("span");
    text.textContent = `Waiting for the reply to ${oldest.method} (id ${JSON.stringify(oldest.id)})${more}… `;
    const clock = document.createElement("span");
    clock.className = "wait-clock";
    clock.setAttribute("aria-hidden", "true");
    this.line.append(text, clock);
    const tick = () => {
      const ms = this.pairs.waitedMs(seq) ?? 0;
      clock.textContent = `${(ms / 1000).toFixed(1)} s`;
      if (ms > this.slowMs && !this.explained.has(seq)) {
        this.explained.add(seq);
        this.explainSlow(seq, oldest);
      }
    };
    tick();
    this.ticker = setInterval(tick, 250);
  }

  explainSlow(seq, request) {
    const p = document.createElement("p");
    p.className = "wait-slow";
    const asking = this.on.serverAsking ? this.on.serverAsking() : null;
    if (asking) {
      // Not slow: the server is waiting for the learner, who plays the client here.
      p.textContent =
        `The server is waiting for your answer to its ${asking} request (the card below): ` +
        `it finishes ${request.method} (id ${JSON.stringify(request.id)}) once you answer.`;
      this.line.append(p);
      return;
    }
    p.textContent =
      `No reply after ${Math.round(this.slowMs / 1000)} s. MCP sets no deadline: a server may be slow or may never answer. ` +
      "A client decides how long to wait, then tells the server it gave up with notifications/cancelled. ";
    const b = document.createElement("button");
    b.type = "button";
    b.className = "link-button";
    b.textContent = `Put notifications/cancelled for id ${JSON.stringify(request.id)} in the editor`;
    b.addEventListener("click", () => {
      this.pairs.giveUp(seq);
      this.on.cancel(request.id);
      this.render();
    });
    p.append(b);
    this.line.append(p);
  }
}
