// Where a worker's wasm bytes go: the biggest functions and the total per
// crate or module prefix, read from a wasm that still has its name section.
//
//   node scripts/wasm-top.mjs [relay|dlq|FILE.wasm] [--top N] [--depth D] [--grep TEXT] [--tsv OUT]
//
// It rebuilds nothing: it takes cargo's last release output
// (target/wasm32-unknown-unknown/release/<crate>.wasm, written by
// `bash scripts/build.sh`), runs wasm-bindgen (which demangles names) and
// the same wasm-opt -Os pass as scripts/build.sh but keeping names (-g),
// and reports each function's body size. Sizes are raw bytes after
// optimisation; gzip shrinks all of them by roughly the same factor, so the
// ranking is what matters. An async fn's callees that LLVM inlined count in
// its own size (its `{{closure}}`), so the big ones name whole routes.
// `--tsv` writes every function, to diff two builds by name.
// Written to find what to trim for issue 24's wasm budgets.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readLeb, wasmSections } from "../bench/wasm-size.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const CRATES = { relay: "hookrelay", dlq: "hookrelay_dlq" };

/** Count of imported functions (they come first in the function index space). */
function importedFunctions(buf, sec) {
  let [n, p] = readLeb(buf, sec.end - sec.size);
  let funcs = 0;
  for (let i = 0; i < n; i++) {
    for (let s = 0; s < 2; s++) {
      let len;
      [len, p] = readLeb(buf, p);
      p += len;
    }
    const kind = buf[p++];
    if (kind === 0) {
      funcs++;
      [, p] = readLeb(buf, p);
    } else if (kind === 1) {
      p++;
      let flags;
      [flags, p] = readLeb(buf, p);
      [, p] = readLeb(buf, p);
      if (flags & 1) [, p] = readLeb(buf, p);
    } else if (kind === 2) {
      let flags;
      [flags, p] = readLeb(buf, p);
      [, p] = readLeb(buf, p);
      if (flags & 1) [, p] = readLeb(buf, p);
    } else if (kind === 3) {
      p += 2;
    } else if (kind === 4) {
      p++;
      [, p] = readLeb(buf, p);
    } else throw new Error(`import kind ${kind} not handled`);
  }
  return funcs;
}

/** Function names from the name section's subsection 1: Map<index, name>. */
function functionNames(buf, sec) {
  const names = new Map();
  let [n, p] = readLeb(buf, sec.end - sec.size);
  p += n; // "name"
  while (p < sec.end) {
    const id = buf[p++];
    let size;
    [size, p] = readLeb(buf, p);
    const end = p + size;
    if (id === 1) {
      let count;
      [count, p] = readLeb(buf, p);
      for (let i = 0; i < count; i++) {
        let idx;
        let len;
        [idx, p] = readLeb(buf, p);
        [len, p] = readLeb(buf, p);
        names.set(idx, buf.subarray(p, p + len).toString());
        p += len;
      }
    }
    p = end;
  }
  return names;
}

/** Body sizes of every defined function: [{name, size}]. */
export function functionSizes(buf) {
  const secs = wasmSections(buf);
  const imp = secs.find((s) => s.name === "import");
  const code = secs.find((s) => s.name === "code");
  const nameSec = secs.find((s) => s.name === "custom:name");
  const base = imp ? importedFunctions(buf, imp) : 0;
  const names = nameSec ? functionNames(buf, nameSec) : new Map();
  let [count, p] = readLeb(buf, code.end - code.size);
  const out = [];
  for (let i = 0; i < count; i++) {
    let size;
    const start = p;
    [size, p] = readLeb(buf, p);
    p += size;
    out.push({ name: names.get(base + i) ?? `func[${base + i}]`, size: p - start });
  }
  return out;
}

/** The prefix a function is grouped under: its first `depth` path segments. */
function prefix(name, depth) {
  let n = name.replace(/^<(?:&(?:mut )?)?/, "").replace(/^\w+ as /, "");
  n = n.replace(/<.*$/s, "");
  return n.split("::").slice(0, depth).join("::");
}

/** `input` (a cargo wasm) through wasm-bindgen and wasm-opt, names kept. */
function optimised(input) {
  const dir = mkdtempSync(join(tmpdir(), "wasm-top-"));
  try {
    const bindgen = join(process.env.CARGO_HOME ?? join(homedir(), ".cargo"), "bin", "wasm-bindgen");
    execFileSync(bindgen, [input, "--out-dir", dir, "--target", "bundler", "--out-name", "m"], { stdio: "inherit" });
    const out = join(dir, "named.wasm");
    // The feature set scripts/build.sh gives wasm-opt.
    const features = ["--enable-mutable-globals", "--enable-sign-ext", "--enable-nontrapping-float-to-int", "--enable-bulk-memory", "--enable-multivalue", "--enable-reference-types", "--enable-exception-handling"];
    const wasmOpt = join(ROOT, "node_modules/binaryen/bin/wasm-opt");
    execFileSync(wasmOpt, ["-Os", "-g", "--low-memory-unused", "--converge", ...features, join(dir, "m_bg.wasm"), "-o", out], { stdio: "inherit" });
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function main() {
  const args = process.argv.slice(2);
  const opt = (flag, dflt) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : dflt);
  const which = args.find((a) => a in CRATES) ?? "relay";
  // Another cargo output (an older build, say) may be named instead.
  const input = args.find((a) => a.endsWith(".wasm")) ?? join(ROOT, `target/wasm32-unknown-unknown/release/${CRATES[which]}.wasm`);
  const top = Number(opt("--top", 40));
  const depth = Number(opt("--depth", 2));
  const grep = opt("--grep", "");
  const buf = optimised(input);
  const secs = wasmSections(buf);
  console.log(`${input}: ${buf.length} bytes with names; sections: ${secs.map((s) => `${s.name} ${s.size}`).join(", ")}`);
  const fns = functionSizes(buf).filter((f) => f.name.includes(grep));
  // Every function as "size<TAB>name", hashes dropped, to diff two builds.
  const tsv = opt("--tsv", "");
  if (tsv) writeFileSync(tsv, fns.map((f) => `${f.size}\t${f.name.replace(/::h[0-9a-f]{16}$/, "")}`).join("\n") + "\n");
  const total = fns.reduce((a, f) => a + f.size, 0);
  console.log(`\n${fns.length} functions, ${total} bytes of code\n\n## by prefix (depth ${depth})`);
  const groups = new Map();
  for (const f of fns) {
    const k = prefix(f.name, depth);
    const g = groups.get(k) ?? { size: 0, n: 0 };
    g.size += f.size;
    g.n++;
    groups.set(k, g);
  }
  for (const [k, g] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
    console.log(`${String(g.size).padStart(8)} ${String(g.n).padStart(5)}  ${k}`);
  }
  console.log("\n## biggest functions");
  for (const f of [...fns].sort((a, b) => b.size - a.size).slice(0, top)) {
    console.log(`${String(f.size).padStart(8)}  ${f.name.slice(0, 200)}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
