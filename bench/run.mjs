#!/usr/bin/env node
// `npm run bench`: hookrelay's benchmark suite. It only prints numbers;
// nothing here asserts a time. See bench/README.md.
//
//   1. consumer throughput: the Rust relay vs a hand-written TS consumer vs
//      raw D1 batch inserts, each in Miniflare/workerd, median of runs;
//      plus a breakdown of where a batch's time goes (D1 call patterns
//      timed inside workerd, and the broker's per-batch handler times);
//   2. relay requests/s with signature verification (one workerd isolate);
//   3. native signature verification MB/s (cargo bench);
//   4. wasm sizes, raw and gzipped;
//   5. `npm test` durations.
//
// Environment knobs: BENCH_RUNS (consumer runs, default 5), BENCH_ROUNDS
// (relay load rounds, default 3), BENCH_N (default 10000),
// BENCH_REQUESTS (default 3000), BENCH_SKIP_SETUP=1 (skip setup + build),
// BENCH_SKIP_CARGO=1, BENCH_WARM_TEST=1, COLD_NPM_TEST_S.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { gzipSync, constants as zlib } from "node:zlib";
import { randomUUID } from "node:crypto";
import path from "node:path";
import os from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(ROOT);
process.env.WRANGLER_SEND_METRICS = "false";
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_LOG ??= "error"; // no "Using secrets defined in .dev.vars" per Miniflare start

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const N = Number(process.env.BENCH_N ?? 10000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const IN_FLIGHT = 32;
const CHUNK = 100;
const PROBE_REPS = 9;
const PROBE_INNER = 5;
const SWEEP_SIZES = [10, 50, 100];
const SWEEP_N = 2000;
const SWEEP_DELAY_S = 3;
const TARGETS = { vsTs: 1.0, vsRaw: 0.8, gzipKB: 300 };

const say = (...a) => console.log(...a);
const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");
const results = { date: new Date().toISOString(), machine: `${os.cpus().length} cores, ${os.cpus()[0]?.model ?? "?"}, node ${process.version}` };

// ---- 0. tools and builds -------------------------------------------------
function sh(cmd, { quiet = false } = {}) {
  const r = spawnSync("bash", ["-c", cmd], { cwd: ROOT, stdio: quiet ? "pipe" : ["ignore", "inherit", "inherit"], encoding: "utf8" });
  if (r.status !== 0) {
    if (quiet) process.stderr.write(`${r.stdout ?? ""}${r.stderr ?? ""}`);
    throw new Error(`command failed (${r.status}): ${cmd}`);
  }
  return r.stdout;
}

if (process.env.BENCH_SKIP_SETUP !== "1") {
  say("[bench] setup + wasm build (bash scripts/setup.sh && bash scripts/build.sh)");
  sh("bash scripts/setup.sh && bash scripts/build.sh");
}
// Imported after setup: on a fresh clone node_modules may not exist before it.
const lib = await import("./lib.mjs");
const { median, quantile, table, sleep } = lib;
const esbuild = (await import("esbuild")).default;

mkdirSync(lib.BUILD, { recursive: true });
for (const name of ["ts-consumer", "raw-d1"]) {
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
const COMPAT_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync("wrangler.toml", "utf8"))[1];

say(`\nhookrelay bench — ${results.date}`);
say(`machine: ${results.machine}; workerd runs each isolate on one thread; the load generator shares the machine.\n`);

// ---- 1. consumer throughput ----------------------------------------------
const CONSUMERS = {
  rust: {
    label: "Rust (relay worker, wasm)",
    start: (size) => lib.startRelay({ consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: 0 } } }),
    worker: "hookrelay",
  },
  ts: { label: "TypeScript (hand-written)", start: (size) => lib.startJsConsumer("ts-consumer", COMPAT_DATE, { maxBatchSize: size }), worker: "ts-consumer" },
  raw: { label: "raw D1 (batch insert)", start: (size) => lib.startJsConsumer("raw-d1", COMPAT_DATE, { maxBatchSize: size }), worker: "raw-d1" },
};

