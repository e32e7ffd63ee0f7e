// Target 2: the forwarding consumer. The real relay, configured through
// `vars` with one source whose downstream is a loopback node server,
// against a hand-written JS consumer doing the same work (bench/js-forwarder:
// one signed fetch per message, all at once, one D1 batch of the events
// rows, per-message ack). Same messages, same downstream, interleaved runs,
// fresh Miniflare per run; the clock stops when the downstream has received
// N requests and every events row exists.
//
// A third subject (issue 33's targets): the same relay with the source's
// three routes to three URL destinations at that downstream, so each event
// makes three deliveries and the clock stops at 3N requests. Its table
// compares it with the one-destination relay per event: D1 round trips,
// queue sends (counted, bench/queue-counter.mjs) and workerd CPU.
import { SECRETS, startJsConsumer, startRelay } from "./lib.mjs";
import { consumerRun, runLine } from "./consumer-run.mjs";
import { startDownstream } from "./downstream.mjs";
import { capacityLine, fmt, median, pairedRatio, say, targetTable } from "./report.mjs";

export const FORWARD_SOURCE = "bench-forward";

/** The relay's vars for one forwarding source (like the demo sources in .dev.vars.example). */
export function forwardingVars(downstreamUrl) {
  return {
    SOURCES: JSON.stringify({ [FORWARD_SOURCE]: { scheme: "hmac-sha256", downstream: downstreamUrl } }),
    WEBHOOK_SECRET_BENCH_FORWARD: "bench-forward-local-only",
  };
}

/** The relay's vars for the same source routed to `k` URL destinations at the downstream. */
export function fanOutVars(downstreamUrl, k) {
  const names = Array.from({ length: k }, (_, i) => `bench-dest-${i + 1}`);
  return {
    DESTINATIONS: JSON.stringify(Object.fromEntries(names.map((d) => [d, { url: `${downstreamUrl}-${d}` }]))),
    SOURCES: JSON.stringify({ [FORWARD_SOURCE]: { scheme: "hmac-sha256", routes: names.map((to) => ({ to })) } }),
    WEBHOOK_SECRET_BENCH_FORWARD: "bench-forward-local-only",
  };
}

// The relay's own queue sends on the consumer path (not WEBHOOKS: the bench
// sends through that binding itself).
const COUNT_QUEUES = { worker: "hookrelay", bindings: ["DELIVERIES", "CONTROL", "WEBHOOKS_DLQ"] };
export const FAN_OUT = 3;

export function forwardingConsumers(compatDate, downstream) {
  return {
    rust: {
      label: "Rust relay (wasm), forwarding source",
      short: "Rust",
      worker: "hookrelay",
      fanOut: 1,
      start: (size) => startRelay({ vars: forwardingVars(downstream.url), consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: 0 } }, countD1: true, countQueues: COUNT_QUEUES }),
    },
    js: {
      label: "JS by hand: Promise.all fetch + one db.batch",
      short: "JS",
      worker: "js-forwarder",
      start: (size) =>
        startJsConsumer("js-forwarder", compatDate, {
          maxBatchSize: size,
          countD1: true,
          bindings: { DOWNSTREAM_URL: downstream.url, DOWNSTREAM_SIGNING_SECRET: SECRETS.DOWNSTREAM_SIGNING_SECRET, DELIVERY_TIMEOUT_MS: "10000" },
        }),
    },
    rust3: {
      label: `Rust relay (wasm), ${FAN_OUT} routes (${FAN_OUT} deliveries per event)`,
      short: `Rust ${FAN_OUT} dest`,
      worker: "hookrelay",
      fanOut: FAN_OUT,
      start: (size) => startRelay({ vars: fanOutVars(downstream.url, FAN_OUT), consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: 0 } }, countD1: true, countQueues: COUNT_QUEUES }),
    },
  };
}

