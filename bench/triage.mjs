#!/usr/bin/env node
// DLQ triage throughput: the real DLQ worker (wasm) against a raw-D1 JS
// anchor, both draining the same 10,000-message `webhooks-dlq` backlog.
//
//   node bench/triage.mjs        (BENCH_TRIAGE_RUNS=5, BENCH_TRIAGE_N=10000)
//
// The backlog is half poison hand-offs (what src/consumers/webhooks/handoff.rs sends:
// a PoisonHandoff with UPSTREAM_4XX around the original QueuedEvent) and
// half moved originals (plain QueuedEvent messages the broker moved after
// max_retries, keeping their id and timestamp). For both, the `events` and
// `attempts` rows the relay would have written are loaded first, with the
// relay's column values (6 UPSTREAM_5XX attempts per moved original, 1
// UPSTREAM_4XX attempt per hand-off). The whole backlog is then put on the
// queue in one call to the broker's own batch endpoint (the one it uses to
// move messages to a DLQ, which keeps ids) with one delivery delay, so
// every message becomes deliverable at the same instant. The clock starts
// when the delay has passed; the few entries already stored by then are
// subtracted. It stops when the stored entries plus dedupe marks
// (`count(*) + sum(seen_count - 1)`) account for every message.
//
// Runs interleave Rust and anchor, each in a fresh Miniflare with a fresh
// in-memory D1; the ratio is paired per run. Nothing here asserts a time.
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, hookrelayWorkers, lineStdio, startMiniflare } from "../scripts/miniflare-workers.mjs";
import { COUNTER_WORKER, D1Tally, wrapWorkers } from "./d1-counter.mjs";
import { BatchLog } from "./lib.mjs";

const BENCH = path.join(ROOT, "bench");
const BUILD = path.join(BENCH, ".build");
const ANCHOR = "raw-d1-dlq";
const DLQ = "webhooks-dlq";
const DELAY_S = 3;
const LOAD_CHUNK = 1000;
const CONSUMER = { maxBatchSize: 100, maxBatchTimeout: 0 };

const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function buildAnchor() {
  const esbuild = (await import("esbuild")).default;
  mkdirSync(BUILD, { recursive: true });
  await esbuild.build({
    entryPoints: [path.join(BENCH, ANCHOR, "index.ts")],
    outfile: path.join(BUILD, `${ANCHOR}.js`),
    bundle: true,
    format: "esm",
    target: "es2022",
    platform: "neutral",
    logLevel: "warning",
  });
}

const COMPAT_DATE = () => /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(path.join(ROOT, "dlq/wrangler.toml"), "utf8"))[1];

/** The two consumers; each answers Miniflare worker options and the worker that owns DB. */
const CONSUMERS = {
  rust: {
    name: "Rust DLQ worker (wasm, batched triage)",
    workers: () => hookrelayWorkers({ consumers: { [DLQ]: CONSUMER } }),
    dbWorker: "hookrelay-dlq",
  },
  anchor: {
    name: "raw D1 anchor (JS, one batch of plain inserts)",
    workers: () => [
      {
        name: ANCHOR,
        modules: true,
        scriptPath: path.join(BUILD, `${ANCHOR}.js`),
        compatibilityDate: COMPAT_DATE(),
        queueConsumers: { [DLQ]: CONSUMER },
        queueProducers: { WEBHOOKS_DLQ: DLQ },
        d1Databases: ["DB"],
      },
    ],
    dbWorker: ANCHOR,
  },
};

/** A JSON body of about 300 bytes. */
function eventBody(i) {
  return JSON.stringify({
    id: `op_${i}`,
    type: "invoice.payment_failed",
    created: 1700000000 + i,
    data: { object: { id: `in_${String(i).padStart(10, "0")}`, amount_due: 4200 + i, currency: "eur", customer: `cus_${(i * 7919) % 100000}` } },
    livemode: false,
    note: "hookrelay triage bench event, padded to about three hundred bytes of JSON",
  });
}

