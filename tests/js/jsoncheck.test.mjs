// The console's strict JSON checker (static/console/jsoncheck.js): what it accepts, where it says a
// message breaks, and what it refuses although JSON.parse would take it (the relay refuses it too).

import assert from "node:assert/strict";
import { test } from "node:test";

import { checkJson, lineColumn } from "../../static/console/jsoncheck.js";

/** The failure for `text`, asserting that it is one. */
function failure(text) {
  const result = checkJson(text);
  assert.equal(result.ok, false, `expected ${JSON.stringify(text)} to be refused`);
  return result;
}

test("a valid message comes back parsed, with where its top-level id sits", () => {
  const text = '{"jsonrpc": "2.0", "id": 41, "method": "ping"}';
  const result = checkJson(text);
  assert.equal(result.ok, true);
  assert.deepEqual(result.value, { jsonrpc: "2.0", id: 41, method: "ping" });
  assert.equal(text.slice(...result.idSpan), "41");
});

test("the id span covers a string id and ignores ids nested deeper", () => {
  const text = '{"params": {"id": 3}, "id": "abc", "x": [{"id": 9}]}';
  const result = checkJson(text);
  assert.equal(text.slice(...result.idSpan), '"abc"');
  assert.equal(checkJson('{"method": "notifications/initialized"}').idSpan, null); // a notification
  assert.equal(checkJson('[{"id": 1}]').idSpan, null); // a batch has no top-level id
  assert.equal(checkJson('{"params": {"id": 3}}').idSpan, null);
});

test("every JSON value type, escapes and a surrogate pair are accepted", () => {
  const text = '{"a": [true, false, null, -0.5e+3, 0, "q\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9", "\\ud83d\\ude00"], "b": {}}';
  const result = checkJson(text);
  assert.equal(result.ok, true);
  assert.deepEqual(result.value, JSON.parse(text));
  assert.equal(result.value.a[6], "😀");
});

test("nesting up to the relay's depth is fine; one level more is refused at the bracket", () => {
  assert.equal(checkJson("[".repeat(900) + "]".repeat(900)).ok, true);
  const deep = failure("[".repeat(901) + "]".repeat(901));
  assert.match(deep.message, /nested more than 900 levels/);
  assert.equal(deep.position, 900);
});

// [text, the message's gist, position of the break]
const BROKEN = [
  ['{"a": 1,}', /trailing commas/, 8],
  ["[1, 2,]", /trailing commas/, 6],
  ["{'a': 1}", /expected a key in double quotes/, 1],
  ["['a']", /double quotes \("\), not single quotes/, 1],
  ['{"a": NaN}', /“NaN” is not a JSON value/, 6],
  ['{"a": Infinity}', /“Infinity” is not a JSON value/, 6],
  ['{"a": undefined}', /“undefined” is not a JSON value/, 6],
  ['{"a" 1}', /expected “:” after a key, found “1”/, 5],
  ['{"a": 1 "b": 2}', /expected “,” or “}” after a value in an object/, 8],
  ["[1 2]", /expected “,” or “]” after a value in an array/, 3],
  ["{1: 2}", /expected a key in double quotes, found “1”/, 1],
  ['{"a": "x', /a string that is never closed/, 6],
  ['{"a": "x\ny"}', /a line break inside a string/, 8],
  ['{"a": "\t"}', /a control character inside a string/, 7],
  ['{"a": "\\q"}', /“\\q” is not a JSON escape/, 7],
  ['"\\u12"', /four hex digits/, 1],
  ['{"a": "\\ud800"}', /unpaired surrogate/, 7],
  ['{"a": "\\udc00"}', /unpaired surrogate/, 7],
  ['{"a": "\\ud800\\u0041"}', /unpaired surrogate/, 7],
  ['{"a": 01}', /leading zeros/, 7],
  ['{"a": 1.}', /a dot without digits/, 7],
  ["-", /a malformed number/, 0],
  ['{"a": 1e400}', /too big for a double/, 6],
  ["", /the message is empty/, 0],
  [" \n ", /the message is empty/, 3],
  ['{"a": ', /expected a value, found the end of the text/, 6],
  ["{} {}", /after the end of the message \(one message at a time\)/, 3],
  ['{"a": 1}\n{"b": 2}', /after the end of the message/, 9],
];

for (const [text, gist, position] of BROKEN) {
  test(`refused where it breaks: ${JSON.stringify(text)}`, () => {
    const result = failure(text);
    assert.match(result.message, gist);
    assert.equal(result.position, position);
    assert.deepEqual({ line: result.line, column: result.column }, lineColumn(text, position));
  });
}

test("JSON.parse would take these, the relay would not, and neither does the checker", () => {
  for (const text of ['"\\udfff"', '{"a": 1e309}', '{"a": -1e309}']) {
    assert.doesNotThrow(() => JSON.parse(text));
    assert.equal(checkJson(text).ok, false, text);
  }
});

test("line and column count from 1, across lines", () => {
  assert.deepEqual(lineColumn("abc", 0), { line: 1, column: 1 });
  assert.deepEqual(lineColumn("ab\ncd", 3), { line: 2, column: 1 });
  assert.deepEqual(lineColumn("ab\ncd\nef", 7), { line: 3, column: 2 });
  const text = '{"jsonrpc": "2.0",\n  "id": 1,\n  "method": "ping",,\n}';
  const result = failure(text);
  assert.deepEqual([result.line, result.column], [3, 20]); // as the browser test sees it
});

test("only the checker's own errors become a failure", () => {
  assert.throws(() => checkJson(42), TypeError); // not text: a bug in the caller, not a JSON error
});
