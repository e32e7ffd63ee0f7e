// BREAKER_OPEN_ACTION=park (the default): while a destination's breaker is
// open its events are parked in D1 (acked, no retry budget, no DLQ entry),
// and once it recovers a drain delivers them oldest first at no more than
// DRAIN_RATE_PER_S, with no new traffic and no operator action. Times are
// measured from the downstream's own receive clock.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { deadline, probeMs } from "./support/schedule.mjs";
import { checkHmacSha256 } from "../scripts/webhook-signatures.mjs";

const SECRET = "park-source-secret";
const DOWN_SECRET = "park-down-secret";
const RATE = 20;
let downstream;
// Per path: a function of the request deciding its status, set by each test.
const answer = { "/a": () => 500, "/b": () => 500, "/c": () => 500, "/d": () => 500 };

before(async () => {
  downstream = await startDownstream(
    Object.fromEntries(Object.keys(answer).map((p) => [p, (req) => ({ status: answer[p](req) })])),
  );
});
after(() => downstream?.close());

function relayFor(path, extra = {}) {
  return startRelay({
    vars: {
      SOURCES: JSON.stringify({ park: { scheme: "hmac-sha256", downstream: downstream.url(path) } }),
      WEBHOOK_SECRET_PARK: SECRET,
      DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET,
      BREAKER_FAILURE_THRESHOLD: "3",
      BREAKER_COOLDOWN_S: "1",
      RETRY_DELAYS_S: "1,1,1,1,1",
      DRAIN_RATE_PER_S: String(RATE),
      ...extra,
    },
  });
}

async function send(relay, tag) {
  const body = JSON.stringify({ tag });
  const res = await relay.fetch("/webhooks/park", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `op-${tag}` }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}

const count = async (relay, sql, ...params) => (await rows(relay.db, sql, ...params))[0].n;
const parkedCount = (relay) => count(relay, "SELECT count(*) AS n FROM events WHERE delivery_status = 'parked'");
const deadLetters = (relay) => count(relay, "SELECT count(*) AS n FROM dead_letters");

/** Opens the breaker with three failing "opener" events and waits until they are parked. */
async function openBreaker(relay, path) {
  const openers = [];
  for (let i = 0; i < 3; i++) openers.push(await send(relay, `${path}-opener-${i}`));
  await waitFor(async () => (await parkedCount(relay)) === 3, { what: "the openers to be parked", timeoutMs: 20000 });
  return openers;
}

/** The downstream's successful receipts for `path`, in receive order. */
const successes = (path) => downstream.hits(path).filter((r) => r.status === 200);

/** Event ids in the order the relay ingested them. */
const ingestOrder = async (relay, ids) => {
  const order = (await rows(relay.db, "SELECT event_id FROM events ORDER BY ingested_at, rowid")).map((r) => r.event_id);
  const wanted = new Set(ids);
  return order.filter((id) => wanted.has(id));
};

/**
 * Every event received successfully exactly once, each signed with a fresh
 * timestamp: the openers first (in the order they were parked, which a
 * failed retry can shuffle), then `order` exactly, oldest first.
 */
function assertDrainedOnce(path, openers, order) {
  const all = [...openers, ...order];
  const got = successes(path).map((r) => r.headers["x-operation-id"]).filter((id) => all.includes(id));
  assert.equal(new Set(got).size, got.length, "no event was delivered twice");
  assert.deepEqual([...got.slice(0, openers.length)].sort(), [...openers].sort(), "the openers, parked first, drain first");
  assert.deepEqual(got.slice(openers.length), order, "delivered exactly once each, oldest first");
  for (const r of successes(path)) {
    assert.deepEqual(checkHmacSha256(r.headers, r.body, DOWN_SECRET, { toleranceS: 60, now: r.at }), { ok: true });
    assert.ok(Math.abs(Number(r.headers["x-timestamp"]) - r.at / 1000) <= 2, "X-Timestamp is the time the request was sent");
  }
}

