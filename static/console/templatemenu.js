// The console's template picker (the <select> beside "Use template").

/** Fill the template <select>; the initialize of the step's revision comes first. */
export function fillTemplates(select, groups, revision) {
  select.replaceChildren();
  for (const group of groups) {
    const optgroup = document.createElement("optgroup");
    optgroup.label = group.group;
    for (const item of group.items) {
      const option = new Option(item.label, item.key);
      optgroup.append(option);
    }
    select.append(optgroup);
  }
  const preferred = revision === "2026-07-28" ? "discover" : `initialize-${revision || "2025-11-25"}`;
  if ([...select.options].some((o) => o.value === preferred)) select.value = preferred;
}
