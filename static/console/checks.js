// Hands-on checks beside the console: `check` frames turn them green. A passed check stays passed
// (it is recorded as progress), even when a later transcript, after a restart, no longer shows it.

// How long a "Check passed" line stays held at the bottom of the screen.
const NEWS_HELD_MS = 6000;

export class CheckList {
  constructor(list, announce, news = null, hint = null) {
    this.list = list;
    this.announce = announce;
    this.news = news; // a visible status line beside Send (a live region: screen readers hear it too)
    this.hint = hint; // one line beside Send: what to do next
    this.sent = false;
  }

  /** The "what to do next" line: the first check not passed yet, else where to go on. */
  showHint() {
    if (!this.hint) return;
    const items = this.list ? [...this.list.querySelectorAll("li.check")] : [];
    const open = items.find((li) => li.dataset.passed !== "true");
    let text;
    if (open) {
      const goal = open.querySelector(".check-goal");
      text = `Next: ${goal ? goal.textContent.trim() : open.dataset.check}`;
    } else if (items.length) {
      text = "Every check of this step has passed: go on to the next step when you are ready.";
    } else if (!this.sent) {
      text = "Next: press Send to send the message above, then read the reply under Messages.";
    } else {
      text = "Next: read the reply under Messages, or try an example from the text.";
    }
    this.hint.replaceChildren(...inlineCode(text));
  }

  /** Something was sent: the hint moves on from "press Send". */
  noteSent() {
    if (this.sent) return;
    this.sent = true;
    this.showHint();
  }

  update(frame) {
    if (!this.list) return;
    const item = [...this.list.querySelectorAll("li.check")].find((li) => li.dataset.check === frame.check);
    if (!item) return;
    const reason = item.querySelector(".check-reason");
    const wasPassed = item.dataset.passed === "true";
    if (wasPassed && !frame.passed) return;
    if (reason) reason.replaceChildren(...inlineCode(frame.reason || ""));
    if (!frame.passed || wasPassed) return;
    item.dataset.passed = "true";
    const mark = item.querySelector(".mark");
    if (mark) {
      mark.className = "mark mark-done";
      const hidden = mark.querySelector(".visually-hidden");
      if (hidden) hidden.textContent = "Passed: ";
    }
    const goal = item.querySelector(".check-goal");
    const news = `✓ Check passed: ${goal ? goal.textContent : frame.check}`;
    if (this.news) {
      this.news.textContent = news; // beside Send, where the learner is looking
      // Held at the screen's bottom for a moment, then back in its place at the console's end: on a
      // phone it would otherwise keep covering the newest messages.
      delete this.news.dataset.settled;
      clearTimeout(this.settling);
      this.settling = setTimeout(() => {
        this.news.dataset.settled = "true";
      }, NEWS_HELD_MS);
    } else this.announce(news);
    this.showHint();
  }
}

/** A check's reason as nodes: `backticked` parts become <code>, the rest stays text (never HTML). */
export function inlineCode(text) {
  return text.split("`").map((part, index) => {
    if (index % 2 === 0) return document.createTextNode(part);
    const code = document.createElement("code");
    code.textContent = part;
    return code;
  });
}
