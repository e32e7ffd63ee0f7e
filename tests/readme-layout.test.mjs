// The documents cannot go stale (STYLE.md, "Docs that cannot drift"):
// - docs/architecture.md is the map by folder. Each `### \`folder/\``
//   heading is one entry: the folder must exist, and every file it names in
//   backticks must exist (in that folder, or from the repository root);
// - every source folder is an entry of the map: each folder under src/,
//   dlq/src/, core/src/, platform/src/ and cli/src/ that holds a module (a folder
//   holding only a module's unit tests, `tests.rs` or `tests/`, belongs to
//   its module), plus scripts/, tests/, migrations/, bench/ and fuzz/;
// - every Rust module opens with a `//!` line saying its role;
// - no document cites a repository path that does not exist;
// - the README stays short enough to read, and docs/metrics.md lists every
//   metric the code counts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, existsSync, statSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const read = (rel) => readFileSync(path.join(ROOT, rel), "utf8");
const exists = (rel) => existsSync(path.join(ROOT, rel));
const isDir = (rel) => exists(rel) && statSync(path.join(ROOT, rel)).isDirectory();
/**
 * The paths git ignores: what a build, a test or `npm start` writes
 * (`build/index.js`, `bench/.build/`, `.dev.vars`), which a document may
 * name though a clone does not hold them yet.
 */
function ignored(paths) {
  if (!paths.length) return new Set();
  const r = spawnSync("git", ["check-ignore", "--no-index", "--stdin"], { cwd: ROOT, input: paths.join("\n"), encoding: "utf8" });
  assert.ok(r.status === 0 || r.status === 1, `git check-ignore failed: ${r.stderr}`);
  return new Set(r.stdout.split("\n").filter(Boolean));
}

