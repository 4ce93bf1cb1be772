// A run in the learner's sandbox, as POST /api/run and POST /api/workspace/test-run stream it
// (app/web/runs.py): NDJSON events, each stdout or stderr line as it comes, then how the run ended.

/** Words for a run's last event. */
export function ending(event) {
  if (event.error) return `Not run: ${event.error}`;
  const took = `${event.seconds.toFixed(2)} s`;
  if (event.stopped === "time") return `Stopped after ${took}: a run may take at most ${event.limit_s} s.`;
  if (event.stopped === "output") return `Stopped after ${took}: a run may write at most 64 KiB.`;
  if (event.exit === 0) return `Finished in ${took}.`;
  return `Ended in ${took}: ${event.status}.`;
}

/**
 * Start a run and show it: its lines in `output` (text only), its progress and end in `status`.
 * Resolves with the last event (or null when the run could not be read to its end).
 */
export async function showRun(url, init, { output, status, runningText }) {
  output.replaceChildren();
  output.hidden = false;
  status.textContent = runningText;
  let last = null;
  try {
    const reply = await fetch(url, { method: "POST", ...init });
    if (!reply.ok) {
      const body = await reply.json().catch(() => ({}));
      status.textContent = `Not run: ${body.error?.message || `the playground answered ${reply.status}`}`;
      return null;
    }
    const reader = reply.body.getReader();
    const decoder = new TextDecoder();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const text of lines) {
        if (!text) continue;
        const event = JSON.parse(text);
        if ("stdout" in event || "stderr" in event) {
          const stream = "stdout" in event ? "stdout" : "stderr";
          const span = document.createElement("span");
          span.className = `run-${stream}`;
          span.textContent = `${event[stream]}\n`;
          output.append(span);
        } else {
          last = event;
          status.textContent = ending(event);
        }
      }
    }
  } catch (error) {
    status.textContent = `The run was cut off: ${error.message}`;
  }
  return last;
}
