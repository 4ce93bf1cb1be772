// What vendor/codemirror/build.mjs and vendor/ext-apps/build.mjs share: bundle one entry into a
// minified ES module in static/vendor/, with the licence of every package that ended up in it and
// their versions beside it. Each build passes its own esbuild (from its own node_modules).
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

/**
 * @param {{build: Function, here: string, name: string, title: string, versionsFile: string}} what
 *   esbuild's build; the package's folder; the bundle's file name without `.js`; the header's words;
 *   where the versions go
 */
export async function bundle({ build, here, name, title, versionsFile }) {
  const out = join(here, "..", "..", "static", "vendor");
  const pkg = (dep) => JSON.parse(readFileSync(join(here, "node_modules", dep, "package.json"), "utf8"));
  const result = await build({
    entryPoints: [join(here, "entry.js")],
    bundle: true,
    format: "esm",
    minify: true,
    target: "es2020",
    legalComments: "none", // the licences go in full into the LICENSES file instead
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
  const versions = names.map((dep) => `${dep} ${pkg(dep).version}`);

  function licenceText(dep) {
    const dir = join(here, "node_modules", dep);
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    if (!file) throw new Error(`${dep} ships no licence file: add its text by hand before vendoring it`);
    return readFileSync(join(dir, file), "utf8").trim();
  }

  const header = `/* ${title} for MCP Playground, built by \`make vendor\` from vendor/${here.split("/").pop()}. ` +
    `Packages: ${versions.join(", ")}. Licences: ${name}.LICENSES.txt */\n`;
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, `${name}.js`), header + result.outputFiles[0].text);
  writeFileSync(join(out, `${name}.LICENSES.txt`), names.map((dep) => {
    const p = pkg(dep);
    return `${dep} ${p.version} (${p.license})\n${"=".repeat(60)}\n${licenceText(dep)}\n`;
  }).join("\n"));
  writeFileSync(join(out, versionsFile),
    `# Packages bundled into ${name}.js (built with esbuild ${pkg("esbuild").version}); see docs/vendor.md\n` +
    versions.join("\n") + "\n");
  console.log(`static/vendor/${name}.js: ${names.length} packages, ${(header.length + result.outputFiles[0].text.length) / 1024 | 0} KiB`);
}
