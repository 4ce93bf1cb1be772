// The console's export (static/console/transcript.js) follows the relay's pages to the end.

import assert from "node:assert/strict";
import { test } from "node:test";

import { relayTranscript } from "../../static/console/transcript.js";

function pages(...bodies) {
  const asked = [];
  const fetchPage = async (url) => {
    asked.push(url);
    const body = bodies.shift();
    return body ? { ok: true, json: async () => body } : { ok: false, json: async () => ({}) };
  };
  return { asked, fetchPage };
}

test("every page is asked for from where the last ended, and the entries come out whole", async () => {
  const { asked, fetchPage } = pages(
    { server: "demo-orders", entries: [{ seq: 1 }, { seq: 2 }], next_after: 2 },
    { server: "demo-orders", entries: [{ seq: 3 }], next_after: 3 },
    { server: "demo-orders", entries: [{ seq: 4 }], next_after: null },
  );
  const whole = await relayTranscript("s 1", fetchPage);
  assert.deepEqual(
    whole.entries.map((e) => e.seq),
    [1, 2, 3, 4],
  );
  assert.equal(whole.next_after, null);
  assert.deepEqual(asked, [
    "/api/sessions/s%201/transcript",
    "/api/sessions/s%201/transcript?after=2",
    "/api/sessions/s%201/transcript?after=3",
  ]);
});

test("a session gone midway gives nothing, and a page that does not move on ends the export", async () => {
  const gone = pages({ entries: [{ seq: 1 }], next_after: 1 });
  assert.equal(await relayTranscript("s", gone.fetchPage), null);
  const stuck = pages({ entries: [{ seq: 1 }], next_after: 1 }, { entries: [], next_after: 1 });
  const whole = await relayTranscript("s", stuck.fetchPage);
  assert.equal(whole.entries.length, 1);
  assert.equal(stuck.asked.length, 2);
});
