// Builds ../../static/vendor/: ext-apps-bridge.js (one minified ES module), ext-apps-bridge.LICENSES.txt (the
// licence of every package that ended up in it) and VERSIONS.txt. Run by `make vendor` after `npm ci`.
import { build } from "esbuild";
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "static", "vendor");
const pkg = (name) => JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8"));

const result = await build({
  entryPoints: [join(here, "entry.js")],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "none", // the licences go in full into ext-apps-bridge.LICENSES.txt instead
  metafile: true,
  write: false,
  absWorkingDir: here,
});

// The packages with code in the output (a package only read, then tree-shaken away, is not in it).
const bundled = new Set();
for (const [input, { bytesInOutput }] of Object.entries(Object.values(result.metafile.outputs)[0].inputs)) {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m && bytesInOutput > 0) bundled.add(m[1]);
}
const names = [...bundled].sort();
const versions = names.map((name) => `${name} ${pkg(name).version}`);

function licenceText(name) {
  const dir = join(here, "node_modules", name);
  const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  if (!file) throw new Error(`${name} ships no licence file: add its text by hand before vendoring it`);
  return readFileSync(join(dir, file), "utf8").trim();
}

const header = `/* The MCP Apps host bridge (@modelcontextprotocol/ext-apps) for MCP Playground, built by \`make vendor\` from vendor/ext-apps. ` +
  `Packages: ${versions.join(", ")}. Licences: ext-apps-bridge.LICENSES.txt */\n`;
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "ext-apps-bridge.js"), header + result.outputFiles[0].text);
writeFileSync(join(out, "ext-apps-bridge.LICENSES.txt"), names.map((name) => {
  const p = pkg(name);
  return `${name} ${p.version} (${p.license})\n${"=".repeat(60)}\n${licenceText(name)}\n`;
}).join("\n"));
writeFileSync(join(out, "ext-apps-bridge.VERSIONS.txt"),
  `# Packages bundled into ext-apps-bridge.js (built with esbuild ${pkg("esbuild").version}); see docs/vendor.md\n` +
  versions.join("\n") + "\n");
console.log(`static/vendor/ext-apps-bridge.js: ${names.length} packages, ${(header.length + result.outputFiles[0].text.length) / 1024 | 0} KiB`);
