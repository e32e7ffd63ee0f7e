// Target 2: the forwarding consumer. The real relay, configured through
// `vars` with one source whose downstream is a loopback node server,
// against a hand-written JS consumer doing the same work (bench/js-forwarder:
// one signed fetch per message, all at once, one D1 batch of the events
// rows, per-message ack). Same messages, same downstream, interleaved runs,
// fresh Miniflare per run; the clock stops when the downstream has received
// N requests and every events row exists.
import { SECRETS, startJsConsumer, startRelay } from "./lib.mjs";
import { consumerRun, runLine } from "./consumer-run.mjs";
import { startDownstream } from "./downstream.mjs";
import { capacityLine, fmt, median, say, targetTable } from "./report.mjs";

export const FORWARD_SOURCE = "bench-forward";

/** The relay's vars for one forwarding source (like the demo sources in .dev.vars.example). */
export function forwardingVars(downstreamUrl) {
  return {
    SOURCES: JSON.stringify({ [FORWARD_SOURCE]: { scheme: "hmac-sha256", downstream: downstreamUrl } }),
    WEBHOOK_SECRET_BENCH_FORWARD: "bench-forward-local-only",
  };
}

export function forwardingConsumers(compatDate, downstream) {
  return {
    rust: {
      label: "Rust relay (wasm), forwarding source",
      short: "Rust",
      worker: "hookrelay",
      start: (size) => startRelay({ vars: forwardingVars(downstream.url), consumers: { webhooks: { maxBatchSize: size, maxBatchTimeout: 0 } }, countD1: true }),
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
  };
}

export async function runForwarding({ compatDate, runs, n, batchSize = 100 }) {
  const downstream = await startDownstream();
  try {
    const consumers = forwardingConsumers(compatDate, downstream);
    say(`## Target 2. Forwarding consumer vs hand-written JS: N = ${n} events, batch size ${batchSize}, batch timeout 0, ${runs} interleaved runs`);
    say(`   downstream: node http on 127.0.0.1 answering 200 at once; clock: first sendBatch until the downstream got N requests and events has N rows`);
    const results = { rust: [], js: [] };
    for (let r = 1; r <= runs; r++) {
      for (const [key, c] of Object.entries(consumers)) {
        const res = await consumerRun({ start: () => c.start(batchSize), worker: c.worker, n, batchSize, source: FORWARD_SOURCE, downstream });
        results[key].push(res);
        say(runLine(r, key, res));
      }
    }
    const { text, ratios } = targetTable({
      subjects: Object.entries(consumers).map(([key, c]) => ({ key, label: c.label, short: c.short })),
      runs: results,
      ratios: [["rust", "js"]],
      unit: "events/s",
      extra: [
        { header: "broker ms/batch (median)", cell: (rs) => fmt(median(rs.map((x) => x.handlerMs)), 1) },
        { header: "downstream requests / N", cell: (rs) => fmt(median(rs.map((x) => x.downstream.requests / n)), 3) },
      ],
    });
    say("");
    say(text);
    say(capacityLine(results, "rust", "js", batchSize));
    say("");
    return { runs: results, ratios };
  } finally {
    await downstream.close();
  }
}
