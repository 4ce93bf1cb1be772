// The learner's own server.py beside the console: load it, save it (the server answers the syntax
// errors it found without running the file), save and restart the console's server, restore a saved
// version; and the step's exercise, run against a fresh instance of the saved file.

import { pythonEditor } from "./codeeditor.js";
import { inlineCode } from "../console/checks.js";

const FILE_URL = "/api/workspace/server.py";

async function errorText(response) {
  try {
    const body = await response.json();
    if (body?.error?.message) return body.error.message;
  } catch (_) {
    /* not JSON: say the status */
  }
  return `The playground answered ${response.status}.`;
}

function when(seconds) {
  return new Date(seconds * 1000).toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}

class Workspace {
  constructor(root) {
    this.root = root;
    this.textarea = root.querySelector("#workspace-source");
    this.status = root.querySelector("[data-workspace-status]");
    this.history = root.querySelector("[data-history]");
    this.buttons = [...root.querySelectorAll("button[data-action]")];
    this.savedText = null; // what the playground holds: unsaved edits differ from it
    this.saving = null;
  }

  async start() {
    let state;
    try {
      const response = await fetch("/api/workspace", { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(await errorText(response));
      state = await response.json();
    } catch (error) {
      this.say(`Your server.py could not be loaded: ${error.message} Reload the page to try again.`, "error");
      this.root.dataset.state = "failed";
      return;
    }
    this.textarea.value = state.source;
    this.textarea.disabled = false;
    this.maxBytes = state.max_bytes;
    this.editor = await pythonEditor(this.textarea, {
      onSave: () => this.save(),
      onRun: () => this.save({ restart: true }),
      onChange: () => this.noteEdited(),
    });
    this.savedText = state.starter ? null : state.source;
    this.editor.setDiagnostics(state.diagnostics);
    this.showHistory(state.history);
    for (const button of this.buttons) button.disabled = false;
    this.root.querySelector('[data-action="save"]').addEventListener("click", () => this.save());
    this.root
      .querySelector('[data-action="save-restart"]')
      .addEventListener("click", () => this.save({ restart: true }));
    this.root.querySelector('[data-action="restore"]').addEventListener("click", () => this.restore());
    this.root.dataset.state = "ready";
    this.say(
      state.starter
        ? "This is the starter file: nothing is saved yet. Save it (Ctrl+S) to run it as my-server."
        : `Version ${state.version}, saved ${when(state.history[0].saved_at)}.`,
    );
  }

  say(text, tone = "") {
    this.status.replaceChildren(...inlineCode(text));
    this.status.dataset.tone = tone;
  }

  /** Whether the editor holds text the playground has not saved (the starter counts as unsaved). */
  unsaved() {
    return Boolean(this.editor) && this.editor.getValue() !== this.savedText;
  }

  noteEdited() {
    if (this.editor && this.editor.getValue() !== this.savedText) this.root.dataset.edited = "true";
    else delete this.root.dataset.edited;
  }

  /** Save the editor's text; with restart, restart the console's server so it runs the new file. */
  async save({ restart = false } = {}) {
    if (!this.editor) return false;
    if (this.saving) await this.saving; // one save at a time, in order
    this.saving = this.put(this.editor.getValue(), restart);
    try {
      return await this.saving;
    } finally {
      this.saving = null;
    }
  }

  async put(text, restart) {
    const size = new TextEncoder().encode(text).length;
    if (this.maxBytes && size > this.maxBytes) {
      this.say(`Not saved: the file is ${size} bytes, over the limit of ${this.maxBytes / 1024} KiB.`, "error");
      return false;
    }
    this.say("Saving…");
    let response;
    try {
      response = await fetch(FILE_URL, {
        method: "PUT",
        body: text,
        headers: { "Content-Type": "text/x-python; charset=utf-8" },
      });
    } catch (_) {
      this.say("Not saved: the playground could not be reached. Your text is still here; try again.", "error");
      return false;
    }
    if (!response.ok) {
      this.say(`Not saved: ${await errorText(response)}`, "error");
      return false;
    }
    const body = await response.json();
    this.savedText = text;
    this.noteEdited();
    this.editor.setDiagnostics(body.diagnostics);
    await this.refreshHistory();
    const problems = body.diagnostics.length;
    if (problems) {
      const first = body.diagnostics[0];
      this.say(
        `Saved as version ${body.version}, but Python cannot run it: line ${first.line}, column ${first.col}: ${first.message}.`,
        "warn",
      );
    } else {
      this.say(
        `Saved as version ${body.version}.${restart ? " Restarting your server with it…" : " Restart the server to run it."}`,
      );
    }
    if (restart) {
      if (!problems) this.followRestart(body.version);
      this.restartConsole();
    }
    return true;
  }

  /**
   * After "Restarting your server with it…": say how the restart went, as the console learns it
   * (running, then perhaps stopped), until the next save.
   */
  followRestart(version) {
    const state = document.querySelector(".console [data-console-state]");
    if (!state) return;
    this.restartWatch?.disconnect();
    this.restartWatch = new MutationObserver(() => {
      const now = state.dataset.state;
      if (now === "ready") this.say(`Saved as version ${version}. Your server is running it.`);
      else if (now === "exited")
        this.say(`Saved as version ${version}, but your server stopped: the console says why.`, "warn");
      else if (now === "full") this.say(`Saved as version ${version}. The console is waiting for a place.`);
    });
    this.restartWatch.observe(state, { attributes: true, attributeFilter: ["data-state"] });
  }

  restartConsole() {
    const restart = document.querySelector('.console [data-action="restart"]');
    const fresh = document.querySelector('.console [data-action="new-server"]');
    const button = fresh && !fresh.hidden ? fresh : restart;
    if (button) button.click();
  }

  async refreshHistory() {
    try {
      const response = await fetch("/api/workspace", { headers: { Accept: "application/json" } });
      if (response.ok) this.showHistory((await response.json()).history);
    } catch (_) {
      /* the list stays as it was */
    }
  }

  showHistory(history) {
    this.history.replaceChildren(
      ...history.map((version, index) => {
        const option = document.createElement("option");
        option.value = String(version.version);
        option.textContent = `${version.version}: ${when(version.saved_at)}, ${version.size} bytes${index === 0 ? " (newest)" : ""}`;
        return option;
      }),
    );
    this.root.querySelector("[data-history-box]").hidden = history.length === 0;
  }

  async restore() {
    const version = this.history.value;
    if (!version) return;
    const response = await fetch(`/api/workspace/history/${encodeURIComponent(version)}/restore`, { method: "POST" });
    if (!response.ok) {
      this.say(`Not restored: ${await errorText(response)}`, "error");
      return;
    }
    const body = await response.json();
    const text = await (await fetch(FILE_URL)).text();
    this.editor.setValue(text);
    this.savedText = text;
    this.noteEdited();
    this.editor.setDiagnostics(body.diagnostics);
    await this.refreshHistory();
    this.say(`Version ${version} restored: saved again as version ${body.version}. Restart the server to run it.`);
  }
}

class Exercise {
  constructor(root, workspace) {
    this.root = root;
    this.workspace = workspace;
    this.button = root.querySelector('[data-action="run-exercise"]');
    this.status = root.querySelector("[data-exercise-status]");
    this.tests = [...root.querySelectorAll("[data-test]")];
    this.stderr = root.querySelector("[data-exercise-stderr]");
    this.button.addEventListener("click", () => this.run());
  }

  async run() {
    this.button.disabled = true;
    this.root.dataset.running = "true";
    try {
      if (this.workspace.unsaved() && !(await this.workspace.save())) {
        this.status.textContent = "Not run: your server.py could not be saved (see above).";
        return;
      }
      this.status.textContent = "Running your server against the exercise…";
      for (const item of this.tests) item.dataset.state = "running";
      const [lesson, step] = this.root.dataset.exercise.split("/");
      let response;
      try {
        response = await fetch(`/api/exercises/${encodeURIComponent(lesson)}/${encodeURIComponent(step)}`, {
          method: "POST",
        });
      } catch (_) {
        this.status.textContent = "Not run: the playground could not be reached. Try again.";
        this.reset();
        return;
      }
      if (!response.ok) {
        this.status.textContent = `Not run: ${await errorText(response)}`;
        this.reset();
        return;
      }
      this.show(await response.json());
    } finally {
      this.button.disabled = false;
      delete this.root.dataset.running;
    }
  }

  reset() {
    for (const item of this.tests) item.dataset.state = "pending";
  }

  show(report) {
    report.outcomes.forEach((outcome, index) => {
      const item = this.tests[index];
      if (!item) return;
      item.dataset.state = outcome.passed ? "passed" : "failed";
      item.querySelector("[data-reason]").replaceChildren(...inlineCode(outcome.reason));
    });
    const passed = report.outcomes.filter((o) => o.passed).length;
    const total = report.outcomes.length;
    let words = report.passed ? `All ${total} passed: the exercise is done.` : `${passed} of ${total} passed.`;
    if (report.problem) words += ` The run stopped: ${report.problem}.`;
    this.status.replaceChildren(...inlineCode(words));
    this.root.dataset.passed = report.passed ? "true" : this.root.dataset.passed;
    this.stderr.hidden = !report.stderr;
    this.stderr.querySelector("pre").textContent = report.stderr || "";
    if (report.stderr && !report.passed) this.stderr.open = true;
  }
}

const root = document.querySelector("[data-workspace]");
if (root) {
  const workspace = new Workspace(root);
  const exercise = document.querySelector("[data-exercise]");
  if (exercise) new Exercise(exercise, workspace);
  workspace.start();
}
