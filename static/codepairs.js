// The lessons' code in both languages of the Build track (a ```python block and its ```typescript
// twin, app/course/render.py): show the learner's language and offer the other. The choice is kept in
// this browser, and follows the language the learner's own server is written in (workspace.js says so
// with a "playground:language" event).

const KEY = "playground.codeLanguage";
const LANGUAGES = ["python", "typescript"];

function remembered() {
  try {
    const value = localStorage.getItem(KEY);
    return LANGUAGES.includes(value) ? value : "python";
  } catch (_) {
    return "python"; // storage refused (private mode): Python, the course's first language
  }
}

function remember(language) {
  try {
    localStorage.setItem(KEY, language);
  } catch (_) {
    /* kept for this page only */
  }
}

function show(pair, language) {
  for (const tab of pair.querySelectorAll('[role="tab"]')) {
    const chosen = tab.dataset.lang === language;
    tab.setAttribute("aria-selected", String(chosen));
    tab.tabIndex = chosen ? 0 : -1;
  }
  for (const pane of pair.querySelectorAll(".code-pair-pane")) pane.hidden = pane.dataset.lang !== language;
}

function showEverywhere(language) {
  for (const pair of pairs) show(pair, language);
}

const pairs = [...document.querySelectorAll("[data-code-pair]")];
for (const pair of pairs) {
  const tabs = [...pair.querySelectorAll('[role="tab"]')];
  const panes = [...pair.querySelectorAll(".code-pair-pane")];
  tabs.forEach((tab, index) => {
    const pane = panes[index];
    pane.id = `${pair.id || `pair-${pairs.indexOf(pair)}`}-${tab.dataset.lang}`;
    tab.setAttribute("aria-controls", pane.id);
    tab.addEventListener("click", () => {
      remember(tab.dataset.lang);
      showEverywhere(tab.dataset.lang);
    });
    tab.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      const next = tabs[(index + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
      next.click();
      next.focus();
    });
  });
  pair.querySelector(".code-pair-tabs").hidden = false;
  pair.dataset.ready = "true";
}
showEverywhere(remembered());

document.addEventListener("playground:language", (event) => {
  const language = event.detail?.language;
  if (!LANGUAGES.includes(language)) return;
  remember(language);
  showEverywhere(language);
});