const MAP = "docs/architecture.md";
const README_MAX_LINES = 500;
/** The documents whose cited paths must exist. */
const DOCUMENTS = () => [
  "README.md",
  "bench/README.md",
  "migrations/README.md",
  "fuzz/README.md",
  ...readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`),
];
const CRATE_ROOTS = ["src", "dlq/src", "core/src", "platform/src", "cli/src"];
const OTHER_SOURCE_FOLDERS = ["scripts", "tests", "migrations", "bench", "fuzz"];
/** Folders never walked: build output, installed packages, state. */
const SKIP = new Set(["node_modules", "target", ".git", ".wrangler", "build", "screenshots"]);

function walk(dir, visit) {
  for (const name of readdirSync(path.join(ROOT, dir))) {
    if (SKIP.has(name)) continue;
    const rel = dir === "." ? name : path.posix.join(dir, name);
    if (isDir(rel)) walk(rel, visit);
    else visit(rel);
  }
}

/** The map's entries: `### \`folder/\`` headings, each with the text under it. */
function mapEntries() {
  const entries = [];
  let current = null;
  for (const line of read(MAP).split("\n")) {
    const heading = line.match(/^###\s+`([^`]+)`\s*$/);
    if (heading) {
      current = { folder: heading[1].replace(/^\.\/$/, ".").replace(/\/$/, ""), body: [] };
      entries.push(current);
    } else if (/^#{1,3}\s/.test(line)) {
      current = null;
    } else if (current) {
      current.body.push(line);
    }
  }
  return entries;
}

test("each folder the map names exists, and each file it names is in that folder", () => {
  const entries = mapEntries();
  assert.ok(entries.length > 20, `${MAP} holds its entries as '### \`folder/\`' headings`);
  const missing = [];
  for (const { folder, body } of entries) {
    if (!isDir(folder)) { missing.push(`${folder}/ (the entry's folder)`); continue; }
    for (const [, name] of body.join("\n").matchAll(/`([^`\s]+\.(?:rs|mjs|js|sql|toml|sh|json|md|css|html))`/g)) {
      if (name.includes("*") || name.includes("{")) continue;
      const here = path.posix.join(folder, name);
      if (!exists(here) && !exists(name)) missing.push({ name, folder, paths: [here, name] });
    }
  }
  const generated = ignored(missing.flatMap((m) => m.paths));
  const left = missing.filter((m) => !m.paths.some((p) => generated.has(p))).map((m) => `${m.name} (under ${m.folder}/)`);
  assert.deepEqual(left, [], `${MAP} names what does not exist`);
});

test("every source folder is an entry of the map", () => {
  const named = new Set(mapEntries().map((e) => e.folder));
  const folders = new Set(OTHER_SOURCE_FOLDERS);
  for (const root of CRATE_ROOTS) {
    walk(root, (file) => {
      const isTest = path.posix.basename(file) === "tests.rs" || file.split("/").includes("tests");
      if (file.endsWith(".rs") && !isTest) folders.add(path.posix.dirname(file));
    });
  }
  const left = [...folders].filter((f) => !named.has(f)).sort();
  assert.deepEqual(left, [], `source folders missing from ${MAP} (add a '### \`folder/\`' entry)`);
});

test("every Rust module opens with a //! line saying its role", () => {
  const bare = [];
  walk(".", (file) => {
    if (!file.endsWith(".rs")) return;
    const first = read(file).split("\n", 1)[0];
    if (!first.startsWith("//! ") || first.trim().length < 8) bare.push(file);
  });
  assert.deepEqual(bare.sort(), [], "modules without a //! first line");
});

test("no document cites a repository path that does not exist", () => {
  const missing = [];
  for (const doc of DOCUMENTS()) {
    const dir = path.posix.dirname(doc);
    // A path is cited in backticks or as a Markdown link target.
    const cited = [
      ...[...read(doc).matchAll(/`([^`\s]+)`/g)].map((m) => m[1]),
      ...[...read(doc).matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]),
    ];
    for (const raw of cited) {
      const p = raw.replace(/[.,;:]$/, "");
      if (/^[a-z]+:/.test(p) || p.startsWith("/") || /[*{}<>…$|]/.test(p) || !p.includes("/")) continue;
      // A repository path starts at a folder of the repository, or is
      // relative to its document (a Markdown link); R2 keys and URL paths
      // (`events/2026-12-03/…`, `state/…`) are not files here.
      const fromRoot = p.replace(/^\.\//, "");
      const first = fromRoot.split("/")[0];
      const rootish = first === ".." ? false : exists(first) && first !== "";
      const relative = path.posix.normalize(path.posix.join(dir, p));
      if (p.startsWith("../") || p.startsWith("./")) {
        if (!exists(relative)) missing.push({ cite: `${doc}: ${raw}`, path: relative });
      } else if (rootish && !exists(fromRoot.replace(/\/$/, "")) && !exists(relative)) {
        missing.push({ cite: `${doc}: ${raw}`, path: fromRoot });
      }
    }
  }
  const generated = ignored(missing.map((m) => m.path));
  const left = missing.filter((m) => !generated.has(m.path)).map((m) => m.cite);
  assert.deepEqual([...new Set(left)], [], "documents cite paths that do not exist");
});

test("the README stays short, and never points outside the clone", () => {
  const readme = read("README.md");
  const lines = readme.split("\n").length;
  assert.ok(lines < README_MAX_LINES, `README.md has ${lines} lines; keep it under ${README_MAX_LINES} (internals go to docs/)`);
  for (const banned of ["../shared/", "DESIGN.md", "seed service", "seed API", "QuestKit", "drop `--local`"]) {
    assert.ok(!readme.includes(banned), `README.md mentions '${banned}', which means nothing in a clone`);
  }
});

test("docs/metrics.md lists every metric name and component the code counts", () => {
  const names = [...read("core/src/metrics/names.rs").matchAll(/^\s+\w+ = "([a-z_]+)",/gm)].map((m) => m[1]);
  assert.ok(names.length > 20, "core/src/metrics/names.rs declares the metric names as `Variant = \"name\",`");
  const metricsDoc = read("docs/metrics.md");
  // Both enums of names.rs: the metric names and the components that count them.
  const unlisted = names.filter((n) => !metricsDoc.includes(`\`${n}\``));
  assert.deepEqual(unlisted, [], "metric or component names missing from docs/metrics.md");
});

test("the architecture's invariants hold (scripts/layout-check.mjs): no clock or worker in the core, no stage importing config/, support/ and state/ importing no stage, no file circles, no delay of its own in the glue, the core's floors low", async () => {
  const { check, MAX_CORE_FLOOR } = await import("../scripts/layout-check.mjs");
  const { problems, deepest, entries, stages } = check();
  assert.deepEqual(problems, [], `docs/architecture.md's invariants:\n${problems.join("\n")}`);
  assert.ok(deepest <= MAX_CORE_FLOOR, `the core's deepest floor is ${deepest}`);
  assert.ok(entries <= 25, `core/src holds ${entries} entries: a folder per stage, not a file per rule`);
  const map = read(MAP);
  for (const stage of stages) {
    assert.ok(map.includes(`### \`core/src/${stage}/\``), `the map has an entry for the stage core/src/${stage}/`);
  }
});
