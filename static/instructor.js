// The instructor's pages follow the class by themselves: the class grid refreshes, and a learner's
// console view grows as the learner sends, drawn by the same log as the learner's own console.
// Polling (not a socket): it works the same behind a load balancer, whichever replica answers.

import { appLabel, appWords } from "./console/appwords.js";
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

// How the grid's rows are ordered: the server's order (who joined first) until the instructor picks
// one, which then holds across the refreshes (and reloads: sessionStorage).
const SORT_KEY = "playground.grid-sort";
const ORDERS = {
  name: (a, b) => a.dataset.name.localeCompare(b.dataset.name),
  done: (a, b) => Number(a.dataset.done) - Number(b.dataset.done),
  last: (a, b) => Number(a.dataset.last) - Number(b.dataset.last),
};

// Which rows show: everyone, or those the server marked stuck, behind or inactive (held like the order).
const FILTER_KEY = "playground.grid-filter";

function filterGrid(holder) {
  const filter = sessionStorage.getItem(FILTER_KEY) || "";
  for (const button of holder.querySelectorAll("[data-filter]")) {
    button.setAttribute("aria-pressed", String(button.dataset.filter === filter));
  }
  for (const row of holder.querySelectorAll("table.progress-grid tbody tr")) {
    row.hidden = Boolean(filter) && !(filter in row.dataset);
  }
}

function sortGrid(holder) {
  filterGrid(holder);
  const order = sessionStorage.getItem(SORT_KEY);
  for (const button of holder.querySelectorAll("[data-sort]")) {
    button.setAttribute("aria-pressed", String(button.dataset.sort === order));
  }
  const body = holder.querySelector("table.progress-grid tbody");
  if (!body || !ORDERS[order]) return;
  body.append(...[...body.rows].sort(ORDERS[order]));
}

function followGrid(holder) {
  holder.addEventListener("click", (event) => {
    const sort = event.target.closest("[data-sort]");
    const filter = event.target.closest("[data-filter]");
    if (sort) sessionStorage.setItem(SORT_KEY, sort.dataset.sort);
    if (filter) sessionStorage.setItem(FILTER_KEY, filter.dataset.filter);
    if (sort || filter) sortGrid(holder);
  });
  sortGrid(holder);
  every(GRID_EVERY_MS, async () => {
    const response = await fetch(holder.dataset.src, { headers: { Accept: "text/html" } });
    if (!response.ok) return response.status !== 404 && response.status !== 401;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    // A list the instructor opened stays open as the grid refreshes.
    const opened = [...holder.querySelectorAll("details[id][open]")].map((details) => details.id);
    // ... and the grid's own box stays where it was scrolled (to lesson 13, say).
    const box = holder.querySelector(".grid-wrap");
    const scrolled = box ? [box.scrollLeft, box.scrollTop] : null;
    holder.replaceChildren(...fresh.body.childNodes);
    for (const id of opened) document.getElementById(id)?.setAttribute("open", "");
    sortGrid(holder);
    const again = holder.querySelector(".grid-wrap");
    if (again && scrolled) [again.scrollLeft, again.scrollTop] = scrolled;
    return true;
  });
}

/**
 * Show one console's messages as they come, from `after` on. Returns false once the console has
 * ended (the follow stops), true while it goes on.
 */
function consoleFollower(list, framesUrl, after = 0) {
  const log = new MessageLog(list, { edit: null, announce: () => {} });
  const pairs = new Pairs(); // which request a reply answers, for the replies' labels
  const status = document.querySelector("[data-session-status]");
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
    } else if (frame.type === "app") {
      log.app(frame, appLabel(message, frame.from), appWords(message, null));
    }
  };
  return async () => {
    for (;;) {
      const response = await fetch(`${framesUrl}?after=${after}`);
      if (response.status === 404) return false;
      if (!response.ok) return true;
      const body = await response.json();
      body.frames.forEach(show);
      after = body.next_after;
      status.textContent = `${body.server} · status ${body.status}${body.revision ? ` · revision ${body.revision}` : ""}`;
      if (!body.more) return true;
    }
  };
}

function followSession(list) {
  const note = document.querySelector("[data-follow-note]");
  const tick = consoleFollower(list, list.dataset.follow, Number(list.dataset.after) || 0);
  every(FOLLOW_EVERY_MS, async () => {
    if (await tick()) return true;
    note.textContent = "This session has ended: the learner closed the console or its time ran out.";
    return false;
  });
}

/** Follow a learner: their newest console, and the next one when they move on to another step. */
function followLearner(list) {
  const note = document.querySelector("[data-follow-note]");
  let following = null;
  let tick = null;
  every(FOLLOW_EVERY_MS, async () => {
    if (tick && (await tick())) return true;
    const response = await fetch(list.dataset.followLearner);
    if (!response.ok) return response.status !== 404 && response.status !== 401;
    const { session, server, step } = await response.json();
    if (!session || session === following) {
      if (following) note.textContent = "Their console has closed; waiting for the next one they open.";
      return true;
    }
    if (following) {
      const where = step ? `They moved on (${step}), to another console` : `They opened another console (${server})`;
      note.textContent = `${where}: following it from its start.`;
    }
    following = session;
    list.replaceChildren();
    tick = consoleFollower(list, `/api/instructor/sessions/${encodeURIComponent(session)}/frames`);
    await tick();
    return true;
  });
}

const grid = document.querySelector("[data-class-grid]");
if (grid) followGrid(grid);
const follow = document.querySelector("ol[data-follow]");
if (follow) followSession(follow);
const learner = document.querySelector("ol[data-follow-learner]");
if (learner) followLearner(learner);
