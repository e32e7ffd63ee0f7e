// A delivery's lease holds while its call can still be in flight (DESIGN §3,
// "At most once successfully, and always accounted"; issue 40 item 1): the
// lease lasts for the holder's own call, whose destination may have a
// `timeout_ms` far above DELIVERY_TIMEOUT_MS, so no second claimer (an
// operator's replay of the delivery, a redelivered `deliveries` message, a
// provider's duplicate POST of the event) calls the destination again while
// the first call is open, even once DELIVERY_TIMEOUT_MS + the lease margin
// (the bound core/src/deliver/lease.rs used to apply) has passed.
//
// Each case dead-letters one event (its first call answered 400, poison),
// then replays its entry through the admin API: that replay's call is the
// lease holder, held open at the destination until the test releases it.
// Once the old bound has passed, the case triggers its second claimer and
// waits for what that claimer does; only then is the held call answered
// 200. Every later request gets 200 at once, so a second call shows as a
// second request rather than hanging. Each case then checks that the
// destination saw one request for the event after its dead letter (and
// two in all: the refused one and the replay's), and that the delivery is
// `delivered`, once.
//
// On 941e3b8 the replay and the `deliveries` consumer take the lease over
// once DELIVERY_TIMEOUT_MS + 30 s has passed (platform/src/pipeline/claim.rs),
// so the first two cases see a second call. The duplicate POST passes
// there: ingest re-sends a leased delivery only after the longest timeout
// allowed (120 s) + 30 s (platform/src/pipeline/ingest.rs); it guards that a
// fix does not shorten that bound below the holder's call.
//
// The cases run concurrently (each has its own event and its own held
// call), so the file takes about one old bound, not three. The held calls
// are leased by replays (a fetch), not by the `deliveries` consumer:
// Miniflare's queue broker runs one batch of a queue at a time, so a call
// held by that consumer would hold back every later `deliveries` message,
// and no second claimer from that queue could overlap it.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { deadline, poisonScheduleMs, MARGIN_MS } from "./support/schedule.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

/** core/src/deliver/lease.rs LEASE_MARGIN_MS: the old bound was DELIVERY_TIMEOUT_MS plus this. */
const LEASE_MARGIN_MS = 30_000;
/** Small, so the old bound (DELIVERY_TIMEOUT_MS + LEASE_MARGIN_MS) comes soon. */
const DELIVERY_TIMEOUT_MS = 1000;
/** The destination's own call timeout: the most a destination may set (DELIVERY_TIMEOUT_RANGE_MS). */
const DESTINATION_TIMEOUT_MS = 120_000;
/** Past the old bound by this much before a second claimer is triggered (the two clocks' reads of now). */
const PAST_BOUND_MS = 1000;

const SOURCE = "lease";
const SOURCE_SECRET = "lease-source-secret";
const DESTINATION = "slow";

let relay, admin, destination;
/** Per case, its dead-lettered event (deadLettered). */
let events;

/**
 * A destination on loopback that counts requests per event (X-Operation-Id)
 * and answers an event's first request 400 (poison: dead-lettered at once),
 * holds its second (the replay's call) open until `release(eventId)`, and
 * answers any later one 200 at once.
 */
