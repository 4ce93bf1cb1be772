// Runnable code in a lesson (```python run``` blocks, app/course/render.py): each becomes an editor
// with a Run button. A run goes to POST /api/run, which runs the code in the learner's own sandbox and
// streams what it writes (static/runstream.js). Output is shown as text only.

import { showRun } from "./runstream.js";
import { pythonEditor } from "./workspace/codeeditor.js";

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

  async run() {
    if (this.running) return;
    this.running = true;
    this.button.disabled = true;
    try {
      const init = {
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: this.editor.getValue() }),
      };
      const last = await showRun("/api/run", init, {
        output: this.output,
        status: this.status,
        runningText: "Running in your sandbox...",
      });
      if (last) this.root.dataset.ended = last.error ? "error" : last.stopped || String(last.exit);
    } finally {
      this.running = false;
      this.button.disabled = false;
    }
  }
}

for (const root of document.querySelectorAll("[data-runnable]")) new RunBlock(root).start();
