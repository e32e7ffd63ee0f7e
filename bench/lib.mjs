// Shared helpers for the benchmarks: Miniflare setups for the three
// consumers, event generation, signing, and small statistics. The relay's
// Miniflare options come from scripts/miniflare-workers.mjs, the module the
// test harness uses too; the bench never imports the harness, so the
// test-only broker control endpoints stay off.
import { Log, LogLevel } from "miniflare";
import { createHmac, randomUUID } from "node:crypto";
import path from "node:path";
import { ROOT, SECRETS, hookrelayWorkers, lineStdio, startMiniflare } from "../scripts/miniflare-workers.mjs";
import { hmacSha256Headers } from "../scripts/webhook-signatures.mjs";
import { COUNTER_WORKER, D1Tally, wrapWorkers } from "./d1-counter.mjs";
import { QueueTally, wrapQueues } from "./queue-counter.mjs";
import { workerdPids } from "./cpu.mjs";

export { median, quantile, table } from "./report.mjs";

export { ROOT, SECRETS };
export const BENCH = path.join(ROOT, "bench");
export const BUILD = path.join(BENCH, ".build");

/**
 * A Miniflare log that prints nothing and keeps the queue broker's
 * per-batch lines, `QUEUE webhooks 100/100 (12ms)`: the wall time of each
 * consumer invocation as the broker saw it.
 */
