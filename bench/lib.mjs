// Shared helpers for bench/run.mjs: Miniflare setups for the three
// consumers, migrations, event generation, signing, and small statistics.
// Mirrors tests/support/harness.mjs (which is not imported, so the bench
// never enables the test-only broker control endpoints).
import { Miniflare, Log, LogLevel } from "miniflare";
import wrangler from "wrangler";
import { createHmac, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { applyMigrations } from "../scripts/local-d1.mjs";
import { readDevVars } from "../scripts/dev-vars.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const BENCH = path.join(ROOT, "bench");
export const BUILD = path.join(BENCH, ".build");

/** The development secrets from .dev.vars.example (the harness reads the same file). */
export const SECRETS = readDevVars(path.join(ROOT, ".dev.vars.example"));

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

/** Collects the workers' stdout/stderr lines (kept, not printed). */
function stdio(sink) {
  return (stdout, stderr) => {
    for (const stream of [stdout, stderr]) {
      stream.setEncoding("utf8");
      let carry = "";
      stream.on("data", (chunk) => {
        const lines = (carry + chunk).split("\n");
        carry = lines.pop();
        sink.count += lines.length;
        for (const l of lines) if (/error|panic/i.test(l) && sink.errors.length < 20) sink.errors.push(l);
      });
    }
  };
}

/** Worker options from a committed wrangler.toml, as the test harness builds them. */
function fromWrangler(configPath, name, consumers) {
  const { workerOptions: opts } = wrangler.unstable_getMiniflareWorkerOptions(path.join(ROOT, configPath));
  const dir = path.dirname(path.join(ROOT, configPath));
  const queueConsumers = {};
  for (const [q, c] of Object.entries(opts.queueConsumers ?? {})) {
    if (consumers[q] === null) continue; // detached: the broker keeps no consumer for q
    queueConsumers[q] = { ...c, maxBatchTimeout: 0, ...(consumers[q] ?? {}) };
  }
  return {
    ...opts,
    name,
    modules: true,
    scriptPath: path.join(dir, "build/index.js"),
    modulesRoot: path.join(dir, "build"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    bindings: { ...opts.bindings, ...SECRETS },
    queueConsumers,
  };
}

async function started(workers, db) {
  const log = new BatchLog();
  const out = { count: 0, errors: [] };
  const mf = new Miniflare({ cf: false, host: "127.0.0.1", port: 0, log, handleRuntimeStdio: stdio(out), workers });
  const url = await mf.ready;
  const database = await mf.getD1Database("DB", db);
  await applyMigrations(database);
  return { mf, url, db: database, log, stdio: out, dispose: () => mf.dispose() };
}

/**
 * The real relay and DLQ worker from their wrangler.toml files (fresh
 * in-memory D1). `consumers` overrides queue consumer settings by queue
 * name; `null` detaches that consumer.
 */
export function startRelay({ consumers = {} } = {}) {
  return started(
    [fromWrangler("wrangler.toml", "hookrelay", consumers), fromWrangler("dlq/wrangler.toml", "hookrelay-dlq", consumers)],
    "hookrelay",
  );
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

/** Headers for a demo-hmac request (X-Signature = hex HMAC-SHA256 of `{ts}.{body}`). */
export function hmacHeaders(body, { opId = randomUUID(), valid = true } = {}) {
  const ts = Math.floor(Date.now() / 1000).toString();
  const secret = SECRETS.WEBHOOK_SECRET_DEMO_HMAC;
  let sig = createHmac("sha256", secret).update(`${ts}.`).update(body).digest("hex");
  if (!valid) sig = (sig[0] === "0" ? "1" : "0") + sig.slice(1);
  return { "content-type": "application/json", "x-timestamp": ts, "x-signature": sig, "x-operation-id": opId };
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
