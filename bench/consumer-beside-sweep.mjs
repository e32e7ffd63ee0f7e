// Target 1 with the retention sweep beside it (issue 24): the ingest-only
// consumer's ratio to raw D1, measured again while a sweep archives old rows
// of the same D1 database, in the same workerd, at the same time.
//
// Four workers per run, interleaved, each in a fresh Miniflare and D1:
//   - Rust, raw D1: target 1 as bench/consumer-ingest.mjs runs it;
//   - Rust + sweep: the relay, with SEED_N two-day-old events of another
//     source seeded first and POST maintenance/run called in a loop from
//     the first send until every event is in (EVENT_RETENTION 1d, the
//     continuation consumer detached so the loop is the only driver);
//   - raw D1 + anchor sweep: the raw-D1 consumer next to the hand-written
//     sweep (bench/archive-sweep-js) on the same database, POST /sweep
//     called in the same loop.
// The loop waits BENCH_BESIDE_PAUSE_MS (1000) after each answer, as the
// continuation message paces production's steps (CONTINUE_AFTER_S); 0 calls
// back to back, the worst case (everything shares workerd's one thread
// here, so a busy loop starves the consumer far more than production's
// separate isolates would).
// Every run counts only its own source's rows (the seeded ones are not
// counted). D1 round trips are not counted here: with the counter's wrapped
// binding, the relay's sweep sometimes stalled workerd (a busy event loop,
// no progress, ~1 run in 6; never seen without the wrapper), see
// bench/archive-sweep.mjs. The sweep loops are heavier than production, where a step runs
// once a second at most (the continuation) or every five minutes (the cron).
//
//   node bench/consumer-beside-sweep.mjs   # BENCH_RUNS (3), BENCH_N (10000), BENCH_SEED_N (30000), BENCH_BESIDE_PAUSE_MS (1000); needs `bash scripts/build.sh`
import path from "node:path";
import { pathToFileURL } from "node:url";
import { BUILD, started, startJsConsumer, startRelay } from "./lib.mjs";
import { consumerRun } from "./consumer-run.mjs";
import { ANCHOR, archiveSweepers, seed, standalone } from "./archive-sweep.mjs";
import { fmt, median, say, targetTable } from "./report.mjs";

const SEED_SOURCE = "sweep-seed";

/**
 * Seeds `seedN` old rows, then calls `call(env)` until stopped, `pauseMs`
 * after each answer (0: back to back); `stop()` answers what the loop did.
 */
function sweepLoop(call, seedN, pauseMs) {
  return async (env) => {
    await seed(env.db, seedN, { source: SEED_SOURCE });
    let stopping = false;
    let calls = 0;
    let archived = 0;
    const loop = (async () => {
      while (!stopping) {
        const r = await call(env);
        calls++;
        archived += r.archived;
        if (pauseMs > 0 && !stopping) await new Promise((done) => setTimeout(done, pauseMs));
      }
    })();
    return async () => {
      stopping = true;
      await loop;
      return { calls, archived };
    };
  };
}