async function startDestination() {
  const seen = new Map();
  const gates = new Map();
  const gate = (id) => {
    if (!gates.has(id)) {
      let release;
      const opened = new Promise((r) => (release = r));
      gates.set(id, { opened, release });
    }
    return gates.get(id);
  };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      const id = req.headers["x-operation-id"];
      const list = seen.get(id) ?? [];
      list.push({ at: Date.now(), method: req.method });
      seen.set(id, list);
      const answer = (status) => {
        if (res.destroyed) return;
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: status < 300 }));
      };
      if (list.length === 1) return answer(400);
      if (list.length === 2) await gate(id).opened;
      answer(200);
    });
  });
  // A held call is answered by the test, never timed out by this server.
  server.requestTimeout = 0;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/hook`,
    calls: (id) => (seen.get(id) ?? []).length,
    release: (id) => gate(id).release(),
    releaseAll: () => [...gates.values()].forEach((g) => g.release()),
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

before(async () => {
  destination = await startDestination();
  relay = await startRelay({
    relayVars: {
      SOURCES: JSON.stringify({ [SOURCE]: { scheme: "hmac-sha256", routes: [{ to: DESTINATION }] } }),
      DESTINATIONS: JSON.stringify({ [DESTINATION]: { url: destination.url, timeout_ms: DESTINATION_TIMEOUT_MS } }),
      [secretNameFor(SOURCE)]: SOURCE_SECRET,
      DELIVERY_TIMEOUT_MS: String(DELIVERY_TIMEOUT_MS),
    },
  });
  admin = adminClient(relay, [SOURCE_SECRET]);
  events = Object.fromEntries(await Promise.all(["replay", "redelivered", "duplicate"].map(async (t) => [t, await deadLettered(t)])));
});
after(async () => {
  destination?.releaseAll();
  await relay?.dispose();
  await destination?.close();
});

/** The bound after which the old rule took a `delivering` lease over. */
const oldBoundMs = () => Number(relay.settings().vars.DELIVERY_TIMEOUT_MS) + LEASE_MARGIN_MS;
/** The most a `deliveries` message waits for its batch (its consumer's max_batch_timeout). */
const deliveriesHopMs = () => {
  const { vars, consumers } = relay.settings();
  return (consumers[vars.QUEUE_DELIVERIES].maxBatchTimeout ?? 0) * 1000;
};

const post = (body, operationId) =>
  relay.fetch(`/webhooks/${SOURCE}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SOURCE_SECRET, operationId }) });
