// CodeMirror's styles reach the page through style-mod, which writes them into a <style> element
// when the editor sits in a document (only a shadow root gets a constructed sheet). The site's CSP
// (style-src 'self', no 'unsafe-inline') refuses that element, and an unstyled editor is unusable.
// So a document gets one constructed, adopted stylesheet instead: not an inline style, so allowed.
import { StyleModule } from "style-mod";

const inline = StyleModule.mount;
const sheets = new WeakMap(); // document -> { sheet, modules (in cascade order) }

/** Put each module in list after the one before it in modules; whether the list changed. */
function place(list, modules) {
  let changed = false;
  let at = 0;
  for (const mod of modules) {
    const found = list.indexOf(mod);
    if (found >= at) { at = found + 1; continue; }
    if (found >= 0) { list.splice(found, 1); at -= 1; } // ahead of a module it must follow
    list.splice(at, 0, mod);
    at += 1;
    changed = true;
  }
  return changed;
}

StyleModule.mount = function mount(root, modules, options) {
  const win = root.defaultView;
  if (!root.head || !root.adoptedStyleSheets || !win || !win.CSSStyleSheet) return inline.call(this, root, modules, options);
  let set = sheets.get(root);
  if (!set) {
    set = { sheet: new win.CSSStyleSheet(), modules: [] };
    sheets.set(root, set);
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, set.sheet];
  }
  if (place(set.modules, Array.isArray(modules) ? modules : [modules])) {
    set.sheet.replaceSync(set.modules.map((mod) => mod.getRules()).join("\n"));
  }
};
