// A "Try it" button on every JSON-RPC example of a lesson: it puts the example, as shown, in the console.
// Without a console on the page, it opens the playground with the example in its editor.

export const HANDOFF_KEY = "mcp-playground:try-it";

/** `put(text, before)`: `before` lists the messages the example needs sent first (a handshake), or []. */
export function addTryButtons(root, put) {
  for (const pre of root.querySelectorAll("pre[data-example]")) {
    if (pre.nextElementSibling?.classList.contains("try-it")) continue;
    const text = pre.textContent.trim();
    const figure = pre.closest("figure[data-before]");
    const before = figure ? JSON.parse(figure.dataset.before) : [];
    const b = document.createElement("button");
    b.type = "button";
    b.className = "try-it small secondary";
    b.textContent = put ? "Try it in the console" : "Try it in the playground";
    b.addEventListener("click", () => {
      if (put) {
        put(text, before);
        return;
      }
      sessionStorage.setItem(HANDOFF_KEY, text);
      window.location.href = "/playground";
    });
    pre.after(b);
  }
}

/** The example a lesson page handed over, once. */
export function takeHandoff() {
  const text = sessionStorage.getItem(HANDOFF_KEY);
  if (text !== null) sessionStorage.removeItem(HANDOFF_KEY);
  return text;
}
