#!/usr/bin/env node
// Soak with faults: N signed events through the relay, with duplicates,
// poison, a downstream that fails transiently then recovers, and
// redeliveries of already-processed messages (what the platform does after
// it loses a worker mid-batch), with a real circuit breaker in front of the
// flaky downstream. At the end every event must be accounted for: delivered
// exactly once, or in the DLQ with the right class (poison for the 400s;
// transient for a flaky event whose retries ran out while the breaker was
// open).
//
//   npm run soak                # 10,000 events
//   SOAK_N=2000 npm run soak
//
// Exits non-zero on any loss or double delivery.
import { startRelay, rows, waitFor } from "../tests/support/harness.mjs";
import { startDownstream } from "../tests/support/downstream.mjs";
import { hmacHeaders } from "../tests/support/signers.mjs";
import { secretNameFor } from "./webhook-signatures.mjs";
import { pathToFileURL } from "node:url";

const SECRETS = { WEBHOOK_SECRET_SOAK_OK: "soak-ok-secret", WEBHOOK_SECRET_SOAK_POISON: "soak-poison-secret", WEBHOOK_SECRET_SOAK_FLAKY: "soak-flaky-secret" };
const secretOf = (source) => SECRETS[secretNameFor(source)];

/** Runs the soak; returns the accounting. `log` receives progress lines. */
export async function soak({ n = 10_000, concurrency = 16, log = () => {} } = {}) {
  // The flaky downstream is down for `outageMs` from its first call, then recovers.
  const outageMs = 5000;
  let outageStart = null;
  const downstream = await startDownstream({
    "/ok": () => ({ status: 200 }),
    "/poison": () => ({ status: 400 }),
    "/flaky": () => {
      outageStart ??= Date.now();
      return { status: Date.now() - outageStart < outageMs ? 503 : 200 };
    },
  });
  const relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({
        "soak-ok": { scheme: "hmac-sha256", downstream: downstream.url("/ok") },
        "soak-poison": { scheme: "hmac-sha256", downstream: downstream.url("/poison") },
        "soak-flaky": { scheme: "hmac-sha256", downstream: downstream.url("/flaky") },
      }),
      ...SECRETS,
      DOWNSTREAM_SIGNING_SECRET: "soak-down-secret",
      RETRY_DELAYS_S: "1,2,4,8,16",
      // A real breaker: when the flaky share fails in a run, it opens, and
      // events ride it out on the retry path or end in the DLQ as transient.
      BREAKER_FAILURE_THRESHOLD: "20",
      BREAKER_COOLDOWN_S: "1",
      DLQ_CAPACITY: String(n * 2),
    },
  });
  const started = Date.now();
  try {
    // The plan: 5% poison, 20% flaky, the rest fine; 10% of all are sent twice.
    const plan = Array.from({ length: n }, (_, i) => ({
      i,
      source: i % 20 === 0 ? "soak-poison" : i % 5 === 1 ? "soak-flaky" : "soak-ok",
      duplicate: i % 10 === 3,
      redeliver: i % 20 === 7,
    }));
    const sends = plan.flatMap((p) => (p.duplicate ? [p, p] : [p]));
    const ids = new Map();
    let next = 0;
    let refused = 0;
    const worker = async () => {
      while (next < sends.length) {
        const p = sends[next++];
        const body = JSON.stringify({ i: p.i, kind: p.source, pad: "x".repeat(200) });
        const res = await relay.fetch(`/webhooks/${p.source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: secretOf(p.source), operationId: `soak-${p.i}` }) });
        if (res.status !== 202) { refused++; if (refused === 1) log(`first refusal: ${res.status} ${await res.clone().text()}`); }
        else ids.set(p.i, (await res.json()).event_id);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    log(`sent ${sends.length} requests (${refused} refused) in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // Redeliver already-processed messages, as the platform does after a lost worker.
    const producer = await relay.producer();
    const redeliver = plan.filter((p) => p.redeliver && p.source === "soak-ok");
    for (const p of redeliver) {
      const id = ids.get(p.i);
      const [row] = await waitFor(async () => {
        const r = await rows(relay.db, "SELECT * FROM events WHERE event_id = ? AND delivery_status = 'delivered'", id);
        return r.length ? r : null;
      }, { timeoutMs: 600_000, what: `event ${p.i} to be delivered before its redelivery` });
      await producer.send({ v: 1, event_id: row.event_id, idempotency_key: row.idempotency_key, source: row.source, received_at_ms: row.received_at, headers: JSON.parse(row.headers), body: row.body });
    }
    log(`redelivered ${redeliver.length} processed messages`);

    // Settled: every event is delivered or dead-lettered.
    await waitFor(async () => {
      const [d] = await rows(relay.db, "SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'");
      const [x] = await rows(relay.db, "SELECT count(DISTINCT event_id) AS n FROM dead_letters");
      return d.n + x.n >= plan.length;
    }, { timeoutMs: Math.max(120_000, n * 60), intervalMs: 250, what: "every event to be delivered or dead-lettered" });
    // Every copy must have been consumed before calls are counted, or a late
    // duplicate could deliver twice after the check: wait until each
    // duplicate and redelivery has been counted on its event.
    const expectedDuplicates = plan.filter((p) => p.duplicate).length + redeliver.length;
    await waitFor(async () => {
      const [d] = await rows(relay.db, "SELECT sum(duplicate_count) AS n FROM events");
      return (d.n ?? 0) >= expectedDuplicates;
    }, { timeoutMs: 120_000, intervalMs: 250, what: "every duplicate copy to be consumed" });

    // Successful calls per event: a 2xx answer is one the downstream kept.
    const okCalls = new Map();
    for (const r of downstream.requests) {
      if (r.status < 300) okCalls.set(r.headers["x-operation-id"], (okCalls.get(r.headers["x-operation-id"]) ?? 0) + 1);
    }
    const deadRows = await rows(relay.db, "SELECT event_id, error_code, error_class FROM dead_letters");
    const dead = new Map(deadRows.map((r) => [r.event_id, r]));
    let lost = 0, double = 0, wrongClass = 0, delivered = 0, deadPoison = 0, deadTransient = 0;
    for (const p of plan) {
      const id = ids.get(p.i);
      if (!id) { lost++; continue; }
      if (p.source === "soak-poison") {
        const d = dead.get(id);
        if (!d) lost++;
        else if (d.error_class !== "poison" || d.error_code !== "UPSTREAM_4XX") wrongClass++;
        else deadPoison++;
        if (downstream.requests.filter((r) => r.path === "/poison" && r.headers["x-operation-id"] === id).length > 1) double++;
        continue;
      }
      const successes = okCalls.get(id) ?? 0;
      if (successes > 1) double++;
      else if (successes === 1) delivered++;
      else if (!dead.has(id)) lost++;
      else if (dead.get(id).error_class !== "transient") wrongClass++;
      else deadTransient++;
    }
    const [dups] = await rows(relay.db, "SELECT sum(duplicate_count) AS n FROM events");
    return {
      n,
      lost,
      double,
      wrong_class: wrongClass,
      delivered,
      dead_lettered_poison: deadPoison,
      dead_lettered_transient: deadTransient,
      duplicates_sent: plan.filter((p) => p.duplicate).length,
      duplicates_counted: dups.n ?? 0,
      redeliveries: redeliver.length,
      refused,
      elapsed_s: Number(((Date.now() - started) / 1000).toFixed(1)),
    };
  } finally {
    await relay.dispose();
    await downstream.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const n = Number(process.env.SOAK_N ?? 10_000);
  const result = await soak({ n, log: (l) => console.log(`[soak] ${l}`) });
  console.log(Object.entries(result).map(([k, v]) => `${k}=${v}`).join(" "));
  process.exit(result.lost === 0 && result.double === 0 && result.wrong_class === 0 && result.refused === 0 ? 0 : 1);
}
