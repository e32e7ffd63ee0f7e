#!/usr/bin/env node
// Soak with faults, parking and drain: N signed events through the relay.
//   - 10% are sent twice (a provider's second delivery);
//   - 5% are poison: their downstream answers 400, so they go to the DLQ at once;
//   - 30% go to a destination that is DOWN (500/503). The breaker opens and,
//     with the default BREAKER_OPEN_ACTION=park, its events are acked and
//     parked in D1. It stays down until every one of its events is parked
//     and for three breaker cooldowns more (the relay's probes fail), then
//     recovers: no further traffic, no operator action. The relay must find
//     out by itself and drain the parked events, oldest first, at no more
//     than DRAIN_RATE_PER_S, measured on the downstream's receive clock;
//   - 5% of the healthy events are redelivered after they were delivered, and
//     5% of the down destination's events are redelivered while they are
//     parked (what the platform does after it loses a worker mid-batch).
// At the end every event must be accounted for: 0 lost, 0 delivered twice
// (2xx receipts counted by `x-operation-id`), every parked event delivered,
// the DLQ holds exactly the poison events (each `UPSTREAM_4XX`), and each
// extra copy counted once on its event.
//
//   npm run soak                # 10,000 events
//   SOAK_N=2000 npm run soak
//
// Then the fan-out soak (scripts/soak-fan-out.mjs): N events to three
// destinations, one in outage for 30% of the run, judged per (event,
// destination) pair.
//
// Then the slow soak (scripts/soak-slow.mjs): SOAK_SLOW_N events (2,000)
// at SOAK_SLOW_RATE per second (50), to a healthy destination alone, then
// beside one answering in 1–3 s and one hanging; lost and doubled per pair,
// and the healthy destination's p95 from POST to arrival against the first.
//
//   SOAK_SHAPES=fan-out npm run soak   # only some of the three (classic, fan-out, slow)
//
// Exits non-zero when any of that fails.
import { fail, run } from "./lib/fail.mjs";
import { startRelay, rows, waitFor } from "../tests/support/harness.mjs";
import { startDownstream } from "../tests/support/downstream.mjs";
import { hmacHeaders } from "../tests/support/signers.mjs";
import { adminClient } from "../tests/support/admin.mjs";
import { secretNameFor } from "./webhook-signatures.mjs";
import { pathToFileURL } from "node:url";
import { fanOutFailures, fanOutSummary, soakFanOut } from "./soak-fan-out.mjs";
import { slowFailures, slowSummary, soakSlow } from "./soak-slow.mjs";

const SECRETS = { WEBHOOK_SECRET_SOAK_OK: "soak-ok-secret", WEBHOOK_SECRET_SOAK_POISON: "soak-poison-secret", WEBHOOK_SECRET_SOAK_DOWN: "soak-down-secret" };
const secretOf = (source) => SECRETS[secretNameFor(source)];

/** Which source event `i` goes to, whether the provider sends it twice, and which copies are redelivered. */
export function planOf(n) {
  return Array.from({ length: n }, (_, i) => ({
    i,
    // 5% poison, 30% down, 65% healthy.
    source: i % 20 === 0 ? "soak-poison" : [1, 4, 8].includes(i % 10) ? "soak-down" : "soak-ok",
    // 10%, spread over the three: 2 healthy, 2 down, 1 poison in every 50.
    duplicate: [3, 13, 11, 24, 40].includes(i % 50),
    // 5% healthy redelivered once delivered, 5% down redelivered while parked.
    redeliver: i % 20 === 7 || i % 20 === 14,
  }));
}