/** The backlog: messages for the broker, plus the events and attempts rows the relay would have written. */
function backlog(n, run) {
  const now = Date.now();
  const messages = [];
  const events = [];
  const attempts = [];
  for (let i = 0; i < n; i++) {
    const key = `bench-dlq:${run}-${i}`;
    const eventId = `evt_${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;
    const originalId = createHash("sha256").update(`msg:${key}`).digest("hex").slice(0, 32);
    const enqueuedAt = now - 60_000;
    const event = { v: 1, event_id: eventId, idempotency_key: key, source: "bench-dlq", received_at_ms: enqueuedAt, headers: { "content-type": "application/json" }, body: eventBody(i) };
    const poison = i % 2 === 0;
    events.push({ key, eventId, originalId, body: event.body, receivedAt: enqueuedAt, status: poison ? "failed" : "pending" });
    if (poison) {
      const failure = { code: "UPSTREAM_4XX", message: "downstream answered 400 (the downstream refused this event)" };
      attempts.push({ eventId, originalId, attempt: 1, klass: "poison", failure, at: enqueuedAt + 40 });
      const handoff = { kind: "poison_handoff", failure, class: "poison", attempts: 1, queue_message_id: originalId, enqueued_at_ms: enqueuedAt, failed_at_ms: enqueuedAt + 40, original: event };
      messages.push({ body: handoff });
    } else {
      const failure = { code: "UPSTREAM_5XX", message: "downstream answered 500 (server error)" };
      for (let a = 1; a <= 6; a++) attempts.push({ eventId, originalId, attempt: a, klass: "transient", failure, at: enqueuedAt + a * 1000 });
      messages.push({ body: event, id: originalId, timestamp: enqueuedAt });
    }
  }
  return { messages, events, attempts };
}

/** Loads rows in bulk: one statement per chunk, the rows as one JSON parameter. */
async function load(db, sql, rows) {
  for (let i = 0; i < rows.length; i += LOAD_CHUNK) await db.prepare(sql).bind(JSON.stringify(rows.slice(i, i + LOAD_CHUNK))).run();
}

async function prepopulate(db, { events, attempts }) {
  await load(
    db,
    `INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status, ingest_nonce, last_delivery_error)
     SELECT value->>'key', value->>'eventId', 'bench-dlq', NULL, value->>'receivedAt', value->>'receivedAt', value->>'receivedAt', 0, value->>'originalId', value->>'originalId', '{"content-type":"application/json"}', value->>'body', NULL, length(value->>'body'), value->>'status', 'bench', NULL FROM json_each(?1)`,
    events,
  );
  await load(
    db,
    `INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at, cause)
     SELECT value->>'eventId', value->>'originalId', value->>'attempt', value->>'klass', value->>'code', value->>'message', value->>'at', NULL FROM json_each(?1)`,
    attempts.map((a) => ({ eventId: a.eventId, originalId: a.originalId, attempt: a.attempt, klass: a.klass, code: a.failure.code, message: a.failure.message, at: a.at })),
  );
}

/** Puts every message on `webhooks-dlq` in one broker call, all deliverable after `delayS`. */
async function enqueue(mf, messages, delayS) {
  const ns = await mf._getInternalDurableObjectNamespace("queues", "queues:queue", "QueueBrokerObject");
  const stub = ns.get(ns.idFromName(DLQ));
  const batch = messages.map((m) => ({ contentType: "json", delaySecs: delayS, body: Buffer.from(JSON.stringify(m.body)).toString("base64"), id: m.id, timestamp: m.timestamp }));
  const res = await stub.fetch("http://placeholder/batch", { method: "POST", body: JSON.stringify({ messages: batch }), cf: { miniflare: { name: DLQ } } });
  if (!res.ok) throw new Error(`broker batch: ${res.status} ${await res.text()}`);
}

// Stored entries are counted from an index (cheap, polled every 50 ms);
// dedupe marks need a table scan, so they are added only every 20th poll
// (this backlog has no identical payloads, so they stay 0).
const stored = async (db) => (await db.prepare("SELECT count(*) AS n FROM dead_letters").first("n")) ?? 0;
const marks = async (db) => (await db.prepare("SELECT coalesce(sum(seen_count - 1), 0) AS n FROM dead_letters").first("n")) ?? 0;

/** One run of one consumer: entries per second over the backlog. */
async function triageRun(key, n) {
  const c = CONSUMERS[key];
  const log = new BatchLog();
  const out = { lines: 0, errors: [] };
  // Every DB goes through the round-trip counter (bench/d1-counter.mjs).
  const tally = new D1Tally();
  const stdio = lineStdio((line) => {
    if (tally.onLine(line)) return;
    out.lines += 1;
    if (/"level":"error"|panic/i.test(line) && out.errors.length < 5) out.errors.push(line);
  });
  const { mf, db } = await startMiniflare(wrapWorkers(c.workers()), { dbWorker: COUNTER_WORKER, log, handleRuntimeStdio: stdio });
  try {
    const data = backlog(n, randomUUID().slice(0, 8));
    await prepopulate(db, data);
    await enqueue(mf, data.messages, DELAY_S);
    const t0 = performance.now() + DELAY_S * 1000;
    while (performance.now() < t0) await new Promise((r) => setTimeout(r, t0 - performance.now()));
    const before = await stored(db);
    let got = before;
    const deadline = t0 + 300_000;
    for (let poll = 1; (got = (await stored(db)) + (poll % 20 === 0 ? await marks(db) : 0)) < n; poll++) {
      if (performance.now() > deadline) throw new Error(`${key}: only ${got}/${n} after 300 s; ${[...log.errors, ...out.errors].slice(0, 3).join(" | ")}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const ms = performance.now() - t0;
    const batches = log.batches.filter((b) => b.queue === DLQ);
    // stdout lines arrive through a pipe, after the work they count.
    await new Promise((r) => setTimeout(r, 300));
    const trips = tally.of(c.dbWorker);
    const run = { perS: ((n - before) / ms) * 1000, ms, before, batches: batches.length, tripsPerBatch: trips.trips / Math.max(1, batches.length), kinds: tally.kinds(c.dbWorker), handlerMs: median(batches.filter((b) => b.size === CONSUMER.maxBatchSize).map((b) => b.ms)), errors: out.errors.length };
    if (key === "rust") Object.assign(run, await rustChecks(db, n));
    return run;
  } finally {
    await mf.dispose();
  }
}

