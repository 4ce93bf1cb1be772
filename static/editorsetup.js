// What the site's CodeMirror editors share: loading the vendored bundle (once per page, or not at all)
// and a look built from the stylesheet's colour variables, so dark mode follows prefers-color-scheme
// without a second theme. CodeMirror's styles go in through adoptedStyleSheets, which the CSP allows.

const BUNDLE = "/static/vendor/codemirror.js";
const MONO = 'ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace'; // as in style.css
const LINE_HEIGHT = 1.45;

let loading = null;

/** The bundle's exports, or null when it cannot be loaded: the editors then keep their textarea. */
export function loadCodeMirror() {
  loading ??= import(BUNDLE).catch((err) => {
    console.warn(`The code editor could not load (${err.message}); using a plain text box.`);
    return null;
  });
  return loading;
}

/**
 * The site's look for one editor.
 * @param {object} cm the bundle's exports
 * @param {{rows?: number}} options rows: the least height, in lines, like a textarea's rows
 */
export function siteLook(cm, { rows = 4 } = {}) {
  const t = cm.tags;
  const highlight = cm.HighlightStyle.define([
    {
      tag: [t.keyword, t.self, t.operatorKeyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword],
      color: "var(--hl-keyword)",
    },
    { tag: [t.string, t.special(t.string), t.docString], color: "var(--hl-string)" },
    { tag: [t.number, t.bool, t.null, t.atom], color: "var(--hl-number)" },
    { tag: [t.comment, t.lineComment, t.blockComment], color: "var(--hl-comment)", fontStyle: "italic" },
    { tag: t.propertyName, color: "var(--hl-key)" }, // JSON keys, Python attributes
    {
      tag: [t.function(t.definition(t.variableName)), t.definition(t.className), t.className, t.meta],
      color: "var(--hl-name)",
    },
    { tag: t.invalid, color: "var(--err)" },
  ]);
  const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
  const theme = cm.EditorView.theme(
    {
      "&": {
        color: "var(--fg)",
        backgroundColor: "var(--code-bg)",
        border: "1px solid var(--line)",
        borderRadius: "6px",
        fontSize: ".9rem",
        maxHeight: "70vh",
      },
      // The site's focus ring (CodeMirror's own is a faint dotted line).
      "&.cm-focused": { outline: "3px solid var(--focus)", outlineOffset: "2px" },
      "&:has(.cm-content[aria-invalid=true])": { borderColor: "var(--err)" },
      ".cm-scroller": { fontFamily: MONO, lineHeight: String(LINE_HEIGHT), overflow: "auto" },
      ".cm-content, .cm-gutter": { minHeight: `calc(${rows * LINE_HEIGHT}em + 8px)` },
      ".cm-content": { caretColor: "var(--fg)", padding: "4px 0" },
      ".cm-line": { padding: "0 .5rem 0 .4rem" },
      ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--fg)", borderLeftWidth: "2px" },
      "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection":
        { backgroundColor: "color-mix(in srgb, var(--accent) 28%, transparent)" },
      ".cm-gutters": {
        backgroundColor: "var(--panel)",
        color: "var(--muted)",
        borderRight: "1px solid var(--line)",
        borderRadius: "6px 0 0 6px",
      },
      ".cm-activeLineGutter": {
        backgroundColor: "color-mix(in srgb, var(--accent) 14%, transparent)",
        color: "var(--fg)",
      },
      ".cm-matchingBracket, &.cm-focused .cm-matchingBracket": {
        backgroundColor: "color-mix(in srgb, var(--ok) 25%, transparent)",
        outline: "1px solid var(--ok)",
      },
      ".cm-nonmatchingBracket, &.cm-focused .cm-nonmatchingBracket": {
        color: "var(--err)",
        outline: "1px solid var(--err)",
      },
      ".cm-tooltip": {
        backgroundColor: "var(--panel)",
        color: "var(--fg)",
        border: "1px solid var(--line)",
        borderRadius: "6px",
        fontSize: ".9rem",
      },
      ".cm-diagnostic": { padding: ".3rem .6rem" },
      ".cm-diagnostic-error": { borderLeftColor: "var(--err)" },
      ".cm-diagnostic-warning": { borderLeftColor: "var(--warn)" },
      // A wavy underline in the site's colour, instead of the bundled red image.
      ".cm-lintRange-error": {
        backgroundImage: "none",
        textDecoration: "underline wavy var(--err)",
        textDecorationSkipInk: "none",
        textUnderlineOffset: "3px",
      },
      ".cm-lintRange-warning": {
        backgroundImage: "none",
        textDecoration: "underline wavy var(--warn)",
        textDecorationSkipInk: "none",
        textUnderlineOffset: "3px",
      },
      ".cm-lintPoint-error:after": { borderBottomColor: "var(--err)" },
    },
    { dark },
  );
  return [theme, cm.syntaxHighlighting(highlight)];
}

/**
 * Keep the textarea behind an editor working for whoever still holds it (console.js focuses it, a
 * form or a test reads it, a script may fill it): it stays in the page, out of sight and out of the
 * tab order, its value and selection following the editor's; focusing it focuses the editor (with
 * its selection), text put into it goes into the editor, and scrolling to it shows the editor. Its
 * label and description name the editor instead.
 */
export function standIn(textarea, view) {
  Object.assign(textarea.style, {
    position: "absolute",
    width: "1px",
    height: "1px",
    padding: "0",
    border: "0",
    margin: "0",
    overflow: "hidden",
    clipPath: "inset(50%)",
    opacity: "0",
    pointerEvents: "none",
    resize: "none",
  });
  textarea.tabIndex = -1;
  textarea.setAttribute("aria-hidden", "true");
  textarea.addEventListener("focus", () => {
    const { selectionStart: anchor, selectionEnd: head } = textarea;
    view.dispatch({ selection: { anchor, head }, scrollIntoView: true });
    view.focus();
  });
  textarea.addEventListener("input", () => {
    if (view.state.doc.toString() !== textarea.value) replaceAll(view, textarea.value);
  });
  textarea.scrollIntoView = (options) => view.dom.scrollIntoView(options);
  const label = textarea.id ? document.querySelector(`label[for="${CSS.escape(textarea.id)}"]`) : null;
  if (label) {
    label.id ||= `${textarea.id}-label`;
    view.contentDOM.setAttribute("aria-labelledby", label.id);
    label.addEventListener("click", (event) => {
      event.preventDefault();
      view.focus();
    });
  }
  const described = textarea.getAttribute("aria-describedby");
  if (described) view.contentDOM.setAttribute("aria-describedby", described);
}

/** An update listener that copies the editor's text and selection into its textarea. */
export function mirrorInto(cm, textarea, onText) {
  return cm.EditorView.updateListener.of((update) => {
    if (!update.docChanged && !update.selectionSet) return;
    const text = update.state.doc.toString();
    if (update.docChanged) textarea.value = text;
    const { from, to } = update.state.selection.main;
    textarea.setSelectionRange(from, to);
    if (update.docChanged && onText) onText(text, update);
  });
}

/** Replace the whole text of an editor (its listeners see it as any other change). */
export function replaceAll(view, text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}
