// A code editor for the workspace, in Python or TypeScript: CodeMirror (highlighting, line numbers,
// indentation, inline diagnostics) when the vendored bundle loads, else the page's own textarea with
// the same keys and the diagnostics as text. Either way the textarea holds the text, so a form or a
// test can read it.

import { loadCodeMirror, mirrorInto, replaceAll, siteLook, standIn } from "../editorsetup.js";

// Each language as its own community writes it: PEP 8's four spaces, the TypeScript SDK's two.
const LANGUAGES = {
  python: { indent: "    ", mode: (cm) => cm.python() },
  typescript: { indent: "  ", mode: (cm) => cm.javascript({ typescript: true }) },
};

/**
 * One problem to show. `line` and `col` count from 1, as Python's tracebacks do; a missing or too
 * large `col` means the line's first non-blank character or its end, a too large `line` the last line.
 * @typedef {{line: number, col?: number, message: string, severity?: "error"|"warning"|"info"}} Diagnostic
 */

/**
 * @typedef {object} CodeEditor
 * @property {() => string} getValue the whole text
 * @property {(text: string) => void} setValue replace the whole text (onChange is not called)
 * @property {(diagnostics: Diagnostic[]) => void} setDiagnostics replace what is shown; [] clears it
 * @property {() => void} focus put the cursor in the editor
 * @property {(language: "python"|"typescript") => void} setLanguage highlight and indent as this language
 * @property {boolean} usingFallback true when the bundle could not load: the textarea is the editor
 */

/**
 * Make a textarea into a code editor. Keys: Ctrl+S (Cmd+S) calls onSave instead of the browser's
 * save dialog; Ctrl+Enter (Cmd+Enter) calls onRun; Tab indents, and Escape then Tab leaves the editor
 * (in the fallback, Tab leaves at once, as in any textarea). The textarea's label names the editor.
 *
 * @param {HTMLTextAreaElement} textarea in the page; its value is the starting text
 * @param {{onSave?: (text: string) => void, onRun?: (text: string) => void, onChange?: (text: string) => void}} [handlers]
 *   onChange is called after each edit by the learner, with the whole text
 * @param {{language?: "python"|"typescript"}} [options] the file's language, Python unless said
 * @returns {Promise<CodeEditor>}
 */
export async function codeEditor(textarea, { onSave, onRun, onChange } = {}, { language = "python" } = {}) {
  const cm = await loadCodeMirror();
  const handlers = { onSave, onRun, onChange };
  return cm ? codeMirrorEditor(cm, textarea, handlers, language) : plainEditor(textarea, handlers);
}

/** A Python editor (codeEditor in Python): a lesson's runnable block. */
export function pythonEditor(textarea, handlers = {}) {
  return codeEditor(textarea, handlers, { language: "python" });
}

function languageExtensions(cm, language) {
  const chosen = LANGUAGES[language] || LANGUAGES.python;
  return [chosen.mode(cm), cm.indentUnit.of(chosen.indent), cm.EditorState.tabSize.of(chosen.indent.length)];
}

function codeMirrorEditor(cm, textarea, { onSave, onRun, onChange }, language) {
  const languageSlot = new cm.Compartment(); // swapped when the learner changes language
  let quiet = false; // while setValue replaces the text: not the learner's edit
  const keys = [];
  if (onSave)
    keys.push({
      key: "Mod-s",
      preventDefault: true,
      run: (view) => {
        onSave(view.state.doc.toString());
        return true;
      },
    });
  if (onRun)
    keys.push({
      key: "Mod-Enter",
      preventDefault: true,
      run: (view) => {
        onRun(view.state.doc.toString());
        return true;
      },
    });
  const rows = Number(textarea.getAttribute("rows")) || 12;
  const view = new cm.EditorView({
    doc: textarea.value,
    extensions: [
      cm.Prec.highest(cm.keymap.of(keys)), // before the default keymap, whose Mod-Enter inserts a line
      cm.minimalSetup,
      cm.lineNumbers(),
      cm.highlightActiveLineGutter(),
      cm.lintGutter(),
      cm.bracketMatching(),
      cm.indentOnInput(),
      languageSlot.of(languageExtensions(cm, language)),
      cm.keymap.of([cm.indentWithTab]), // Escape first, and Tab leaves (CodeMirror's tab focus mode)
      siteLook(cm, { rows }),
      mirrorInto(cm, textarea, (text) => {
        if (!quiet && onChange) onChange(text);
      }),
    ],
  });
  textarea.after(view.dom);
  standIn(textarea, view);
  view.dom.dataset.editorFor = textarea.id;
  return {
    usingFallback: false,
    getValue: () => view.state.doc.toString(),
    setValue(text) {
      quiet = true;
      try {
        replaceAll(view, text);
      } finally {
        quiet = false;
      }
    },
    setDiagnostics(diagnostics) {
      const doc = view.state.doc;
      view.dispatch(
        cm.setDiagnostics(
          view.state,
          diagnostics.map((d) => ({
            ...rangeOf(doc, d),
            severity: d.severity || "error",
            message: d.message,
          })),
        ),
      );
    },
    focus: () => view.focus(),
    setLanguage(next) {
      view.dispatch({ effects: languageSlot.reconfigure(languageExtensions(cm, next)) });
    },
  };
}

/** Where a 1-based line and column fall in the text: the word (or character) that starts there. */
function rangeOf(doc, { line, col }) {
  const at = doc.line(Math.min(Math.max(1, Math.trunc(line) || 1), doc.lines));
  const text = at.text;
  const start = col ? Math.min(Math.max(1, Math.trunc(col)) - 1, text.length) : text.search(/\S|$/);
  let end = start;
  while (end < text.length && /\w/.test(text[end])) end += 1;
  if (end === start) end = Math.min(start + 1, text.length);
  return { from: at.from + start, to: at.from + end };
}

function plainEditor(textarea, { onSave, onRun, onChange }) {
  const list = document.createElement("div");
  list.className = "editor-status";
  list.dataset.diagnostics = "";
  list.setAttribute("aria-live", "polite");
  if (textarea.id) list.id = `${textarea.id}-diagnostics`;
  textarea.after(list);
  if (list.id)
    textarea.setAttribute(
      "aria-describedby",
      [textarea.getAttribute("aria-describedby"), list.id].filter(Boolean).join(" "),
    );
  textarea.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey)) return;
    const handler = event.key === "s" || event.key === "S" ? onSave : event.key === "Enter" ? onRun : null;
    if (!handler) return;
    event.preventDefault();
    handler(textarea.value);
  });
  textarea.addEventListener("input", () => {
    if (onChange) onChange(textarea.value);
  });
  return {
    usingFallback: true,
    getValue: () => textarea.value,
    setValue(text) {
      textarea.value = text;
    },
    setDiagnostics(diagnostics) {
      list.replaceChildren(
        ...diagnostics.map((d) => {
          const p = document.createElement("p");
          p.className = d.severity === "error" || !d.severity ? "editor-err" : "editor-hint";
          p.dataset.line = String(d.line);
          p.textContent = `Line ${d.line}${d.col ? `, column ${d.col}` : ""}: ${d.message}`;
          return p;
        }),
      );
    },
    focus: () => textarea.focus(),
    setLanguage() {
      /* the plain textarea highlights nothing */
    },
  };
}
