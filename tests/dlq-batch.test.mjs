// The DLQ worker stores a whole webhooks-dlq batch at once: duplicates
// inside one batch, a batch that crosses capacity, and a D1 fault in the
// middle of the batch's write. Each batch here is made the way production
// makes it: poison messages sent together to `webhooks` become one hand-off
// send from the relay, so they reach the DLQ worker as one batch (their
// entries then share one dead-lettered time, which the tests check).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { adminClient } from "./support/admin.mjs";

const poison = (n, body = `not json {${n}`) => ({
  v: 1, event_id: `evt_batch_${n}`, idempotency_key: `demo-hmac:batch-${n}`, source: "demo-hmac",
  received_at_ms: Date.now(), headers: { "content-type": "application/json" }, body,
});
const sendBatch = async (relay, messages) => (await relay.producer()).sendBatch(messages.map((body) => ({ body })));
// Counters are kept per metric and label (`dlq_deduped:BAD_PAYLOAD`); sum a metric's labels.
const counter = async (relay, name) =>
  (await rows(relay.db, "SELECT sum(value) AS n FROM counters WHERE name = ? OR name LIKE ?", name, `${name}:%`))[0]?.n ?? 0;
const entries = (relay) => rows(relay.db, "SELECT * FROM dead_letters ORDER BY created_at, id");
const entryOf = async (relay, n) => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", `evt_batch_${n}`))[0];
const stored = (relay, n) => waitFor(() => entryOf(relay, n), { what: `entry ${n}` });
const deadLetterLines = (relay) => relay.logs.filter((l) => l.includes('"event":"dead_letter"')).map((l) => JSON.parse(l.slice(l.indexOf("{"))));

test("one event's dead letters inside one batch are stored once and marked seen; another event with its payload, and an undecodable message, are stored beside them", async () => {
  const relay = await startRelay();
  try {
    // Event 1 three times (three messages), and event 5 with the same payload.
    await sendBatch(relay, [poison(1, "same bad payload"), poison(2), poison(1, "same bad payload"), "garbage, not an event", poison(1, "same bad payload"), poison(5, "same bad payload")]);
    await waitFor(async () => deadLetterLines(relay).length >= 6, { what: "six dead letters triaged" });
    const all = await entries(relay);
    assert.equal(all.length, 4, "events 1, 2 and 5, and the garbage");
    assert.equal(new Set(all.map((e) => e.created_at)).size, 1, "one batch");
    const same = await entryOf(relay, 1);
    assert.equal(same.seen_count, 3, "event 1's entry, seen three times");
    const other = await entryOf(relay, 5);
    assert.equal(other.seen_count, 1, "the same payload from another event is an entry of its own (DESIGN §4)");
    assert.notEqual(other.content_hash, same.content_hash);
    const garbage = all.find((e) => e.event_id === null);
    assert.equal(JSON.parse(garbage.envelope).input.original, "garbage, not an event");
    const outcomes = deadLetterLines(relay).map((l) => l.outcome).sort();
    assert.deepEqual(outcomes, ["deduped", "deduped", "stored", "stored", "stored", "stored"]);
    assert.equal(await counter(relay, "dead_lettered"), 4);
    assert.equal(await counter(relay, "dlq_deduped"), 2);
  } finally {
    await relay.dispose();
  }
});

