// The `webhooks` consumer: exactly-once ingest, classification, per-message
// ack/retry, the retry schedule, and both roads to `webhooks-dlq`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { standardHeaders, stripeHeaders } from "./support/signers.mjs";

let relay;
before(async () => {
  relay = await startRelay({ relayVars: { RETRY_DELAYS_S: "1,1,1,1,1" } });
});
after(() => relay?.dispose());

const post = (source, body, headers) => relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers });
const deadLetter = (where, ...params) =>
  waitFor(async () => (await rows(relay.db, `SELECT * FROM dead_letters WHERE ${where}`, ...params))[0], { what: `dead letter ${where}` });

test("a provider's duplicate delivery is ingested once and counted", async () => {
  const body = JSON.stringify({ id: "evt_dup_1", object: "event" });
  const first = await post("demo-stripe", body, stripeHeaders(body));
  const second = await post("demo-stripe", body, stripeHeaders(body));
  assert.equal(first.status, 202);
  assert.equal(second.status, 202);
  const { event_id } = await first.json();
  assert.equal((await second.json()).event_id, event_id, "same event, same id");
  const row = await waitFor(async () => {
    const [r] = await rows(relay.db, "SELECT * FROM events WHERE event_id = ?", event_id);
    return r?.duplicate_count === 1 && r;
  }, { what: "the duplicate to be counted" });
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM events WHERE idempotency_key = 'demo-stripe:evt_dup_1'"))[0].n, 1);
  assert.equal(row.duplicate_count, 1);
});

test("a message that is not an event reaches webhooks-dlq after exactly one attempt, with its reason", async () => {
  const producer = await relay.producer();
  await producer.send("garbage that is not an event");
  const dl = await deadLetter("kind = 'poison_handoff' AND error_code = 'BAD_PAYLOAD'");
  assert.equal(dl.error_class, "poison");
  assert.equal(dl.attempts, 1);
  const envelope = JSON.parse(dl.envelope);
  assert.equal(envelope.input.original, "garbage that is not an event");
  const attempts = await rows(relay.db, "SELECT * FROM attempts WHERE queue_message_id = ?", envelope.identity.queue_message_id);
  assert.equal(attempts.length, 1, "one attempt, no retries");
  assert.ok(
    relay.logs.some((l) => l.includes("[consumer] ingest failed {") && l.includes('"code":"BAD_PAYLOAD"') && l.includes('"class":"poison"')),
    "the WARN line in QuestKit's format",
  );
});

test("a message with a missing field is a schema mismatch and is dead-lettered at once", async () => {
  const producer = await relay.producer();
  await producer.send({ v: 1, event_id: "evt_schema", source: "demo-hmac", received_at_ms: 1, body: "{}" });
  const dl = await deadLetter("error_code = 'SCHEMA_MISMATCH'");
  assert.equal(dl.attempts, 1);
  assert.match(JSON.parse(dl.envelope).failure.message, /idempotency_key/);
});

test("one poison message in a batch of ten: nine ingested, one dead-lettered, no batch-wide retry", async () => {
  const producer = await relay.producer();
  const good = Array.from({ length: 9 }, (_, i) => {
    const body = JSON.stringify({ n: i, batch: "mixed" });
    return {
      body: {
        v: 1, event_id: `evt_mixed_${i}`, idempotency_key: `demo-hmac:mixed-${i}`, source: "demo-hmac",
        received_at_ms: Date.now(), headers: {}, body,
      },
    };
  });
  const poison = { body: { v: 1, event_id: "evt_mixed_poison", idempotency_key: "demo-hmac:mixed-poison", source: "demo-hmac", received_at_ms: Date.now(), body: "not json {" } };
  await producer.sendBatch([...good.slice(0, 5), poison, ...good.slice(5)]);
  await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM events WHERE idempotency_key LIKE 'demo-hmac:mixed-%'"))[0].n === 9, { what: "nine ingests" });
  const dl = await deadLetter("event_id = 'evt_mixed_poison'");
  assert.equal(dl.error_code, "BAD_PAYLOAD");
  const retried = await rows(relay.db, "SELECT * FROM attempts WHERE event_id LIKE 'evt_mixed_%'");
  assert.deepEqual(retried.map((a) => a.event_id), ["evt_mixed_poison"], "only the poison message failed, once");
  const dup = await rows(relay.db, "SELECT sum(duplicate_count) AS d FROM events WHERE idempotency_key LIKE 'demo-hmac:mixed-%'");
  assert.equal(dup[0].d, 0, "no good message was delivered twice");
});

test("ingest that fails while the events table is missing is retried, then succeeds once it is back", async () => {
  await relay.db.prepare("ALTER TABLE events RENAME TO events_away").run();
  let eventId;
  try {
    const body = JSON.stringify({ type: "transient" });
    const res = await post("demo-standard", body, standardHeaders(body, { id: "msg_transient" }));
    assert.equal(res.status, 202);
    eventId = (await res.json()).event_id;
    await waitFor(async () => (await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ?", eventId)).length >= 2, { what: "two failed attempts" });
  } finally {
    await relay.db.prepare("ALTER TABLE events_away RENAME TO events").run();
  }
  const row = await waitFor(async () => (await rows(relay.db, "SELECT * FROM events WHERE event_id = ?", eventId))[0], { what: "the later attempt to succeed" });
  assert.equal(row.duplicate_count, 0);
  const attempts = await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ? ORDER BY attempt", eventId);
  assert.equal(attempts[0].code, "D1_UNAVAILABLE");
  assert.equal(attempts[0].class, "transient");
  assert.deepEqual(attempts.map((a) => a.attempt), attempts.map((_, i) => i + 1), "attempts grow 1, 2, …");
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE event_id = ?", eventId))[0].n, 0);
});
