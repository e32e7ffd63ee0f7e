#!/usr/bin/env node
// Replay-job throughput and pacing: one replay job over N pending entries
// (BENCH_JOB_N, 10,000 by default) at rate_per_s 100 and concurrency 20,
// canary size 0, approve "auto", against a loopback downstream that answers
// 200. The job runs as it does in production: one hookrelay-jobs message per
// step, each replay carried out by the relay through the RELAY binding.
//   node bench/jobs.mjs                 (BENCH_JOB_N=2000 node bench/jobs.mjs to shrink it)
// Entries are made fast by putting poison hand-offs (core/src/retry/poison_handoff.rs)
// of real events of the bench's source on `webhooks-dlq`. It starts the relay
// through bench/lib.mjs, not the test harness.
import { createHash, randomUUID } from "node:crypto";
import { startRelay } from "./lib.mjs";
import { rows } from "../scripts/local-d1.mjs";
import { waitFor } from "../tests/support/wait-for.mjs";
import { startDownstream } from "../tests/support/downstream.mjs";
import { token } from "../tests/support/admin.mjs";

const N = Number(process.env.BENCH_JOB_N ?? 10_000);
const RATE = Number(process.env.BENCH_JOB_RATE ?? 100);
const CONCURRENCY = Number(process.env.BENCH_JOB_CONCURRENCY ?? 20);
const SOURCE = "bench-job";

const downstream = await startDownstream({ "/d": () => ({ status: 200 }) });
const relay = await startRelay({
  vars: {
    SOURCES: JSON.stringify({ [SOURCE]: { scheme: "hmac-sha256", downstream: downstream.url("/d") } }),
    WEBHOOK_SECRET_BENCH_JOB: "bench-job-secret",
    DOWNSTREAM_SIGNING_SECRET: "bench-down",
    DLQ_CAPACITY: String(N + 1000),
    BREAKER_FAILURE_THRESHOLD: "1000",
  },
});
const admin = async (method, path, body) => {
  const res = await relay.fetch(`/api/v1/admin/${path}`, {
    method,
    headers: { authorization: `Bearer ${token()}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
};

try {
  // N pending entries, each a real event of SOURCE.
  const run = randomUUID().slice(0, 8);
  const dlq = await relay.mf.getQueueProducer("WEBHOOKS_DLQ", "hookrelay");
  const fillStart = performance.now();
  for (let i = 0; i < N; i += 100) {
    const batch = [];
    for (let j = i; j < Math.min(N, i + 100); j++) {
      const key = `${SOURCE}:${run}-${j}`;
      const now = Date.now();
      const original = {
        v: 1, event_id: `evt_${createHash("sha256").update(key).digest("hex").slice(0, 32)}`, idempotency_key: key, source: SOURCE,
        delivery_id: `${run}-${j}`, received_at_ms: now, headers: { "content-type": "application/json" }, body: JSON.stringify({ j, run }),
      };
      batch.push({ body: { kind: "poison_handoff", failure: { code: "UPSTREAM_4XX", message: "downstream refused the event" }, class: "poison", attempts: 1, queue_message_id: `qm-${key}`, enqueued_at_ms: now, failed_at_ms: now, original } });
    }
    await dlq.sendBatch(batch);
  }
  await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE source = ? AND status = 'pending'", SOURCE))[0].n >= N, { timeoutMs: 600_000, intervalMs: 250, what: `${N} pending entries` });
  console.log(`filled ${N} pending entries in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);

  const started = Date.now();
  const job = await admin("POST", "jobs", { action: "replay", reason: "bench job throughput", filter: { source: SOURCE }, canary: { size: 0 }, approve: "auto", rate_per_s: RATE, concurrency: CONCURRENCY });
  const done = await waitFor(async () => {
    const j = await admin("GET", `jobs/${job.id}`);
    return ["completed", "aborted", "cancelled"].includes(j.status) && j;
  }, { timeoutMs: Math.max(120_000, (N / RATE) * 1000 * 3), intervalMs: 500, what: "the job to finish" });
  const wall = (Date.now() - started) / 1000;

  const at = downstream.hits("/d").map((r) => r.at).sort((a, b) => a - b);
  const span = (at.at(-1) - at[0]) / 1000;
  const achieved = (at.length - 1) / span;
  const perOp = new Map();
  for (const r of downstream.hits("/d")) perOp.set(r.headers["x-operation-id"], (perOp.get(r.headers["x-operation-id"]) ?? 0) + 1);
  const twice = [...perOp.values()].filter((n) => n > 1).length;
  // Receipts per whole second of the run: how even the pace is.
  const perSecond = new Map();
  for (const t of at) perSecond.set(Math.floor((t - at[0]) / 1000), (perSecond.get(Math.floor((t - at[0]) / 1000)) ?? 0) + 1);
  const full = [...perSecond.entries()].filter(([s]) => s < Math.floor(span)).map(([, n]) => n);

  console.log(`job ${done.id}: ${done.status}, matched ${done.matched}, succeeded ${done.succeeded}, failed ${done.failed}, skipped ${done.skipped}, remaining ${done.remaining}`);
  console.log(`downstream: ${at.length} receipts for ${perOp.size} events (${twice} delivered more than once)`);
  console.log(`wall time (POST to completed): ${wall.toFixed(1)} s = ${(done.succeeded / wall).toFixed(1)} entries/s`);
  console.log(`requested ${RATE}/s at concurrency ${CONCURRENCY}; achieved ${achieved.toFixed(1)}/s first-to-last receipt over ${span.toFixed(1)} s (${(((achieved - RATE) / RATE) * 100).toFixed(1)}% from requested)`);
  if (full.length) console.log(`receipts per whole second: min ${Math.min(...full)}, max ${Math.max(...full)}, over ${full.length} s`);
} finally {
  await relay.dispose();
  await downstream.close();
}
