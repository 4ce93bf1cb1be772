// "Export the transcript": the relay's own copy of the session, or this page's copy if it is gone.

import { download } from "./dom.js";

/** Download the session's transcript (the relay's own copy; this page's copy if the session is gone). */
export async function exportTranscript(session, server, frames) {
  if (session) {
    try {
      const whole = await relayTranscript(session);
      if (whole) {
        download(`transcript-${session}.json`, JSON.stringify(whole, null, 2));
        return;
      }
    } catch {
      // fall through to this page's copy
    }
  }
  const body = { server, session, source: "console (the server's copy was no longer available)", frames };
  download(`transcript-${session || "console"}.json`, JSON.stringify(body, null, 2));
}

/**
 * The relay's whole copy of a session's transcript: it comes in pages (a number of entries, and of
 * their bytes), each naming where the next begins. Null if the session is gone.
 */
export async function relayTranscript(session, fetchPage = fetch) {
  const url = `/api/sessions/${encodeURIComponent(session)}/transcript`;
  let whole = null;
  let after = 0;
  for (;;) {
    const reply = await fetchPage(after ? `${url}?after=${after}` : url);
    if (!reply.ok) return null;
    const page = await reply.json();
    if (whole === null) whole = page;
    else whole.entries.push(...page.entries);
    const next = page.next_after;
    if (typeof next !== "number" || next <= after) {
      whole.next_after = null;
      return whole;
    }
    after = next;
  }
}