const delivery = async (eventId) => (await rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ? AND destination = ?", eventId, DESTINATION))[0];

/** Sends an event whose call is refused (400): its delivery is dead-lettered with an entry. */
async function deadLettered(tag) {
  const body = JSON.stringify({ tag });
  const operationId = `lease-${tag}`;
  const res = await post(body, operationId);
  assert.equal(res.status, 202, await res.clone().text());
  const { event_id: eventId } = await res.json();
  const entry = await waitFor(
    async () => {
      const [e] = await rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ? AND status = 'pending'", eventId);
      return e && (await delivery(eventId))?.state === "dead_lettered" && e;
    },
    { what: `the dead letter of ${eventId}`, timeoutMs: deadline(poisonScheduleMs(relay)) },
  );
  assert.equal(destination.calls(eventId), 1, "the refused call");
  return { tag, body, operationId, eventId, entryId: entry.id };
}

/**
 * Replays the entry (the lease holder: its call is held open at the
 * destination), and waits until the old bound has passed since its claim.
 * Answers `{ replay }`, the replay's pending answer (wrapped: an async
 * function returning a promise would wait for it).
 */
async function holdPastOldBound({ eventId, entryId }) {
  const replay = admin.post(`webhook-dlq/${entryId}/replay`, { reason: "lease test: the held call" });
  await waitFor(() => destination.calls(eventId) === 2, { what: `the replay's call of ${eventId}`, timeoutMs: deadline() });
  const row = await delivery(eventId);
  assert.equal(row.state, "delivering", "the replay holds the lease while its call is open");
  // When the lease was taken (its `updated_at`; `claimed_at` is the lease's
  // stamp, written late enough for the previous release to honour it).
  const staleAt = row.updated_at + oldBoundMs() + PAST_BOUND_MS;
  assert.ok(staleAt - Date.now() + deadline(deliveriesHopMs()) < DESTINATION_TIMEOUT_MS, "the held call stays within the destination's timeout_ms");
  await waitFor(() => Date.now() > staleAt, { what: "the old lease bound to pass", timeoutMs: staleAt - Date.now() + MARGIN_MS });
  assert.equal(destination.calls(eventId), 2, "no other call before the second claimer");
  return { replay };
}

/**
 * After a second claimer that works through the `deliveries` queue was
 * triggered (from log line `fromLine` on): resolves once the relay's
 * `deliveries` consumer has either called the destination again or logged
 * anything about this event, or once the most a message waits for its
 * batch, plus the margin, has passed with neither (no message was sent).
 */
async function deliveriesConsumerSettled(eventId, fromLine) {
  const named = () => relay.logs.slice(fromLine).some((l) => l.includes(eventId) && l.includes('"component":"deliveries"'));
  try {
    await waitFor(() => destination.calls(eventId) > 2 || named(), { what: "the deliveries consumer", timeoutMs: deadline(deliveriesHopMs()) });
  } catch (e) {
    if (!/timed out/.test(e.message)) throw e;
  }
}

/** Answers the held call, then checks: one call since the dead letter, and the delivery delivered once. */
async function releaseAndCheck({ eventId, entryId }, replay, what) {
  destination.release(eventId);
  const held = await replay;
  assert.equal(
    destination.calls(eventId) - 1,
    1,
    `${what}: the destination was called ${destination.calls(eventId) - 1} times for ${eventId} after its dead letter (expected exactly 1: the held replay's)`,
  );
  assert.equal(held.status, 200, JSON.stringify(held.json));
  const row = await waitFor(async () => { const r = await delivery(eventId); return r?.state === "delivered" && r; }, { what: "the delivery delivered", timeoutMs: deadline() });
  assert.equal(row.attempts, 2, "two calls recorded in all: the refused one and the replay's");
  assert.ok(row.delivered_at > 0);
  const [entry] = await rows(relay.db, "SELECT status FROM dead_letters WHERE id = ?", entryId);
  assert.equal(entry.status, "replayed");
}


describe("a lease older than DELIVERY_TIMEOUT_MS + 30 s whose call (timeout_ms 120000) is still open is not taken over", { concurrency: true }, () => {
  test("an operator's second replay of the delivery makes no second call", async () => {
    const e = events.replay;
    const { replay } = await holdPastOldBound(e);
    const second = await admin.post(`webhook-dlq/${e.entryId}/replay`, { reason: "lease test: a second replay" });
    // What the second replay answers is not this test's point; that it
    // does not call is.
    assert.ok(second.status < 500, JSON.stringify(second.json));
    await releaseAndCheck(e, replay, "a second replay while the first replay's call is open");
  });

  test("a redelivered deliveries message makes no second call", async () => {
    const e = events.redelivered;
    const { replay } = await holdPastOldBound(e);
    const fromLine = relay.logs.length;
    const [ev] = await rows(relay.db, "SELECT idempotency_key, received_at FROM events WHERE event_id = ?", e.eventId);
    // The message the webhooks consumer sent for this delivery, delivered
    // again (queues deliver at least once).
    await (await relay.producer("DELIVERIES")).send({
      v: 1,
      kind: "delivery",
      event_id: e.eventId,
      idempotency_key: ev.idempotency_key,
      source: SOURCE,
      destination: DESTINATION,
      received_at_ms: ev.received_at,
    });
    await deliveriesConsumerSettled(e.eventId, fromLine);
    await releaseAndCheck(e, replay, "a redelivered deliveries message while a replay's call is open");
  });

  test("a provider's duplicate POST of the event (same idempotency key) makes no second call", async () => {
    const e = events.duplicate;
    const { replay } = await holdPastOldBound(e);
    const fromLine = relay.logs.length;
    const [{ duplicate_count: before }] = await rows(relay.db, "SELECT duplicate_count FROM events WHERE event_id = ?", e.eventId);
    const res = await post(e.body, e.operationId);
    assert.equal(res.status, 202, await res.clone().text());
    await waitFor(
      async () => (await rows(relay.db, "SELECT duplicate_count FROM events WHERE event_id = ?", e.eventId))[0].duplicate_count > before,
      { what: "the duplicate ingested", timeoutMs: deadline(Number(relay.settings().consumers[relay.settings().vars.QUEUE_WEBHOOKS].maxBatchTimeout ?? 0) * 1000) },
    );
    await deliveriesConsumerSettled(e.eventId, fromLine);
    await releaseAndCheck(e, replay, "a duplicate POST while a replay's call is open");
  });
});