/**
 * Puts `n` events on the consumer's `webhooks` queue and waits until
 * `events` has `n` rows. `drainDelayS` > 0 sends every message with that
 * delivery delay, so all sends finish before the first batch is delivered
 * and the batches run without sends competing for workerd (analysis only).
 */
async function consumerRun(key, { n = N, batchSize = 100, drainDelayS = 0 } = {}) {
  const c = CONSUMERS[key];
  const env = await c.start(batchSize);
  try {
    const producer = await env.mf.getQueueProducer("WEBHOOKS", c.worker);
    const events = lib.queuedEvents(n);
    const count = async () => (await env.db.prepare("SELECT count(*) AS n FROM events").first("n")) ?? 0;
    const t0 = performance.now();
    const options = drainDelayS > 0 ? { delaySeconds: drainDelayS } : undefined;
    const sending = (async () => {
      for (let i = 0; i < events.length; i += CHUNK) {
        await producer.sendBatch(
          events.slice(i, i + CHUNK).map((body) => ({ body })),
          options,
        );
      }
      return performance.now() - t0;
    })();
    let got = 0;
    const deadline = t0 + 180_000;
    while ((got = await count()) < n) {
      if (performance.now() > deadline) throw new Error(`${key}: only ${got}/${n} events after 180 s; errors: ${[...env.log.errors, ...env.stdio.errors].slice(0, 5).join(" | ")}`);
      await sleep(50);
    }
    const ms = performance.now() - t0;
    const sendMs = await sending;
    const batches = env.log.batches.filter((b) => b.queue === "webhooks");
    const extra = {};
    if (key === "rust") {
      extra.ingestCounter = await env.db.prepare("SELECT value FROM counters WHERE name = 'ingest'").first("value");
      extra.attempts = await env.db.prepare("SELECT count(*) AS n FROM attempts").first("n");
    }
    const full = batches.filter((b) => b.size === batchSize);
    return {
      eventsPerS: (n / ms) * 1000,
      ms,
      sendMs,
      batches: batches.length,
      meanBatch: batches.reduce((a, b) => a + b.size, 0) / Math.max(1, batches.length),
      handlerMs: median(full.map((b) => b.ms)),
      // What the consumer could sustain if a full batch were always waiting.
      capacityEventsPerS: (batchSize / median(full.map((b) => b.ms))) * 1000,
      unacked: batches.reduce((a, b) => a + (b.size - b.acked), 0),
      ...extra,
    };
  } finally {
    await env.dispose();
  }
}

say(`## 1. Consumer throughput: N = ${N} events, batch size 100, batch timeout 0, ${RUNS} runs each (fresh Miniflare + in-memory D1 per run)`);
say("   timed from the first sendBatch until SELECT count(*) FROM events = N (polled every 50 ms); runs interleave rust, ts, raw");
const runs = { rust: [], ts: [], raw: [] };
for (let r = 1; r <= RUNS; r++) {
  for (const key of Object.keys(CONSUMERS)) {
    const res = await consumerRun(key);
    runs[key].push(res);
    say(
      `  run ${r} ${key.padEnd(4)} ${fmt(res.eventsPerS).padStart(6)} events/s  (${fmt(res.ms)} ms; sends done at ${fmt(res.sendMs)} ms; ${res.batches} batches of mean ${fmt(res.meanBatch, 1)}; handler median ${fmt(res.handlerMs)} ms per batch${res.unacked ? `; ${res.unacked} not acked first time` : ""}${key === "rust" ? `; counters.ingest=${res.ingestCounter}, attempts rows=${res.attempts}` : ""})`,
    );
  }
}
const med = Object.fromEntries(Object.entries(runs).map(([k, rs]) => [k, median(rs.map((x) => x.eventsPerS))]));
const medHandler = Object.fromEntries(Object.entries(runs).map(([k, rs]) => [k, median(rs.map((x) => x.handlerMs))]));
say("");
say(
  table(
    ["consumer", "median events/s", "runs (events/s)", "handler ms per 100-batch (median)"],
    Object.entries(CONSUMERS).map(([k, c]) => [c.label, fmt(med[k]), runs[k].map((x) => fmt(x.eventsPerS)).join(", "), fmt(medHandler[k], 1)]),
  ),
);
const ratioTs = med.rust / med.ts;
const ratioRaw = med.rust / med.raw;
say(`\n  Rust / TS     = ${fmt(ratioTs, 2)}x   (target >= ${TARGETS.vsTs.toFixed(1)}x: ${ratioTs >= TARGETS.vsTs ? "MET" : "MISSED"})`);
say(`  Rust / raw D1 = ${fmt(ratioRaw, 2)}x   (target >= ${TARGETS.vsRaw.toFixed(1)}x: ${ratioRaw >= TARGETS.vsRaw ? "MET" : "MISSED"})\n`);
results.consumers = { runs, median: med, handlerMsPer100: medHandler, ratioTs, ratioRaw };

