// Turn a learner's server.ts (on stdin) into the JavaScript module Node runs, or say why it cannot be:
// one JSON object on stdout, {"code": "..."} or {"errors": [{"line", "column", "text"}]}. esbuild only
// parses and rewrites: nothing of the file runs here. Line numbers are 1-based, columns 0-based in
// UTF-8 bytes, as esbuild gives them; app/workspace/typescript.py turns them into characters.
import { transform } from "esbuild";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const source = Buffer.concat(chunks).toString("utf8");

try {
  const result = await transform(source, {
    loader: "ts",
    format: "esm",
    platform: "node",
    target: "node24",
    sourcefile: "server.ts",
    // Stack traces name server.ts and its own lines (Node runs with --enable-source-maps).
    sourcemap: "inline",
    logLevel: "silent",
  });
  process.stdout.write(JSON.stringify({ code: result.code }));
} catch (error) {
  const errors = (error.errors ?? [{ text: String(error.message ?? error) }]).map((e) => ({
    line: e.location?.line ?? 1,
    column: e.location?.column ?? 0,
    lineText: e.location?.lineText ?? "",
    text: e.text,
  }));
  process.stdout.write(JSON.stringify({ errors }));
}
