// Pretty JSON that folds: objects and arrays are <details>. Built from text nodes only (never HTML).
// A view builds at most LINES_AT_ONCE lines at first: past them, containers start folded and are
// built when opened, and a long container shows "… N more" to build the next lines. A server that
// writes big messages on and on cannot make a page (the learner's console, an instructor following
// it) hold millions of elements.

const OPEN_DEPTH = 2; // below this depth, only small containers start open
const SMALL_CHARS = 400;
const LINES_AT_ONCE = 400;

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

/** Whether a container starts open: near the top, or small; never once the view's lines are spent. */
function startsOpen(value, depth, budget) {
  if (budget.left <= 0) return false;
  if (depth < OPEN_DEPTH) return true;
  const text = JSON.stringify(value);
  return text.length < SMALL_CHARS;
}

function node(value, key, depth, last, budget) {
  const comma = last ? "" : ",";
  budget.left -= 1;
  if (value === null || typeof value !== "object") {
    const line = el("div", "j-line");
    const label = keyLabel(key);
    if (label) line.append(label);
    line.append(scalar(value), el("span", "j-punct", comma));
    return line;
  }
  const isArray = Array.isArray(value);
  const keys = isArray ? null : Object.keys(value);
  const length = isArray ? value.length : keys.length;
  const [open, close] = isArray ? ["[", "]"] : ["{", "}"];
  if (length === 0) {
    const line = el("div", "j-line");
    const label = keyLabel(key);
    if (label) line.append(label);
    line.append(el("span", "j-punct", open + close + comma));
    return line;
  }
  const details = el("details", "j-fold");
  const summary = el("summary", "j-line");
  const label = keyLabel(key);
  if (label) summary.append(label);
  const count = isArray ? `${length} item${length === 1 ? "" : "s"}` : `${length} key${length === 1 ? "" : "s"}`;
  summary.append(el("span", "j-punct", open), el("span", "j-folded", ` ${count} ${close}${comma}`));
  details.append(summary);
  const fill = (lines) => {
    const body = el("div", "j-children");
    let next = 0;
    const more = () => {
      while (next < length && lines.left > 0) {
        const k = isArray ? next : keys[next];
        body.append(node(value[k], k, depth + 1, next === length - 1, lines));
        next += 1;
      }
      if (next < length) {
        const rest = el("button", "j-more", `… ${length - next} more`);
        rest.type = "button";
        rest.addEventListener("click", () => {
          rest.remove();
          lines.left = LINES_AT_ONCE;
          more();
        });
        body.append(rest);
      }
    };
    more();
    details.append(body, el("div", "j-line j-close", close + comma));
  };
  if (startsOpen(value, depth, budget)) {
    details.open = true;
    fill(budget);
  } else {
    const build = () => {
      if (!details.open) return;
      details.removeEventListener("toggle", build);
      fill({ left: LINES_AT_ONCE });
    };
    details.addEventListener("toggle", build);
  }
  return details;
}

/** A folding view of a JSON value. */
export function jsonView(value) {
  const root = el("div", "json-view");
  root.append(node(value, undefined, 0, true, { left: LINES_AT_ONCE }));
  return root;
}
