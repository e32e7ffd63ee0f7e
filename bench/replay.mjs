#!/usr/bin/env node
// Replay-all throughput: entries/s at concurrency 5 and 20, through the
// relay's origin, against a local downstream that answers 200.
//   node bench/replay.mjs            (BENCH_REPLAY_N=300 by default)
// It starts the relay through bench/lib.mjs, not the test harness, so the
// broker's test-only control endpoints stay off.
import { startRelay } from "./lib.mjs";
import { rows } from "../scripts/local-d1.mjs";
import { waitFor } from "../tests/support/wait-for.mjs";
import { startDownstream } from "../tests/support/downstream.mjs";
import { hmacSha256Headers } from "../scripts/webhook-signatures.mjs";
import { token } from "../tests/support/admin.mjs";

const N = Number(process.env.BENCH_REPLAY_N ?? 300);
let broken = true;
const downstream = await startDownstream({ "/d": () => ({ status: broken ? 400 : 200 }) });
const secret = "bench-replay-secret";
const relay = await startRelay({
  vars: {
    SOURCES: JSON.stringify({ c5: { scheme: "hmac-sha256", downstream: downstream.url("/d") }, c20: { scheme: "hmac-sha256", downstream: downstream.url("/d") } }),
    WEBHOOK_SECRET_C5: secret,
    WEBHOOK_SECRET_C20: secret,
    DOWNSTREAM_SIGNING_SECRET: "bench-down",
  },
});
try {
  for (const source of ["c5", "c20"]) {
    for (let i = 0; i < N; i++) {
      const body = JSON.stringify({ i, source });
      await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacSha256Headers(body, { secret, operationId: `${source}-${i}` }) });
    }
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE source = ?", source))[0].n >= N, { timeoutMs: 300_000, what: `${N} dead letters for ${source}` });
  }
  broken = false;
  for (const [source, concurrency] of [["c5", 5], ["c20", 20]]) {
    const started = performance.now();
    const res = await relay.fetch("/api/v1/admin/webhooks/dlq/replay-all", {
      method: "POST",
      headers: { authorization: `Bearer ${token()}`, "content-type": "application/json" },
      body: JSON.stringify({ reason: "bench replay throughput", concurrency, filter: { source }, max_entries: 500 }),
    });
    const ms = performance.now() - started;
    const { data } = await res.json();
    console.log(`replay-all concurrency ${String(concurrency).padStart(2)}: ${data.succeeded}/${data.attempted} succeeded in ${ms.toFixed(0)} ms = ${((data.succeeded / ms) * 1000).toFixed(0)} entries/s`);
  }
} finally {
  await relay.dispose();
  await downstream.close();
}
