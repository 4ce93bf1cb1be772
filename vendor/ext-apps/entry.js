// What the console's MCP Apps host uses of the official ext-apps package, and nothing more.
import { config } from "zod";

// zod compiles its parsers with `new Function` when it may; the site's Content-Security-Policy has no
// 'unsafe-eval', so even the probe would be a violation. Off before any schema runs.
config({ jitless: true });

export { AppBridge } from "@modelcontextprotocol/ext-apps/app-bridge";
