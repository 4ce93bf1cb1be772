// The learner's workspace beside the console: their server, server.py in Python or server.ts in
// TypeScript (and on some steps their test_server.py). Load each file, save it (the server answers the
// syntax errors it found without running the file), save and restart the console's server or save and
// run the tests, restore a saved version, change the server's language; and the step's exercise, run
// against fresh instances of the saved files.

import { inlineCode } from "../console/checks.js";
import { showRun } from "../runstream.js";
import { codeEditor } from "./codeeditor.js";

const LANGUAGE_NAMES = { python: "Python", typescript: "TypeScript" };
const CONTENT_TYPES = { "server.ts": "text/x-typescript; charset=utf-8" };

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
    this.setFile(root.dataset.workspace); // server.py or test_server.py; server.ts once chosen
    this.languageSwitch = root.querySelector("[data-language-switch]"); // the server's file only
    this.language = "python";
    this.textarea = root.querySelector("textarea");
    this.status = root.querySelector("[data-workspace-status]");
    this.history = root.querySelector("[data-history]");
    this.buttons = [...root.querySelectorAll("button[data-action]")];
    this.savedText = null; // what the playground holds: unsaved edits differ from it
    this.savedVersion = null; // the version the editor's text is based on: a save names it (If-Match)
    this.saving = null;
  }

  setFile(name) {
    this.file = name;
    this.fileUrl = `/api/workspace/${name}`;
    this.query = `?file=${encodeURIComponent(name)}`;
    for (const label of this.root.querySelectorAll("[data-file-name]")) label.textContent = name;
  }

  async load() {
    const response = await fetch(`/api/workspace${this.query}`, { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(await errorText(response));
    return response.json();
  }

  /** The learner's language for their server (GET /api/workspace/settings), and its file. */
  async loadLanguage() {
    const response = await fetch("/api/workspace/settings", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(await errorText(response));
    this.settings = await response.json();
    this.showLanguage(this.settings.language);
  }

  showLanguage(language) {
    this.language = language;
    this.setFile(this.settings.files[language]);
    for (const hint of this.root.querySelectorAll("[data-hint-for]")) hint.hidden = hint.dataset.hintFor !== language;
    // Elsewhere on the page (the exercise) too: what runs as my-server.
    for (const name of document.querySelectorAll("[data-server-file-name]")) name.textContent = this.file;
    for (const radio of this.languageSwitch.querySelectorAll("input")) radio.checked = radio.value === language;
    const typeCheck = this.root.querySelector('[data-action="type-check"]');
    if (typeCheck) typeCheck.hidden = language !== "typescript";
    document.dispatchEvent(new CustomEvent("playground:language", { detail: { language } }));
  }

  async start() {
    let state;
    try {
      if (this.languageSwitch) await this.loadLanguage();
      state = await this.load();
    } catch (error) {
      this.say(`Your ${this.file} could not be loaded: ${error.message} Reload the page to try again.`, "error");
      this.root.dataset.state = "failed";
      return;
    }
    this.textarea.value = state.source;
    this.textarea.disabled = false;
    this.maxBytes = state.max_bytes;
    this.editor = await codeEditor(
      this.textarea,
      {
        onSave: () => this.save(),
        onRun: () => (this.tests ? this.runTests() : this.save({ restart: true })),
        onChange: () => this.noteEdited(),
      },
      { language: this.language },
    );
    this.showState(state);
    if (this.languageSwitch) this.offerLanguages();
    for (const button of this.buttons) button.disabled = false;
    this.root.querySelector('[data-action="save"]').addEventListener("click", () => this.save());
    this.root
      .querySelector('[data-action="save-restart"]')
      ?.addEventListener("click", () => this.save({ restart: true }));
    this.root.querySelector('[data-action="save-run"]')?.addEventListener("click", () => this.runTests());
    this.root.querySelector('[data-action="restore"]').addEventListener("click", () => this.restore());
    this.root.querySelector('[data-action="type-check"]')?.addEventListener("click", () => this.checkTypes());
    this.root.dataset.state = "ready";
    let first = `Version ${state.version}, saved ${when(state.history[0]?.saved_at ?? 0)}.`;
    if (state.starter)
      first = this.tests
        ? "This is the starter file: nothing is saved yet. Save and run the tests (Ctrl+Enter) to try it."
        : "This is the starter file: nothing is saved yet. Save it (Ctrl+S) to run it as my-server. " +
          "(Wrote it in another browser? Continue on another device, at the bottom of the page, brings it here.)";
    this.say(first);
  }

  /** The file's text, diagnostics and history, as GET /api/workspace gives them. */
  showState(state) {
    this.savedText = state.starter ? null : state.source;
    this.savedVersion = state.version; // 0: the starter
    this.loadedText = state.source; // the starter, until something is saved
    this.editor.setDiagnostics(state.diagnostics);
    this.showHistory(state.history);
    this.noteEdited();
  }

  offerLanguages() {
    const typescript = this.settings.typescript;
    const note = this.languageSwitch.querySelector("[data-language-note]");
    for (const radio of this.languageSwitch.querySelectorAll("input")) {
      radio.disabled = radio.value === "typescript" && !typescript.available;
      radio.addEventListener("change", () => radio.checked && this.changeLanguage(radio.value));
    }
    note.textContent = typescript.available
      ? `TypeScript SDK ${typescript.sdk}: protocol revisions up to ${typescript.newest_revision}.`
      : `TypeScript is not available here: ${typescript.why_not}`;
    this.languageSwitch.hidden = false;
  }

  /** Write the server in the other language: save this file, keep the choice, open the other file, and
   * restart the console's server so that my-server runs it. */
  async changeLanguage(language) {
    if (language === this.language || this.changing) return;
    this.changing = true;
    const back = () => this.showLanguage(this.language);
    const radios = [...this.languageSwitch.querySelectorAll("input")];
    for (const radio of radios) radio.disabled = true;
    try {
      // Edits are saved first (the starter as it came is not: nothing of the learner's is in it).
      if (this.editor.getValue() !== this.loadedText && this.unsaved() && !(await this.save())) {
        back();
        return;
      }
      let response;
      try {
        response = await fetch("/api/workspace/settings", {
          method: "PUT",
          body: JSON.stringify({ language }),
          headers: { "Content-Type": "application/json" },
        });
      } catch (_) {
        this.say("The language was not changed: the playground could not be reached. Try again.", "error");
        back();
        return;
      }
      if (!response.ok) {
        this.say(`The language was not changed: ${await errorText(response)}`, "error");
        back();
        return;
      }
      this.showLanguage(language);
      const state = await this.load();
      this.editor.setLanguage(language);
      this.editor.setValue(state.source);
      this.showState(state);
      const what = state.starter ? "the starter file: save it to run it" : `version ${state.version}`;
      this.say(`Your server is now written in ${LANGUAGE_NAMES[language]}: my-server runs ${this.file}, ${what}.`);
      this.restartConsole();
    } catch (error) {
      this.say(`Your ${this.file} could not be loaded: ${error.message} Reload the page to try again.`, "error");
    } finally {
      this.changing = false;
      for (const radio of radios) radio.disabled = radio.value === "typescript" && !this.settings.typescript.available;
    }
  }

  /** Save, then have the TypeScript compiler check the saved server.ts in the learner's sandbox. */
  async checkTypes() {
    if (this.checking) return;
    this.checking = true;
    const button = this.root.querySelector('[data-action="type-check"]');
    button.disabled = true;
    try {
      if (this.unsaved() && !(await this.save())) return;
      this.say("Checking the types in your sandbox: the compiler takes a few seconds…");
      let response;
      try {
        response = await fetch("/api/workspace/typecheck", { method: "POST" });
      } catch (_) {
        this.say("Not checked: the playground could not be reached. Try again.", "error");
        return;
      }
      if (!response.ok) {
        this.say(`Not checked: ${await errorText(response)}`, "error");
        return;
      }
      const { diagnostics, seconds } = await response.json();
      this.editor.setDiagnostics(diagnostics);
      if (!diagnostics.length) {
        this.say(`No type errors in ${this.file} (checked in ${seconds} s).`);
        return;
      }
      const first = diagnostics[0];
      const count = diagnostics.length === 1 ? "One type error" : `${diagnostics.length} type errors`;
      this.say(
        `${count} (the server still runs: types are not checked when it starts). First, line ${first.line}, ` +
          `column ${first.col}: ${first.message.split("\n")[0]}`,
        "warn",
      );
    } finally {
      this.checking = false;
      button.disabled = false;
    }
  }

  get tests() {
    return this.file === "test_server.py";
  }

  /** Save every file of the workspace that has unsaved edits; false if one could not be saved. */
  static async saveAll() {
    for (const workspace of workspaces) if (workspace.unsaved() && !(await workspace.save())) return false;
    return true;
  }

  /** Save (every file), then run pytest on the saved test_server.py beside the saved server.py. */
  async runTests() {
    if (this.running) return;
    this.running = true;
    const button = this.root.querySelector('[data-action="save-run"]');
    button.disabled = true;
    const status = this.root.querySelector("[data-run-status]");
    try {
      if (!(await Workspace.saveAll())) {
        status.textContent = "Not run: a file could not be saved (see above).";
        return;
      }
      const last = await showRun(
        "/api/workspace/test-run",
        {},
        {
          output: this.root.querySelector("[data-run-output]"),
          status,
          runningText: "Running pytest in your sandbox...",
        },
      );
      if (last && !last.error) {
        const words =
          last.exit === 0 ? "Every test passed." : last.exit === 1 ? "Some tests failed: read why above." : "";
        if (words) status.textContent = `${words} ${status.textContent}`;
      }
      this.root.dataset.testsEnded = last ? (last.error ? "error" : last.stopped || String(last.exit)) : "error";
    } finally {
      this.running = false;
      button.disabled = false;
    }
  }

  say(text, tone = "") {
    this.status.replaceChildren(...inlineCode(text));
    this.status.dataset.tone = tone;
  }

  /** Whether the editor holds text the playground has not saved (the starter counts as unsaved). */
  unsaved() {
    return Boolean(this.editor) && this.editor.getValue() !== this.savedText;
  }

  /** Whether the learner typed something not yet saved (the starter as it came is nothing of theirs). */
  edited() {
    return this.unsaved() && this.editor.getValue() !== this.loadedText;
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
      const headers = { "Content-Type": CONTENT_TYPES[this.file] || "text/x-python; charset=utf-8" };
      // Saved only if no other tab or device saved since this text was loaded (or last saved here).
      if (this.savedVersion !== null) headers["If-Match"] = `"${this.savedVersion}"`;
      response = await fetch(this.fileUrl, { method: "PUT", body: text, headers });
    } catch (_) {
      this.say("Not saved: the playground could not be reached. Your text is still here; try again.", "error");
      return false;
    }
    if (response.status === 409) {
      const theirs = (await response.json()).error;
      // Saving again replaces theirs, now that the learner has been told; History holds theirs.
      this.savedVersion = theirs.version;
      await this.refreshHistory();
      this.say(
        `Not saved: another tab or device saved version ${theirs.version} (${when(theirs.saved_at)}) since ` +
          "this text was loaded. Your text is still here. Save again to make yours the newest version " +
          "(theirs stays in Saved versions), or copy yours and reload the page to see theirs.",
        "warn",
      );
      return false;
    }
    if (!response.ok) {
      this.say(`Not saved: ${await errorText(response)}`, "error");
      return false;
    }
    const body = await response.json();
    this.savedText = text;
    this.savedVersion = body.version;
    this.noteEdited();
    this.editor.setDiagnostics(body.diagnostics);
    await this.refreshHistory();
    const problems = body.diagnostics.length;
    // The same text as the newest version makes no new one.
    const saved = body.unchanged ? `No changes: still version ${body.version}` : `Saved as version ${body.version}`;
    if (problems) {
      const first = body.diagnostics[0];
      this.say(
        `${saved}, but ${this.language === "typescript" ? "it cannot be run" : "Python cannot run it"}: line ${first.line}, column ${first.col}: ${first.message}.`,
        "warn",
      );
    } else {
      let next = restart ? " Restarting your server with it…" : " Restart the server to run it.";
      if (this.tests || (body.unchanged && !restart)) next = "";
      this.say(`${saved}.${next}`);
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
      const response = await fetch(`/api/workspace${this.query}`, { headers: { Accept: "application/json" } });
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
    if (this.edited() && !window.confirm(`Restore version ${version}? The edits you have not saved will be replaced.`))
      return;
    const response = await fetch(`/api/workspace/history/${encodeURIComponent(version)}/restore${this.query}`, {
      method: "POST",
    });
    if (!response.ok) {
      this.say(`Not restored: ${await errorText(response)}`, "error");
      return;
    }
    const body = await response.json();
    const text = await (await fetch(this.fileUrl)).text();
    this.editor.setValue(text);
    this.savedText = text;
    this.savedVersion = body.version;
    this.noteEdited();
    this.editor.setDiagnostics(body.diagnostics);
    await this.refreshHistory();
    const next = this.tests ? "Run the tests to try it." : "Restart the server to run it.";
    if (body.unchanged) this.say(`Version ${version} holds the same text as the newest, version ${body.version}.`);
    else this.say(`Version ${version} restored: saved again as version ${body.version}. ${next}`);
  }
}

class Exercise {
  constructor(root) {
    this.root = root;
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
      if (!(await Workspace.saveAll())) {
        this.status.textContent = "Not run: a file could not be saved (see above).";
        return;
      }
      this.status.textContent =
        this.root.dataset.kind === "tests"
          ? "Running your tests on your server and on the broken ones…"
          : "Running your server against the exercise…";
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

const workspaces = [...document.querySelectorAll("[data-workspace]")].map((root) => new Workspace(root));
const exercise = document.querySelector("[data-exercise]");
if (exercise && workspaces.length) new Exercise(exercise);
for (const workspace of workspaces) workspace.start();
// Leaving the page (a reload, a link, closing the tab) with typed text not saved: the browser asks.
window.addEventListener("beforeunload", (event) => {
  if (workspaces.some((workspace) => workspace.edited())) event.preventDefault();
});
