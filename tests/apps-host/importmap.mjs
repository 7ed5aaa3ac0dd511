// Prints the import map a browser needs to load the host's modules straight
// from node_modules: every bare specifier reachable from the entry points,
// resolved as Node resolves it for a browser. Run by tests/slow/mcp/apps_host.rs
// with `node --experimental-import-meta-resolve --conditions=browser`.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.dirname(fileURLToPath(import.meta.url));
const entries = ["@modelcontextprotocol/ext-apps/app-bridge", "@modelcontextprotocol/client"];
const imports = {};
const seen = new Set();
const queue = [];

function add(spec, parent) {
  let url;
  try {
    url = import.meta.resolve(spec, parent);
  } catch (_) {
    // A package named in a comment or an optional import that is not installed.
    return;
  }
  if (!spec.startsWith(".") && !spec.startsWith("/")) {
    imports[spec] = "/" + path.relative(root, fileURLToPath(url)).split(path.sep).join("/");
  }
  if (!seen.has(url)) {
    seen.add(url);
    queue.push(url);
  }
}

for (const entry of entries) add(entry, pathToFileURL(path.join(root, "host.mjs")).href);
const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;
while (queue.length) {
  const url = queue.shift();
  for (const match of readFileSync(fileURLToPath(url), "utf8").matchAll(pattern)) {
    if (!match[1].startsWith("node:")) add(match[1], url);
  }
}
process.stdout.write(JSON.stringify({ imports }));
