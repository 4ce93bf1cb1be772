// The instructor's pages follow the class by themselves: the class grid refreshes, and a learner's
// console view grows as the learner sends, drawn by the same log as the learner's own console.
// Polling (not a socket): it works the same behind a load balancer, whichever replica answers.

import { describe } from "./console/message.js";
import { labels } from "./console/labels.js";
import { MessageLog } from "./console/log.js";
import { Pairs } from "./console/pairs.js";

const GRID_EVERY_MS = 5000;
const FOLLOW_EVERY_MS = 2000;

/** Call `tick` now and then every `ms` while the page is visible; `tick` returns false to stop. */
function every(ms, tick) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    timer = null;
    if (stopped || document.hidden) return;
    try {
      if ((await tick()) === false) stopped = true;
    } catch {
      // A network hiccup: try again at the next tick.
    }
    if (!stopped && !document.hidden) timer = setTimeout(run, ms);
  };
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer === null && !stopped) run();
  });
  run();
}

function followGrid(holder) {
  every(GRID_EVERY_MS, async () => {
    const response = await fetch(holder.dataset.src, { headers: { Accept: "text/html" } });
    if (!response.ok) return response.status !== 404 && response.status !== 401;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    holder.replaceChildren(...fresh.body.childNodes);
    return true;
  });
}

function followSession(list) {
  const log = new MessageLog(list, { edit: null, announce: () => {} });
  const pairs = new Pairs(); // which request a reply answers, for the replies' labels
  const status = document.querySelector("[data-session-status]");
  const note = document.querySelector("[data-follow-note]");
  let after = Number(list.dataset.after) || 0;
  const show = (frame) => {
    const message = frame.message;
    const info = message && typeof message === "object" ? describe(message) : { kind: "other" };
    if (frame.type === "sent") {
      const { pairKey } = pairs.sent(frame, info.kind);
      log.sent(frame, labels.sent(message, info), pairKey);
    } else if (frame.type === "received") {
      const { pairKey, method } = pairs.received(frame, info.kind);
      log.received(frame, labels.received(message, info, frame, method), pairKey);
    } else if (frame.type === "relay_error") {
      log.relayError(frame);
    }
  };
  every(FOLLOW_EVERY_MS, async () => {
    for (;;) {
      const response = await fetch(`${list.dataset.follow}?after=${after}`);
      if (response.status === 404) {
        note.textContent = "This session has ended: the learner closed the console or its time ran out.";
        return false;
      }
      if (!response.ok) return true;
      const body = await response.json();
      body.frames.forEach(show);
      after = body.next_after;
      status.textContent = `Status ${body.status}${body.revision ? ` · revision ${body.revision}` : ""}`;
      if (!body.more) return true;
    }
  });
}

const grid = document.querySelector("[data-class-grid]");
if (grid) followGrid(grid);
const follow = document.querySelector("ol[data-follow]");
if (follow) followSession(follow);
