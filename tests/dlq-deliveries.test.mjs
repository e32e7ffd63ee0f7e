// Dead letters per destination (issue 33, DESIGN §4), on the DLQ worker's
// side: `deliveries` messages reach `webhooks-dlq` as Cloudflare moves them
// after their retries, or inside the consumer's poison hand-off. The relay
// that writes them is not on this branch, so the rows it would have written
// (the event, its deliveries, the attempts with their destination) are
// seeded in D1 first, then the messages go through the real queue.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { eventIdOf } from "./support/jobs.mjs";

let relay, admin, downstream;
const NOW = Date.now();
const KEY = "shop:order-1";
const EVENT = eventIdOf(KEY);
const BODY = JSON.stringify({ order: 1, total: 42 });

before(async () => {
  downstream = await startDownstream({ "/shop": () => ({ status: 200 }), "/analytics": () => ({ status: 200 }), "/crm": () => ({ status: 200 }) });
  // The seeded deliveries' destinations are configured, so a delivery
  // entry's replay reaches its own destination.
  const destinations = { analytics: { url: downstream.url("/analytics") }, crm: { url: downstream.url("/crm") } };
  relay = await startRelay({
    relayVars: {
      SOURCES: JSON.stringify({ shop: { scheme: "hmac-sha256", downstream: downstream.url("/shop") } }),
      DESTINATIONS: JSON.stringify(destinations),
      WEBHOOK_SECRET_SHOP: "shop-secret",
      DOWNSTREAM_SIGNING_SECRET: "down-secret",
    },
  });
  admin = adminClient(relay, ["shop-secret", "down-secret"]);
  await seed();
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const run = (sql, ...params) => relay.db.prepare(sql).bind(...params).run();

/** An events row as the relay writes it at ingest (headers redacted there). */
async function insertEvent({ key, source = "shop", body = BODY, status, routedAt = NOW, unmatched = null, parkedAt = null }) {
  await run(`INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, queue_message_id, headers, body, body_bytes, delivery_status, routed_at, routes_unmatched, parked_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
  key, eventIdOf(key), source, key.split(":")[1], NOW - 60_000, `qm-${key}`, JSON.stringify({ "content-type": "application/json", authorization: "[REDACTED]", "x-shop": "yes" }),
  body, body.length, status, routedAt, unmatched, parkedAt);
}

const insertDelivery = (eventId, destination, state, { attempts = 0, deliveredAt = null, parkedAt = null, error = null } = {}) =>
  run(`INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, delivered_at, parked_at, park_cause, last_error) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9)`,
    eventId, destination, state, attempts, NOW - 30_000, deliveredAt, parkedAt, parkedAt ? "breaker" : null, error);

const insertAttempt = (eventId, queueMessageId, attempt, code, destination, at) =>
  run(`INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at, destination) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    eventId, queueMessageId, attempt, code === "UPSTREAM_4XX" ? "poison" : "transient", code, `${destination ?? "ingest"} failed (${attempt})`, at, destination);

/**
 * The event fans out to billing (5xx, all retries), analytics (a 400) and
 * crm (delivered), and did not match the audit route. Its ingest failed
 * once first (an attempt with no destination).
 */
async function seed() {
  await insertEvent({ key: KEY, status: "pending", unmatched: JSON.stringify(["audit"]) });
  await insertDelivery(EVENT, "billing", "pending", { attempts: 6 });
  await insertDelivery(EVENT, "analytics", "pending", { attempts: 1 });
  await insertDelivery(EVENT, "crm", "delivered", { attempts: 1, deliveredAt: NOW - 20_000 });
  await insertAttempt(EVENT, `qm-${KEY}`, 1, "D1_UNAVAILABLE", null, NOW - 50_000);
  for (let n = 1; n <= 6; n++) await insertAttempt(EVENT, "dm-billing", n, "UPSTREAM_5XX", "billing", NOW - 40_000 + n);
  await insertAttempt(EVENT, "dm-analytics", 1, "UPSTREAM_4XX", "analytics", NOW - 39_000);
  // A filtered event (routes, none matched), a legacy delivered one, and parked deliveries.
  await insertEvent({ key: "shop:filtered-1", status: "filtered", unmatched: JSON.stringify(["billing", "analytics"]) });
  await insertEvent({ key: "shop:legacy-1", status: "delivered", routedAt: null });
  await insertEvent({ key: "shop:legacy-parked", status: "parked", routedAt: null, parkedAt: NOW - 120_000 });
  await insertEvent({ key: "shop:parked-1", status: "parked" });
  await insertDelivery(eventIdOf("shop:parked-1"), "billing", "parked", { parkedAt: NOW - 90_000 });
  await run(`INSERT INTO breakers (destination, state_name, state, updated_at) VALUES ('billing', 'OPEN', '{}', ?1)`, NOW - 10_000);
}

