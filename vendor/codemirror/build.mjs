// Builds ../../static/vendor/: codemirror.js (one minified ES module), codemirror.LICENSES.txt (the
// licence of every package that ended up in it) and VERSIONS.txt. Run by `make vendor` after `npm ci`.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { bundle } from "../bundle.mjs";

await bundle({
  build,
  here: dirname(fileURLToPath(import.meta.url)),
  name: "codemirror",
  title: "CodeMirror 6",
  versionsFile: "VERSIONS.txt",
});
