#!/usr/bin/env node
// `npm run bench`: hookrelay's benchmarks for issue 11, one table per
// target, all in this one process. It only prints numbers; nothing here
// asserts a time. See bench/README.md. Each section lives in its own module:
//   target 1  consumer-ingest.mjs  ingest-only consumer vs raw D1 (and TS)
//   target 2  forwarding.mjs       forwarding consumer vs hand-written JS, and to 3 destinations
//   target 3  triage.mjs           DLQ triage (another engineer's; run if present)
//   target 4  relay-ingest.mjs     relay requests/s vs hand-written JS ingest
//   target 5  wasm-size.mjs        wasm sizes against their limits
//   target 6  sweep.mjs            batch-size sweep
//   target 7  archive-sweep.mjs    retention sweep (D1 -> R2) vs a hand-written JS anchor
//   target 8  consumer-beside-sweep.mjs  target 1 again, with a retention sweep beside it
//   target 9  rate-trips.mjs       the shared rate's D1 round trips per deliveries batch
//   target 10 end-to-end.mjs       POST to arrival through `npm start`, beside a one-hop JS relay
// then native signature verification (cargo bench) and `npm test` notes.
// D1 round trips are counted by d1-counter.mjs in every consumer table.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import os from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(ROOT);
process.env.WRANGLER_SEND_METRICS = "false";
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_LOG ??= "error"; // no "Using secrets defined in .dev.vars" per Miniflare start

const num = (name, dflt) => Math.max(1, Number(process.env[name] ?? dflt));
const RUNS = num("BENCH_RUNS", 5);
const N = num("BENCH_N", 10000);
const FORWARD_N = num("BENCH_FORWARD_N", 10000);
const ROUNDS = num("BENCH_ROUNDS", 5);
const REQUESTS = num("BENCH_REQUESTS", 2000);
const CPU_ROUNDS = num("BENCH_CPU_ROUNDS", 30);
const SWEEP_N = num("BENCH_SWEEP_N", 2000);
const SWEEP_FORWARD_N = num("BENCH_SWEEP_FORWARD_N", 500);
const SWEEP_RUNS = num("BENCH_SWEEP_RUNS", 3);
const TRIAGE_N = num("BENCH_TRIAGE_N", 10000);
const ARCHIVE_N = num("BENCH_ARCHIVE_N", 20000);
const ARCHIVE_RUNS = num("BENCH_ARCHIVE_RUNS", 5);
const SEED_N = num("BENCH_SEED_N", 30000);
// BENCH_ONLY=1,2 runs only those targets (for development); default: all.
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",").map((s) => s.trim())) : null;
const wanted = (t) => !ONLY || ONLY.has(String(t));

function sh(cmd, { quiet = false } = {}) {
  const r = spawnSync("bash", ["-c", cmd], { cwd: ROOT, stdio: quiet ? "pipe" : ["ignore", "inherit", "inherit"], encoding: "utf8" });
  if (r.status !== 0) {
    if (quiet) process.stderr.write(`${r.stdout ?? ""}${r.stderr ?? ""}`);
    throw new Error(`command failed (${r.status}): ${cmd}`);
  }
  return r.stdout;
}

if (process.env.BENCH_SKIP_SETUP !== "1") {
  console.log("[bench] setup + wasm build (bash scripts/setup.sh && bash scripts/build.sh)");
  sh("bash scripts/setup.sh && bash scripts/build.sh");
}
// Imported after setup: on a fresh clone node_modules may not exist before it.
const lib = await import("./lib.mjs");
const { fmt, say, table } = await import("./report.mjs");
const esbuild = (await import("esbuild")).default;

// The hand-written anchors, compiled the same way.
mkdirSync(lib.BUILD, { recursive: true });
for (const name of ["ts-consumer", "raw-d1", "js-forwarder", "js-ingest", "js-ingest-bare", "archive-sweep-js", "js-relay"]) {
  await esbuild.build({
    entryPoints: [path.join(lib.BENCH, name, "index.ts")],
    outfile: path.join(lib.BUILD, `${name}.js`),
    bundle: true,
    format: "esm",
    target: "es2022",
    platform: "neutral",
    logLevel: "warning",
  });
}
const compatDate = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync("wrangler.toml", "utf8"))[1];
const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: ROOT, encoding: "utf8" }).stdout.trim() ? " (with uncommitted changes)" : "";
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(" ");
const results = {
  date: new Date().toISOString(),
  commit: commit + dirty,
  machine: `${os.cpus().length} cores (nproc), ${os.cpus()[0]?.model ?? "?"}, node ${process.version}`,
  loadBefore: load(),
  settings: { RUNS, N, FORWARD_N, ROUNDS, REQUESTS, SWEEP_N, SWEEP_FORWARD_N, SWEEP_RUNS, ARCHIVE_N, ARCHIVE_RUNS, SEED_N },
};
const t0 = performance.now();