const deliveryMessage = (destination, eventId = EVENT, key = KEY) =>
  ({ v: 1, kind: "delivery", event_id: eventId, idempotency_key: key, source: "shop", destination, received_at_ms: NOW - 60_000 });

const entriesOf = (eventId, n) => waitFor(async () => {
  const got = await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ? ORDER BY destination", eventId);
  return got.length >= n && got;
}, { what: `${n} dead letters of ${eventId}`, timeoutMs: 20_000 });

let billing, analytics;

test("a moved delivery message and a hand-off of one become delivery entries, each with only its destination's attempts", async () => {
  const dlq = await relay.producer("WEBHOOKS_DLQ");
  await dlq.send(deliveryMessage("billing"));
  await dlq.send({ kind: "poison_handoff", failure: { code: "UPSTREAM_4XX", message: "analytics answered 400" }, class: "poison", attempts: 1,
    queue_message_id: "dm-analytics", enqueued_at_ms: NOW - 39_500, failed_at_ms: NOW - 39_000, original: deliveryMessage("analytics") });
  const stored = await entriesOf(EVENT, 2);
  assert.deepEqual(stored.map((r) => [r.entry_kind, r.destination, r.kind]), [["delivery", "analytics", "poison_handoff"], ["delivery", "billing", "retries_exhausted"]],
    "two destinations failing on one event make two entries");
  [analytics, billing] = stored.map((r) => r.id);

  const b = (await admin.get(`webhook-dlq/${billing}`)).data;
  assert.equal(b.kind, "delivery");
  assert.equal(b.arrival, "retries_exhausted");
  assert.equal(b.destination, "billing");
  assert.deepEqual([b.envelope.identity.kind, b.envelope.identity.destination, b.envelope.identity.queue], ["delivery", "billing", "deliveries"]);
  assert.deepEqual(b.envelope.delivery.history.map((a) => [a.attempt, a.code]), [1, 2, 3, 4, 5, 6].map((n) => [n, "UPSTREAM_5XX"]), "billing's attempts only");
  assert.equal(b.attempts, 6);
  assert.equal(b.error_code, "UPSTREAM_5XX");
  // The event whole, from its row, for replay; a readable excerpt.
  assert.equal(b.envelope.input.excerpt, BODY);
  assert.deepEqual(b.envelope.input.original, { v: 1, event_id: EVENT, idempotency_key: KEY, source: "shop", delivery_id: "order-1", received_at_ms: NOW - 60_000,
    headers: { "content-type": "application/json", authorization: "[REDACTED]", "x-shop": "yes" }, body: BODY });
  assert.equal(b.envelope.transport.headers.authorization, "[REDACTED]");

  const a = (await admin.get(`webhook-dlq/${analytics}`)).data;
  assert.deepEqual([a.kind, a.arrival, a.destination, a.error_code], ["delivery", "poison_handoff", "analytics", "UPSTREAM_4XX"]);
  assert.deepEqual(a.envelope.delivery.history.map((x) => x.code), ["UPSTREAM_4XX"], "analytics' attempt only");

  // The deliveries rows are closed in the entries' write, and the event summed up.
  const states = Object.fromEntries((await rows(relay.db, "SELECT destination, state, last_error FROM deliveries WHERE event_id = ?", EVENT)).map((r) => [r.destination, [r.state, r.last_error]]));
  assert.deepEqual(states, { analytics: ["dead_lettered", "UPSTREAM_4XX"], billing: ["dead_lettered", "UPSTREAM_5XX"], crm: ["delivered", null] });
  assert.equal((await rows(relay.db, "SELECT delivery_status FROM events WHERE event_id = ?", EVENT))[0].delivery_status, "failed");
  const line = relay.logs.find((l) => l.includes('"event":"dead_letter"') && l.includes(billing));
  assert.match(line, /"kind":"delivery"/);
  assert.match(line, /"destination":"billing"/);
});

