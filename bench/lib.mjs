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

/** Counts the workers' stdout/stderr lines and keeps the first error lines (nothing is printed). */
function stdio(sink) {
  return lineStdio((line) => {
    sink.count += 1;
    if (/error|panic/i.test(line) && sink.errors.length < 20) sink.errors.push(line);
  });
}

async function started(workers, dbWorker) {
  const log = new BatchLog();
  const out = { count: 0, errors: [] };
  const { mf, url, db } = await startMiniflare(workers, { dbWorker, log, handleRuntimeStdio: stdio(out) });
  return { mf, url, db, log, stdio: out, fetch: (p, init) => fetch(new URL(p, url), init), dispose: () => mf.dispose() };
}

/**
 * The real relay and DLQ worker from their wrangler.toml files (fresh
 * in-memory D1). `consumers` overrides queue consumer settings by queue
 * name, `null` detaches that consumer; `vars` override vars and secrets of
 * both workers.
 */
export function startRelay({ consumers = {}, vars = {} } = {}) {
  return started(hookrelayWorkers({ vars, consumers }), "hookrelay");
}

/** A hand-written JS consumer (bench/.build/<name>.js), wrangler-free config. */
export function startJsConsumer(name, compatibilityDate, { maxBatchSize = 100 } = {}) {
  return started(
    [
      {
        name,
        modules: true,
        scriptPath: path.join(BUILD, `${name}.js`),
        compatibilityDate,
        queueConsumers: { webhooks: { maxBatchSize, maxBatchTimeout: 0 } },
        queueProducers: { WEBHOOKS: "webhooks" },
        d1Databases: ["DB"],
      },
    ],
    name,
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

/** `n` QueuedEvent messages (core/src/queued_event.rs), unique keys per run. */
export function queuedEvents(n, run = randomUUID().slice(0, 8)) {
  const now = Date.now();
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const key = `demo-hmac:${run}-${i}`;
    out[i] = {
      v: 1,
      event_id: `evt_${createHmac("sha256", "id").update(key).digest("hex").slice(0, 32)}`,
      idempotency_key: key,
      source: "demo-hmac",
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

export function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function quantile(xs, q) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export function table(headers, rows) {
  const cells = [headers, ...rows].map((r) => r.map((c) => String(c)));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [line(cells[0]), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}
