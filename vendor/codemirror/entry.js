// What the site's editors use from CodeMirror 6, and nothing more (esbuild keeps only what is reached).
// Our own setup (theme, keys, fallback) lives in static/, so it changes without a rebuild.
import "./adopt-styles.js"; // first: before any editor mounts its styles
export { minimalSetup } from "codemirror";
export { Compartment, EditorState, Prec } from "@codemirror/state";
export { EditorView, keymap, lineNumbers, highlightActiveLineGutter } from "@codemirror/view";
export { indentWithTab } from "@codemirror/commands";
export { HighlightStyle, bracketMatching, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
export { tags } from "@lezer/highlight";
export { lintGutter, setDiagnostics } from "@codemirror/lint";
export { json } from "@codemirror/lang-json";
export { python } from "@codemirror/lang-python";
export { javascript } from "@codemirror/lang-javascript";