/** What the Rust run stored, so a fast but wrong run shows. */
async function rustChecks(db, n) {
  const row = (sql) => db.prepare(sql).first();
  const kinds = await row("SELECT sum(kind = 'poison_handoff') AS handoffs, sum(kind = 'retries_exhausted') AS moved, sum(kind = 'retries_exhausted' AND attempts = 6 AND error_code = 'UPSTREAM_5XX') AS moved_exact FROM dead_letters");
  const failed = await row("SELECT count(*) AS n FROM events WHERE delivery_status = 'failed'");
  return { handoffs: kinds.handoffs, moved: kinds.moved, movedExact: kinds.moved_exact, eventsFailed: failed.n, complete: kinds.handoffs + kinds.moved === n };
}

/**
 * Runs the bench: `runs` interleaved pairs (Rust, anchor) over an `n`-message
 * backlog. `wrapWorkers` sees each Miniflare's worker list before it starts.
 */
export async function runTriageBench({ runs = 5, n = 10000 } = {}) {
  process.env.WRANGLER_SEND_METRICS = "false";
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_LOG ??= "error";
  await buildAnchor();
  const results = { rust: [], anchor: [] };
  for (let r = 0; r < runs; r++) {
    for (const key of ["rust", "anchor"]) results[key].push(await triageRun(key, n));
  }
  const pairs = results.rust.map((x, i) => x.perS / results.anchor[i].perS);
  const rows = Object.entries(results).map(([key, rs]) => ({
    name: CONSUMERS[key].name,
    median_per_s: median(rs.map((x) => x.perS)),
    runs_per_s: rs.map((x) => Math.round(x.perS)),
    handler_ms_per_100: median(rs.map((x) => x.handlerMs)),
    d1_trips_per_batch: median(rs.map((x) => x.tripsPerBatch)),
    d1_kinds: rs.at(-1).kinds,
  }));
  const last = results.rust.at(-1);
  return {
    title: `DLQ triage: ${n} messages on ${DLQ} (half poison hand-offs, half moved originals), batch ${CONSUMER.maxBatchSize}, timeout 0, ${runs} interleaved runs`,
    rows,
    ratio: { median: median(pairs), min: Math.min(...pairs), max: Math.max(...pairs), runs: pairs.map((p) => Number(p.toFixed(2))) },
    notes: [
      "entries/s = (messages - entries already stored when the delay ran out) / time from then until count(*) (+ sum(seen_count - 1), every 20th poll) of dead_letters = messages",
      `already stored at the start (rust runs): ${results.rust.map((x) => x.before).join(", ")}; anchor runs: ${results.anchor.map((x) => x.before).join(", ")}`,
      `last Rust run stored ${last.handoffs} hand-offs and ${last.moved} moved originals (${last.movedExact} with all 6 attempts and UPSTREAM_5XX); ${last.eventsFailed} events marked failed; error lines: ${results.rust.map((x) => x.errors).join(", ")}`,
      "the anchor reads nothing (no attempt history, no dedupe, no capacity) and acks the batch as a whole: a ceiling, not a product",
    ],
  };
}

/** Prints a report of runTriageBench. */
export function print(report) {
  const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");
  console.log(`\n${report.title}\n`);
  const cells = [["consumer", "median entries/s", "runs (entries/s)", "handler ms per 100-batch", "D1 round trips / batch (counted)"], ...report.rows.map((r) => [r.name, fmt(r.median_per_s), r.runs_per_s.join(", "), fmt(r.handler_ms_per_100, 1), `${fmt(r.d1_trips_per_batch, 2)} [${r.d1_kinds}]`])];
  const widths = cells[0].map((_, i) => Math.max(...cells.map((c) => String(c[i]).length)));
  for (const [i, c] of cells.entries()) {
    console.log(c.map((v, j) => (j === 0 ? String(v).padEnd(widths[j]) : String(v).padStart(widths[j]))).join("  "));
    if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
  }
  const { median: m, min, max, runs } = report.ratio;
  console.log(`\nRust / anchor, paired per run: median ${fmt(m, 2)}x (min ${fmt(min, 2)}x, max ${fmt(max, 2)}x; runs ${runs.join(", ")}); target >= 0.5x`);
  for (const note of report.notes) console.log(`- ${note}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const report = await runTriageBench({ runs: Number(process.env.BENCH_TRIAGE_RUNS ?? 5), n: Number(process.env.BENCH_TRIAGE_N ?? 10000) });
  print(report);
}
