// Runnable code in a lesson (```python run``` blocks, app/course/render.py): each becomes an editor
// with a Run button. A run goes to POST /api/run, which runs the code in the learner's own sandbox and
// streams NDJSON events (app/web/runs.py): its stdout and stderr lines as they come, then how it
// ended. Output is shown as text only.

import { pythonEditor } from "./workspace/codeeditor.js";

function ending(event) {
  if (event.error) return `Not run: ${event.error}`;
  const took = `${event.seconds.toFixed(2)} s`;
  if (event.stopped === "time") return `Stopped after ${took}: a run may take at most ${event.limit_s} s.`;
  if (event.stopped === "output") return `Stopped after ${took}: a run may write at most 64 KiB.`;
  if (event.exit === 0) return `Finished in ${took}.`;
  return `Ended in ${took}: ${event.status}.`;
}

class RunBlock {
  constructor(root) {
    this.root = root;
    this.output = root.querySelector("[data-run-output]");
    this.status = root.querySelector("[data-run-status]");
    this.button = root.querySelector("[data-action=run]");
    this.textarea = root.querySelector("textarea");
    this.running = false;
  }

  async start() {
    this.root.querySelector("pre.code")?.remove(); // the editor shows the code from now on
    this.textarea.hidden = false;
    this.editor = await pythonEditor(this.textarea, { onRun: () => this.run() });
    this.button.hidden = false;
    this.button.addEventListener("click", () => this.run());
  }

  line(stream, text) {
    const span = document.createElement("span");
    span.className = `run-${stream}`;
    span.textContent = `${text}\n`;
    this.output.append(span);
  }

  async run() {
    if (this.running) return;
    this.running = true;
    this.button.disabled = true;
    this.output.replaceChildren();
    this.output.hidden = false;
    this.status.textContent = "Running in your sandbox...";
    try {
      const reply = await fetch("/api/run", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: this.editor.getValue() }),
      });
      if (!reply.ok) {
        const body = await reply.json().catch(() => ({}));
        this.status.textContent = `Not run: ${body.error?.message || `the playground answered ${reply.status}`}`;
        return;
      }
      await this.read(reply.body.getReader());
    } catch (error) {
      this.status.textContent = `The run was cut off: ${error.message}`;
    } finally {
      this.running = false;
      this.button.disabled = false;
    }
  }

  async read(reader) {
    const decoder = new TextDecoder();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const text of lines) if (text) this.event(JSON.parse(text));
    }
  }

  event(event) {
    if ("stdout" in event) this.line("stdout", event.stdout);
    else if ("stderr" in event) this.line("stderr", event.stderr);
    else {
      this.root.dataset.ended = event.error ? "error" : event.stopped || String(event.exit);
      this.status.textContent = ending(event);
    }
  }
}

for (const root of document.querySelectorAll("[data-runnable]")) new RunBlock(root).start();