test("a batch that crosses capacity evicts exactly the oldest pending entries, its own last, each with a tombstone", async () => {
  const relay = await startRelay({ vars: { DLQ_CAPACITY: "5" } });
  try {
    await sendBatch(relay, [poison(10)]);
    const replayed = await stored(relay, 10);
    await relay.db.prepare("UPDATE dead_letters SET status = 'replayed' WHERE id = ?").bind(replayed.id).run();
    for (const n of [11, 12, 13]) {
      await sendBatch(relay, [poison(n)]);
      await stored(relay, n);
    }
    // 3 pending + 4 new = 7: the two oldest (11, 12) go.
    await sendBatch(relay, [14, 15, 16, 17].map((n) => poison(n)));
    await stored(relay, 17);
    const pending = async () => (await rows(relay.db, "SELECT event_id FROM dead_letters WHERE status = 'pending' ORDER BY created_at, id")).map((r) => r.event_id);
    assert.deepEqual((await pending()).sort(), ["evt_batch_13", "evt_batch_14", "evt_batch_15", "evt_batch_16", "evt_batch_17"]);
    const tombstones = async () => (await rows(relay.db, "SELECT id, event_id FROM dead_letter_tombstones ORDER BY evicted_at, id"));
    assert.deepEqual((await tombstones()).map((t) => t.event_id).sort(), ["evt_batch_11", "evt_batch_12"]);
    assert.equal((await rows(relay.db, "SELECT status FROM dead_letters WHERE id = ?", replayed.id))[0].status, "replayed");

    // 5 pending + 7 new: all five older ones go, then the batch's own two lowest ids.
    const batch = [20, 21, 22, 23, 24, 25, 26];
    await sendBatch(relay, batch.map((n) => poison(n)));
    await waitFor(async () => (await tombstones()).length === 9, { what: "nine tombstones" });
    const ids = (await rows(relay.db, `SELECT id, event_id FROM dead_letters WHERE event_id IN (${batch.map(() => "?").join(",")}) UNION ALL SELECT id, event_id FROM dead_letter_tombstones WHERE event_id IN (${batch.map(() => "?").join(",")})`, ...batch.map((n) => `evt_batch_${n}`), ...batch.map((n) => `evt_batch_${n}`))).sort((a, b) => (a.id < b.id ? -1 : 1));
    const ownEvicted = ids.slice(0, 2).map((r) => r.event_id);
    const kept = await rows(relay.db, "SELECT DISTINCT created_at FROM dead_letters WHERE status = 'pending'");
    assert.equal(kept.length, 1, "the seven arrived as one batch");
    assert.deepEqual((await pending()).sort(), ids.slice(2).map((r) => r.event_id).sort());
    assert.deepEqual((await tombstones()).map((t) => t.event_id).sort(), ["evt_batch_11", "evt_batch_12", "evt_batch_13", "evt_batch_14", "evt_batch_15", "evt_batch_16", "evt_batch_17", ...ownEvicted].sort());
    assert.ok((await rows(relay.db, "SELECT * FROM dead_letter_tombstones")).every((t) => t.content_hash && t.evicted_at > 0));
    assert.equal(await counter(relay, "drop_overflow"), 9);
    assert.equal(relay.logs.filter((l) => l.includes('"event":"evicted"')).length, 9);
  } finally {
    await relay.dispose();
  }
});

test("a D1 fault in the middle of a batch's write: the others are stored one by one at once, the refused one is retried until the repair, each stored once", async () => {
  const relay = await startRelay({ dlqVars: { DLQ_RETRY_DELAY_S: "0" } });
  try {
    for (const n of [30, 31]) {
      await sendBatch(relay, [poison(n)]);
      await stored(relay, n);
    }
    // A real failing statement inside the write: the rows before it were
    // inserted in the same transaction, which D1 then rolls back.
    await relay.db.prepare("CREATE TRIGGER fault_mid_batch BEFORE INSERT ON dead_letters WHEN NEW.event_id = 'evt_batch_34' BEGIN SELECT RAISE(ABORT, 'injected fault'); END").run();
    const failures = () => relay.logs.filter((l) => l.includes('"event":"store_failed"')).length;
    try {
      // 33 twice: one event's two dead letters, one entry.
      await sendBatch(relay, [poison(32), poison(33, "twin payload"), poison(34), poison(33, "twin payload")]);
      await waitFor(() => failures() >= 2, { what: "the refused message to fail twice" });
      const meanwhile = await entries(relay);
      assert.equal(meanwhile.length, 4, "30, 31, 32 and the twins' entry were stored while 34 waits");
      assert.ok(!meanwhile.some((e) => e.event_id === "evt_batch_34"));
      assert.equal(failures(), relay.logs.filter((l) => l.includes('"event":"store_failed"') && l.includes("injected fault")).length, "only the refused message failed");
    } finally {
      await relay.db.prepare("DROP TRIGGER fault_mid_batch").run();
    }
    await stored(relay, 34);
    const all = await entries(relay);
    assert.equal(all.length, 5, "30, 31, 32, 34 and one entry for the twins");
    const twins = all.filter((e) => JSON.parse(e.envelope).input.excerpt === "twin payload");
    assert.deepEqual(twins.map((e) => e.seen_count), [2]);
    assert.ok(all.every((e) => e.status === "pending"));
    assert.equal(await counter(relay, "dead_lettered"), 5);
    assert.equal(await counter(relay, "dlq_deduped"), 1);
    assert.ok((await counter(relay, "dlq_store_failed")) >= 2);
    assert.equal(deadLetterLines(relay).length, 6, "one WARN line per dead letter, none for a failed attempt");
  } finally {
    await relay.dispose();
  }
});

