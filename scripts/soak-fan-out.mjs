// The fan-out soak (issue 33): N signed events of one source whose three
// routes send each event to three destinations, each delivery on its own:
//   - `fan-a` answers 200;
//   - `fan-b` answers 200, except 400 to the 5% of events marked poison, so
//     those deliveries (and only those) are dead-lettered at once, naming b;
//   - `fan-c` is in OUTAGE (500/503) for 30% of the run, measured by a's
//     progress: it goes down once a has received 35% of the events and
//     recovers once a has received 65% (and not before it has parked
//     deliveries and stayed down `minOutageMs`). With the default
//     BREAKER_OPEN_ACTION=park its deliveries park, and the relay drains
//     them by itself, with no traffic or operator, once c recovers.
// A progresses through c's outage only if c never blocks it: were it
// blocked, the outage would never end and the soak would time out.
// 10% of the events are sent twice by the "provider"; 5% have their
// `webhooks` message redelivered after ingest; 5% of the (event, a)
// deliveries have their `deliveries` message redelivered after they were
// delivered, and 5% of the (event, c) ones halfway through c's outage
// (what the platform does after it loses a worker mid-batch).
//
// The verdict is per (event, destination) pair: each must be delivered
// exactly once (2xx receipts counted by `x-operation-id` at its
// destination), or be parked or dead-lettered for a reason the run caused
// (b's 400 to a poison event; c's outage). Anything else is lost or
// doubled, reported per destination.
import { startRelay, rows, waitFor } from "../tests/support/harness.mjs";
import { startDownstream } from "../tests/support/downstream.mjs";
import { hmacHeaders } from "../tests/support/signers.mjs";

export const SOURCE = "soak-fan";
export const DESTINATIONS = ["fan-a", "fan-b", "fan-c"];
const SECRET = "soak-fan-secret";
// Codes of a dead letter that c's outage can cause (its answers, or the
// open breaker that stood for them).
const OUTAGE_CODES = new Set(["UPSTREAM_5XX", "TIMEOUT", "CIRCUIT_OPEN"]);

/** Event `i`: poison at b, sent twice, its webhooks message redelivered, its a / c delivery message redelivered. */
export function fanPlanOf(n) {
  return Array.from({ length: n }, (_, i) => ({
    i,
    poison: i % 20 === 5,
    duplicate: i % 10 === 3,
    redeliverIngest: i % 20 === 11,
    redeliverA: i % 20 === 7,
    redeliverC: i % 20 === 14,
  }));
}