test("dedupe is per kind and destination: the same delivery again joins its entry, an ingest of the same event is an entry of its own", async () => {
  const dlq = await relay.producer("WEBHOOKS_DLQ");
  await dlq.send(deliveryMessage("billing"));
  await waitFor(async () => (await rows(relay.db, "SELECT seen_count FROM dead_letters WHERE id = ?", billing))[0].seen_count === 2, { what: "billing's entry seen again" });
  // The ingest of the same event failed on its own (no destination):
  // an attempt recorded with a destination under the same message is not its.
  await insertAttempt(EVENT, `qm-${KEY}`, 1, "UPSTREAM_5XX", "billing", NOW - 49_000);
  await dlq.send({ kind: "poison_handoff", failure: { code: "SCHEMA_MISMATCH", message: "bad ingest" }, class: "poison", attempts: 2,
    queue_message_id: `qm-${KEY}`, enqueued_at_ms: NOW - 60_000, failed_at_ms: NOW - 48_000,
    original: { v: 1, event_id: EVENT, idempotency_key: KEY, source: "shop", delivery_id: "order-1", received_at_ms: NOW - 60_000, headers: {}, body: BODY } });
  const all = await entriesOf(EVENT, 3);
  const ingest = all.find((r) => r.entry_kind === "ingest");
  assert.ok(ingest, JSON.stringify(all.map((r) => [r.entry_kind, r.destination])));
  assert.equal(ingest.destination, null);
  assert.equal(all.filter((r) => r.destination === "billing").length, 1, "no second billing entry");
  const env = JSON.parse(ingest.envelope);
  assert.equal(env.identity.kind, "ingest");
  assert.deepEqual(env.delivery.history.map((a) => a.code), ["D1_UNAVAILABLE", "SCHEMA_MISMATCH"], "the ingest's attempts, none with a destination");
});

test("a delivery whose event row is gone is kept with what the message says, and says so", async () => {
  const gone = eventIdOf("shop:swept-1");
  await (await relay.producer("WEBHOOKS_DLQ")).send(deliveryMessage("billing", gone, "shop:swept-1"));
  const [row] = await entriesOf(gone, 1);
  const env = JSON.parse(row.envelope);
  assert.deepEqual([row.entry_kind, row.destination, row.idempotency_key], ["delivery", "billing", "shop:swept-1"]);
  assert.equal(env.input.event_missing, true);
  assert.deepEqual(env.input.original, deliveryMessage("billing", gone, "shop:swept-1"));
});

test("the list, groups and a job's dry run filter by destination and kind; unknown fields stay refused", async () => {
  const ids = async (q) => (await admin.get(`webhook-dlq?source=shop&${q}`)).data.items.map((e) => e.id).sort();
  assert.deepEqual(await ids("destination=analytics"), [analytics]);
  const billingIds = await ids("destination=billing&kind=delivery");
  assert.ok(billingIds.includes(billing) && billingIds.length === 2, JSON.stringify(billingIds));
  const ingest = await ids("kind=ingest");
  assert.equal(ingest.length, 1);
  assert.ok(!ingest.includes(billing) && !ingest.includes(analytics));
  for (const q of ["destinaton=billing", "kind=deliveries", "destination=Bad%20Name"]) {
    const res = await admin.get(`webhook-dlq?${q}`);
    assert.equal(res.status, 400, q);
    assert.equal(res.error.code, "BAD_REQUEST", q);
  }
  const groups = (await admin.get("webhook-dlq/groups?destination=billing")).data.items;
  assert.ok(groups.length >= 1);
  assert.ok(groups.every((g) => g.destinations.join() === "billing"), JSON.stringify(groups));
  const delivery = (await admin.get("webhook-dlq/groups?kind=delivery")).data.items;
  assert.deepEqual([...new Set(delivery.flatMap((g) => g.destinations))].sort(), ["analytics", "billing"]);
  const dry = await admin.post("jobs", { action: "replay", reason: "dry run per destination", filter: { destination: "analytics" }, dry_run: true });
  assert.equal(dry.status, 200, JSON.stringify(dry.json));
  assert.equal(dry.data.matched, 1);
  assert.deepEqual(dry.data.canary_ids, [analytics]);
  const typo = await admin.post("jobs", { action: "replay", reason: "dry run per destination", filter: { destinaton: "analytics" }, dry_run: true });
  assert.equal(typo.status, 400);
  assert.match(typo.error.message, /filter\.destinaton/);
});