test("a claim-checked body is read from payloads for the envelope and its dedupe key, within and across batches", async () => {
  const relay = await startRelay();
  try {
    const big = JSON.stringify({ data: "b".repeat(200_000) });
    for (const id of ["evt_big_1", "evt_big_2"]) {
      await relay.db.prepare("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES (?, 'demo-hmac', ?, ?, ?)").bind(id, big, big.length, Date.now()).run();
    }
    // Moved originals, as Cloudflare moves them after max_retries.
    const moved = (id) => ({ v: 1, event_id: id, idempotency_key: `demo-hmac:${id}`, source: "demo-hmac", received_at_ms: Date.now(), headers: {}, body_ref: id, body_bytes: big.length });
    // The dedupe key (core::dead_letter::envelope::delivery::dedupe_hash), computed here on its own.
    const key = (id) => createHash("sha256").update(`\x02entry\0ingest\0demo-hmac\0\0demo-hmac:${id}\0`).update(big).digest("hex");
    const dlq = await relay.producer("WEBHOOKS_DLQ");
    // evt_big_1 moved twice in one batch (two messages of one event).
    await dlq.sendBatch([{ body: moved("evt_big_1") }, { body: moved("evt_big_1") }]);
    const first = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE content_hash = ?", key("evt_big_1")))[0], { what: "the claim-checked entry" });
    assert.equal(first.event_id, "evt_big_1");
    const env = JSON.parse(first.envelope);
    assert.equal(env.input.body_ref, first.event_id);
    assert.equal(env.input.body_bytes, big.length);
    assert.equal(env.input.excerpt, big.slice(0, 4096));
    await waitFor(async () => (await rows(relay.db, "SELECT seen_count FROM dead_letters WHERE id = ?", first.id))[0].seen_count === 2, { what: "its twin in the same batch marked it seen" });
    await dlq.send(moved("evt_big_1"));
    await waitFor(async () => (await rows(relay.db, "SELECT seen_count FROM dead_letters WHERE id = ?", first.id))[0].seen_count === 3, { what: "a later twin marked it seen" });
    // Another event with the same large body: an entry of its own.
    await dlq.send(moved("evt_big_2"));
    const second = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE content_hash = ?", key("evt_big_2")))[0], { what: "the other event's entry" });
    assert.equal(second.event_id, "evt_big_2");
    assert.equal((await entries(relay)).length, 2);
    assert.equal(await counter(relay, "dlq_deduped"), 2);
  } finally {
    await relay.dispose();
  }
});

test("ingress_last_hour counts every dead letter that arrived in the hour: a batch's new entries, its joins, the one-by-one fallback's, a join to an older entry and a replayed entry's", async () => {
  const relay = await startRelay({ dlqVars: { DLQ_RETRY_DELAY_S: "0" } });
  const admin = adminClient(relay);
  try {
    // An entry stored two hours ago (its arrival moved with it: the
    // per-minute arrivals are 0021's table; before it there is none).
    await sendBatch(relay, [poison(40, "old twin")]);
    const old = await stored(relay, 40);
    await relay.db.prepare("UPDATE dead_letters SET created_at = created_at - 7200000, last_seen_at = last_seen_at - 7200000 WHERE id = ?").bind(old.id).run();
    await relay.db.prepare("DELETE FROM dead_letter_arrivals").run().catch(() => {});

    // The batch insert: two new entries, a twin joining one of them, and a
    // twin joining the two-hour-old entry: four arrivals, two rows. A twin
    // is the same event failing again (its idempotency key is in the dedupe
    // hash: two events with one body are two entries, issue 40).
    await sendBatch(relay, [poison(41), poison(42, "twin"), poison(42, "twin"), poison(40, "old twin")]);
    await waitFor(async () => deadLetterLines(relay).length >= 5, { what: "the batch triaged" });

    // The one-by-one fallback: a fault in the batch's write, then each
    // message alone (the refused one once the fault is repaired).
    await relay.db.prepare("CREATE TRIGGER fault_ingress BEFORE INSERT ON dead_letters WHEN NEW.event_id = 'evt_batch_46' BEGIN SELECT RAISE(ABORT, 'injected fault'); END").run();
    await sendBatch(relay, [poison(45), poison(46)]);
    await stored(relay, 45);
    await relay.db.prepare("DROP TRIGGER fault_ingress").run();
    await stored(relay, 46);

    // A replayed entry still arrived in the hour; its payload failing
    // again is a new entry (nothing pending to join).
    const first = await entryOf(relay, 41);
    await relay.db.prepare("UPDATE dead_letters SET status = 'replayed' WHERE id = ?").bind(first.id).run();
    await sendBatch(relay, [poison(47, `not json {41`)]);
    await stored(relay, 47);

    const arrived = deadLetterLines(relay).length - 1; // less the two-hour-old one
    assert.equal(arrived, 7);
    const { data } = await admin.get("webhook-dlq/stats");
    assert.equal(data.ingress_last_hour, arrived, `by_status ${JSON.stringify(data.by_status)}`);
    assert.equal(Object.values(data.by_status).reduce((a, b) => a + b, 0), 6, "six rows: the joins made none");
  } finally {
    await relay.dispose();
  }
});
