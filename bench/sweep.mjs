// Target 6: batch-size sweep for choosing production max_batch_size and
// max_batch_timeout. The real relay, ingest-only (demo-hmac) and forwarding
// (a loopback downstream), at each batch size. Messages are sent with a
// delivery delay, so every send is done before the first batch runs and
// every batch is full; events/s is then timed from the first batch's start
// to the last batch's end as the broker logged them (`QUEUE webhooks
// 100/100 (14ms)`, read by bench/lib.mjs's BatchLog), and the broker's
// wall time per batch is what one invocation costs at that size.
import { startRelay } from "./lib.mjs";
import { consumerRun } from "./consumer-run.mjs";
import { startDownstream } from "./downstream.mjs";
import { FORWARD_SOURCE, forwardingVars } from "./forwarding.mjs";
import { fmt, median, quantile, say, table } from "./report.mjs";

const DELAY_S = 2;
// Delayed messages fall due over the time their sends took, so with a batch
// timeout of 0 the first batches would leave part-filled. A timeout of 1 s
// lets each batch fill first; it adds no handler time, and the rate is
// timed from the first batch's start.
const TIMEOUT_S = 1;

/** Least squares ms = fixed + perEvent * size over the points' medians. */
function fit(points) {
  const xs = points.map((p) => p.size);
  const ys = points.map((p) => p.ms);
  const mx = xs.reduce((a, b) => a + b) / xs.length;
  const my = ys.reduce((a, b) => a + b) / ys.length;
  const slope = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return { fixedMs: my - slope * mx, perEventMs: slope };
}

export async function runSweep({ runs, n, forwardN, sizes = [10, 25, 50, 100] }) {
  say(`## Target 6. Batch-size sweep (Rust relay): ${n} events per ingest point, ${forwardN} per forwarding point, sizes ${sizes.join("/")}, ${runs} interleaved runs;`);
  say(`   sends finish first (delaySeconds ${DELAY_S}) and max_batch_timeout is ${TIMEOUT_S} s, so batches are full; fresh Miniflare per point and run`);
  const downstream = await startDownstream();
  const modes = {
    ingest: { label: "ingest only", start: (size) => startRelay({ consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: TIMEOUT_S } }, countD1: true }), source: "demo-hmac", downstream: null, n },
    forward: { label: "forwarding", start: (size) => startRelay({ vars: forwardingVars(downstream.url), consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: TIMEOUT_S } }, countD1: true }), source: FORWARD_SOURCE, downstream, n: forwardN },
  };
  const results = {};
  try {
    for (let r = 1; r <= runs; r++) {
      const line = [];
      for (const [mode, m] of Object.entries(modes)) {
        for (const size of sizes) {
          const res = await consumerRun({ start: () => m.start(size), worker: "hookrelay", n: m.n, batchSize: size, source: m.source, downstream: m.downstream, drainDelayS: DELAY_S });
          (results[`${mode}@${size}`] ??= []).push(res);
          line.push(`${mode}@${size} ${fmt(res.rate)}/s ${fmt(res.handlerMs)}ms`);
        }
      }
      say(`  run ${r}: ${line.join(", ")}`);
    }
  } finally {
    await downstream.close();
  }
  const rows = [];
  const fits = {};
  for (const [mode, m] of Object.entries(modes)) {
    const points = [];
    for (const size of sizes) {
      const rs = results[`${mode}@${size}`];
      const rates = rs.map((x) => x.rate);
      const ms = median(rs.map((x) => x.handlerMs));
      points.push({ size, ms });
      // Every batch of every run, for the tail of the per-batch wall time.
      const all = rs.flatMap((x) => x.batchMs ?? []);
      rows.push([
        `${m.label} @ ${size}`,
        fmt(median(rates)),
        `${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))}`,
        fmt(ms, 1),
        all.length ? fmt(quantile(all, 0.99), 0) : "n/a",
        fmt((ms / size) * 1000, 0),
        fmt(median(rs.map((x) => x.tripsPerBatch)), 2),
        fmt(median(rs.map((x) => x.tripsPerBatch / size)), 3),
        fmt(median(rs.map((x) => x.meanBatch)), 1),
      ]);
    }
    fits[mode] = fit(points);
  }
  say("");
  say(table(["mode @ batch size", "median events/s", "min–max", "broker ms/batch (median)", "p99 ms/batch", "µs/event in batch", "D1 round trips / batch", "D1 round trips / event", "mean batch"], rows));
  say(`\n  fit over the medians, ms per batch = fixed + per event x size: ${Object.entries(fits).map(([k, f]) => `${modes[k].label} ${fmt(f.fixedMs, 1)} ms + ${fmt(f.perEventMs * 1000)} µs x size`).join("; ")}`);
  say("  max_batch_timeout is not measured here (the queue is never short of messages): a batch waits up to it for more messages when traffic is low, so it bounds the added latency at low rates.\n");
  return { results: Object.fromEntries(Object.entries(results).map(([k, rs]) => [k, rs.map(({ rate, handlerMs, tripsPerBatch, meanBatch }) => ({ rate, handlerMs, tripsPerBatch, meanBatch }))])), fits };
}
