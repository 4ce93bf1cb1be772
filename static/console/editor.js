// A textarea for one raw JSON-RPC message: live "valid JSON?" feedback with the error's line and column,
// Ctrl+Enter (or Cmd+Enter) to send. What the textarea holds is exactly what is sent.

import { checkJson } from "./jsoncheck.js";

const CHECK_DELAY_MS = 120;

/** What kind of JSON-RPC message a parsed value is, in a few words. */
export function describe(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { kind: "other", words: Array.isArray(value) ? "an array (a batch): the relay will refuse it" : "not an object: not a JSON-RPC message" };
  }
  const hasId = Object.prototype.hasOwnProperty.call(value, "id");
  if (typeof value.method === "string") {
    return hasId
      ? { kind: "request", words: `a request: ${value.method}, id ${JSON.stringify(value.id)}` }
      : { kind: "notification", words: `a notification: ${value.method} (no id, so no reply)` };
  }
  if (hasId && ("result" in value || "error" in value)) {
    return { kind: "response", words: `a response to id ${JSON.stringify(value.id)}` };
  }
  return { kind: "other", words: "valid JSON, but not a JSON-RPC message the relay will forward" };
}

export class Editor {
  /**
   * @param {HTMLTextAreaElement} textarea
   * @param {HTMLElement} status where the feedback goes (linked with aria-describedby)
   * @param {{send: Function, note?: Function}} on send(text); note(value) adds a remark to a valid message
   */
  constructor(textarea, status, on) {
    this.textarea = textarea;
    this.status = status;
    this.on = on;
    this.result = null;
    this.timer = null;
    if (!status.id) status.id = `${textarea.id || "editor"}-status`;
    textarea.setAttribute("aria-describedby", status.id);
    textarea.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.check(), CHECK_DELAY_MS);
    });
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.check();
        this.on.send(this.textarea.value);
      }
    });
    this.check();
  }

  get text() {
    return this.textarea.value;
  }

  /** Replace the whole text (a template, an example): an explicit action of the learner. */
  setText(text) {
    this.textarea.value = text;
    this.check();
  }

  check() {
    clearTimeout(this.timer);
    const text = this.textarea.value;
    const result = checkJson(text);
    this.result = result;
    this.textarea.setAttribute("aria-invalid", result.ok ? "false" : "true");
    this.status.replaceChildren();
    this.status.dataset.valid = String(result.ok);
    if (result.ok) {
      const info = describe(result.value);
      const remark = this.on.note ? this.on.note(result.value, info) : "";
      this.status.append(line("ok", `✓ Valid JSON: ${info.words}.${remark ? ` ${remark}` : ""}`));
      return result;
    }
    const where = line("err", `✗ Not valid JSON at line ${result.line}, column ${result.column}: ${result.message}.`);
    where.classList.add("json-error");
    where.dataset.line = String(result.line);
    where.dataset.column = String(result.column);
    const go = document.createElement("button");
    go.type = "button";
    go.className = "link-button";
    go.textContent = "Go to the error";
    go.addEventListener("click", () => this.gotoError());
    where.append(" ", go);
    const excerpt = document.createElement("pre");
    excerpt.className = "error-excerpt";
    const lineText = text.split("\n")[result.line - 1] ?? "";
    const start = Math.max(0, result.column - 60);
    excerpt.textContent = `${lineText.slice(start, start + 100)}\n${" ".repeat(result.column - 1 - start)}^`;
    this.status.append(where, excerpt, line("hint", "You can still send it as it is, to see how the relay answers (-32700 Parse error)."));
    return result;
  }

  gotoError() {
    if (!this.result || this.result.ok) return;
    this.textarea.focus();
    this.textarea.setSelectionRange(this.result.position, Math.min(this.result.position + 1, this.textarea.value.length));
  }
}

function line(kind, text) {
  const p = document.createElement("p");
  p.className = `editor-${kind}`;
  p.textContent = text;
  return p;
}
