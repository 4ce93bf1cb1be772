// Builds ../../static/vendor/: ext-apps-bridge.js (one minified ES module), its LICENSES.txt (the
// licence of every package that ended up in it) and its VERSIONS.txt. Run by `make vendor` after `npm ci`.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { bundle } from "../bundle.mjs";

await bundle({
  build,
  here: dirname(fileURLToPath(import.meta.url)),
  name: "ext-apps-bridge",
  title: "The MCP Apps host bridge (@modelcontextprotocol/ext-apps)",
  versionsFile: "ext-apps-bridge.VERSIONS.txt",
});