say(`\nhookrelay bench — ${results.date}, commit ${results.commit}`);
say(`machine: ${results.machine}; load average (1/5/15 min) at start: ${results.loadBefore}`);
say("workerd runs every isolate, the queue broker and D1 on one thread; the load generator and the poller share the machine.\n");

say("## D1 round-trip counter (bench/d1-counter.mjs)");
results.counterCheck = await (await import("./consumer-ingest.mjs")).verifyCounter(compatDate);
say("");

if (wanted(1)) {
  const { runConsumerIngest } = await import("./consumer-ingest.mjs");
  results.target1 = await runConsumerIngest({ compatDate, runs: RUNS, n: N });
}
if (wanted(2)) {
  const { runForwarding } = await import("./forwarding.mjs");
  results.target2 = await runForwarding({ compatDate, runs: RUNS, n: FORWARD_N });
}
if (wanted(3)) {
  // Target 3 (DLQ triage) lives in bench/triage.mjs, which also runs on
  // its own (`node bench/triage.mjs`); it counts D1 round trips itself.
  const triage = path.join(lib.BENCH, "triage.mjs");
  if (existsSync(triage)) {
    const { runTriageBench, print } = await import(pathToFileURL(triage).href);
    say("## Target 3. DLQ triage vs a raw-D1 anchor (bench/triage.mjs)");
    results.target3 = await runTriageBench({ runs: RUNS, n: TRIAGE_N });
    print(results.target3);
  } else {
    say("## Target 3. DLQ triage: bench/triage.mjs is not there yet; skipped.\n");
  }
}
if (wanted(4)) {
  const { runRelayIngest } = await import("./relay-ingest.mjs");
  results.target4 = await runRelayIngest({ compatDate, rounds: ROUNDS, requests: REQUESTS, cpuRounds: CPU_ROUNDS });
}
if (wanted(6)) {
  const { runSweep } = await import("./sweep.mjs");
  results.target6 = await runSweep({ runs: SWEEP_RUNS, n: SWEEP_N, forwardN: SWEEP_FORWARD_N });
}
if (wanted(7)) {
  const { runArchiveSweep } = await import("./archive-sweep.mjs");
  results.target7 = await runArchiveSweep({ compatDate, runs: ARCHIVE_RUNS, n: ARCHIVE_N });
}
if (wanted(8)) {
  const { runConsumerBesideSweep } = await import("./consumer-beside-sweep.mjs");
  results.target8 = await runConsumerBesideSweep({ compatDate, runs: RUNS, n: N, seedN: SEED_N });
}
if (wanted(9)) {
  const { runRateTrips } = await import("./rate-trips.mjs");
  results.target9 = await runRateTrips({ runs: RUNS, n: 50, batchSize: 10 });
}
if (wanted(10)) {
  const { runEndToEnd } = await import("./end-to-end.mjs");
  results.target10 = await runEndToEnd({ compatDate, rounds: num("BENCH_E2E_ROUNDS", 3), n: num("BENCH_E2E_N", 60), burstN: num("BENCH_E2E_BURST", 400) });
}
if (wanted(5)) {
  const { runWasmSizes } = await import("./wasm-size.mjs");
  results.target5 = runWasmSizes();
}
if (process.env.BENCH_PROBE === "1") {
  const { runProbe } = await import("./probe.mjs");
  results.probe = await runProbe({ compatDate });
}

