// The DLQ worker: one envelope per dead letter, dedupe of identical
// payloads, capacity with eviction and tombstones, and no loss when D1
// cannot take the dead letter.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";

const poison = (n, body = `not json {${n}`) => ({
  v: 1, event_id: `evt_dlq_${n}`, idempotency_key: `demo-hmac:dlq-${n}`, source: "demo-hmac",
  received_at_ms: Date.now(), headers: { "x-signature": "abc", authorization: "Bearer t" }, body,
});
const entry = (relay, n) => waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", `evt_dlq_${n}`))[0], { what: `entry ${n}` });
// Counters are kept per metric and label (`dlq_deduped:BAD_PAYLOAD`); sum a metric's labels.
const counter = async (relay, name) =>
  (await rows(relay.db, "SELECT sum(value) AS n FROM counters WHERE name = ? OR name LIKE ?", name, `${name}:%`))[0]?.n ?? 0;

test("a dead letter is kept as a whole envelope with the credentials redacted, and logged", async () => {
  const relay = await startRelay();
  try {
    await (await relay.producer()).send(poison(1));
    const row = await entry(relay, 1);
    const env = JSON.parse(row.envelope);
    assert.equal(env.identity.idempotency_key, "demo-hmac:dlq-1");
    assert.equal(env.identity.queue, "webhooks");
    assert.equal(env.failure.code, "BAD_PAYLOAD");
    assert.match(env.failure.signature, /^sig_[0-9a-f]{16}$/);
    assert.equal(env.input.original.body, "not json {1", "the original is kept whole");
    assert.equal(env.input.excerpt, "not json {1");
    assert.ok(env.timing.dead_lettered_at_ms >= env.timing.enqueued_at_ms);
    assert.equal(env.delivery.attempts, 1);
    assert.equal(env.transport.headers["x-signature"], "[REDACTED]");
    assert.equal(env.transport.headers.authorization, "[REDACTED]");
    assert.ok(!row.envelope.includes("Bearer t"));
    const line = await waitFor(() => relay.logs.find((l) => l.includes('"event":"dead_letter"') && l.includes(row.id)), { what: "the WARN line" });
    const fields = JSON.parse(line.slice(line.indexOf("{")));
    assert.equal(fields.level, "warn");
    for (const key of ["id", "source", "code", "class", "attempts"]) assert.ok(key in fields, key);
    assert.ok(!line.includes("not json {1"), "no payload in the log");
  } finally {
    await relay.dispose();
  }
});

test("staging, with its own queue names: the envelope names the queue the message failed on, for a hand-off and for a message Cloudflare moved", async () => {
  // The queue was once the literal "webhooks" in every envelope.
  const relay = await startRelay({ env: "staging" });
  try {
    await (await relay.producer()).send(poison(2));
    const handedOff = JSON.parse((await entry(relay, 2)).envelope);
    assert.equal(handedOff.kind, "poison_handoff");
    assert.equal(handedOff.identity.queue, "webhooks-staging");
    // A moved message arrives as the original itself, on the DLQ.
    await (await relay.producer("WEBHOOKS_DLQ")).send(poison(3));
    const moved = JSON.parse((await entry(relay, 3)).envelope);
    assert.equal(moved.kind, "retries_exhausted");
    assert.equal(moved.identity.queue, "webhooks-staging");
  } finally {
    await relay.dispose();
  }
});

test("the same event failing again is not stored twice, the entry is marked seen again; another event with its payload is an entry of its own", async () => {
  const relay = await startRelay();
  try {
    const producer = await relay.producer();
    await producer.send(poison(10, "same bad payload"));
    const first = await entry(relay, 10);
    // The same event in another message (the provider sent it again).
    await producer.send(poison(10, "same bad payload"));
    await waitFor(async () => (await rows(relay.db, "SELECT seen_count FROM dead_letters WHERE id = ?", first.id))[0].seen_count === 2, { what: "seen again" });
    assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE content_hash = ?", first.content_hash))[0].n, 1);
    assert.equal(await counter(relay, "dlq_deduped"), 1);
    // Another event with the same payload (DESIGN §4: the idempotency key is in the hash).
    await producer.send(poison(11, "same bad payload"));
    const other = await entry(relay, 11);
    assert.notEqual(other.id, first.id);
    assert.notEqual(other.content_hash, first.content_hash);
  } finally {
    await relay.dispose();
  }
});

test("at capacity the oldest pending entry is evicted with a tombstone; replayed entries are kept", async () => {
  const relay = await startRelay({ vars: { DLQ_CAPACITY: "3" } });
  try {
    const producer = await relay.producer();
    await producer.send(poison(20));
    const replayed = await entry(relay, 20);
    await relay.db.prepare("UPDATE dead_letters SET status = 'replayed' WHERE id = ?").bind(replayed.id).run();
    for (const n of [21, 22, 23, 24, 25]) {
      await producer.send(poison(n));
      await entry(relay, n);
    }
    const pending = await rows(relay.db, "SELECT event_id FROM dead_letters WHERE status = 'pending' ORDER BY created_at");
    assert.deepEqual(pending.map((r) => r.event_id), ["evt_dlq_23", "evt_dlq_24", "evt_dlq_25"]);
    assert.equal((await rows(relay.db, "SELECT status FROM dead_letters WHERE id = ?", replayed.id))[0].status, "replayed");
    const tombstones = await rows(relay.db, "SELECT * FROM dead_letter_tombstones ORDER BY evicted_at");
    assert.deepEqual(tombstones.map((t) => t.event_id), ["evt_dlq_21", "evt_dlq_22"]);
    assert.ok(tombstones.every((t) => t.content_hash && t.evicted_at > 0));
    assert.equal(await counter(relay, "drop_overflow"), 2);
    assert.equal(relay.logs.filter((l) => l.includes('"event":"evicted"')).length, 2);
  } finally {
    await relay.dispose();
  }
});

test("when D1 cannot store a dead letter the message is retried, not lost", async () => {
  const relay = await startRelay({ dlqVars: { DLQ_RETRY_DELAY_S: "0" } });
  try {
    await relay.db.prepare("ALTER TABLE dead_letters RENAME TO dead_letters_away").run();
    try {
      await (await relay.producer()).send(poison(30));
      await waitFor(() => relay.logs.filter((l) => l.includes('"event":"store_failed"')).length >= 2, { what: "failed store attempts" });
    } finally {
      await relay.db.prepare("ALTER TABLE dead_letters_away RENAME TO dead_letters").run();
    }
    const row = await entry(relay, 30);
    assert.equal(row.error_code, "BAD_PAYLOAD");
  } finally {
    await relay.dispose();
  }
});