export function besideSweepers(compatDate, { batchSize = 100, seedN = 30000, pauseMs = 1000 } = {}) {
  const sweepers = archiveSweepers(compatDate);
  const rawWorker = { name: "raw-d1", modules: true, scriptPath: path.join(BUILD, "raw-d1.js"), compatibilityDate: compatDate, queueConsumers: { webhooks: { maxBatchSize: batchSize, maxBatchTimeout: 0 } }, queueProducers: { WEBHOOKS: "webhooks" }, d1Databases: ["DB"] };
  const anchorWorker = { name: ANCHOR, modules: true, scriptPath: path.join(BUILD, `${ANCHOR}.js`), compatibilityDate: compatDate, d1Databases: ["DB"], r2Buckets: ["ARCHIVE"] };
  return {
    rust: { label: "Rust relay (wasm), ingest only", short: "Rust", worker: "hookrelay", start: () => startRelay({ consumers: { webhooks: { maxBatchSize: batchSize, maxBatchTimeout: 0 } } }) },
    raw: { label: "raw D1: one db.batch per message batch", short: "raw D1", worker: "raw-d1", start: () => startJsConsumer("raw-d1", compatDate, { maxBatchSize: batchSize }) },
    rustSweep: {
      label: "Rust relay + maintenance/run loop beside it",
      short: "Rust+sweep",
      worker: "hookrelay",
      start: () => startRelay({ vars: { EVENT_RETENTION: "1d" }, consumers: { webhooks: { maxBatchSize: batchSize, maxBatchTimeout: 0 }, "hookrelay-control": null } }),
      beside: sweepLoop(sweepers.rust.call, seedN, pauseMs),
    },
    rawSweep: {
      label: "raw D1 + JS anchor sweep loop beside it",
      short: "raw+sweep",
      worker: "raw-d1",
      // The anchor first: env.fetch reaches the first worker; the queue goes to raw-d1.
      start: () => started([anchorWorker, rawWorker], "raw-d1"),
      beside: sweepLoop(sweepers.js.call, seedN, pauseMs),
    },
  };
}

export async function runConsumerBesideSweep({ compatDate, runs = 3, n = 10000, seedN = 30000, batchSize = 100, pauseMs = 1000 }) {
  const workers = besideSweepers(compatDate, { batchSize, seedN, pauseMs });
  const pace = pauseMs > 0 ? `one call, then ${pauseMs} ms, as the continuation paces the sweep's steps` : "back to back, the worst case";
  say(`## Target 8. Target 1 with a sweep beside it (bench/consumer-beside-sweep.mjs): N = ${n} events, batch size ${batchSize}, ${seedN} old rows to sweep, sweep calls ${pace}; ${runs} interleaved runs (fresh Miniflare + D1 per run)`);
  say("   the sweep loop (maintenance/run, or the anchor's /sweep) runs from the first send until every event is in; only this run's source is counted; D1 round trips not counted");
  const results = Object.fromEntries(Object.keys(workers).map((k) => [k, []]));
  for (let r = 1; r <= runs; r++) {
    for (const [key, w] of Object.entries(workers)) {
      const res = await consumerRun({ start: w.start, worker: w.worker, n, batchSize, beside: w.beside ?? null, countSource: true });
      results[key].push(res);
      const beside = res.beside ? `; beside it ${res.beside.calls} sweep calls archived ${res.beside.archived} rows` : "";
      say(`  run ${r} ${key.padEnd(9)} ${fmt(res.rate).padStart(6)} events/s  (${fmt(res.ms)} ms; ${res.batches} batches; broker median ${fmt(res.handlerMs)} ms/batch${beside}${res.errors.length ? `; errors: ${res.errors.join(" | ")}` : ""})`);
    }
  }
  const subjects = Object.entries(workers).map(([key, w]) => ({ key, label: w.label, short: w.short }));
  const { text, ratios } = targetTable({
    subjects,
    runs: results,
    ratios: [
      ["rust", "raw"],
      ["rustSweep", "raw"],
      ["rustSweep", "rawSweep"],
      ["rustSweep", "rust"],
      ["rawSweep", "raw"],
    ],
    unit: "events/s",
    extra: [{ header: "broker ms/batch (median)", cell: (rs) => fmt(median(rs.map((x) => x.handlerMs)), 1) }],
  });
  say("");
  say(text);
  say("");
  return { runs: results, ratios };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const compatDate = await standalone(ANCHOR, "raw-d1");
  await runConsumerBesideSweep({ compatDate, runs: Number(process.env.BENCH_RUNS ?? 3), n: Number(process.env.BENCH_N ?? 10000), seedN: Number(process.env.BENCH_SEED_N ?? 30000), pauseMs: Number(process.env.BENCH_BESIDE_PAUSE_MS ?? 1000) });
}
