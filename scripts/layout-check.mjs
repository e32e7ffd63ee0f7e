// The architecture's invariants (docs/architecture.md, "Invariants"), checked
// from the sources: `node scripts/layout-check.mjs` prints each broken one
// and exits 1, or prints the core's figures and exits 0. `--json` prints the
// figures and the findings as JSON (tests/readme-layout.test.mjs reads it).
//
// A file's imports are the `crate::…`, `super::…` and `self::…` paths it
// names outside its `#[cfg(test)]` part, each resolved to the module file it
// names; a child module naming its parent's items is not an import back.
import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CRATES = ["core/src", "src", "dlq/src", "platform/src", "cli/src"];
/** The deepest floor the core may reach (a file's depth in its import graph). */
export const MAX_CORE_FLOOR = 10;
/** The folders under core/src that are not stages: imported by stages, or on top. */
const NOT_STAGES = new Set(["config", "state", "support", "metrics"]);

const read = (rel) => readFileSync(path.join(ROOT, rel), "utf8");

function rustFiles(dir) {
  const out = [];
  for (const name of readdirSync(path.join(ROOT, dir))) {
    const rel = path.posix.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) out.push(...rustFiles(rel));
    else if (name.endsWith(".rs")) out.push(rel);
  }
  return out;
}

/** Module path → file, for one crate's `src`. */
function modules(src) {
  const mods = new Map();
  for (const file of rustFiles(src)) {
    const parts = path.posix.relative(src, file).slice(0, -3).split("/");
    if (["mod", "lib", "main"].includes(parts.at(-1))) parts.pop();
    mods.set(parts.join("::"), file);
  }
  return mods;
}

/** The code of a file without its tests and comments. */
export function code(text) {
  const i = text.indexOf("#[cfg(test)]");
  return (i < 0 ? text : text.slice(0, i)).replace(/\/\/.*$/gm, "");
}

function resolve(mods, parts) {
  for (let n = parts.length; n > 0; n--) {
    const f = mods.get(parts.slice(0, n).join("::"));
    if (f) return f;
  }
  return null;
}

/** The files one file imports, within its crate. */
function importsOf(mods, modPath, text) {
  const out = new Set();
  const own = modPath ? modPath.split("::") : [];
  const re = /\b(crate|super|self)((?:::\w+)+)(?:::\{([^}]*)\})?/g;
  for (const m of text.matchAll(re)) {
    let rest = m[2].split("::").filter(Boolean);
    let base;
    if (m[1] === "crate") base = [];
    else if (m[1] === "self") base = [...own];
    else {
      base = own.slice(0, -1);
      while (rest[0] === "super") {
        base = base.slice(0, -1);
        rest = rest.slice(1);
      }
    }
    const targets = [[...base, ...rest]];
    for (const g of (m[3] ?? "").split(",")) {
      const item = g.trim().split(" as ")[0].split("::");
      if (item[0] && item[0] !== "self") targets.push([...base, ...rest, ...item]);
    }
    for (const t of targets) {
      const f = resolve(mods, t);
      if (f) out.add(f);
    }
  }
  // A child module named by a bare path (`child::item`), as Rust 2018 allows.
  for (const [child, f] of mods) {
    const parts = child.split("::");
    if (parts.length === own.length + 1 && parts.slice(0, -1).join("::") === own.join("::")) {
      if (new RegExp(`(?<![:\\w])${parts.at(-1)}::\\w`).test(text)) out.add(f);
    }
  }
  return out;
}

/** One crate's import graph: file → the files it imports. */
export function graph(src) {
  const mods = modules(src);
  const g = new Map();
  for (const [modPath, file] of mods) {
    const edges = importsOf(mods, modPath, code(read(file)));
    edges.delete(file);
    // A child may use what its parent defines: not an import back.
    if (modPath) edges.delete(mods.get(modPath.split("::").slice(0, -1).join("::")));
    g.set(file, edges);
  }
  return g;
}

