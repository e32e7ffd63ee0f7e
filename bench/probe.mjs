// Optional (BENCH_PROBE=1): D1 call patterns for 100 events, timed inside
// workerd by the raw-D1 worker's POST /probe on fresh rows, to split a
// batch's time into D1 work and the rest. Not a target; run it when the
// consumer tables need explaining.
import { queuedEvents, startJsConsumer } from "./lib.mjs";
import { fmt, median, say, table } from "./report.mjs";

const REPS = 9;
const INNER = 5;
const KINDS = [
  ["noop", "no D1 call (HTTP round trip only)", 0],
  ["raw_batch", "raw D1: 100 INSERT OR IGNORE, 1 batch", 100],
  ["upsert_returning_batch", "1 upsert ... RETURNING per event, 1 batch (the Rust ingest's shape)", 100],
  ["rust_ingest_batch", "older Rust ingest: insert + update + select per event, 1 batch", 300],
  ["counter_batch", "1 counter upsert, 1 batch", 1],
  ["ts_sequential", "TS: 100 upserts, awaited one by one", 100],
];

export async function runProbe({ compatDate }) {
  say(`## D1 call patterns for 100 events, timed inside workerd (fresh rows, ${REPS} calls x ${INNER} repetitions)`);
  const env = await startJsConsumer("raw-d1", compatDate);
  const probe = {};
  try {
    let serial = 0;
    for (const [kind] of KINDS) {
      const inWorker = [];
      for (let i = 0; i < REPS + 1; i++) {
        const rows = queuedEvents(100, `probe${serial++}`);
        const res = await fetch(new URL("/probe", env.url), { method: "POST", body: JSON.stringify({ kind, rows, reps: INNER }) });
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
  say(table(["pattern", "statements", "ms per 100 events"], KINDS.map(([k, label, stmts]) => [label, stmts, fmt(probe[k], 2)])));
  say("");
  return probe;
}