// ---- native signature verification ------------------------------------------
{
  const release = /\[profile\.release\]([^[]*)/.exec(readFileSync("Cargo.toml", "utf8"))?.[1] ?? "";
  const opt = /opt-level\s*=\s*("?[\w]+"?)/.exec(release)?.[1] ?? "default";
  say(`## Native signature verification (cargo bench -p hookrelay-core --bench signatures; the bench profile inherits [profile.release]: opt-level ${opt}${/lto\s*=\s*true/.test(release) ? ", LTO" : ""})`);
}
if (process.env.BENCH_SKIP_CARGO === "1") {
  say("  skipped (BENCH_SKIP_CARGO=1)\n");
} else {
  const r = spawnSync("cargo", ["bench", "-p", "hookrelay-core", "--bench", "signatures"], { cwd: ROOT, encoding: "utf8" });
  if (r.status !== 0) {
    process.stderr.write(r.stderr);
    throw new Error("cargo bench failed");
  }
  say(r.stdout.trimEnd().split("\n").map((l) => `  ${l}`).join("\n") + "\n");
  results.native = r.stdout;
}

// ---- npm test -------------------------------------------------------------------
say("## npm test (not timed by npm test itself)");
say(`  cold npm test: ${process.env.COLD_NPM_TEST_S ? `${process.env.COLD_NPM_TEST_S} s (from COLD_NPM_TEST_S)` : "not measured in this run (set COLD_NPM_TEST_S, see bench/README.md)"}`);
if (process.env.BENCH_WARM_TEST === "1") {
  const t = performance.now();
  const r = spawnSync("npm", ["test"], { cwd: ROOT, stdio: ["ignore", "ignore", "ignore"] });
  results.warmNpmTestS = (performance.now() - t) / 1000;
  say(`  warm npm test: ${fmt(results.warmNpmTestS, 1)} s (exit ${r.status})`);
} else {
  say("  warm npm test: not measured (BENCH_WARM_TEST=1 measures it, about 2 min)");
}

// ---- summary ---------------------------------------------------------------------
results.loadAfter = load();
const rows = [];
const ratio = (t, key, label) => {
  const r = results[t]?.ratios?.[key];
  if (r) rows.push([label, `${fmt(r.median, 2)}x`, `${fmt(r.min, 2)}–${fmt(r.max, 2)}x`]);
};
ratio("target1", "rust/raw", "1. ingest consumer: Rust / raw D1 (events/s)");
ratio("target1", "rust/ts", "1. ingest consumer: Rust / TS (events/s)");
ratio("target2", "rust/js", "2. forwarding consumer: Rust / JS (events/s)");
ratio("target2", "rust3/rust cpu", "2. forwarding to 3 destinations / 1: workerd CPU per event (target <= 2.0x)");
{
  const g = results.target2?.ratios?.["rust3-rust trips/event"];
  if (g) rows.push(["2. D1 round trips per event, 3 destinations minus 1 (bound 2)", fmt(g.median, 3), `${fmt(g.min, 3)}–${fmt(g.max, 3)}`]);
}
if (results.target3) rows.push(["3. DLQ triage: Rust / raw D1 (entries/s)", `${fmt(results.target3.ratio.median, 2)}x`, `${fmt(results.target3.ratio.min, 2)}–${fmt(results.target3.ratio.max, 2)}x`]);
ratio("target4", "rust/js", "4. relay ingest: Rust / JS (req/s)");
ratio("target4", "rust/trivial", "4. relay ingest: Rust / trivial-worker ceiling (req/s)");
ratio("target4", "rust/bare", "4. relay ingest: Rust / JS bare anchor (HMAC, size, send only; req/s)");
ratio("target7", "rust/js", "7. retention sweep: Rust / JS anchor (rows/s archived; target >= 0.8x)");
ratio("target8", "rust/raw", "8. ingest consumer, no sweep: Rust / raw D1 (events/s)");
ratio("target8", "rustSweep/raw", "8. ingest consumer with a sweep beside it: Rust+sweep / raw D1");
ratio("target8", "rustSweep/rawSweep", "8. both with a sweep beside them: Rust+sweep / raw D1+anchor sweep");
ratio("target8", "rustSweep/rust", "8. the sweep's cost to the consumer: Rust+sweep / Rust");
const cp = results.target4?.cpuPaired;
if (cp) rows.push(["4. relay ingest: Rust / JS CPU per request, loaded at once (geometric mean ± s.e.)", `${fmt(cp.mean, 3)}x ± ${fmt(cp.se * 100, 1)}%`, `${fmt(cp.min, 2)}–${fmt(cp.max, 2)}x`]);
for (const [name, w] of Object.entries(results.target5 ?? {})) rows.push([`5. ${name} wasm gzipped`, `${fmt(w.gzip / 1000, 1)} KB`, `limit ${w.limitKB} KB: ${w.gzip / 1000 <= w.limitKB ? "within" : "over"}`]);
const trips = (t, key, label) => {
  const rs = results[t]?.runs?.[key];
  if (rs) rows.push([`D1 round trips per message batch: ${label}`, fmt(lib.median(rs.map((x) => x.tripsPerBatch)), 2), `${fmt(Math.min(...rs.map((x) => x.tripsPerBatch)), 2)}–${fmt(Math.max(...rs.map((x) => x.tripsPerBatch)), 2)}`]);
};
trips("target1", "rust", "Rust, ingest only");
trips("target1", "raw", "raw D1");
trips("target1", "ts", "TS");
trips("target2", "rust", "Rust, forwarding");
trips("target2", "js", "JS forwarder");
trips("target2", "rust3", "Rust, forwarding to 3 destinations");
if (results.target9) rows.push(["9. D1 round trips a destination's rate_per_s adds per deliveries batch (target <= 1)", fmt(results.target9.extra, 2), "median of paired runs"]);
for (const r of results.target3?.rows ?? []) rows.push([`D1 round trips per message batch: ${r.name}`, fmt(r.d1_trips_per_batch, 2), r.d1_kinds]);
say("\n## Summary (ratios: median of per-run paired ratios, and their min–max)");
say(table(["measure", "value", "spread / limit"], rows));
say(`\n  load average at the end: ${results.loadAfter}; total ${fmt((performance.now() - t0) / 1000)} s`);
writeFileSync(path.join(lib.BUILD, "results.json"), JSON.stringify(results, (k, v) => (k === "batchMs" ? undefined : v), 2));
say(`(raw results: ${path.relative(ROOT, path.join(lib.BUILD, "results.json"))})`);