export class BatchLog extends Log {
  constructor() {
    super(LogLevel.INFO);
    this.batches = [];
    this.errors = [];
  }
  log(message) {
    // eslint-disable-next-line no-control-regex
    const plain = String(message).replace(/\x1b\[[0-9;]*m/g, "");
    const m = /QUEUE (\S+) (\d+)\/(\d+)(?: \((\d+)ms\))?/.exec(plain);
    if (m) {
      this.batches.push({ queue: m[1], acked: +m[2], size: +m[3], ms: m[4] === undefined ? NaN : +m[4], at: performance.now() });
    } else if (/\[mf:(err|wrn)/.test(plain)) {
      this.errors.push(plain);
    }
  }
}

/**
 * Counts the workers' stdout/stderr lines and keeps the first error lines
 * (nothing is printed). D1 counter lines go to `tally` instead.
 */
function stdio(sink, tally, queueTally) {
  return lineStdio((line) => {
    if (tally.onLine(line) || queueTally.onLine(line)) return;
    sink.count += 1;
    if (/error|panic/i.test(line) && sink.errors.length < 20) sink.errors.push(line);
  });
}

/**
 * Starts `workers` (fresh in-memory D1). With `countD1` every `DB` goes
 * through the round-trip counter (bench/d1-counter.mjs) and `d1` tallies
 * its lines; migrations and the bench's own queries bypass it. `pid` is the
 * new workerd process (for bench/cpu.mjs): Miniflares start one at a time.
 * `countQueues: {worker, bindings}` routes those queue producers of that
 * worker through the send counter (bench/queue-counter.mjs), tallied in
 * `queues`. Other options go to Miniflare (e.g. `inspectorPort`).
 */
export async function started(workers, dbWorker, { countD1 = false, countQueues = null, ...miniflareOptions } = {}) {
  const log = new BatchLog();
  const out = { count: 0, errors: [] };
  const d1 = new D1Tally();
  const queues = new QueueTally();
  let list = countD1 ? wrapWorkers(workers) : workers;
  if (countQueues) list = wrapQueues(list, countQueues.worker, countQueues.bindings);
  const before = new Set(workerdPids());
  const { mf, url, db } = await startMiniflare(list, { ...miniflareOptions, dbWorker: countD1 ? COUNTER_WORKER : dbWorker, log, handleRuntimeStdio: stdio(out, d1, queues) });
  const pid = workerdPids().find((p) => !before.has(p));
  return { mf, url, db, log, d1, queues, pid, stdio: out, fetch: (p, init) => fetch(new URL(p, url), init), dispose: () => mf.dispose() };
}

/**
 * Waits until the workers' stdout has gone quiet (no new D1 counter line for
 * 3 polls of 50 ms): lines arrive through a pipe, after the work they count.
 */
export async function settleStdio(env) {
  let last = -1;
  let still = 0;
  while (still < 3) {
    const now = Object.values(env.d1.byWorker).reduce((a, w) => a + w.trips, 0) + Object.values(env.queues.byBinding).reduce((a, q) => a + q.calls, 0) + env.stdio.count;
    still = now === last ? still + 1 : 0;
    last = now;
    await sleep(50);
  }
}

/**
 * The real relay and DLQ worker from their wrangler.toml files (fresh
 * in-memory D1). `consumers` overrides queue consumer settings by queue
 * name, `null` detaches that consumer; `vars` override vars and secrets of
 * both workers.
 */
export function startRelay({ consumers = {}, vars = {}, ...options } = {}) {
  return started(hookrelayWorkers({ vars, consumers }), "hookrelay", options);
}

/** The vars of the hand-written JS ingest anchor (bench/js-ingest): the relay's `demo-hmac` source. */
export const JS_INGEST_VARS = { SOURCES: JSON.stringify({ "demo-hmac": { scheme: "hmac-sha256" } }), WEBHOOK_SECRET_DEMO_HMAC: SECRETS.WEBHOOK_SECRET_DEMO_HMAC, MAX_BODY_BYTES: "1048576" };

/**
 * The relay (consumer detached) from another worker-build output `dir`
 * (index.js + index_bg.wasm), next to the real DLQ worker: for comparing
 * builds. `options` go to `started`; `edit` may change the relay's options.
 */
export function startRelayBuild(dir, options = {}, edit = () => {}) {
  const workers = hookrelayWorkers({ consumers: { webhooks: null } });
  const abs = path.resolve(dir);
  workers[0] = { ...workers[0], scriptPath: path.join(abs, "index.js"), modulesRoot: abs };
  edit(workers[0]);
  return started(workers, "hookrelay", options);
}

/**
 * A hand-written JS worker (bench/.build/<name>.js), wrangler-free config.
 * `maxBatchSize: null` attaches no `webhooks` consumer; `bindings` are
 * plain vars.
 */
export function startJsConsumer(name, compatibilityDate, { maxBatchSize = 100, bindings = {}, ...options } = {}) {
  return started(
    [
      {
        name,
        modules: true,
        scriptPath: path.join(BUILD, `${name}.js`),
        compatibilityDate,
        queueConsumers: maxBatchSize === null ? {} : { webhooks: { maxBatchSize, maxBatchTimeout: 0 } },
        queueProducers: { WEBHOOKS: "webhooks" },
        d1Databases: ["DB"],
        bindings,
      },
    ],
    name,
    options,
  );
}

/** A JSON body of about 300 bytes. */
export function eventBody(i) {
  return JSON.stringify({
    id: `op_${i}`,
    type: "invoice.paid",
    created: 1700000000 + i,
    data: {
      object: { id: `in_${String(i).padStart(10, "0")}`, amount_due: 4200 + i, currency: "eur", customer: `cus_${(i * 7919) % 100000}` },
      previous_attributes: { status: "open" },
    },
    livemode: false,
    note: "hookrelay bench event, padded to about three hundred bytes of JSON text",
  });
}

/** `n` QueuedEvent messages (core/src/receive/queued_event.rs) of `source`, unique keys per run. */
export function queuedEvents(n, run = randomUUID().slice(0, 8), source = "demo-hmac") {
  const now = Date.now();
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const key = `${source}:${run}-${i}`;
    out[i] = {
      v: 1,
      event_id: `evt_${createHmac("sha256", "id").update(key).digest("hex").slice(0, 32)}`,
      idempotency_key: key,
      source,
      received_at_ms: now,
      headers: { "content-type": "application/json" },
      body: eventBody(i),
    };
  }
  return out;
}

/** Headers for a demo-hmac request; `valid: false` flips one hex digit of the signature. */
export function hmacHeaders(body, { opId = randomUUID(), valid = true } = {}) {
  const headers = hmacSha256Headers(body, { secret: SECRETS.WEBHOOK_SECRET_DEMO_HMAC, operationId: opId });
  const sig = headers["x-signature"];
  if (!valid) headers["x-signature"] = (sig[0] === "0" ? "1" : "0") + sig.slice(1);
  return headers;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
