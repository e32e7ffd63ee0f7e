// The cost of a destination's shared rate (docs/rates.md): D1 round trips
// of the relay per `deliveries` consumer batch, with and without a
// `rate_per_s` on the one destination. Same N events, same loopback
// downstream, fresh Miniflare per run; the rate (100/s) is high enough
// that every start of a batch fits the consumer's short wait, so nothing
// parks and the difference is the reservation alone. Runs on its own after
// `bash scripts/build.sh`: `node bench/rate-trips.mjs [runs] [n] [batch size]`.
import { queuedEvents, settleStdio, sleep, startRelay } from "./lib.mjs";
import { startDownstream } from "./downstream.mjs";
import { fmt, median, say } from "./report.mjs";

const SOURCE = "bench-rate";
const TIMEOUT_MS = 120_000;

function vars(url, rate) {
  return {
    SOURCES: JSON.stringify({ [SOURCE]: { scheme: "hmac-sha256", routes: [{ to: "d" }] } }),
    WEBHOOK_SECRET_BENCH_RATE: "bench-rate-local-only",
    DESTINATIONS: JSON.stringify({ d: rate ? { url, rate_per_s: rate } : { url } }),
  };
}

async function run(downstream, rate, n, batchSize) {
  downstream.reset();
  const consumers = { webhooks: { maxBatchSize: batchSize, maxBatchTimeout: 0 }, deliveries: { maxBatchSize: batchSize, maxBatchTimeout: 0 } };
  const env = await startRelay({ vars: vars(downstream.url, rate), consumers, countD1: true });
  try {
    const producer = await env.mf.getQueueProducer("WEBHOOKS", "hookrelay");
    await producer.sendBatch(queuedEvents(n, undefined, SOURCE).map((body) => ({ body })));
    const t0 = performance.now();
    const delivered = async () => (await env.db.prepare("SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'").first("n")) ?? 0;
    while ((await delivered()) < n) {
      if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`only ${await delivered()} of ${n} delivered; errors: ${[...env.log.errors, ...env.stdio.errors].slice(0, 3).join(" | ")}`);
      await sleep(20);
    }
    await settleStdio(env);
    const batches = env.log.batches.filter((b) => b.queue === "deliveries");
    const ingest = env.log.batches.filter((b) => b.queue === "webhooks");
    const parked = (await env.db.prepare("SELECT count(*) AS n FROM event_steps WHERE step = 'parked'").first("n")) ?? 0;
    return { trips: env.d1.of("hookrelay").trips, batches: batches.length, ingestBatches: ingest.length, parked, requests: downstream.requests };
  } finally {
    await env.dispose();
  }
}

export async function runRateTrips({ runs = 3, n = 50, batchSize = 50 } = {}) {
  const downstream = await startDownstream();
  try {
    say(`## The shared rate's cost: relay D1 round trips per deliveries batch, N = ${n} events, batch size ${batchSize}, ${runs} interleaved runs`);
    const results = { none: [], rated: [] };
    for (let r = 1; r <= runs; r++) {
      for (const [key, rate] of [["none", null], ["rated", 100]]) {
        const res = await run(downstream, rate, n, batchSize);
        results[key].push(res);
        say(`run ${r} ${key}: ${res.trips} round trips, ${res.ingestBatches} webhooks + ${res.batches} deliveries batches, ${res.parked} parked, ${res.requests} downstream requests`);
      }
    }
    const per = (rs) => median(rs.map((x) => x.trips / x.batches));
    const extra = median(results.rated.map((x, i) => (x.trips - results.none[i].trips) / x.batches));
    say(`round trips per deliveries batch (whole relay, ingest included): without a rate ${fmt(per(results.none), 2)}, with rate_per_s ${fmt(per(results.rated), 2)}; added by the rate: ${fmt(extra, 2)} per batch (target: at most 1)`);
    return { results, extra };
  } finally {
    await downstream.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runRateTrips({ runs: Number(process.argv[2] ?? 3), n: Number(process.argv[3] ?? 50), batchSize: Number(process.argv[4] ?? 50) });
}
