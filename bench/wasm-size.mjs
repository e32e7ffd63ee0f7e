// Target 5: the two workers' wasm, raw and gzipped (zlib level 9), each
// next to its limit (issue 24's budgets: relay <= 240 KB gz, DLQ <= 320 KB
// gz), with the sections of 1 KB or more. Runs on its own too, after
// `bash scripts/build.sh`: `node bench/wasm-size.mjs`. Where the bytes go:
// `node scripts/wasm-top.mjs relay|dlq`.
import { readFileSync } from "node:fs";
import { gzipSync, constants as zlib } from "node:zlib";
import { fmt, say, table } from "./report.mjs";

export const WASM_LIMITS_KB = { relay: 240, dlq: 320 };

/** Reads an unsigned LEB128 at buf[pos]: [value, next position]. */
export function readLeb(buf, pos) {
  let r = 0;
  let shift = 0;
  let byte;
  do {
    byte = buf[pos++];
    r += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [r, pos];
}

/** The sections of a wasm module: [{name, start, end, size}] (start/end include the section header). */
export function wasmSections(buf) {
  const NAMES = ["custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "datacount"];
  const out = [];
  let p = 8;
  while (p < buf.length) {
    const start = p;
    const id = buf[p++];
    let size;
    [size, p] = readLeb(buf, p);
    const body = p;
    let name = NAMES[id] ?? `id${id}`;
    if (id === 0) {
      let n;
      [n, p] = readLeb(buf, p);
      name = `custom:${buf.subarray(p, p + n).toString()}`;
    }
    out.push({ name, start, end: body + size, size });
    p = body + size;
  }
  return out;
}

export function runWasmSizes() {
  say("## Target 5. wasm sizes (gzip: zlib level 9; KB = 1000 bytes)");
  const gz = (b) => gzipSync(b, { level: zlib.Z_BEST_COMPRESSION }).length;
  const rows = [];
  const detail = [];
  const results = {};
  for (const [name, file] of [
    ["relay", "build/index_bg.wasm"],
    ["dlq", "dlq/build/index_bg.wasm"],
  ]) {
    const raw = readFileSync(file);
    const gzipped = gz(raw);
    const sections = wasmSections(raw);
    const kept = Buffer.concat([raw.subarray(0, 8), ...sections.filter((x) => x.name !== "custom:name").map((x) => raw.subarray(x.start, x.end))]);
    const kb = gzipped / 1000;
    const limit = WASM_LIMITS_KB[name];
    rows.push([`${name} (${file})`, `${fmt(raw.length / 1000, 1)} KB`, `${fmt(kb, 1)} KB`, `<= ${limit} KB`, kb <= limit ? "within" : `over by ${fmt(kb - limit, 1)} KB`, `${fmt(gz(kept) / 1000, 1)} KB`]);
    detail.push(`  ${name} sections (KB raw): ${sections.filter((x) => x.size >= 1000).map((x) => `${x.name} ${fmt(x.size / 1000, 1)}`).join(", ")}`);
    results[name] = { raw: raw.length, gzip: gzipped, limitKB: limit, gzipWithoutNameSection: gz(kept), sections: Object.fromEntries(sections.map((x) => [x.name, x.size])) };
  }
  say("");
  say(table(["worker", "raw", "gzipped", "limit (gz)", "", "gzipped without a name section"], rows));
  say(detail.join("\n"));
  say("  (the last column is for analysis only: what dropping debug names would give)\n");
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) runWasmSizes();