/** Runs the soak; returns the accounting. `log` receives progress lines. */
export async function soak({ n = 10_000, concurrency = 16, drainRate = 200, cooldownS = 1, log = () => {} } = {}) {
  const down = { up: false, recoveredAt: null, calls: 0 };
  const downstream = await startDownstream({
    "/ok": () => ({ status: 200 }),
    "/poison": () => ({ status: 400 }),
    "/down": () => {
      if (down.up) return { status: 200 };
      down.calls++;
      return { status: down.calls % 2 ? 500 : 503 };
    },
  });
  const relay = await startRelay({
    relayVars: {
      SOURCES: JSON.stringify({
        "soak-ok": { scheme: "hmac-sha256", downstream: downstream.url("/ok") },
        "soak-poison": { scheme: "hmac-sha256", downstream: downstream.url("/poison") },
        "soak-down": { scheme: "hmac-sha256", downstream: downstream.url("/down") },
      }),
      ...SECRETS,
      DOWNSTREAM_SIGNING_SECRET: "soak-downstream-secret",
      RETRY_DELAYS_S: "1,1,1,1,1",
      // BREAKER_OPEN_ACTION is left at its default, park.
      BREAKER_FAILURE_THRESHOLD: "5",
      BREAKER_COOLDOWN_S: String(cooldownS),
      DRAIN_RATE_PER_S: String(drainRate),
    },
    vars: { DLQ_CAPACITY: String(n * 2) },
  });
  const started = Date.now();
  const count = async (sql, ...params) => (await rows(relay.db, sql, ...params))[0].n ?? 0;
  const parkedNow = () => count("SELECT count(*) AS n FROM events WHERE delivery_status = 'parked'");
  // The parked count, sampled throughout.
  let parkedPeak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      try { parkedPeak = Math.max(parkedPeak, await parkedNow()); } catch { /* the relay is going away */ }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  try {
    const plan = planOf(n);
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

    // Redeliver already-processed messages, as the platform does after a lost
    // worker: healthy events once delivered, down events once parked.
    const producer = await relay.producer();
    const redeliver = plan.filter((p) => p.redeliver && ids.has(p.i));
    const resend = async (p) => {
      const [row] = await rows(relay.db, "SELECT * FROM events WHERE event_id = ?", ids.get(p.i));
      await producer.send({ v: 1, event_id: row.event_id, idempotency_key: row.idempotency_key, source: row.source, received_at_ms: row.received_at, headers: JSON.parse(row.headers), body: row.body });
    };
    const downIds = new Set(plan.filter((p) => p.source === "soak-down").map((p) => ids.get(p.i)).filter(Boolean));
    const downDeadLettered = () =>
      rows(relay.db, "SELECT DISTINCT event_id FROM dead_letters").then((r) => r.filter((x) => downIds.has(x.event_id)).length);
    // One count query per poll, so that the soak does not compete with the
    // consumer for D1: first every healthy event delivered, then every event
    // of the down destination parked (those tried while the breaker was
    // closed retry first) or ended elsewhere, which the accounting reports.
    const okIds = plan.filter((p) => p.source === "soak-ok").map((p) => ids.get(p.i)).filter(Boolean);
    await waitFor(async () => (await count("SELECT count(*) AS n FROM events WHERE source = 'soak-ok' AND delivery_status = 'delivered'")) >= okIds.length, {
      timeoutMs: Math.max(300_000, n * 100),
      intervalMs: 500,
      what: "every healthy event to be delivered",
    });
    log(`every healthy event delivered (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    for (const p of redeliver.filter((p) => p.source === "soak-ok")) await resend(p);
    const allDownParked = () => waitFor(async () => (await parkedNow()) + (await downDeadLettered()) >= downIds.size, {
      timeoutMs: Math.max(300_000, n * 100),
      intervalMs: 500,
      what: "every event of the down destination to be parked",
    });
    await allDownParked();
    log(`every event of the down destination parked or dead-lettered (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    for (const p of redeliver.filter((p) => p.source === "soak-down")) await resend(p);
    // Every copy consumed before the destination recovers: after recovery, no traffic at all.
    const expectedDuplicates = plan.filter((p) => p.duplicate && ids.has(p.i)).length + redeliver.length;
    await waitFor(async () => (await count("SELECT sum(duplicate_count) AS n FROM events")) >= expectedDuplicates, {
      timeoutMs: Math.max(300_000, n * 100),
      intervalMs: 500,
      what: "every duplicate copy to be consumed",
    });
    log(`redelivered ${redeliver.length} processed messages (${((Date.now() - started) / 1000).toFixed(1)} s)`);

    await allDownParked();
    // A probe in flight holds its event as `delivering`, so this may read one less.
    const parkedBeforeRecovery = await parkedNow();
    const { data: stats } = await adminClient(relay).get("webhook-dlq/stats");
    const deliveredDownBefore = downstream.hits("/down").filter((r) => r.status < 300).length;
    // Then three more cooldowns, down: the relay's probes keep failing.
    const callsAtFullyParked = downstream.hits("/down").length;
    await new Promise((r) => setTimeout(r, 3 * cooldownS * 1000 + 100));
    const probesFailed = downstream.hits("/down").length - callsAtFullyParked;
    const outageS = (Date.now() - (downstream.hits("/down")[0]?.at ?? Date.now())) / 1000;
    log(`down for ${outageS.toFixed(1)} s; ${parkedBeforeRecovery} parked (admin stats: ${stats.parked.count}); ${probesFailed} probes failed in the last 3 cooldowns; recovering now`);

    // Recovery: no further traffic, no operator action.
    down.up = true;
    down.recoveredAt = Date.now();

    // Settled: every event is delivered or dead-lettered, and the drain is over.
    await waitFor(async () => {
      const d = await count("SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'");
      const x = await count("SELECT count(DISTINCT event_id) AS n FROM dead_letters");
      return d + x >= ids.size;
    }, { timeoutMs: Math.max(120_000, n * 60), intervalMs: 250, what: "every event to be delivered or dead-lettered" });
    await waitFor(async () => (await count("SELECT count(*) AS n FROM drains")) === 0, { timeoutMs: 60_000, intervalMs: 250, what: "the drain to end" });
    // Every copy must have been consumed before calls are counted, or a late
    // duplicate could deliver twice after the check: wait until each
    // duplicate and redelivery has been counted on its event.
    await waitFor(async () => (await count("SELECT sum(duplicate_count) AS n FROM events")) >= expectedDuplicates, {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: "every duplicate copy to be consumed",
    });
    sampling = false;
    await sampler;

    // 2xx receipts and all calls per event, by the operation id the relay sends.
    const okCalls = new Map();
    const allCalls = new Map();
    const inc = (m, k) => m.set(k, (m.get(k) ?? 0) + 1);
    for (const r of downstream.requests) {
      inc(allCalls, r.headers["x-operation-id"]);
      if (r.status < 300) inc(okCalls, r.headers["x-operation-id"]);
    }
    const deadRows = await rows(relay.db, "SELECT event_id, error_code, error_class, envelope FROM dead_letters");
    const dead = new Map();
    for (const r of deadRows) dead.set(r.event_id, [...(dead.get(r.event_id) ?? []), r]);
    const events = new Map((await rows(relay.db, "SELECT event_id, delivery_status, duplicate_count FROM events")).map((e) => [e.event_id, e]));
    const stepsOf = new Map();
    for (const s of await rows(relay.db, "SELECT event_id, step FROM event_steps ORDER BY at, id")) stepsOf.set(s.event_id, [...(stepsOf.get(s.event_id) ?? []), s.step]);
    const retriedDown = new Set((await rows(relay.db, "SELECT DISTINCT event_id FROM attempts WHERE code <> 'CIRCUIT_OPEN'")).map((r) => r.event_id).filter((id) => downIds.has(id)));

    const problems = [];
    let lost = 0, double = 0, poisonRecalled = 0, delivered = 0, deadPoison = 0, wrongDead = 0, parkedEver = 0, parkedDelivered = 0, drained = 0, miscounted = 0;
    for (const p of plan) {
      const id = ids.get(p.i);
      if (!id) { lost++; continue; }
      const e = events.get(id);
      const steps = stepsOf.get(id) ?? [];
      const expectedDup = (p.duplicate ? 1 : 0) + (redeliver.includes(p) ? 1 : 0);
      if (!e || e.duplicate_count !== expectedDup) {
        miscounted++;
        const history = (await rows(relay.db, "SELECT queue_message_id AS m, attempt, code, at FROM attempts WHERE event_id = ? ORDER BY at, id", id)).map((a) => `${a.m}#${a.attempt} ${a.code} @${a.at}`);
        const carriers = (await rows(relay.db, "SELECT queue_message_id AS first, last_message_id AS last, ingested_at, last_seen_at FROM events WHERE event_id = ?", id))[0];
        problems.push(`event ${p.i} (${id}): duplicate_count ${e?.duplicate_count}, expected ${expectedDup}; carriers ${JSON.stringify(carriers)}; failed attempts [${history.join("; ")}]; steps ${steps.join(",")}`);
      }
      if (steps.includes("parked")) parkedEver++;
      if (steps.includes("drained")) drained++;
      if (p.source === "soak-poison") {
        const d = dead.get(id);
        if (!d) { lost++; problems.push(`poison event ${p.i} (${id}) is not in the DLQ (status ${e?.delivery_status})`); }
        else if (d.length > 1 || d[0].error_class !== "poison" || d[0].error_code !== "UPSTREAM_4XX") { wrongDead++; problems.push(`poison event ${p.i} (${id}): DLQ rows ${JSON.stringify(d.map(({ envelope, ...x }) => x))}`); }
        else deadPoison++;
        // A refused event called again is a second side effect, not a second delivery.
        if ((allCalls.get(id) ?? 0) > 1) {
          poisonRecalled++;
          const history = (await rows(relay.db, "SELECT queue_message_id AS m, attempt, code, at FROM attempts WHERE event_id = ? ORDER BY at, id", id)).map((a) => `${a.m}#${a.attempt} ${a.code} @${a.at}`);
          const calls = downstream.requests.filter((r) => r.headers["x-operation-id"] === id).map((r) => `${r.status} @${r.at}`);
          problems.push(`poison event ${p.i} (${id}) was called ${allCalls.get(id)} times [${calls.join("; ")}]; failed attempts [${history.join("; ")}]; steps ${steps.join(",")}; DLQ rows ${d?.length ?? 0}`);
        }
        continue;
      }
      const successes = okCalls.get(id) ?? 0;
      if (dead.has(id)) {
        wrongDead++;
        problems.push(`${p.source} event ${p.i} (${id}) is in the DLQ (${successes} 2xx receipts, steps ${steps.join(",")}): ${dead.get(id).map((r) => r.envelope).join(" | ")}`);
      }
      if (successes > 1) { double++; problems.push(`event ${p.i} (${id}) delivered ${successes} times`); }
      else if (successes === 1) {
        delivered++;
        if (steps.includes("parked")) parkedDelivered++;
      } else if (!dead.has(id)) { lost++; problems.push(`event ${p.i} (${id}) never delivered (status ${e?.delivery_status}, steps ${steps.join(",")})`); }
    }

    // The drain, on the downstream's receive clock: the 2xx receipts of the
    // down destination after it recovered.
    const drainedReceipts = downstream.hits("/down").filter((r) => r.status < 300 && r.at >= down.recoveredAt);
    const drainSpanS = drainedReceipts.length > 1 ? (drainedReceipts.at(-1).at - drainedReceipts[0].at) / 1000 : 0;
    const drainRateAchieved = drainSpanS > 0 ? (drainedReceipts.length - 1) / drainSpanS : 0;
    // The busiest whole second of the drain, for the record.
    let peak1s = 0;
    for (let a = 0, b = 0; b < drainedReceipts.length; b++) {
      while (drainedReceipts[b].at - drainedReceipts[a].at >= 1000) a++;
      peak1s = Math.max(peak1s, b - a + 1);
    }
    const [dups] = await rows(relay.db, "SELECT sum(duplicate_count) AS n FROM events");
    return {
      n,
      delivered,
      parked_peak: parkedPeak,
      parked_ever: parkedEver,
      parked_delivered: parkedDelivered,
      drained,
      dead_lettered: deadRows.length,
      dead_lettered_poison: deadPoison,
      wrong_dead: wrongDead,
      lost,
      double,
      poison_recalled: poisonRecalled,
      miscounted,
      down_events: downIds.size,
      down_retried_before_parking: retriedDown.size,
      down_delivered_before_recovery: deliveredDownBefore,
      stats_parked_before_recovery: stats.parked.count,
      probes_failed_last_3_cooldowns: probesFailed,
      outage_s: Number(outageS.toFixed(1)),
      drain_rate_achieved: Number(drainRateAchieved.toFixed(1)),
      drain_rate_peak_1s: peak1s,
      drain_rate_configured: drainRate,
      first_drained_ms: drainedReceipts.length ? drainedReceipts[0].at - down.recoveredAt : null,
      drain_s: Number(drainSpanS.toFixed(1)),
      duplicates_sent: plan.filter((p) => p.duplicate).length,
      redeliveries: redeliver.length,
      duplicates_counted: dups.n ?? 0,
      refused,
      elapsed_s: Number(((Date.now() - started) / 1000).toFixed(1)),
      problems,
    };
  } finally {
    sampling = false;
    await sampler;
    // The workers' log lines, for a post-mortem: SOAK_LOG_FILE=/tmp/soak.log
    if (process.env.SOAK_LOG_FILE) (await import("node:fs")).writeFileSync(process.env.SOAK_LOG_FILE, relay.logs.join("\n") + "\n");
    await relay.dispose();
    await downstream.close();
  }
}

/** The verdict: every failed check, by name (empty when the soak passed). */
export function failures(r) {
  const f = [];
  if (r.refused) f.push("refused");
  if (r.lost) f.push("lost");
  if (r.double) f.push("double");
  if (r.poison_recalled) f.push("poison_recalled");
  if (r.wrong_dead) f.push("wrong_dead");
  if (r.miscounted) f.push("miscounted");
  if (r.parked_delivered !== r.parked_ever) f.push("parked events not all delivered");
  if (r.dead_lettered !== r.dead_lettered_poison || r.dead_lettered_poison !== r.n / 20) f.push("the DLQ is not exactly the poison events");
  if (r.delivered + r.dead_lettered_poison !== r.n) f.push("delivered + poison != n");
  if (r.drained < r.stats_parked_before_recovery) f.push("fewer drained than parked");
  if (r.drain_rate_achieved > r.drain_rate_configured * 1.1) f.push("drain faster than DRAIN_RATE_PER_S");
  return f;
}

/** The counts in one line. */
export const summary = (r) => Object.entries(r).filter(([k]) => k !== "problems").map(([k, v]) => `${k}=${v}`).join(" ");

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  await run("soak", async () => {
    const n = Number(process.env.SOAK_N ?? 10_000);
    if (!Number.isInteger(n) || n < 20) fail(`SOAK_N=${process.env.SOAK_N} is not a whole number of events of at least 20; unset it for 10,000`, 2);
    const shapes = (process.env.SOAK_SHAPES ?? "classic,fan-out,slow").split(",").map((s) => s.trim());
    const unknown = shapes.filter((s) => !["classic", "fan-out", "slow"].includes(s));
    if (unknown.length) fail(`SOAK_SHAPES names ${unknown.join(", ")}; it takes classic, fan-out and slow (comma-separated), or unset it for all three`, 2);
    const drainRate = Number(process.env.SOAK_DRAIN_RATE ?? 200);
    const failed = [];
    if (shapes.includes("classic")) {
      const result = await soak({ n, drainRate, log: (l) => console.log(`[soak] ${l}`) });
      for (const p of result.problems.slice(0, 50)) console.log(`[soak] problem: ${p}`);
      console.log(summary(result));
      failed.push(...failures(result));
    }
    if (shapes.includes("fan-out")) {
      const result = await soakFanOut({ n, drainRate, log: (l) => console.log(`[soak fan-out] ${l}`) });
      for (const p of result.problems.slice(0, 50)) console.log(`[soak fan-out] problem: ${p}`);
      console.log(fanOutSummary(result));
      failed.push(...fanOutFailures(result).map((f) => `fan-out ${f}`));
    }
    if (shapes.includes("slow")) {
      const slowN = Number(process.env.SOAK_SLOW_N ?? 2_000);
      const result = await soakSlow({ n: slowN, rate: Number(process.env.SOAK_SLOW_RATE ?? 50), log: (l) => console.log(`[soak slow] ${l}`) });
      for (const p of [...result.baseline.problems, ...result.slow.problems].slice(0, 50)) console.log(`[soak slow] problem: ${p}`);
      console.log(slowSummary(result));
      failed.push(...slowFailures(result).map((f) => `slow ${f}`));
    }
    if (failed.length) fail(`FAILED: ${failed.join(", ")} (the counts and problems are above)`);
  });
  // Miniflare may keep a handle open after dispose; the verdict is in.
  process.exit(process.exitCode ?? 0);
}