/** Runs the fan-out soak; returns the accounting. `log` receives progress lines. */
export async function soakFanOut({ n = 10_000, concurrency = 16, drainRate = 200, cooldownS = 1, minOutageMs = 4000, log = () => {} } = {}) {
  const plan = fanPlanOf(n);
  const poisonBody = new Set();
  // Distinct 2xx receipts at a: the run's clock for c's outage.
  const aSeen = new Set();
  const c = { down: false, downAt: null, upAt: null, calls: 0 };
  const downstream = await startDownstream({
    "/a": (req) => {
      aSeen.add(req.headers["x-operation-id"]);
      return { status: 200 };
    },
    "/b": (req) => ({ status: poisonBody.has(req.body) ? 400 : 200 }),
    "/c": () => {
      if (!c.down) return { status: 200 };
      c.calls++;
      return { status: c.calls % 2 ? 500 : 503 };
    },
  });
  const relay = await startRelay({
    relayVars: {
      DESTINATIONS: JSON.stringify(Object.fromEntries(DESTINATIONS.map((d) => [d, { url: downstream.url(`/${d.slice(4)}`) }]))),
      SOURCES: JSON.stringify({ [SOURCE]: { scheme: "hmac-sha256", routes: DESTINATIONS.map((to) => ({ to })) } }),
      WEBHOOK_SECRET_SOAK_FAN: SECRET,
      DOWNSTREAM_SIGNING_SECRET: "soak-fan-downstream-secret",
      RETRY_DELAYS_S: "1,1,1,1,1",
      // BREAKER_OPEN_ACTION is left at its default, park.
      BREAKER_FAILURE_THRESHOLD: "5",
      BREAKER_COOLDOWN_S: String(cooldownS),
      DRAIN_RATE_PER_S: String(drainRate),
    },
    vars: { DLQ_CAPACITY: String(n * 2) },
  });
  const started = Date.now();
  const since = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const count = async (sql, ...params) => (await rows(relay.db, sql, ...params))[0].n ?? 0;
  const parkedAtC = () => count("SELECT count(*) AS n FROM deliveries WHERE destination = 'fan-c' AND state = 'parked'");
  let parkedPeak = 0;
  const ids = new Map();
  const redelivered = { sent: false, ingest: 0, a: 0, c: 0, cParkedWhenSent: 0 };
  let producers = null;
  const deliveryMessage = (i, destination) => ({ v: 1, kind: "delivery", event_id: ids.get(i), idempotency_key: `${SOURCE}:fan-${i}`, source: SOURCE, destination, received_at_ms: Date.now() });

  // c's outage, driven by a's progress; the redeliveries of delivery
  // messages go out halfway through it (a's delivered, c's mostly parked).
  let controlling = true;
  const control = (async () => {
    while (controlling) {
      try {
        if (!c.down && c.downAt === null && aSeen.size >= 0.35 * n) {
          c.down = true;
          c.downAt = Date.now();
          log(`fan-c down: a has ${aSeen.size} of ${n} (${since()})`);
        } else if (c.down) {
          const parked = await parkedAtC();
          parkedPeak = Math.max(parkedPeak, parked);
          // Halfway through the outage, so that c's deliveries are parked by then.
          const halfway = aSeen.size >= 0.5 * n && Date.now() - c.downAt >= minOutageMs / 2;
          if (producers && !redelivered.sent && parked > 0 && halfway) await redeliverDeliveries();
          if (aSeen.size >= 0.65 * n && Date.now() - c.downAt >= minOutageMs && parked > 0) {
            c.down = false;
            c.upAt = Date.now();
            log(`fan-c recovers: a has ${aSeen.size} of ${n}, ${parked} parked at c (${since()})`);
          }
        }
      } catch (e) {
        if (controlling) log(`control: ${e.message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  async function redeliverDeliveries() {
    redelivered.sent = true;
    const aDone = new Set((await rows(relay.db, "SELECT event_id FROM deliveries WHERE destination = 'fan-a' AND state = 'delivered'")).map((r) => r.event_id));
    const cStates = new Map((await rows(relay.db, "SELECT event_id, state FROM deliveries WHERE destination = 'fan-c'")).map((r) => [r.event_id, r.state]));
    const messages = [];
    for (const p of plan) {
      if (!ids.has(p.i)) continue;
      if (p.redeliverA && aDone.has(ids.get(p.i))) {
        messages.push(deliveryMessage(p.i, "fan-a"));
        redelivered.a++;
      }
      if (p.redeliverC && cStates.has(ids.get(p.i))) {
        messages.push(deliveryMessage(p.i, "fan-c"));
        redelivered.c++;
        if (cStates.get(ids.get(p.i)) === "parked") redelivered.cParkedWhenSent++;
      }
    }
    for (let k = 0; k < messages.length; k += 100) await producers.deliveries.sendBatch(messages.slice(k, k + 100).map((body) => ({ body })));
    log(`redelivered ${redelivered.a} delivery messages of a (delivered) and ${redelivered.c} of c (${redelivered.cParkedWhenSent} parked) (${since()})`);
  }

  try {
    producers = { webhooks: await relay.producer("WEBHOOKS"), deliveries: await relay.producer("DELIVERIES") };
    const sends = plan.flatMap((p) => (p.duplicate ? [p, p] : [p]));
    let next = 0;
    let refused = 0;
    const sender = async () => {
      while (next < sends.length) {
        const p = sends[next++];
        const body = JSON.stringify({ i: p.i, poison: p.poison, pad: "x".repeat(200) });
        if (p.poison) poisonBody.add(body);
        const res = await relay.fetch(`/webhooks/${SOURCE}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `fan-${p.i}` }) });
        if (res.status !== 202) {
          refused++;
          if (refused === 1) log(`first refusal: ${res.status} ${await res.clone().text()}`);
        } else ids.set(p.i, (await res.json()).event_id);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, sender));
    log(`sent ${sends.length} requests (${refused} refused) in ${since()}`);

    // The provider's ingest redeliveries: each event's `webhooks` message again, once ingested.
    const ingestAgain = plan.filter((p) => p.redeliverIngest && ids.has(p.i));
    await waitFor(async () => (await count("SELECT count(*) AS n FROM events WHERE source = ?", SOURCE)) >= ids.size, {
      timeoutMs: Math.max(300_000, n * 100),
      intervalMs: 500,
      what: "every event to be ingested",
    });
    const eventRows = new Map((await rows(relay.db, "SELECT * FROM events WHERE source = ?", SOURCE)).map((r) => [r.event_id, r]));
    for (let k = 0; k < ingestAgain.length; k += 100) {
      await producers.webhooks.sendBatch(
        ingestAgain.slice(k, k + 100).map((p) => {
          const row = eventRows.get(ids.get(p.i));
          return { body: { v: 1, event_id: row.event_id, idempotency_key: row.idempotency_key, source: row.source, received_at_ms: row.received_at, headers: JSON.parse(row.headers), body: row.body } };
        }),
      );
    }
    redelivered.ingest = ingestAgain.length;
    log(`every event ingested; redelivered ${ingestAgain.length} webhooks messages (${since()})`);

    // Settled: c has recovered, every pair ended, the drain is over, and
    // every duplicate copy has been counted on its event.
    const pairs = ids.size * DESTINATIONS.length;
    await waitFor(() => c.upAt !== null, { timeoutMs: Math.max(300_000, n * 100), intervalMs: 250, what: "fan-c's outage to start and end (a to reach 65%)" });
    await waitFor(async () => (await count("SELECT count(*) AS n FROM deliveries WHERE state IN ('delivered', 'dead_lettered')")) >= pairs, {
      timeoutMs: Math.max(300_000, n * 100),
      intervalMs: 500,
      what: "every (event, destination) delivery to be delivered or dead-lettered",
    });
    log(`every delivery ended (${since()})`);
    await waitFor(async () => (await count("SELECT count(*) AS n FROM drains")) === 0, { timeoutMs: 60_000, intervalMs: 250, what: "the drain to end" });
    const expectedDuplicates = plan.filter((p) => p.duplicate && ids.has(p.i)).length + ingestAgain.length;
    await waitFor(async () => (await count("SELECT sum(duplicate_count) AS n FROM events")) >= expectedDuplicates, { timeoutMs: 120_000, intervalMs: 250, what: "every duplicate copy to be counted" });
    await waitFor(
      async () => (await count("SELECT count(*) AS n FROM dead_letters")) >= (await count("SELECT count(*) AS n FROM deliveries WHERE state = 'dead_lettered'")),
      { timeoutMs: 120_000, intervalMs: 250, what: "a dead-letter entry for every dead-lettered delivery" },
    );
    controlling = false;
    await control;
    return await account({ relay, downstream, plan, ids, c, n, drainRate, parkedPeak, redelivered, refused, started });
  } finally {
    controlling = false;
    await control;
    if (process.env.SOAK_LOG_FILE) (await import("node:fs")).writeFileSync(process.env.SOAK_LOG_FILE, relay.logs.join("\n") + "\n");
    await relay.dispose();
    await downstream.close();
  }
}

