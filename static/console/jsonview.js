// Pretty JSON that folds: objects and arrays are <details>. Built from text nodes only (never HTML).

const OPEN_DEPTH = 2; // below this depth, only small containers start open
const SMALL_CHARS = 400;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function scalar(value) {
  const kind = value === null ? "null" : typeof value;
  return el("span", `j-${kind}`, JSON.stringify(value));
}

function keyLabel(key) {
  if (key === undefined) return null;
  const span = el(
    "span",
    typeof key === "number" ? "j-index" : "j-key",
    typeof key === "number" ? "" : JSON.stringify(key),
  );
  if (typeof key !== "number") span.append(el("span", "j-punct", ": "));
  return span;
}

function node(value, key, depth, last) {
  const comma = last ? "" : ",";
  if (value === null || typeof value !== "object") {
    const line = el("div", "j-line");
    const label = keyLabel(key);
    if (label) line.append(label);
    line.append(scalar(value), el("span", "j-punct", comma));
    return line;
  }
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
  const [open, close] = isArray ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) {
    const line = el("div", "j-line");
    const label = keyLabel(key);
    if (label) line.append(label);
    line.append(el("span", "j-punct", open + close + comma));
    return line;
  }
  const details = el("details", "j-fold");
  details.open = depth < OPEN_DEPTH || JSON.stringify(value).length < SMALL_CHARS;
  const summary = el("summary", "j-line");
  const label = keyLabel(key);
  if (label) summary.append(label);
  const count = isArray
    ? `${entries.length} item${entries.length === 1 ? "" : "s"}`
    : `${entries.length} key${entries.length === 1 ? "" : "s"}`;
  summary.append(el("span", "j-punct", open), el("span", "j-folded", ` ${count} ${close}${comma}`));
  const body = el("div", "j-children");
  for (const [i, [k, v]] of entries.entries())
    body.append(node(v, isArray ? i : k, depth + 1, i === entries.length - 1));
  details.append(summary, body, el("div", "j-line j-close", close + comma));
  return details;
}

/** A folding view of a JSON value. */
export function jsonView(value) {
  const root = el("div", "json-view");
  root.append(node(value, undefined, 0, true));
  return root;
}