test("an outage parks every event; after recovery all drain once, oldest first, at the configured rate", async () => {
  answer["/a"] = () => 500;
  const relay = await relayFor("/a");
  try {
    const openers = await openBreaker(relay, "a");
    const ids = [];
    for (let i = 0; i < 200; i++) ids.push(await send(relay, `a-${i}`));
    await waitFor(async () => (await parkedCount(relay)) === 203, { what: "all 203 events parked", timeoutMs: 30000 });
    // The drain keeps probing (one call per cooldown) and failing: several
    // cooldowns, so the deadline is three of them (each with its drain
    // step's hop) past the margin.
    const failedBefore = downstream.hits("/a").length;
    await waitFor(() => downstream.hits("/a").length >= failedBefore + 3, { what: "three failed probes while down", timeoutMs: deadline(3 * probeMs(relay)) });
    assert.equal(await deadLetters(relay), 0, "nothing reached the DLQ");
    assert.equal(await parkedCount(relay), 203, "a failed probe leaves its event parked");
    const { data: stats } = await adminClient(relay).get("webhook-dlq/stats");
    assert.equal(stats.parked.count, 203);
    assert.equal(stats.parked.by_destination.length, 1);
    assert.equal(stats.parked.by_destination[0].count, 203);
    assert.ok(stats.parked.oldest_age_s >= 1);
    const parkedRows = await rows(relay.db, "SELECT last_delivery_error, parked_at FROM events WHERE delivery_status = 'parked'");
    assert.ok(parkedRows.every((r) => r.last_delivery_error === "UPSTREAM_5XX" && r.parked_at > 0), "the root cause is kept");

    const recoveredAt = Date.now();
    answer["/a"] = () => 200;
    await waitFor(async () => (await count(relay, "SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'")) === 203, {
      what: "all events delivered",
      timeoutMs: 40000,
    });
    assertDrainedOnce("/a", openers, await ingestOrder(relay, ids));
    const ours = successes("/a").filter((r) => ids.includes(r.headers["x-operation-id"]));
    const spanS = (ours.at(-1).at - ours[0].at) / 1000;
    const rate = (ours.length - 1) / spanS;
    const firstDrained = successes("/a")[0].at - recoveredAt;
    console.log(`# drain: ${ours.length} events in ${spanS.toFixed(2)} s = ${rate.toFixed(2)}/s (DRAIN_RATE_PER_S=${RATE}); first drained delivery ${firstDrained} ms after recovery`);
    assert.ok(rate <= RATE * 1.1, `drained at ${rate.toFixed(2)}/s, more than ${RATE}/s + 10%`);
    assert.equal(await deadLetters(relay), 0);
    await waitFor(async () => (await count(relay, "SELECT count(*) AS n FROM drains")) === 0, { what: "the drain to end" });
    const consumerAttempts = await count(relay, "SELECT count(*) AS n FROM attempts WHERE code = 'CIRCUIT_OPEN'");
    assert.equal(consumerAttempts, 0, "parking spent no retry attempt");
  } finally {
    await relay.dispose();
  }
});

