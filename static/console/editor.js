// The box for one raw JSON-RPC message: live "valid JSON?" feedback with the error's line and column,
// Ctrl+Enter (or Cmd+Enter) to send. What the learner typed is exactly what is sent.
// It starts as the page's textarea and becomes a CodeMirror JSON editor once the vendored bundle
// loads; the textarea then stays, hidden, holding the same text (see editorsetup.js standIn).

import { checkJson } from "./jsoncheck.js";
import { describe } from "./message.js";
import { loadCodeMirror, mirrorInto, replaceAll, siteLook, standIn } from "../editorsetup.js";

const CHECK_DELAY_MS = 120;

export class Editor {
  /**
   * @param {HTMLTextAreaElement} textarea
   * @param {HTMLElement} status where the feedback goes (linked with aria-describedby)
   * @param {{send: Function, note?: Function}} on send(text); note(value) adds a remark to a valid message
   * @param {{rich?: boolean}} options rich: become a CodeMirror editor when the bundle loads (a reply
   *   card's box stays a plain textarea: it lives a few seconds and is disabled once answered)
   */
  constructor(textarea, status, on, { rich = !textarea.classList.contains("card-editor") } = {}) {
    this.textarea = textarea;
    this.status = status;
    this.on = on;
    this.result = null;
    this.timer = null;
    this.view = null; // the CodeMirror view, once loaded
    if (!status.id) status.id = `${textarea.id || "editor"}-status`;
    textarea.setAttribute("aria-describedby", status.id);
    textarea.addEventListener("input", () => this.checkSoon());
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.sendNow();
      }
    });
    this.check();
    if (rich)
      loadCodeMirror().then((cm) => {
        if (cm) this.upgrade(cm);
      });
  }

  /** Swap the textarea for a CodeMirror JSON editor holding the same text. */
  upgrade(cm) {
    this.cm = cm;
    const rows = Number(this.textarea.getAttribute("rows")) || 6;
    const hadFocus = document.activeElement === this.textarea;
    this.view = new cm.EditorView({
      doc: this.textarea.value,
      selection: { anchor: this.textarea.selectionStart, head: this.textarea.selectionEnd },
      extensions: [
        // Before the default keymap, whose Mod-Enter inserts a line.
        cm.Prec.highest(
          cm.keymap.of([
            {
              key: "Mod-Enter",
              preventDefault: true,
              run: () => {
                this.sendNow();
                return true;
              },
            },
          ]),
        ),
        cm.minimalSetup, // Tab is not bound: it leaves the box, as the console's keyboard help says
        cm.lineNumbers(),
        cm.highlightActiveLineGutter(),
        cm.bracketMatching(),
        cm.json(),
        cm.EditorState.tabSize.of(2),
        cm.EditorView.lineWrapping, // a message on one long line stays readable on a phone
        siteLook(cm, { rows }),
        mirrorInto(cm, this.textarea, () => this.checkSoon()),
      ],
    });
    this.textarea.after(this.view.dom);
    standIn(this.textarea, this.view);
    this.view.dom.dataset.editorFor = this.textarea.id;
    this.check();
    if (hadFocus) this.view.focus();
  }

  get text() {
    return this.textarea.value;
  }

  /** Replace the whole text (a template, an example): an explicit action of the learner. */
  setText(text) {
    if (this.view) replaceAll(this.view, text);
    else this.textarea.value = text;
    this.check();
  }

  checkSoon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), CHECK_DELAY_MS);
  }

  sendNow() {
    this.check();
    this.on.send(this.text);
  }

  check() {
    clearTimeout(this.timer);
    const text = this.textarea.value;
    const result = checkJson(text);
    this.result = result;
    this.textarea.setAttribute("aria-invalid", result.ok ? "false" : "true");
    if (this.view) {
      this.view.contentDOM.setAttribute("aria-invalid", result.ok ? "false" : "true");
      this.markError(result);
    }
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
    this.status.append(
      where,
      excerpt,
      line("hint", "You can still send it as it is, to see how the relay answers (-32700 Parse error)."),
    );
    return result;
  }

  /** Underline where the JSON breaks, inside the editor (the words stay in the status below). */
  markError(result) {
    const length = this.view.state.doc.length;
    const diagnostics = result.ok
      ? []
      : [
          {
            from: Math.min(result.position, length),
            to: Math.min(result.position + 1, length),
            severity: "error",
            message: `Not valid JSON: ${result.message}.`,
          },
        ];
    this.view.dispatch(this.cm.setDiagnostics(this.view.state, diagnostics));
  }

  gotoError() {
    if (!this.result || this.result.ok) return;
    const from = this.result.position;
    const to = Math.min(from + 1, this.text.length);
    if (this.view) {
      this.view.dispatch({ selection: { anchor: from, head: to }, scrollIntoView: true });
      this.view.focus();
      return;
    }
    this.textarea.focus();
    this.textarea.setSelectionRange(from, to);
  }
}

function line(kind, text) {
  const p = document.createElement("p");
  p.className = `editor-${kind}`;
  p.textContent = text;
  return p;
}