// ---- 1b. where a batch's time goes ---------------------------------------
say(`## 1b. Breakdown, from outside the workers`);
say(`   (a) D1 call patterns for 100 events, timed inside workerd by the raw-D1 worker's /probe (fresh rows, ${PROBE_REPS} calls x ${PROBE_INNER} repetitions)`);
{
  const env = await lib.startJsConsumer("raw-d1", COMPAT_DATE);
  const kinds = [
    ["noop", "no D1 call (HTTP round trip only)", 0],
    ["raw_batch", "raw D1: 100 INSERT OR IGNORE, 1 batch", 100],
    ["rust_insert_batch", "Rust's insert only: 100 statements, 1 batch", 100],
    ["rust_ingest_batch", "Rust's ingest, forwarding source: 300 statements (insert+update+select), 1 batch", 300],
    ["counter_batch", "Rust's metrics flush: 1 counter upsert, 1 batch", 1],
    ["upsert_returning_batch", "what-if: 1 upsert ... RETURNING per event, 1 batch", 100],
    ["ts_sequential", "TS: 100 upserts, awaited one by one", 100],
  ];
  const probe = {};
  try {
    let serial = 0;
    for (const [kind] of kinds) {
      const inWorker = [];
      for (let i = 0; i < PROBE_REPS + 1; i++) {
        const rows = lib.queuedEvents(100, `probe${serial++}`);
        const res = await fetch(new URL("/probe", env.url), { method: "POST", body: JSON.stringify({ kind, rows, reps: PROBE_INNER }) });
        if (!res.ok) throw new Error(`probe ${kind}: ${res.status} ${await res.text()}`);
        const { ms } = await res.json();
        if (i >= 1) inWorker.push(ms); // the first call warms up
      }
      probe[kind] = median(inWorker);
    }
  } finally {
    await env.dispose();
  }
  say("");
  say(table(["pattern", "statements", "ms per 100 events"], kinds.map(([k, label, stmts]) => [label, stmts, fmt(probe[k], 2)])));

  say(`\n   (b) batch-size sweep with sends finished first (delaySeconds), ${SWEEP_N} events per point: broker handler ms per batch, least-squares fit ms = fixed + per_event * size;\n       capacity = size / handler time, the rate if a full batch were always waiting`);
  const sweep = {};
  for (const key of ["rust", "raw"]) {
    sweep[key] = [];
    for (const size of SWEEP_SIZES) {
      const res = await consumerRun(key, { n: SWEEP_N, batchSize: size, drainDelayS: SWEEP_DELAY_S });
      sweep[key].push({ size, handlerMs: res.handlerMs, capacityEventsPerS: res.capacityEventsPerS });
    }
  }
  const tsDrain = await consumerRun("ts", { n: SWEEP_N, batchSize: 100, drainDelayS: SWEEP_DELAY_S });
  const fit = (pts) => {
    const xs = pts.map((p) => p.size);
    const ys = pts.map((p) => p.handlerMs);
    const mx = xs.reduce((a, b) => a + b) / xs.length;
    const my = ys.reduce((a, b) => a + b) / ys.length;
    const slope = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
    return { fixedMs: my - slope * mx, perEventUs: slope * 1000 };
  };
  const fits = { rust: fit(sweep.rust), raw: fit(sweep.raw) };
  say("");
  say(
    table(
      ["consumer", ...SWEEP_SIZES.map((s) => `ms/batch @${s}`), ...SWEEP_SIZES.map((s) => `capacity ev/s @${s}`), "fixed ms/batch", "µs/event"],
      [
        ...["rust", "raw"].map((k) => [
          k,
          ...sweep[k].map((p) => fmt(p.handlerMs, 1)),
          ...sweep[k].map((p) => fmt(p.capacityEventsPerS)),
          fmt(fits[k].fixedMs, 1),
          fmt(fits[k].perEventUs),
        ]),
        ["ts", ...SWEEP_SIZES.map((s) => (s === 100 ? fmt(tsDrain.handlerMs, 1) : "-")), ...SWEEP_SIZES.map((s) => (s === 100 ? fmt(tsDrain.capacityEventsPerS) : "-")), "-", "-"],
      ],
    ),
  );

  // (c) The Rust consumer's 100-event batch, split.
  const rustH = sweep.rust.find((p) => p.size === 100).handlerMs;
  const rawH = sweep.raw.find((p) => p.size === 100).handlerMs;
  const d1Ingest = probe.rust_ingest_batch;
  const d1Counter = probe.counter_batch;
  const rawD1 = probe.raw_batch;
  const invocation = Math.max(0, rawH - rawD1); // queue dispatch + JS work in the raw consumer
  const rustRest = rustH - d1Ingest - d1Counter - invocation;
  say(`\n   (c) one 100-event batch of the Rust consumer (drain mode), split with the numbers above:`);
  say("");
  say(
    table(
      ["part", "ms", "share"],
      [
        ["D1 ingest batch: 300 statements (probe)", fmt(d1Ingest, 1), `${fmt((d1Ingest / rustH) * 100)}%`],
        ["  of which 200 extra statements vs a plain insert", fmt(d1Ingest - probe.rust_insert_batch, 1), `${fmt(((d1Ingest - probe.rust_insert_batch) / rustH) * 100)}%`],
        ["D1 counters batch: 2nd round trip (probe)", fmt(d1Counter, 1), `${fmt((d1Counter / rustH) * 100)}%`],
        ["queue invocation + message delivery (raw-D1 handler - its D1 call)", fmt(invocation, 1), `${fmt((invocation / rustH) * 100)}%`],
        ["rest: wasm decode/validate, JSON.stringify per message, statement binding, result reading, logs", fmt(rustRest, 1), `${fmt((rustRest / rustH) * 100)}%`],
        ["Rust handler total (broker)", fmt(rustH, 1), "100%"],
        ["raw-D1 handler total, for comparison", fmt(rawH, 1), `${fmt((rawH / rustH) * 100)}%`],
      ],
    ),
  );
  const whatIf = probe.upsert_returning_batch + invocation;
  say(
    `\n   what-if (arithmetic on the probes, not a measurement of the product): with one upsert ... RETURNING per event and the counter write` +
      `\n   dropped from the batch path, a 100-batch would cost ${fmt(whatIf + rustRest, 1)} ms with today's wasm 'rest' (${fmt(rawH / (whatIf + rustRest), 2)}x raw D1 capacity)` +
      `\n   and ${fmt(whatIf, 1)} ms with none (${fmt(rawH / whatIf, 2)}x); the target is 0.8x.\n`,
  );
  results.breakdown = { probe, sweep, fits, tsDrain: { handlerMs: tsDrain.handlerMs, capacityEventsPerS: tsDrain.capacityEventsPerS }, split: { rustH, rawH, d1Ingest, d1Counter, invocation, rustRest } };
}