test("when the destination fails again mid-drain the breaker re-opens, the rest stay parked, and drain after the next good probe", async () => {
  let delivered = 0;
  let phase = "down";
  answer["/b"] = () => {
    if (phase === "up") return 200;
    if (phase === "first-30") {
      if (delivered < 30) {
        delivered++;
        return 200;
      }
      phase = "down-again";
    }
    return 500;
  };
  const relay = await relayFor("/b");
  try {
    const openers = await openBreaker(relay, "b");
    const ids = [];
    for (let i = 0; i < 57; i++) ids.push(await send(relay, `b-${i}`));
    await waitFor(async () => (await parkedCount(relay)) === 60, { what: "60 events parked", timeoutMs: 20000 });
    phase = "first-30";
    await waitFor(() => phase === "down-again", { what: "30 drained deliveries, then a failure", timeoutMs: 20000 });
    const failedAt = downstream.hits("/b").length;
    // The breaker re-opened at once: the next call is a probe one cooldown later, and it fails too.
    await waitFor(() => downstream.hits("/b").length >= failedAt + 1, { what: "the next probe", timeoutMs: deadline(probeMs(relay)) });
    const gap = downstream.hits("/b").at(-1).at - downstream.hits("/b")[failedAt - 1].at;
    assert.ok(gap >= 900, `the step stopped and waited a cooldown before probing again (${gap} ms)`);
    assert.equal(await count(relay, "SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'"), 30);
    assert.equal(await parkedCount(relay), 30, "the rest stay parked");
    const breaker = (await rows(relay.db, "SELECT state_name FROM breakers"))[0];
    assert.equal(breaker.state_name, "OPEN");

    phase = "up";
    await waitFor(async () => (await count(relay, "SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'")) === 60, {
      what: "the rest drained",
      timeoutMs: 20000,
    });
    assertDrainedOnce("/b", openers, await ingestOrder(relay, ids));
    assert.equal(await deadLetters(relay), 0);
  } finally {
    await relay.dispose();
  }
});

test("an event parked longer than PARK_MAX_AGE is dead-lettered with its root cause, not CIRCUIT_OPEN", async () => {
  answer["/c"] = () => 500;
  const relay = await relayFor("/c", { PARK_MAX_AGE: "2s" });
  try {
    const openers = await openBreaker(relay, "c");
    // This one never reaches the destination: it is parked at once.
    const neverCalled = await send(relay, "c-never-called");
    const all = [...openers, neverCalled];
    await waitFor(async () => (await count(relay, "SELECT count(*) AS n FROM dead_letters")) === all.length, {
      what: "every parked event dead-lettered after 2 s",
      timeoutMs: 20000,
    });
    const letters = await rows(relay.db, "SELECT event_id, error_code, json_extract(envelope, '$.failure.message') AS error_message FROM dead_letters");
    assert.deepEqual(letters.map((l) => l.event_id).sort(), all.sort());
    for (const l of letters) {
      assert.equal(l.error_code, "UPSTREAM_5XX", `${l.event_id}: ${l.error_message}`);
      assert.match(l.error_message, /parked too long/);
    }
    const statuses = await rows(relay.db, "SELECT delivery_status AS s FROM events");
    assert.ok(statuses.every((r) => r.s === "failed"), JSON.stringify(statuses));
  } finally {
    await relay.dispose();
  }
});

test("a drain whose chain of messages was lost (a restart drops local queues) is resumed from D1", async () => {
  answer["/d"] = () => 500;
  const relay = await relayFor("/d");
  try {
    const openers = await openBreaker(relay, "d");
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await send(relay, `d-${i}`));
    await waitFor(async () => (await parkedCount(relay)) === 8, { what: "8 events parked" });
    // Lose the chain: every message in flight now carries a stale generation, and the step is long overdue.
    await relay.db.prepare("UPDATE drains SET generation = generation + 1000, next_step_at = 0").run();
    answer["/d"] = () => 200;
    await waitFor(() => relay.logs.some((l) => /"event":"drain_(stale|superseded)"/.test(l)), { what: "the old chain to be fenced off" });
    assert.equal(successes("/d").length, 0, "nothing drains without a live chain");
    const worker = await relay.mf.getWorker("hookrelay");
    await worker.scheduled({ cron: "*/1 * * * *" });
    await waitFor(async () => (await count(relay, "SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'")) === 8, {
      what: "the resumed drain to deliver everything",
    });
    assert.ok(relay.logs.some((l) => l.includes('"event":"drain_resumed"')));
    assertDrainedOnce("/d", openers, await ingestOrder(relay, ids));
  } finally {
    await relay.dispose();
  }
});
