// What a learner sends next after certain replies, filled in from the reply so nothing is copied by
// hand (a 400-character requestState, a 36-character task id: near impossible on a phone):
// - an `input_required` result (2026-07-28, multi round-trip requests): the same request again with a
//   new id, an answer for each of its `inputRequests` (as its server-request card would start it),
//   and its `requestState` as given;
// - a task created (the tasks extension, or 2025-11-25's tasks): `tasks/get` to poll it,
//   `tasks/cancel` to cancel it.
// DOM-free: the console shows each as a button that puts the message in the editor.

import { repliesFor } from "./cards.js";

const pretty = (message) => JSON.stringify(message, null, 2);

/** The first prefilled answer its own card would offer for a server request, as a result object. */
function answerFor(request) {
  const [first] = repliesFor({ id: 0, ...request });
  const reply = JSON.parse(first.text);
  return reply.result ?? { action: "decline" };
}

/**
 * The follow-ups of `response` to the learner's `request`: [{label, text}], none for most replies.
 * `nextId` is an id the learner has not used.
 */
export function followUps(request, response, nextId) {
  const result = response?.result;
  if (!request || typeof request !== "object" || !result || typeof result !== "object") return [];
  const params = request.params && typeof request.params === "object" ? request.params : {};
  if (result.resultType === "input_required") {
    const retry = { ...params };
    const asked = result.inputRequests && typeof result.inputRequests === "object" ? result.inputRequests : {};
    if (Object.keys(asked).length) {
      retry.inputResponses = Object.fromEntries(Object.entries(asked).map(([key, req]) => [key, answerFor(req)]));
    } else delete retry.inputResponses;
    if (typeof result.requestState === "string") retry.requestState = result.requestState;
    else delete retry.requestState;
    const message = { jsonrpc: "2.0", id: nextId, method: request.method, params: retry };
    return [{ label: "Answer and retry", text: pretty(message) }];
  }
  // A task handle: 2026-07-28's extension answers `resultType: "task"` with the id at the top, in the
  // request's envelope; 2025-11-25's core tasks answer `{task: {taskId, ...}}`, without one.
  const taskId = result.resultType === "task" ? result.taskId : result.task?.taskId;
  if (typeof taskId === "string") {
    const envelope = result.resultType === "task" && params._meta ? { _meta: params._meta } : {};
    const about = (method) => pretty({ jsonrpc: "2.0", id: nextId, method, params: { ...envelope, taskId } });
    return [
      { label: "Poll it (tasks/get)", text: about("tasks/get") },
      { label: "Cancel it (tasks/cancel)", text: about("tasks/cancel") },
    ];
  }
  return [];
}