// ---- 2. relay requests/s ---------------------------------------------------
async function load(url, { total, body, headers, expect }) {
  const latencies = [];
  const statuses = {};
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < total) {
      next++;
      const h = headers();
      const s = performance.now();
      const res = await fetch(url, { method: "POST", headers: h, body });
      await res.arrayBuffer();
      latencies.push(performance.now() - s);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const ms = performance.now() - t0;
  const unexpected = Object.entries(statuses).filter(([s]) => Number(s) !== expect);
  if (unexpected.length) throw new Error(`expected ${expect}, got ${JSON.stringify(statuses)}`);
  return { reqPerS: (total / ms) * 1000, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

say(`## 2. Relay requests/s: ${REQUESTS} POSTs per case, ${IN_FLIGHT} in flight, node fetch -> Miniflare (one workerd isolate), median of ${ROUNDS} rounds`);
{
  const small = lib.eventBody(1);
  const big = JSON.stringify({ data: "x".repeat(1_000_000 - 12) }); // 1,000,000 bytes, under MAX_BODY_BYTES
  const fewer = Math.max(50, Math.ceil(REQUESTS / 20));
  const VALID = "valid signature, 202 (queue consumer detached)";
  const cases = [
    [VALID, "/webhooks/demo-hmac", small, true, 202, REQUESTS],
    ["invalid signature, 401", "/webhooks/demo-hmac", small, false, 401, REQUESTS],
    ["unknown source, 404 (no verification)", "/webhooks/nope", small, true, 404, REQUESTS],
    ["invalid signature, 1 MB body, 401", "/webhooks/demo-hmac", big, false, 401, fewer],
    ["unknown source, 1 MB body, 404 (body drained, not hashed)", "/webhooks/nope", big, true, 404, fewer],
  ];
  const ATTACHED = "valid signature, 202, consumer attached (same isolate also ingests)";
  const BASELINE = "baseline: trivial JS worker, 404";
  // Three Miniflares side by side: the relay with the webhooks consumer
  // detached (`null`: the broker accepts and drops messages, so the isolate
  // serves requests only), the relay with it attached, and a trivial JS
  // worker for the ceiling of this load generator + Miniflare. Rounds
  // interleave every case, so drifting machine load hits them alike.
  const detached = await lib.startRelay({ consumers: { webhooks: null } });
  const attached = await lib.startRelay({ consumers: { webhooks: { maxBatchSize: 100, maxBatchTimeout: 0 } } });
  const trivial = await lib.startJsConsumer("raw-d1", COMPAT_DATE);
  const all = [
    ...cases.map((c) => [detached, ...c]),
    [attached, ATTACHED, "/webhooks/demo-hmac", small, true, 202, REQUESTS],
    [trivial, BASELINE, "/", small, true, 404, REQUESTS],
  ];
  const out = {};
  const pairs = {};
  try {
    const prepared = all.map(([env, label, p, body, valid, expect, total]) => ({
      label,
      total,
      body,
      expect,
      url: new URL(p, env.url),
      headers: () => lib.hmacHeaders(body, { valid, opId: randomUUID() }),
    }));
    for (const c of prepared) await load(c.url, { ...c, total: Math.min(200, c.total) }); // warm-up
    const rounds = Object.fromEntries(prepared.map((c) => [c.label, []]));
    for (let r = 0; r < ROUNDS; r++) for (const c of prepared) rounds[c.label].push(await load(c.url, c));
    for (const c of prepared) {
      const rs = rounds[c.label];
      const pick = (f) => median(rs.map(f));
      out[c.label] = { reqPerS: pick((x) => x.reqPerS), p50: pick((x) => x.p50), p99: pick((x) => x.p99), rounds: rs.map((x) => x.reqPerS), bytes: Buffer.byteLength(c.body), requests: c.total };
    }
    // Paired, one request at a time, alternating: the median latency
    // difference isolates one step far better than throughput under noise.
    const paired = async (a, b, k) => {
      const la = [];
      const lb = [];
      for (let i = 0; i < k + 5; i++) {
        for (const [c, sink] of [[a, la], [b, lb]]) {
          const t = performance.now();
          const res = await fetch(c.url, { method: "POST", headers: c.headers(), body: c.body });
          await res.arrayBuffer();
          if (res.status !== c.expect) throw new Error(`paired: expected ${c.expect}, got ${res.status}`);
          if (i >= 5) sink.push(performance.now() - t);
        }
      }
      return { a: median(la), b: median(lb), diffUs: (median(la) - median(lb)) * 1000 };
    };
    const byLabel = Object.fromEntries(prepared.map((c) => [c.label, c]));
    pairs.small = await paired(byLabel["invalid signature, 401"], byLabel["unknown source, 404 (no verification)"], 400);
    pairs.big = await paired(byLabel["invalid signature, 1 MB body, 401"], byLabel["unknown source, 1 MB body, 404 (body drained, not hashed)"], 60);
  } finally {
    for (const env of [detached, attached, trivial]) await env.dispose();
  }
  say("");
  say(
    table(
      ["case", "body bytes", "requests", "req/s", "p50 ms", "p99 ms", "rounds (req/s)"],
      Object.entries(out).map(([label, x]) => [label, x.bytes, x.requests, fmt(x.reqPerS), fmt(x.p50, 1), fmt(x.p99, 1), x.rounds.map((v) => fmt(v)).join(", ")]),
    ),
  );
  // Both 1 MB cases receive the same bytes; the 401 also copies them into
  // wasm and runs one HMAC-SHA256 over them. Same for the small body.
  const us = (label) => 1e6 / out[label].reqPerS;
  const acceptUs = us(VALID) - us("invalid signature, 401");
  const wasmMBs = pairs.big.diffUs > 0 ? 1_000_000 / pairs.big.diffUs : NaN;
  say(`\n  per-request service time (1/throughput): 404 ${fmt(us("unknown source, 404 (no verification)"))} µs, 401 ${fmt(us("invalid signature, 401"))} µs, 202 ${fmt(us(VALID))} µs;`);
  say(`  accept + enqueue + counter flush (202 - 401) ≈ ${fmt(acceptUs)} µs/request`);
  say(`  paired sequential requests (alternating, median latency):`);
  say(`    small body: 401 ${fmt(pairs.small.a * 1000)} µs vs 404 ${fmt(pairs.small.b * 1000)} µs -> reading headers + body into wasm, verifying, logging the rejection ≈ ${fmt(pairs.small.diffUs)} µs/request`);
  say(
    `    1 MB body:  401 ${fmt(pairs.big.a * 1000)} µs vs 404 ${fmt(pairs.big.b * 1000)} µs -> +${fmt(pairs.big.diffUs)} µs` +
      (Number.isFinite(wasmMBs) ? ` -> about ${fmt(wasmMBs)} MB/s for copying the body into wasm + HMAC-SHA256 in wasm\n` : " (within noise)\n"),
  );
  results.relay = { cases: out, pairs, acceptUs, wasmMBsEstimate: wasmMBs };
}

// ---- 3. native signature verification -------------------------------------
{
  const release = /\[profile\.release\]([^[]*)/.exec(readFileSync("Cargo.toml", "utf8"))?.[1] ?? "";
  const opt = /opt-level\s*=\s*("?[\w]+"?)/.exec(release)?.[1] ?? "default";
  say(`## 3. Native signature verification (cargo bench -p hookrelay-core --bench signatures; the bench profile inherits [profile.release]: opt-level ${opt}${/lto\s*=\s*true/.test(release) ? ", LTO" : ""})`);
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

// ---- 4. wasm sizes -------------------------------------------------------------
say("## 4. wasm sizes (gzip: zlib level 9)");
/** The sections of a wasm module: [{name, start, end}] (start/end include the section header). */
function wasmSections(buf) {
  const NAMES = ["custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "datacount"];
  const out = [];
  let p = 8;
  const leb = () => {
    let r = 0;
    let shift = 0;
    let byte;
    do {
      byte = buf[p++];
      r += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return r;
  };
  while (p < buf.length) {
    const start = p;
    const id = buf[p++];
    const size = leb();
    const body = p;
    let name = NAMES[id] ?? `id${id}`;
    if (id === 0) {
      const n = leb();
      name = `custom:${buf.subarray(p, p + n).toString()}`;
    }
    out.push({ name, start, end: body + size, size });
    p = body + size;
  }
  return out;
}
{
  const gz = (b) => gzipSync(b, { level: zlib.Z_BEST_COMPRESSION }).length;
  const rows = [];
  const detail = [];
  results.wasm = {};
  for (const [name, file] of [["relay", "build/index_bg.wasm"], ["dlq", "dlq/build/index_bg.wasm"]]) {
    const raw = readFileSync(file);
    const gzipped = gz(raw);
    const sections = wasmSections(raw);
    const kept = Buffer.concat([raw.subarray(0, 8), ...sections.filter((x) => x.name !== "custom:name").map((x) => raw.subarray(x.start, x.end))]);
    const kb = gzipped / 1000;
    rows.push([`${name} (${file})`, `${fmt(raw.length / 1000, 1)} KB`, `${fmt(kb, 1)} KB`, kb <= TARGETS.gzipKB ? "MET" : "MISSED", `${fmt(gz(kept) / 1000, 1)} KB`]);
    const big = sections.filter((x) => x.size >= 1000).map((x) => `${x.name} ${fmt(x.size / 1000, 1)}`);
    detail.push(`  ${name} sections (KB raw): ${big.join(", ")}`);
    results.wasm[name] = { raw: raw.length, gzip: gzipped, gzipWithoutNameSection: gz(kept), sections: Object.fromEntries(sections.map((x) => [x.name, x.size])) };
  }
  say("");
  say(table(["worker", "raw", "gzipped", `target <= ${TARGETS.gzipKB} KB gz`, "gzipped without the name section"], rows));
  say(detail.join("\n"));
  say("  (KB = 1000 bytes; the last column is for analysis only: what stripping debug names would give)\n");
}

// ---- 5. npm test ----------------------------------------------------------------
say("## 5. npm test");
say(`  cold npm test: ${process.env.COLD_NPM_TEST_S ? `${process.env.COLD_NPM_TEST_S} s (from COLD_NPM_TEST_S)` : "not measured in this run (see README Benchmarks)"}`);
if (process.env.BENCH_WARM_TEST === "1") {
  const t0 = performance.now();
  const r = spawnSync("npm", ["test"], { cwd: ROOT, stdio: ["ignore", "ignore", "ignore"] });
  const s = (performance.now() - t0) / 1000;
  say(`  warm npm test: ${fmt(s, 1)} s (exit ${r.status})`);
  results.warmNpmTestS = s;
}

say("\n## Summary");
say(
  table(
    ["measure", "value", "target", ""],
    [
      ["Rust consumer / TS consumer", `${fmt(ratioTs, 2)}x`, `>= ${TARGETS.vsTs}x`, ratioTs >= TARGETS.vsTs ? "MET" : "MISSED"],
      ["Rust consumer / raw D1", `${fmt(ratioRaw, 2)}x`, `>= ${TARGETS.vsRaw}x`, ratioRaw >= TARGETS.vsRaw ? "MET" : "MISSED"],
      ...Object.entries(results.wasm).map(([k, v]) => [`${k} wasm gzipped`, `${fmt(v.gzip / 1000, 1)} KB`, `<= ${TARGETS.gzipKB} KB`, v.gzip / 1000 <= TARGETS.gzipKB ? "MET" : "MISSED"]),
    ],
  ),
);
writeFileSync(path.join(lib.BUILD, "results.json"), JSON.stringify(results, null, 2));
say(`\n(raw results: ${path.relative(ROOT, path.join(lib.BUILD, "results.json"))})`);