/** Strongly connected sets of two or more files. */
export function circles(g) {
  let n = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) found.push(comp.sort());
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Each file's floor: 1 for a file importing nothing, else one above its deepest import. */
export function floors(g) {
  const floor = new Map();
  const of = (f, seen = new Set()) => {
    if (floor.has(f)) return floor.get(f);
    if (seen.has(f)) return 0;
    seen.add(f);
    let d = 1;
    for (const t of g.get(f) ?? []) d = Math.max(d, of(t, seen) + 1);
    seen.delete(f);
    floor.set(f, d);
    return d;
  };
  for (const f of g.keys()) of(f);
  return floor;
}

const folderOf = (file) => path.posix.relative("core/src", file).split("/")[0];

/** Every broken invariant, as a sentence naming the file. */
export function check() {
  const problems = [];
  const coreGraph = graph("core/src");
  const coreFiles = [...coreGraph.keys()];

  // The core reads no clock and has no worker dependency.
  const manifest = read("core/Cargo.toml");
  for (const dep of ["worker", "js-sys", "web-sys", "wasm-bindgen"]) {
    if (new RegExp(`^${dep}\\s*[=.]`, "m").test(manifest)) problems.push(`core/Cargo.toml depends on ${dep}`);
  }
  for (const f of coreFiles) {
    const text = code(read(f));
    for (const clock of ["SystemTime", "Instant::now", "Date::now", "rand::", "getrandom"]) {
      if (text.includes(clock)) problems.push(`${f} reads ${clock}: pass the time (or randomness) in`);
    }
  }

  // No stage imports config/; support/ and state/ import no stage.
  for (const f of rustFiles("core/src")) {
    const folder = folderOf(f);
    if (folder !== "config" && /\bcrate::config\b/.test(read(f))) problems.push(`${f} imports crate::config`);
  }
  for (const [f, edges] of coreGraph) {
    const folder = folderOf(f);
    if (folder !== "support" && folder !== "state") continue;
    for (const t of edges) {
      const to = folderOf(t);
      if (to !== "support" && to !== "state" && !to.endsWith(".rs")) problems.push(`${f} (${folder}/) imports the stage file ${t}`);
    }
  }

  // No file circles, in any crate.
  for (const src of CRATES) {
    for (const c of circles(graph(src))) problems.push(`file circle: ${c.join(" <-> ")}`);
  }

  // Glue holds no retry delay, window or threshold, and retries only with a decided value.
  for (const f of rustFiles("platform/src")) {
    for (const m of code(read(f)).matchAll(/\bconst\s+([A-Z0-9_]+)\s*:/g)) {
      if (/(_S|_MS|_SECS|_SECONDS|WINDOW|THRESHOLD|DELAY|COOLDOWN)$/.test(m[1])) {
        problems.push(`${f} holds its own ${m[1]}: a delay, window or threshold belongs to the core`);
      }
    }
  }
  for (const src of ["src", "dlq/src", "platform/src"]) {
    for (const f of rustFiles(src)) {
      for (const m of code(read(f)).matchAll(/\.retry\(\s*(\d+)/g)) {
        problems.push(`${f} retries with the literal ${m[1]}: apply a value the core decided`);
      }
    }
  }

  // The core's floors.
  const floor = floors(coreGraph);
  const deepest = Math.max(...floor.values());
  if (deepest > MAX_CORE_FLOOR) {
    const at = [...floor].filter(([, d]) => d === deepest).map(([f]) => f);
    problems.push(`the core's deepest floor is ${deepest} (at most ${MAX_CORE_FLOOR}): ${at.join(", ")}`);
  }
  const entries = readdirSync(path.join(ROOT, "core/src")).length;
  const stages = readdirSync(path.join(ROOT, "core/src")).filter((e) => !e.endsWith(".rs") && !NOT_STAGES.has(e));
  return { problems, deepest, entries, stages };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = check();
  if (process.argv.includes("--json")) console.log(JSON.stringify(result, null, 2));
  else if (result.problems.length) for (const p of result.problems) console.error(`layout: ${p}`);
  else console.log(`layout: ${result.entries} entries in core/src, deepest floor ${result.deepest}, ${result.stages.length} stages; every invariant holds`);
  process.exit(result.problems.length ? 1 : 0);
}
