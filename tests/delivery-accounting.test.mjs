// Every delivery accounted for (DESIGN §3, "At most once successfully, and
// always accounted"; issue 40 items 2, 3, 5, 7 and 11), end to end with
// real faults:
// - attempts are counted on the row: a destination that always answers 500
//   gets exactly six calls, and the relay hands the sixth failure to
//   webhooks-dlq itself (the entry says its retries ran out);
// - a provider's duplicate of an event waiting out its backoff re-sends
//   nothing: the retry comes when its delay says, not at once;
// - a lost `deliveries` message and a lease that ran out unrecorded are
//   taken up by the periodic check (the `*/1` cron): the message is sent
//   again, the lease is counted `lease_expired` as a TIMEOUT attempt and
//   retried with the same X-Operation-Id;
// - the DLQ worker's triage of an entry for a delivery whose call is in
//   flight never takes the row from its holder: the 2xx is recorded, and a
//   replay of the entry calls nothing again;
// - a 2xx whose record D1 refuses (HOOKRELAY_TEST_FAULTS=record_after_2xx)
//   travels on as a message that records it: one call, delivered; and when
//   that record fails too, the lease runs out and the periodic check
//   counts it (the one case where the relay may call twice, shown).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { deadline, deadLetterScheduleMs, deliveryScheduleMs, consumerLeaseMs } from "./support/schedule.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "accounting-source-secret";
const TIMEOUT_MS = 1_000;
const relays = [];
const downstreams = [];
after(async () => {
  for (const r of relays) await r.dispose();
  for (const d of downstreams) await d.close();
});

async function relayWith(behaviours, { destinations, faults, vars = {} } = {}) {
  const downstream = await startDownstream(behaviours);
  downstreams.push(downstream);
  const names = destinations ?? Object.keys(behaviours).map((p) => p.slice(1));
  const relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ acct: { scheme: "hmac-sha256", routes: names.map((to) => ({ to })) } }),
      DESTINATIONS: JSON.stringify(Object.fromEntries(Object.keys(behaviours).map((p) => [p.slice(1), { url: downstream.url(p) }]))),
      [secretNameFor("acct")]: SOURCE_SECRET,
      RETRY_DELAYS_S: "0,0,0,0,0",
      // Six failures in a row must not open the breaker: this is the retry path.
      BREAKER_FAILURE_THRESHOLD: "10",
      DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
      MESSAGE_OVERDUE: "5s",
      ...(faults ? { HOOKRELAY_TEST_FAULTS: faults } : {}),
      ...vars,
    },
  });
  relays.push(relay);
  return { relay, downstream };
}