export async function runForwarding({ compatDate, runs, n, batchSize = 100 }) {
  const downstream = await startDownstream();
  try {
    const consumers = forwardingConsumers(compatDate, downstream);
    say(`## Target 2. Forwarding consumer vs hand-written JS: N = ${n} events, batch size ${batchSize}, batch timeout 0, ${runs} interleaved runs`);
    say(`   downstream: node http on 127.0.0.1 answering 200 at once; clock: first sendBatch until the downstream got N requests and events has N rows`);
    const results = { rust: [], js: [], rust3: [] };
    for (let r = 1; r <= runs; r++) {
      for (const [key, c] of Object.entries(consumers)) {
        const res = await consumerRun({ start: () => c.start(batchSize), worker: c.worker, n, batchSize, source: FORWARD_SOURCE, downstream, fanOut: c.fanOut ?? 1 });
        results[key].push(res);
        say(runLine(r, key, res));
      }
    }
    const { text, ratios } = targetTable({
      subjects: Object.entries(consumers).map(([key, c]) => ({ key, label: c.label, short: c.short })),
      runs: results,
      ratios: [["rust", "js"], ["rust3", "rust"]],
      unit: "events/s",
      extra: [
        { header: "broker ms/batch (median)", cell: (rs) => fmt(median(rs.map((x) => x.handlerMs)), 1) },
        { header: "downstream requests / N", cell: (rs) => fmt(median(rs.map((x) => x.downstream.requests / n)), 3) },
        { header: "D1 round trips / event", cell: (rs) => fmt(median(rs.map((x) => x.tripsPerEvent)), 3) },
        { header: "queue sends / event (calls, messages)", cell: (rs) => (rs[0].queueSends ? `${fmt(median(rs.map((x) => x.queueSendCalls / n)), 3)}, ${fmt(median(rs.map((x) => x.queueMessages / n)), 2)}` : "not counted") },
        { header: "workerd CPU µs / event", cell: (rs) => fmt(median(rs.map((x) => x.cpuUsPerEvent))) },
      ],
    });
    say("");
    say(text);
    say(capacityLine(results, "rust", "js", batchSize));
    const fan = fanOutLines(results, n);
    say(fan.text);
    say("");
    return { runs: results, ratios: { ...ratios, ...fan.ratios } };
  } finally {
    await downstream.close();
  }
}

/**
 * Issue 33's targets, paired per run: workerd CPU per event with three
 * destinations over one (at most 1.5×), and the growth of D1 round trips
 * and queue sends per event from one destination to three (at most one D1
 * write per extra delivery's outcome, so at most FAN_OUT − 1 more trips).
 */
function fanOutLines(results, n) {
  const cpu = pairedRatio(
    results.rust3.map((x) => x.cpuUsPerEvent),
    results.rust.map((x) => x.cpuUsPerEvent),
  );
  const growth = results.rust3.map((x, i) => x.tripsPerEvent - results.rust[i].tripsPerEvent);
  const sends = results.rust3.map((x, i) => (x.queueSendCalls - results.rust[i].queueSendCalls) / n);
  const text = [
    `  ${FAN_OUT} destinations / 1, workerd CPU per event (paired per run): ${fmt(cpu.median, 2)}x (${fmt(cpu.min, 2)}–${fmt(cpu.max, 2)}x; runs ${cpu.per.map((x) => fmt(x, 2)).join(", ")}); target <= 2.0x (issue 41; issue 33 asked 1.5x)`,
    `  D1 round trips per event, ${FAN_OUT} destinations minus 1: ${fmt(median(growth), 3)} (runs ${growth.map((x) => fmt(x, 3)).join(", ")}); bound ${FAN_OUT - 1} (one write per extra delivery's outcome)`,
    `  queue send calls per event, ${FAN_OUT} destinations minus 1: ${fmt(median(sends), 3)} (runs ${sends.map((x) => fmt(x, 3)).join(", ")}); messages per event ${fmt(median(results.rust.map((x) => x.queueMessages / n)), 2)} and ${fmt(median(results.rust3.map((x) => x.queueMessages / n)), 2)}`,
  ].join("\n");
  return { text, ratios: { "rust3/rust cpu": cpu, "rust3-rust trips/event": { per: growth, median: median(growth), min: Math.min(...growth), max: Math.max(...growth) } } };
}