/** The per-(event, destination) verdict and the figures per destination. */
async function account({ relay, downstream, plan, ids, c, n, drainRate, parkedPeak, redelivered, refused, started }) {
  const receipts = new Map();
  const calls = new Map();
  const inc = (m, k) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const r of downstream.requests) {
    const key = `${r.headers["x-operation-id"]}|fan-${r.path.slice(1)}`;
    inc(calls, key);
    if (r.status < 300) inc(receipts, key);
  }
  const deliveries = new Map((await rows(relay.db, "SELECT event_id, destination, state, attempts, parked_at, park_cause FROM deliveries")).map((d) => [`${d.event_id}|${d.destination}`, d]));
  const dead = new Map();
  for (const r of await rows(relay.db, "SELECT event_id, destination, entry_kind, error_code FROM dead_letters")) dead.set(`${r.event_id}|${r.destination}`, [...(dead.get(`${r.event_id}|${r.destination}`) ?? []), r]);
  const events = new Map((await rows(relay.db, "SELECT event_id, delivery_status, duplicate_count FROM events")).map((e) => [e.event_id, e]));

  const problems = [];
  const per = Object.fromEntries(DESTINATIONS.map((d) => [d, { pairs: 0, delivered: 0, parked: 0, dead_lettered: 0, lost: 0, doubled: 0, wrong_dead: 0, recalled: 0, parked_ever: 0, calls: 0 }]));
  let lostEvents = 0;
  let miscounted = 0;
  let summaryWrong = 0;
  for (const p of plan) {
    const id = ids.get(p.i);
    if (!id) {
      lostEvents++;
      problems.push(`event ${p.i} was refused at the front door`);
      continue;
    }
    const e = events.get(id);
    const expectedDup = (p.duplicate ? 1 : 0) + (p.redeliverIngest ? 1 : 0);
    if (!e || e.duplicate_count !== expectedDup) {
      miscounted++;
      const carriers = (await rows(relay.db, "SELECT queue_message_id AS first, last_message_id AS last, ingested_at, last_seen_at FROM events WHERE event_id = ?", id))[0];
      problems.push(`event ${p.i} (${id}): duplicate_count ${e?.duplicate_count}, expected ${expectedDup}; carriers ${JSON.stringify(carriers)}`);
    }
    const states = [];
    for (const dest of DESTINATIONS) {
      const f = per[dest];
      const key = `${id}|${dest}`;
      const got = receipts.get(key) ?? 0;
      const d = deliveries.get(key);
      const dl = dead.get(key) ?? [];
      f.pairs++;
      f.calls += calls.get(key) ?? 0;
      if (d?.parked_at) f.parked_ever++;
      states.push(d?.state);
      // Dead-lettered for a reason the run caused: b's 400 to a poison
      // event (one call, no more), or c's outage.
      const causedByRun =
        dl.length === 1 && dl[0].entry_kind === "delivery" && d?.state === "dead_lettered" &&
        ((dest === "fan-b" && p.poison && dl[0].error_code === "UPSTREAM_4XX") || (dest === "fan-c" && OUTAGE_CODES.has(dl[0].error_code)));
      const what = `${dest} event ${p.i} (${id}): ${got} 2xx of ${calls.get(key) ?? 0} calls, state ${d?.state}, dead letters ${JSON.stringify(dl.map((x) => x.error_code))}`;
      if (got > 1) {
        f.doubled++;
        problems.push(`doubled: ${what}`);
      } else if (got === 1) {
        if (dl.length || d?.state !== "delivered" || (dest === "fan-b" && p.poison)) {
          f.wrong_dead++;
          problems.push(`delivered, yet ${what}`);
        } else f.delivered++;
      } else if (causedByRun) {
        f.dead_lettered++;
        if (dest === "fan-b" && (calls.get(key) ?? 0) > 1) {
          f.recalled++;
          problems.push(`a refused delivery called again: ${what}`);
        }
      } else if (dest === "fan-c" && d?.state === "parked" && ["breaker", "drain"].includes(d.park_cause) && !dl.length) {
        f.parked++;
      } else {
        f.lost++;
        problems.push(`lost: ${what}`);
      }
      if (dl.length && !causedByRun) {
        f.wrong_dead++;
        problems.push(`dead-lettered for no reason the run caused: ${what}`);
      }
    }
    // The event's one summary (DESIGN §3): failed when any delivery is
    // dead-lettered and none pending or parked, else delivered.
    const want = states.includes("parked") ? "parked" : states.includes("dead_lettered") ? "failed" : "delivered";
    if (e && e.delivery_status !== want) {
      summaryWrong++;
      problems.push(`event ${p.i} (${id}): delivery_status ${e.delivery_status}, its deliveries ${states.join(",")} say ${want}`);
    }
  }

  const cReceipts = downstream.hits("/c").filter((r) => r.status < 300 && c.upAt !== null && r.at >= c.upAt);
  const drainSpanS = cReceipts.length > 1 ? (cReceipts.at(-1).at - cReceipts[0].at) / 1000 : 0;
  const lastAt = (path) => downstream.hits(path).reduce((a, r) => Math.max(a, r.at), 0);
  const elapsedS = (Date.now() - started) / 1000;
  const outageS = c.upAt !== null && c.downAt !== null ? (c.upAt - c.downAt) / 1000 : 0;
  const during = (path) => downstream.hits(path).filter((r) => r.status < 300 && r.at >= c.downAt && r.at < c.upAt).length;
  const runS = (Math.max(lastAt("/a"), lastAt("/b"), lastAt("/c")) - started) / 1000;
  return {
    n,
    pairs: plan.length * DESTINATIONS.length,
    per_destination: per,
    lost: DESTINATIONS.reduce((a, d) => a + per[d].lost, 0) + lostEvents * DESTINATIONS.length,
    doubled: DESTINATIONS.reduce((a, d) => a + per[d].doubled, 0),
    wrong_dead: DESTINATIONS.reduce((a, d) => a + per[d].wrong_dead, 0),
    recalled: DESTINATIONS.reduce((a, d) => a + per[d].recalled, 0),
    poison_events: plan.filter((p) => p.poison).length,
    miscounted,
    summary_wrong: summaryWrong,
    refused,
    duplicates_sent: plan.filter((p) => p.duplicate).length,
    redelivered_ingest: redelivered.ingest,
    redelivered_a: redelivered.a,
    redelivered_c: redelivered.c,
    redelivered_c_parked: redelivered.cParkedWhenSent,
    c_parked_peak: parkedPeak,
    c_failed_calls: c.calls,
    outage_s: Number(outageS.toFixed(1)),
    // c's outage as a share of the run (first send to the last call any destination got).
    outage_share: runS > 0 ? Number((outageS / runS).toFixed(2)) : 0,
    // The other two kept delivering while c was down.
    a_delivered_during_outage: during("/a"),
    b_delivered_during_outage: during("/b"),
    first_drained_ms: cReceipts.length ? cReceipts[0].at - c.upAt : null,
    drain_rate_achieved: drainSpanS > 0 ? Number(((cReceipts.length - 1) / drainSpanS).toFixed(1)) : 0,
    drain_rate_configured: drainRate,
    elapsed_s: Number(elapsedS.toFixed(1)),
    problems,
  };
}