async function send(relay, payload, operationId = `acct-${Math.random()}`) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch("/webhooks/acct", { method: "POST", body, headers: hmacHeaders(body, { secret: SOURCE_SECRET, operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return { ...(await res.json()), body, operationId };
}
const delivery = async (relay, id, destination) => (await rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ? AND destination = ?", id, destination))[0];
const periodicCheck = async (relay) => (await relay.mf.getWorker("hookrelay")).scheduled({ cron: "*/1 * * * *" });

test("attempts are counted on the row: six calls, then the relay hands the delivery to webhooks-dlq itself", async () => {
  const { relay, downstream } = await relayWith({ "/down": () => ({ status: 500 }) });
  const { event_id } = await send(relay, { n: "six" });
  const entry = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", event_id))[0], {
    what: "the dead letter",
    timeoutMs: deadline(deadLetterScheduleMs(relay)),
  });
  assert.equal(downstream.hits("/down").length, 6, "one call per attempt, six attempts");
  assert.equal(entry.kind, "retries_exhausted", "its retries ran out");
  assert.equal(entry.attempts, 6);
  assert.ok(relay.logs.some((l) => l.includes('"event":"delivery_failed"') && l.includes('"next":"dead_letter"')), "the relay handed it over itself");
  const row = await waitFor(async () => {
    const d = await delivery(relay, event_id, "down");
    return d?.state === "dead_lettered" && d;
  }, { what: "the row closed by the triage" });
  assert.equal(row.attempts, 6);
  assert.equal(row.handed_off_at, null, "closed once its entry was stored");
});

test("a provider's duplicate of an event waiting out its backoff re-sends nothing: the retry keeps its delay", async () => {
  const retryAfterS = 6;
  const { relay, downstream } = await relayWith({
    "/later": (_r, n) => (n === 1 ? { status: 503, headers: { "retry-after": String(retryAfterS) } } : { status: 200 }),
  });
  const first = await send(relay, { n: "dup" }, "dup-1");
  await waitFor(async () => (await delivery(relay, first.event_id, "later"))?.attempts === 1, { what: "the first attempt recorded", timeoutMs: deadline(deliveryScheduleMs(relay)) });
  // The provider sends the same event again (same idempotency key), and
  // its message is redelivered: neither may bring the retry forward.
  await send(relay, { n: "dup" }, "dup-1");
  await waitFor(async () => (await delivery(relay, first.event_id, "later"))?.state === "delivered", {
    what: "the retry",
    timeoutMs: deadline(deliveryScheduleMs(relay, { failures: 1 }), retryAfterS * 1000),
  });
  const [a, b, more] = downstream.hits("/later");
  assert.equal(more, undefined, "two calls in all");
  assert.ok(b.at - a.at >= retryAfterS * 1000 - 500, `the retry came ${b.at - a.at} ms after the first call; Retry-After said ${retryAfterS} s`);
  const row = await delivery(relay, first.event_id, "later");
  assert.equal(row.attempts, 2);
});

test("a lost deliveries message and a lease that ran out unrecorded are taken up by the periodic check", async () => {
  const { relay, downstream } = await relayWith({ "/first": () => ({ status: 200 }), "/lost": () => ({ status: 200 }), "/leased": () => ({ status: 200 }) }, { destinations: ["first"] });
  const { event_id } = await send(relay, { n: "periodic" });
  await waitFor(async () => (await delivery(relay, event_id, "first"))?.state === "delivered", { what: "the routed delivery" });
  const now = Date.now();
  // A delivery whose message was lost (a local restart drops the queues),
  // and one whose holder died mid-call ten minutes ago.
  await relay.db.prepare("INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, due_at) VALUES (?1, 'lost', 'pending', 0, ?2, ?2, ?2)").bind(event_id, now - 60_000).run();
  await relay.db
    .prepare("INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, claimed_at, lease_until) VALUES (?1, 'leased', 'delivering', 0, ?2, ?2, ?2, ?3)")
    .bind(event_id, now - 600_000, now - 60_000)
    .run();
  await periodicCheck(relay);
  await waitFor(async () => (await delivery(relay, event_id, "lost"))?.state === "delivered", { what: "the lost message sent again", timeoutMs: deadline(deliveryScheduleMs(relay)) });
  const leased = await waitFor(async () => {
    const d = await delivery(relay, event_id, "leased");
    return d?.state === "delivered" && d;
  }, { what: "the run-out lease retried", timeoutMs: deadline(deliveryScheduleMs(relay, { failures: 1 })) });
  assert.equal(leased.attempts, 2, "the run-out lease counted as one attempt, then the retry");
  const [attempt] = await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ? AND destination = 'leased'", event_id);
  assert.equal(attempt.code, "TIMEOUT");
  assert.match(attempt.message, /lease_expired: .*may already have it/);
  const [retry] = downstream.hits("/leased");
  assert.equal(retry.headers["x-operation-id"], event_id, "the retry carries the same X-Operation-Id");
  assert.equal(downstream.hits("/lost").length, 1);
  const steps = await rows(relay.db, "SELECT step FROM event_steps WHERE event_id = ?", event_id);
  assert.ok(steps.some((s) => s.step === "lease_expired"), "the story says the lease ran out");
  assert.ok(relay.logs.some((l) => l.includes('"event":"messages_resent"')));
  assert.ok(relay.logs.some((l) => l.includes('"event":"lease_expired"')));
});

test("the triage of an entry for a delivery whose call is in flight leaves the row to its holder; a replay then calls nothing", async () => {
  const callMs = 4_000;
  const { relay, downstream } = await relayWith({ "/slow": () => ({ status: 200, delayMs: callMs }) }, { vars: { DELIVERY_TIMEOUT_MS: "10000" } });
  const { event_id } = await send(relay, { n: "in-flight" }, "in-flight-1");
  await waitFor(() => downstream.hits("/slow").length === 1, { what: "the call in flight", timeoutMs: deadline(deliveryScheduleMs(relay)) });
  const row = await delivery(relay, event_id, "slow");
  assert.equal(row.state, "delivering");
  // An entry for this delivery reaches the DLQ worker while the call is in
  // flight (a copy of its message that Cloudflare moved, say).
  const original = { v: 1, kind: "delivery", event_id, idempotency_key: row.event_id && (await rows(relay.db, "SELECT idempotency_key FROM events WHERE event_id = ?", event_id))[0].idempotency_key, source: "acct", destination: "slow", received_at_ms: Date.now() };
  await (await relay.producer("WEBHOOKS_DLQ")).send({
    kind: "poison_handoff",
    failure: { code: "UPSTREAM_4XX", message: "downstream answered 400" },
    class: "poison",
    attempts: 1,
    queue_message_id: "moved-copy",
    enqueued_at_ms: Date.now(),
    failed_at_ms: Date.now(),
    original,
  });
  const entry = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", event_id))[0], { what: "the entry stored" });
  const during = await delivery(relay, event_id, "slow");
  assert.ok(["delivering", "delivered"].includes(during.state), `the triage took the row from its holder: ${during.state}`);
  const done = await waitFor(async () => {
    const d = await delivery(relay, event_id, "slow");
    return d.state !== "delivering" && d;
  }, { what: "the holder's record", timeoutMs: deadline(callMs) });
  assert.equal(done.state, "delivered", "the holder's 2xx is recorded");
  const replay = await adminClient(relay).post(`webhook-dlq/${entry.id}/replay`, { reason: "check the replay" });
  assert.equal(replay.status, 200, JSON.stringify(replay.json));
  assert.equal(downstream.hits("/slow").length, 1, "the replay called nothing: the delivery had already succeeded");
});

test("a 2xx whose record D1 refuses travels on as a message that records it: one call, delivered", async () => {
  const { relay, downstream } = await relayWith({ "/ok": () => ({ status: 200 }) }, { faults: "record_after_2xx" });
  const { event_id } = await send(relay, { n: "carried" });
  const row = await waitFor(async () => {
    const d = await delivery(relay, event_id, "ok");
    return d?.state === "delivered" && d;
  }, { what: "the carried record", timeoutMs: deadline(deliveryScheduleMs(relay), deliveryScheduleMs(relay)) });
  assert.equal(row.attempts, 1);
  assert.equal(downstream.hits("/ok").length, 1, "no second call");
  assert.ok(relay.logs.some((l) => l.includes('"event":"delivery_record_carried"')));
  const steps = await rows(relay.db, "SELECT step, detail FROM event_steps WHERE event_id = ?", event_id);
  assert.ok(steps.some((s) => s.step === "delivered" && /carried/.test(s.detail)), JSON.stringify(steps));
});

test("when the carried record fails too, the lease runs out and the periodic check counts it and retries with the same X-Operation-Id", async () => {
  const { relay, downstream } = await relayWith({ "/ok": () => ({ status: 200 }) }, { faults: "record_after_2xx,record_carried" });
  const { event_id } = await send(relay, { n: "double-fault" });
  await waitFor(() => downstream.hits("/ok").length === 1, { what: "the first call", timeoutMs: deadline(deliveryScheduleMs(relay)) });
  const leaseEnd = (await delivery(relay, event_id, "ok")).lease_until;
  assert.ok(leaseEnd >= Date.now(), "leased until its holder could have recorded");
  // Nothing recorded it: once the lease runs out, the periodic check
  // counts it and the retry calls again, with the same operation id.
  await waitFor(
    async () => {
      if (Date.now() > leaseEnd) await periodicCheck(relay);
      return downstream.hits("/ok").length === 2;
    },
    { what: "the retry after the lease ran out", timeoutMs: deadline(consumerLeaseMs(TIMEOUT_MS), deliveryScheduleMs(relay)), intervalMs: 1_000 },
  );
  const [a, b] = downstream.hits("/ok");
  assert.equal(b.headers["x-operation-id"], a.headers["x-operation-id"]);
  assert.ok(relay.logs.some((l) => l.includes('"event":"lease_expired"')));
  const [attempt] = await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ?", event_id);
  assert.equal(attempt.code, "TIMEOUT");
  assert.match(attempt.message, /may already have it/);
});

test("rows and messages the previous release left are delivered once: a v1 message for a row with no due_at, a lease with no lease_until", async () => {
  const { relay, downstream } = await relayWith({ "/first": () => ({ status: 200 }), "/old": () => ({ status: 200 }), "/held": () => ({ status: 200 }), "/dead": () => ({ status: 200 }) }, { destinations: ["first"] });
  const { event_id } = await send(relay, { n: "previous-release" });
  await waitFor(async () => (await delivery(relay, event_id, "first"))?.state === "delivered", { what: "the routed delivery" });
  const [e] = await rows(relay.db, "SELECT idempotency_key, received_at FROM events WHERE event_id = ?", event_id);
  const now = Date.now();
  // As the previous release writes them: no due_at, no lease_until.
  const insert = (destination, state, claimedAt) =>
    relay.db
      .prepare("INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, claimed_at) VALUES (?1, ?2, ?3, 0, ?4, ?4, ?5)")
      .bind(event_id, destination, state, now, claimedAt)
      .run();
  await insert("old", "pending", null);
  await insert("held", "delivering", now); // its holder's call is in flight
  await insert("dead", "delivering", now - 10 * 60_000); // its holder died long ago
  const message = (destination) => ({ body: JSON.stringify({ v: 1, kind: "delivery", event_id, idempotency_key: e.idempotency_key, source: "acct", destination, received_at_ms: e.received_at }), contentType: "text" });
  await (await relay.producer("DELIVERIES")).sendBatch([message("old"), message("held"), message("old")]);
  await waitFor(async () => (await delivery(relay, event_id, "old"))?.state === "delivered", { what: "the previous release's pending delivery", timeoutMs: deadline(deliveryScheduleMs(relay)) });
  await periodicCheck(relay);
  await waitFor(async () => (await delivery(relay, event_id, "dead"))?.state === "delivered", { what: "the dead holder's lease settled and retried", timeoutMs: deadline(deliveryScheduleMs(relay, { failures: 1 })) });
  assert.equal(downstream.hits("/old").length, 1, "two copies of its message, one call");
  assert.equal(downstream.hits("/dead").length, 1);
  const held = await delivery(relay, event_id, "held");
  assert.equal(held.state, "delivering", "a lease the previous release took is honoured (for 150 s, the longest it could hold one)");
  assert.equal(downstream.hits("/held").length, 0, "and its delivery is not called meanwhile");
});
