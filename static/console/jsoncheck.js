// Strict JSON (RFC 8259) checked in the browser, so the learner sees where it breaks without a round trip.
// JSON.parse error messages differ per engine, so a tiny scanner finds the position itself.
// It also rejects what the relay rejects but JSON.parse accepts: unpaired surrogate escapes, huge numbers.

const MAX_DEPTH = 900; // about where the relay (Python's json) gives up

class JsonError extends Error {
  constructor(message, position) {
    super(message);
    this.position = position;
  }
}

function scan(text) {
  let i = 0;
  let depth = 0;
  let idSpan = null; // where the top-level "id" value sits, for "next id"

  const fail = (message, at = i) => {
    throw new JsonError(message, at);
  };
  const what = () => (i >= text.length ? "the end of the text" : `“${text[i]}”`);
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i += 1;
  };
  const expect = (ch, context) => {
    if (text[i] !== ch) fail(`expected “${ch}” ${context}, found ${what()}`);
    i += 1;
  };

  function value() {
    ws();
    const ch = text[i];
    if (ch === "{") return object();
    if (ch === "[") return array();
    if (ch === '"') return string();
    if (ch === "-" || (ch >= "0" && ch <= "9")) return number();
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    if (ch === "'") fail('strings need double quotes ("), not single quotes');
    if (i >= text.length) fail("expected a value, found the end of the text");
    const bare = /^[A-Za-z_]+/.exec(text.slice(i));
    if (bare)
      fail(`“${bare[0]}” is not a JSON value (strings need double quotes; NaN and Infinity do not exist in JSON)`);
    fail(`expected a value, found ${what()}`);
  }

  function nest(open) {
    depth += 1;
    if (depth > MAX_DEPTH) fail(`nested more than ${MAX_DEPTH} levels deep: too deep for the relay to read`);
    i += 1; // the opening bracket
    return open;
  }

  function object() {
    nest("{");
    ws();
    if (text[i] === "}") {
      i += 1;
      depth -= 1;
      return;
    }
    for (;;) {
      ws();
      if (text[i] === "}") fail("a comma before “}” (trailing commas are not allowed in JSON)");
      if (text[i] !== '"') fail(`expected a key in double quotes, found ${what()}`);
      const key = string();
      ws();
      expect(":", "after a key");
      ws();
      const start = i;
      value();
      if (depth === 1 && key === "id") idSpan = [start, i];
      ws();
      if (text[i] === ",") {
        i += 1;
        continue;
      }
      if (text[i] === "}") {
        i += 1;
        depth -= 1;
        return;
      }
      fail(`expected “,” or “}” after a value in an object, found ${what()}`);
    }
  }

  function array() {
    nest("[");
    ws();
    if (text[i] === "]") {
      i += 1;
      depth -= 1;
      return;
    }
    for (;;) {
      ws();
      if (text[i] === "]") fail("a comma before “]” (trailing commas are not allowed in JSON)");
      value();
      ws();
      if (text[i] === ",") {
        i += 1;
        continue;
      }
      if (text[i] === "]") {
        i += 1;
        depth -= 1;
        return;
      }
      fail(`expected “,” or “]” after a value in an array, found ${what()}`);
    }
  }

  function string() {
    const start = i;
    i += 1;
    let out = "";
    while (i < text.length) {
      const ch = text[i];
      if (ch === '"') {
        i += 1;
        return out;
      }
      if (ch === "\\") {
        const esc = text[i + 1];
        if (esc === "u") {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("a \\u escape needs four hex digits");
          const code = parseInt(hex, 16);
          if (code >= 0xdc00 && code <= 0xdfff) fail("an unpaired surrogate escape cannot become UTF-8");
          if (code >= 0xd800 && code <= 0xdbff) {
            const low = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(text.slice(i + 6));
            if (!low) fail("an unpaired surrogate escape cannot become UTF-8");
            out += String.fromCharCode(code, parseInt(low[1], 16));
            i += 12;
            continue;
          }
          out += String.fromCharCode(code);
          i += 6;
          continue;
        }
        if (!esc || !'"\\/bfnrt'.includes(esc)) fail(`“\\${esc || ""}” is not a JSON escape`);
        out += esc;
        i += 2;
        continue;
      }
      if (ch < " ")
        fail(ch === "\n" ? "a line break inside a string (write \\n instead)" : "a control character inside a string");
      out += ch;
      i += 1;
    }
    fail('a string that is never closed (a missing ")', start);
  }

  function number() {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
    if (!match) fail("a malformed number");
    const after = text[i + match[0].length];
    if (after && /[0-9.eE]/.test(after))
      fail("a malformed number (leading zeros, or a dot without digits)", i + match[0].length);
    if (!Number.isFinite(Number(match[0]))) fail("a number too big for a double");
    i += match[0].length;
  }

  ws();
  if (i >= text.length) fail("the message is empty");
  value();
  ws();
  if (i < text.length) fail(`unexpected ${what()} after the end of the message (one message at a time)`);
  return idSpan;
}

/** Line and column (both from 1) of a position in text. */
export function lineColumn(text, position) {
  const before = text.slice(0, position);
  const line = before.split("\n").length;
  const column = position - before.lastIndexOf("\n");
  return { line, column };
}

/** {ok: true, value, idSpan} or {ok: false, message, position, line, column}. */
export function checkJson(text) {
  try {
    const idSpan = scan(text);
    return { ok: true, value: JSON.parse(text), idSpan };
  } catch (err) {
    if (!(err instanceof JsonError)) throw err;
    return { ok: false, message: err.message, position: err.position, ...lineColumn(text, err.position) };
  }
}