/** The verdict: every failed check, by name (empty when the soak passed). */
export function fanOutFailures(r) {
  const f = [];
  if (r.refused) f.push("refused");
  if (r.lost) f.push("lost");
  if (r.doubled) f.push("doubled");
  if (r.wrong_dead) f.push("wrong_dead");
  if (r.recalled) f.push("recalled");
  if (r.miscounted) f.push("miscounted");
  if (r.summary_wrong) f.push("summary_wrong");
  if (r.per_destination["fan-b"].dead_lettered !== r.poison_events) f.push("b's dead letters are not exactly the poison events");
  if (r.per_destination["fan-a"].delivered !== r.n) f.push("a did not get every event exactly once");
  if (r.per_destination["fan-c"].parked_ever === 0) f.push("c's outage parked nothing");
  if (!r.a_delivered_during_outage || !r.b_delivered_during_outage) f.push("a or b delivered nothing while c was down");
  if (r.drain_rate_achieved > r.drain_rate_configured * 1.1) f.push("drain faster than DRAIN_RATE_PER_S");
  return f;
}

/** The counts in a few lines: the totals, then one line per destination. */
export function fanOutSummary(r) {
  const top = Object.entries(r).filter(([k]) => k !== "problems" && k !== "per_destination").map(([k, v]) => `${k}=${v}`).join(" ");
  const lines = Object.entries(r.per_destination).map(([d, f]) => `  ${d}: ${Object.entries(f).map(([k, v]) => `${k}=${v}`).join(" ")}`);
  return [top, ...lines].join("\n");
}
