// Checks that worker-build's generated glue (build/glue.mjs) still has the
// shape src/entry.js relies on, so a worker-build upgrade that changes it
// fails the build with a clear message instead of failing at runtime.
//
// The entry imports the glue's default export (worker-build's entry class,
// behind a Proxy) and calls methods of its prototype: `fetch`, `queue` and
// `scheduled` as worker-build's wrappers, which pass `this.env` and
// `this.ctx` on to the wasm export, and `ingestBody` and `ingestSent` as the
// wasm exports themselves (worker-build's src/js/shim.js and
// generate_handlers in its main.rs write these). The glue is minified, so
// and the wasm exports are bundled in as renamed locals: the checks read
// its text, allowing for any name where the bundler picks one.
//
// Usage: node scripts/check-glue.mjs build/glue.mjs
import { readFileSync } from "node:fs";

const file = process.argv[2];
const text = readFileSync(file, "utf8");

const wrapper = (name) => ({
  what: `Entrypoint.prototype.${name} = function (arg) { return exports.${name}.call(this, arg, this.env, this.ctx) }`,
  re: new RegExp(String.raw`\.prototype\.${name}\s*=\s*function\b[^{]*\{\s*return\s+[\w$.]+\.call\(\s*this\s*,\s*[\w$]+\s*,\s*this\.env\s*,\s*this\.ctx\s*\)`),
});
const method = (name) => ({
  what: `Entrypoint.prototype.${name} = exports.${name}`,
  re: new RegExp(String.raw`\.prototype\.${name}\s*=\s*[\w$.]+\s*[;,\n]`),
});
const expected = [
  { what: "a default export (the entry class)", re: /export\s*(default\b|\{[^}]*\bas\s+default\b)/ },
  { what: "the entry class wrapped in a Proxy (worker-build's panic recovery)", re: /new Proxy\(/ },
  wrapper("fetch"),
  wrapper("queue"),
  wrapper("scheduled"),
  method("ingestBody"),
  method("ingestSent"),
];

const missing = expected.filter(({ re }) => !re.test(text));
if (missing.length > 0) {
  console.error(`[build] ${file}: worker-build's glue no longer has the shape src/entry.js expects. Missing:`);
  for (const { what } of missing) console.error(`  - ${what}`);
  console.error(
    "[build] Compare worker-build's src/js/shim.js and generate_handlers with src/entry.js and update the entry" +
      " (or drop src/entry.js to use worker-build's own entry) before running this build.",
  );
  process.exit(1);
}
