// Target 1: the ingest-only consumer (the relay, source demo-hmac, which has
// no downstream) against raw D1 batch inserts, with the hand-written TS
// consumer as a second anchor. Interleaved runs, a fresh Miniflare and D1
// per run, D1 round trips counted by bench/d1-counter.mjs.
import { startJsConsumer, startRelay } from "./lib.mjs";
import { consumerRun, runLine } from "./consumer-run.mjs";
import { capacityLine, fmt, median, say, targetTable } from "./report.mjs";

export function ingestConsumers(compatDate) {
  return {
    rust: {
      label: "Rust relay (wasm), ingest only",
      short: "Rust",
      worker: "hookrelay",
      start: (size) => startRelay({ consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: 0 } }, countD1: true }),
    },
    raw: { label: "raw D1: one db.batch per message batch", short: "raw D1", worker: "raw-d1", start: (size) => startJsConsumer("raw-d1", compatDate, { maxBatchSize: size, countD1: true }) },
    ts: { label: "TS by hand: one awaited upsert per message", short: "TS", worker: "ts-consumer", start: (size) => startJsConsumer("ts-consumer", compatDate, { maxBatchSize: size, countD1: true }) },
  };
}

/**
 * The counter's own check, before any number is trusted: raw D1 must make
 * exactly one round trip (a `batch` of one statement per message) per
 * message batch, and the TS consumer one `run` per message. Throws if not.
 */
export async function verifyCounter(compatDate, n = 500) {
  const c = ingestConsumers(compatDate);
  const raw = await consumerRun({ start: () => c.raw.start(100), worker: "raw-d1", n, batchSize: 100 });
  const ts = await consumerRun({ start: () => c.ts.start(100), worker: "ts-consumer", n, batchSize: 100 });
  const ok = raw.tripsPerBatch === 1 && raw.kinds === `batch:${raw.batches}` && raw.statementsPerBatch === n / raw.batches && ts.trips === n && ts.kinds === `run:${n}`;
  say(
    `  D1 counter check (${n} events): raw D1 ${raw.trips} round trips for ${raw.batches} batches [${raw.kinds}], ${raw.statementsPerBatch} statements/batch; ` +
      `TS ${ts.trips} round trips for ${n} messages [${ts.kinds}] -> ${ok ? "OK" : "FAILED"}`,
  );
  if (!ok) throw new Error("the D1 round-trip counter does not count what it should; see bench/d1-counter.mjs");
  return { raw: { trips: raw.trips, batches: raw.batches }, ts: { trips: ts.trips, n } };
}

export async function runConsumerIngest({ compatDate, runs, n, batchSize = 100 }) {
  const consumers = ingestConsumers(compatDate);
  say(`## Target 1. Ingest-only consumer vs raw-D1 batch: N = ${n} events, batch size ${batchSize}, batch timeout 0, ${runs} interleaved runs (fresh Miniflare + in-memory D1 per run)`);
  say("   clock: first sendBatch until SELECT count(*) FROM events = N (polled every 50 ms); D1 round trips counted by a wrapped DB binding, divided by the broker's batch count");
  const results = { rust: [], raw: [], ts: [] };
  for (let r = 1; r <= runs; r++) {
    for (const [key, c] of Object.entries(consumers)) {
      const res = await consumerRun({ start: () => c.start(batchSize), worker: c.worker, n, batchSize });
      results[key].push(res);
      say(runLine(r, key, res));
    }
  }
  const subjects = Object.entries(consumers).map(([key, c]) => ({ key, label: c.label, short: c.short }));
  const { text, ratios } = targetTable({
    subjects,
    runs: results,
    ratios: [
      ["rust", "raw"],
      ["rust", "ts"],
    ],
    unit: "events/s",
    extra: [{ header: "broker ms/batch (median)", cell: (rs) => fmt(median(rs.map((x) => x.handlerMs)), 1) }],
  });
  say("");
  say(text);
  say(capacityLine(results, "rust", "raw", batchSize));
  say(capacityLine(results, "rust", "ts", batchSize));
  say("");
  return { runs: results, ratios };
}
