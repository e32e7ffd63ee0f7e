// The README's Layout cannot go stale (STYLE.md, "Docs that cannot drift"):
// every path it names exists, and every source module of the four crates
// (and every file of the relay's JS entry and the console) is named in it.
// A second check covers the whole README: a file path it cites in
// backticks must exist.
//
// The Layout's format, which this test reads:
// - one entry per line inside the ``` block under "## Layout" (or several,
//   as a comma-separated list at the start of the line);
// - an entry starts at an indentation below DESCRIPTION_COLUMN, two spaces
//   per level; deeper lines continue the description above them;
// - an entry is a path relative to the nearest shallower folder entry (a
//   token ending in "/"); a folder entry stands for its own mod.rs;
// - a module's `tests.rs` (its unit tests) is covered by the module.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, existsSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const README = readFileSync(path.join(ROOT, "README.md"), "utf8");
const DESCRIPTION_COLUMN = 16;

/** The folders whose every file with one of `exts` is a source module the Layout must name. */
const SOURCE_ROOTS = [
  ["src", [".rs", ".js"]],
  ["core/src", [".rs"]],
  ["platform/src", [".rs"]],
  ["dlq/src", [".rs"]],
  ["dlq/console", [".js", ".css", ".html"]],
];

function layoutBlock() {
  const start = README.indexOf("## Layout");
  assert.ok(start >= 0, "README.md has a '## Layout' section");
  const open = README.indexOf("```", start);
  const close = README.indexOf("```", open + 3);
  assert.ok(open > 0 && close > open, "the Layout section holds a ``` block");
  return README.slice(README.indexOf("\n", open) + 1, close).split("\n");
}

/** The paths the Layout names, each resolved against its parent folders. */
function layoutPaths() {
  const stack = []; // [{indent, dir}]
  const named = [];
  for (const line of layoutBlock()) {
    if (!line.trim()) continue;
    const indent = line.length - line.trimStart().length;
    if (indent >= DESCRIPTION_COLUMN) continue; // a description's continuation
    // A line may list several names: `a.rs, b.rs, c.rs  what they hold`.
    const words = line.trim().split(/\s+/);
    const tokens = [];
    for (const w of words) {
      tokens.push(w.replace(/,$/, ""));
      if (!w.endsWith(",")) break;
    }
    while (stack.length && stack.at(-1).indent >= indent) stack.pop();
    const parent = stack.at(-1)?.dir ?? "";
    for (const token of tokens) {
      const full = path.posix.join(parent, token).replace(/\/$/, "");
      named.push({ token, full: token.endsWith("/") ? `${full}/` : full, line: line.trim() });
    }
    const token = tokens[0];
    if (tokens.length === 1 && token.endsWith("/")) stack.push({ indent, dir: path.posix.join(parent, token) });
  }
  return named;
}

function sourceFiles() {
  const out = [];
  const walk = (dir, exts) => {
    if (!existsSync(path.join(ROOT, dir))) return;
    for (const name of readdirSync(path.join(ROOT, dir))) {
      const rel = path.posix.join(dir, name);
      if (statSync(path.join(ROOT, rel)).isDirectory()) walk(rel, exts);
      else if (exts.some((e) => name.endsWith(e))) out.push(rel);
    }
  };
  for (const [dir, exts] of SOURCE_ROOTS) walk(dir, exts);
  return out;
}

test("every path the README's Layout names exists", () => {
  const missing = layoutPaths().filter((p) => !existsSync(path.join(ROOT, p.full.replace(/\/$/, ""))));
  assert.deepEqual(missing.map((p) => `${p.full}  (from: ${p.line})`), [], "the Layout names paths that do not exist");
});

test("every source module is named in the README's Layout", () => {
  const named = new Set(layoutPaths().map((p) => p.full));
  const covered = (file) => {
    if (named.has(file)) return true;
    const dir = `${path.posix.dirname(file)}/`;
    const base = path.posix.basename(file);
    // A folder entry stands for its mod.rs; a tests.rs is its module's tests.
    if (base === "mod.rs" && named.has(dir)) return true;
    if (base === "tests.rs") {
      const owner = path.posix.dirname(file);
      return named.has(`${owner}.rs`) || named.has(`${owner}/`) || named.has(`${path.posix.dirname(owner)}/`);
    }
    return false;
  };
  const left = sourceFiles().filter((f) => !covered(f));
  assert.deepEqual(left, [], "source modules missing from the README's Layout");
});

test("every file path the README cites in backticks exists", () => {
  const cited = [...README.matchAll(/`([^`\s]+\.(?:rs|mjs|js|sql|toml|sh|json|md|css|html))`/g)].map((m) => m[1]);
  // A repository path starts at a folder of the repository (or ../shared);
  // R2 keys and URL paths (`state/…`, `/api/…`) are not files here.
  const inRepo = (p) => p.startsWith("../") || existsSync(path.join(ROOT, p.split("/")[0]));
  const paths = cited.filter((p) => p.includes("/") && !p.startsWith("/") && !p.includes("*") && !p.includes("…") && !p.includes("{") && inRepo(p));
  const missing = [...new Set(paths)].filter((p) => !existsSync(path.join(ROOT, p)));
  assert.deepEqual(missing, [], "the README cites files that do not exist");
});