test("the events listing lists each event's deliveries and takes delivery_status=filtered; the story shows deliveries and unmatched routes", async () => {
  const filtered = (await admin.get("events?delivery_status=filtered")).data.items;
  assert.deepEqual(filtered.map((e) => [e.event_id, e.delivery_status, e.deliveries]), [[eventIdOf("shop:filtered-1"), "filtered", []]]);
  const listed = Object.fromEntries((await admin.get("events?source=shop")).data.items.map((e) => [e.event_id, e.deliveries.map((d) => [d.destination, d.state])]));
  assert.deepEqual(listed[EVENT], [["analytics", "dead_lettered"], ["billing", "dead_lettered"], ["crm", "delivered"]]);
  assert.deepEqual(listed[eventIdOf("shop:legacy-1")], [["shop", "delivered"]], "an event from before deliveries is one delivery to its source's destination");

  const story = (await admin.get(`events/${EVENT}`)).data;
  assert.deepEqual(story.routes_unmatched, ["audit"]);
  assert.deepEqual(story.deliveries.map((d) => [d.destination, d.state, d.history.length]), [["analytics", "dead_lettered", 1], ["billing", "dead_lettered", 7], ["crm", "delivered", 0]]);
  assert.ok(story.deliveries[1].history.every((a) => a.destination === "billing"));
  assert.equal(story.event.deliveries, undefined, "the deliveries are the story's own part");
  const none = (await admin.get(`events/${eventIdOf("shop:filtered-1")}`)).data;
  assert.deepEqual([none.deliveries, none.routes_unmatched], [[], ["billing", "analytics"]]);
});

test("stats list per destination its breaker, parked deliveries and last hour", async () => {
  const s = (await admin.get("webhook-dlq/stats")).data;
  const by = Object.fromEntries(s.destinations.map((d) => [d.destination, d]));
  assert.equal(by.billing.breaker.state, "OPEN");
  assert.equal(by.billing.parked.count, 1);
  assert.ok(by.billing.parked.oldest_age_s >= 90, JSON.stringify(by.billing));
  assert.ok(by.billing.deliveries_last_hour.dead_lettered >= 1 && by.billing.deliveries_last_hour.total >= 2, JSON.stringify(by.billing));
  assert.deepEqual(by.crm.deliveries_last_hour, { total: 1, delivered: 1, dead_lettered: 0 });
  assert.equal(by.crm.breaker, null);
  assert.equal(by.shop.parked.count, 1, "a legacy parked event counts as its source's destination");
  assert.equal(s.parked.count, 2);
});

test("the replay of a delivery entry asks the relay for its destination; an ingest entry's asks for none", async () => {
  const res = await admin.post(`webhook-dlq/${analytics}/replay`, { reason: "analytics fixed its schema" });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  const replayLine = (id) => relay.logs.find((l) => l.includes('"event":"replay"') && l.includes(id));
  assert.match(await waitFor(() => replayLine(analytics), { what: "the replay's log line" }), /"destination":"analytics"/);
  assert.equal(downstream.hits("/analytics").length, 1, "the delivery entry's replay reached its own destination");
  assert.equal(downstream.hits("/crm").length, 0, "and no other");
  const [ingest] = await rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ? AND entry_kind = 'ingest'", EVENT);
  await admin.post(`webhook-dlq/${ingest.id}/replay`, { reason: "re-ingest the event" });
  assert.match(await waitFor(() => replayLine(ingest.id), { what: "the ingest replay's log line" }), /"destination":null/);
});
