// The console's template picker (the <select> beside "Use template").

/**
 * Fill the template <select>. It starts on a placeholder, not on a template: the editor holds the
 * step's own message, which the menu would otherwise seem to name. On a lesson step the first entry
 * puts that message back (`stepMessage`: its key and label).
 */
export function fillTemplates(select, groups, stepMessage = null) {
  select.replaceChildren(new Option("Pick a message…", ""));
  if (stepMessage) {
    const optgroup = document.createElement("optgroup");
    optgroup.label = "This step";
    optgroup.append(new Option(stepMessage.label, stepMessage.key));
    select.append(optgroup);
  }
  for (const group of groups) {
    const optgroup = document.createElement("optgroup");
    optgroup.label = group.group;
    for (const item of group.items) {
      const option = new Option(item.label, item.key);
      optgroup.append(option);
    }
    select.append(optgroup);
  }
  select.value = "";
}
