// "Export the transcript": the relay's own copy of the session, or this page's copy if it is gone.

import { download } from "./dom.js";

/** Download the session's transcript (the relay's own copy; this page's copy if the session is gone). */
export async function exportTranscript(session, server, frames) {
  if (session) {
    try {
      const reply = await fetch(`/api/sessions/${encodeURIComponent(session)}/transcript`);
      if (reply.ok) {
        download(`transcript-${session}.json`, JSON.stringify(await reply.json(), null, 2));
        return;
      }
    } catch {
      // fall through to this page's copy
    }
  }
  const body = { server, session, source: "console (the server's copy was no longer available)", frames };
  download(`transcript-${session || "console"}.json`, JSON.stringify(body, null, 2));
}
