// The type check of a learner's server.ts, run as a program in their own sandboxed instance (on Node,
// like their server; the TypeScript compiler's API, major version 5, from runtime/node). The file
// comes on stdin, as one JSON line {"server.ts": text}; the answer is one JSON line on stdout:
// {"diagnostics": [{"line", "col", "message"}]} with lines and columns counted from 1.
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import ts from "typescript";

const FILE = "server.ts";
// As the lessons' code is written: strict, an ES module run by Node, Node's own types (and no DOM,
// whose types would take the compiler longer to read than the file itself).
const OPTIONS = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ["lib.es2022.d.ts"],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  skipLibCheck: true,
  types: ["node"],
};
// Only the first few: a file with hundreds of errors needs its first one fixed.
const MOST = 50;

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const source = JSON.parse(line)[FILE];
  // Written where the runtime's packages resolve (node_modules beside it), and marked an ES module.
  writeFileSync(FILE, source);
  writeFileSync("package.json", '{"type": "module"}');
  const program = ts.createProgram([FILE], OPTIONS);
  const diagnostics = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file === undefined || d.file.fileName.endsWith(FILE))
    .slice(0, MOST)
    .map((d) => {
      const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
      return {
        line: at ? at.line + 1 : 1,
        col: at ? at.character + 1 : 1,
        message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
      };
    });
  process.stdout.write(`${JSON.stringify({ diagnostics })}\n`);
  break;
}
