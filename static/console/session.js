// Small helpers of the console: log labels, the template picker and the transcript export.

const id = (message) => JSON.stringify(message.id);

export const labels = {
  sent(message, info) {
    if (info.kind === "request") return `${message.method} (request, id ${id(message)})`;
    if (info.kind === "notification") return `${message.method} (notification)`;
    if (info.kind === "response") return `${"error" in message ? "error reply" : "reply"} to the server's request id ${id(message)}`;
    return "message";
  },
  received(message, info, frame, requests) {
    if (!message) return "a line that is not JSON";
    if (frame.answers) {
      const method = requests.get(frame.answers) || `#${frame.answers}`;
      if ("error" in message) {
        const err = message.error || {};
        return `error ${err.code} for ${method}: ${err.message}`;
      }
      return `result for ${method} (id ${id(message)})`;
    }
    if (info.kind === "request") return `${message.method} (a request from the server, id ${id(message)})`;
    if (info.kind === "notification") return `${message.method} (notification)`;
    if (info.kind === "response") return `a response with id ${id(message)}, which answers none of your requests`;
    return "a message";
  },
};

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

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Download the session's transcript (the relay's own copy; this page's copy if the session is gone). */
export async function exportTranscript(session, server, frames) {
  if (session) {
    try {
      const reply = await fetch(`/api/sessions/${encodeURIComponent(session)}/transcript`);
      if (reply.ok) {
        download(`transcript-${session}.json`, JSON.stringify(await reply.json(), null, 2));
        return;
      }
    } catch {
      // fall through to this page's copy
    }
  }
  const body = { server, session, source: "console (the server's copy was no longer available)", frames };
  download(`transcript-${session || "console"}.json`, JSON.stringify(body, null, 2));
}
