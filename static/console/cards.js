// Server-initiated requests (sampling, roots, elicitation, ping) as a card: the learner plays the client
// and answers by editing a prefilled reply. The reply is sent exactly as edited.

import { button, el } from "./dom.js";
import { Editor } from "./editor.js";
import { jsonView } from "./jsonview.js";

const TITLES = {
  "sampling/createMessage": "The server asks your model to write a reply (sampling)",
  "roots/list": "The server asks which folders it may work in (roots)",
  "elicitation/create": "The server asks the user for input (elicitation)",
  ping: "The server checks you are still there (ping)",
};

const reply = (id, body) => JSON.stringify({ jsonrpc: "2.0", id, ...body }, null, 2);

function exampleFor(schema) {
  const content = {};
  for (const [name, prop] of Object.entries(schema?.properties || {})) {
    if (prop.default !== undefined) content[name] = prop.default;
    else if (Array.isArray(prop.enum)) content[name] = prop.enum[0];
    else if (prop.type === "integer" || prop.type === "number") content[name] = prop.minimum ?? 1;
    else if (prop.type === "boolean") content[name] = true;
    else content[name] = "";
  }
  return content;
}

/** Prefilled replies for a server request: [{label, text}], the first is the default. */
export function repliesFor(message) {
  const { id, method, params = {} } = message;
  const refuse = {
    label: "Refuse with an error",
    text: reply(id, { error: { code: -1, message: "The user rejected this request." } }),
  };
  switch (method) {
    case "sampling/createMessage":
      return [
        {
          label: "Reply as the model",
          text: reply(id, {
            result: {
              role: "assistant",
              content: { type: "text", text: "Walk the old fort, then have lunch by the river." },
              model: "learner",
            },
          }),
        },
        refuse,
      ];
    case "roots/list":
      return [
        {
          label: "List roots",
          text: reply(id, { result: { roots: [{ uri: "file:///home/me/trips", name: "trips" }] } }),
        },
        refuse,
      ];
    case "elicitation/create":
      if (params.mode === "url") {
        // URL mode: the user opens the link and answers there; accepting carries no content.
        return [
          { label: "Accept (open the link)", text: reply(id, { result: { action: "accept" } }) },
          { label: "Decline", text: reply(id, { result: { action: "decline" } }) },
          { label: "Cancel", text: reply(id, { result: { action: "cancel" } }) },
        ];
      }
      return [
        {
          label: "Accept",
          text: reply(id, { result: { action: "accept", content: exampleFor(params.requestedSchema) } }),
        },
        { label: "Decline", text: reply(id, { result: { action: "decline" } }) },
        { label: "Cancel", text: reply(id, { result: { action: "cancel" } }) },
      ];
    case "ping":
      return [{ label: "Answer the ping", text: reply(id, { result: {} }) }];
    default:
      return [
        {
          label: "Method not found",
          text: reply(id, { error: { code: -32601, message: `Method not found: ${method}` } }),
        },
      ];
  }
}

export class RequestCards {
  /**
   * @param {HTMLElement} container
   * @param {{send: Function}} on send(text) sends a reply as typed
   */
  constructor(container, on) {
    this.container = container;
    this.on = on;
    this.open = new Map(); // JSON of the request id -> card
    this.serial = 0;
  }

  add(message) {
    const key = JSON.stringify(message.id);
    const replies = repliesFor(message);
    this.serial += 1;
    const card = el("section", "request-card");
    card.dataset.method = message.method;
    card.dataset.id = key;
    const titleId = `request-card-${this.serial}`;
    card.setAttribute("aria-labelledby", titleId);
    const title = el("h3", null, TITLES[message.method] || `The server sent a request: ${message.method}`);
    title.id = titleId;
    const request = el("details", "card-request");
    request.open = true;
    request.append(el("summary", null, `Its request (id ${key})`), jsonView(message));
    const label = el("label", null, "Your reply (edit it, then send)");
    const area = el("textarea", "editor card-editor");
    area.id = `${titleId}-reply`;
    label.htmlFor = area.id;
    area.rows = Math.min(14, replies[0].text.split("\n").length + 1);
    area.spellcheck = false;
    area.value = replies[0].text;
    const status = el("div", "editor-status");
    const editor = new Editor(area, status, { send: (text) => this.on.send(text) });
    const choices = el("div", "card-choices");
    if (replies.length > 1) {
      choices.append(el("span", "hint", "Start from: "));
      for (const r of replies)
        choices.append(
          button(r.label, () => {
            editor.setText(r.text);
            area.focus();
          }),
        );
    }
    const actions = el("div", "card-actions");
    actions.append(
      button("Send reply", () => this.on.send(area.value), "send-reply"),
      el("span", "hint", "or Ctrl+Enter"),
    );
    card.append(title, request, label, area, status, choices, actions);
    this.container.append(card);
    this.open.set(key, card);
    area.focus();
    return card;
  }

  /** Methods of the server's requests still waiting for the learner's answer, oldest first. */
  openMethods() {
    return [...this.open.values()].map((card) => card.dataset.method);
  }

  /** A reply with this id went out: the card is done. */
  answered(id) {
    const key = JSON.stringify(id);
    const card = this.open.get(key);
    if (!card) return;
    this.open.delete(key);
    card.classList.add("answered");
    card.querySelector(".card-actions").replaceChildren(el("p", "hint", "Answered: see your reply in the log."));
    card.querySelectorAll("textarea, .card-choices button").forEach((n) => {
      n.disabled = true;
    });
    setTimeout(() => card.remove(), 4000);
  }

  clear() {
    this.open.clear();
    this.container.replaceChildren();
  }
}
