// Capacity eviction that loses nothing, and restore (DESIGN §4): an evicted
// envelope is in the R2 archive (read here through Miniflare's own R2), its
// tombstone answers as `evicted` and is listed by `?status=evicted`; restore
// brings back the same envelope, which replays to a real loopback
// downstream; restore at capacity and of a discarded entry answer 409;
// discard erases the archived copy; a swept tombstone (crafted exactly as
// the core's key layout and NDJSON define) restores with its prior status.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { BURST_WORKER, burst } from "./support/burst.mjs";
import { hmacHeaders } from "./support/signers.mjs";

const CAPACITY = 2;
const SECRET = "evict-webhook-secret";
let relay, admin, downstream, bucket;
let broken = true;

before(async () => {
  downstream = await startDownstream({ "/d": () => ({ status: broken ? 400 : 200 }) });
  const SOURCES = { evict: { scheme: "hmac-sha256", downstream: downstream.url("/d") } };
  relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify(SOURCES), WEBHOOK_SECRET_EVICT: SECRET, DOWNSTREAM_SIGNING_SECRET: "evict-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
    vars: { DLQ_CAPACITY: String(CAPACITY) },
  });
  admin = adminClient(relay, [SECRET, "evict-down-secret"]);
  bucket = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay-dlq");
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

/** Ingests one event that the downstream refuses, and waits for its dead letter (the whole row). */
async function deadLettered(n) {
  const body = JSON.stringify({ n, at: Date.now() });
  const res = await relay.fetch("/webhooks/evict", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `evict-${n}-${Date.now()}` }) });
  assert.equal(res.status, 202);
  const { event_id } = await res.json();
  return waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", event_id))[0], { what: `dead letter of event ${n}` });
}
const pendingIds = async () => (await rows(relay.db, "SELECT id FROM dead_letters WHERE status = 'pending' ORDER BY created_at, id")).map((r) => r.id);
const tombstone = async (id) => (await rows(relay.db, "SELECT * FROM dead_letter_tombstones WHERE id = ?", id))[0];
const entryKey = (id, createdAt) => `dead_letters/${new Date(createdAt).toISOString().slice(0, 10)}/${id}.ndjson`;
const archived = async (key) => {
  const o = await bucket.get(key);
  return o === null ? null : (await o.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
};
/** Makes room below capacity by archiving the pending entries (kept as history). */
async function makeRoom() {
  for (const id of await pendingIds()) assert.equal((await admin.post(`webhook-dlq/${id}/archive`, { reason: "make room for the restore" })).status, 200);
}

test("an eviction archives the whole envelope first; its tombstone answers as evicted and is listed; restore brings it back equal, and it replays", async () => {
  const first = await deadLettered(1);
  const second = await deadLettered(2);
  await deadLettered(3);
  await deadLettered(4);
  const evicted = await waitFor(async () => (await tombstone(first.id)) && (await tombstone(second.id)) && [await tombstone(first.id), await tombstone(second.id)], { what: "two tombstones" });
  assert.equal((await pendingIds()).length, CAPACITY);

  // The stats' archive totals count what the archive holds, evictions included (DESIGN §5).
  const objects = (await bucket.list({ prefix: "dead_letters/" })).objects.length + (await bucket.list({ prefix: "payloads/" })).objects.length;
  assert.ok(objects >= 2, `${objects} archived objects`);
  const stats = await admin.get("webhook-dlq/stats");
  assert.equal(stats.status, 200, JSON.stringify(stats.json));
  assert.deepEqual(stats.data.archive, { objects, rows: 2 }, "two evicted entries, one row and their objects each");

  // The archived object is the whole row, as D1 held it, under the entry key; the tombstone names it.
  const key = entryKey(first.id, first.created_at);
  assert.equal(evicted[0].archive_key, key);
  assert.equal(evicted[0].cause, "evicted");
  assert.deepEqual(await archived(key), [first], "the archived row equals the row evicted");
  assert.ok(relay.logs.some((l) => l.includes('"event":"evicted"') && l.includes(first.id)));
  assert.ok(!relay.logs.some((l) => l.includes('"event":"evicted"') && l.includes('"n":1')), "no payload in the log");

  // GET answers the tombstone; ?status=evicted lists tombstones newest first, with the cursor.
  const one = await admin.get(`webhook-dlq/${first.id}`);
  assert.equal(one.status, 200);
  assert.equal(one.data.status, "evicted");
  assert.equal(one.data.cause, "evicted");
  assert.equal(one.data.archive_key, key);
  assert.equal(one.data.content_hash, first.content_hash);
  assert.ok(one.data.evicted_at > 0);
  const page1 = await admin.get("webhook-dlq?status=evicted&limit=1");
  assert.equal(page1.data.items.length, 1);
  assert.ok(page1.data.next_cursor, "a second page");
  const page2 = await admin.get(`webhook-dlq?status=evicted&limit=1&cursor=${encodeURIComponent(page1.data.next_cursor)}`);
  const listed = [...page1.data.items, ...page2.data.items];
  assert.deepEqual(new Set(listed.map((t) => t.id)), new Set([first.id, second.id]));
  assert.ok(listed.every((t) => t.status === "evicted"));
  assert.ok(listed[0].evicted_at >= listed[1].evicted_at, "newest first");
  assert.equal((await admin.get("webhook-dlq?status=evicted&source=evict")).status, 400, "tombstones take no other filter");

  // At capacity a restore is refused naming the capacity, and nothing is evicted for it.
  const before = await pendingIds();
  assert.equal((await admin.post(`webhook-dlq/${first.id}/restore`, { reason: "no" })).status, 400, "a reason under 5 characters");
  assert.equal((await admin.post(`webhook-dlq/${first.id}/restore`, { reason: "bring it back", force: true })).status, 400, "an unknown field");
  const full = await admin.post(`webhook-dlq/${first.id}/restore`, { reason: "bring it back" });
  assert.equal(full.status, 409);
  assert.equal(full.error.code, "AT_CAPACITY");
  assert.match(full.error.message, new RegExp(`DLQ_CAPACITY ${CAPACITY}`));
  assert.deepEqual(await pendingIds(), before);
  assert.ok(await tombstone(first.id));

  // Below capacity it comes back pending, its envelope byte-equal, audited; then it replays.
  await makeRoom();
  const restored = await admin.post(`webhook-dlq/${first.id}/restore`, { reason: "bring it back" });
  assert.equal(restored.status, 200, JSON.stringify(restored.json));
  assert.equal(restored.data.status, "pending");
  const row = (await rows(relay.db, "SELECT * FROM dead_letters WHERE id = ?", first.id))[0];
  assert.equal(row.envelope, first.envelope, "the envelope is byte-equal");
  for (const col of ["kind", "event_id", "idempotency_key", "source", "content_hash", "created_at", "error_code", "error_signature", "seen_count"]) assert.equal(row[col], first[col], col);
  assert.equal(row.status, "pending");
  assert.equal(await tombstone(first.id), undefined, "the tombstone is gone");
  const audit = await rows(relay.db, "SELECT * FROM replay_audit WHERE entry_id = ? AND action = 'restore'", first.id);
  assert.equal(audit.length, 1);
  assert.equal(audit[0].reason, "bring it back");
  broken = false;
  const replay = await admin.post(`webhook-dlq/${first.id}/replay`, { reason: "downstream fixed" });
  assert.equal(replay.status, 200, JSON.stringify(replay.json));
  assert.equal((await admin.get(`webhook-dlq/${first.id}`)).data.status, "replayed");
  assert.ok(downstream.hits("/d").some((r) => r.headers["x-operation-id"] === first.event_id && r.status === 200), "delivered downstream");
  broken = true;

  // Discard erases the archived copy (absent payload sibling is fine).
  assert.ok(await archived(key));
  assert.equal((await admin.post(`webhook-dlq/${first.id}/discard`, { reason: "no longer needed" })).status, 200);
  assert.equal(await archived(key), null, "the archived copy is erased");
  const again = await admin.post(`webhook-dlq/${first.id}/restore`, { reason: "bring it back" });
  assert.equal(again.status, 409, "a discarded entry has nothing to restore");
});

test("a missing archive object answers a clear 5xx naming its key", async () => {
  const victim = (await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letter_tombstones WHERE archive_key IS NOT NULL ORDER BY evicted_at")).at(0), { what: "a tombstone" }));
  await makeRoom();
  await bucket.delete(victim.archive_key);
  const res = await admin.post(`webhook-dlq/${victim.id}/restore`, { reason: "bring it back" });
  assert.equal(res.status, 502);
  assert.equal(res.error.code, "ARCHIVE_UNREADABLE");
  assert.ok(res.error.message.includes(victim.archive_key), res.error.message);
  assert.ok(await tombstone(victim.id), "nothing changed");
});

/** Turns a live entry into a swept one exactly as the sweep leaves it: its row under the entry key, a tombstone with cause swept. */
async function sweep(entry, status) {
  const key = entryKey(entry.id, entry.created_at);
  const row = { ...entry, status, resolved_at: Date.now() - 1000 };
  await bucket.put(key, `${JSON.stringify(row)}\n`, { customMetadata: { rows: "1" } });
  await relay.db.prepare("INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at, cause, prior_status, archive_key) VALUES (?, ?, ?, ?, ?, ?, 'swept', ?, ?)")
    .bind(entry.id, entry.content_hash, entry.event_id, entry.source, entry.error_code, Date.now(), status, key).run();
  await relay.db.prepare("DELETE FROM dead_letters WHERE id = ?").bind(entry.id).run();
  return { key, row };
}

test("a swept entry restores with the status it had, even at capacity; a swept discarded one answers 409", async () => {
  const replayedEntry = await deadLettered(10);
  const discardedEntry = await deadLettered(11);
  const { key } = await sweep(replayedEntry, "replayed");
  await sweep(discardedEntry, "discarded");
  const answer = await admin.get(`webhook-dlq/${replayedEntry.id}`);
  assert.equal(answer.data.status, "evicted");
  assert.equal(answer.data.cause, "swept");
  assert.equal(answer.data.prior_status, "replayed");
  assert.equal(answer.data.archive_key, key);
  // Fill the store: a swept entry does not come back pending, so capacity does not refuse it.
  await deadLettered(12);
  await deadLettered(13);
  await waitFor(async () => (await pendingIds()).length === CAPACITY, { what: "a full store" });
  const res = await admin.post(`webhook-dlq/${replayedEntry.id}/restore`, { reason: "audit asked for it" });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(res.data.status, "replayed");
  const back = (await rows(relay.db, "SELECT * FROM dead_letters WHERE id = ?", replayedEntry.id))[0];
  assert.equal(back.status, "replayed");
  assert.equal(back.envelope, replayedEntry.envelope);
  assert.ok(back.resolved_at > 0, "retention counts from the restore");
  const refused = await admin.post(`webhook-dlq/${discardedEntry.id}/restore`, { reason: "audit asked for it" });
  assert.equal(refused.status, 409);
  assert.equal(refused.error.code, "DISCARDED");
});

test("when the archive cannot be written nothing is evicted and the batch is retried", async () => {
  // A real fault: the DLQ worker has no ARCHIVE binding, so its R2 put throws.
  const faulty = await startRelay({
    vars: { DLQ_CAPACITY: "1" },
    dlqVars: { DLQ_RETRY_DELAY_S: "0" },
    dlqOptions: (o) => ({ ...o, r2Buckets: {} }),
  });
  try {
    const poison = (n) => ({
      v: 1, event_id: `evt_noarchive_${n}`, idempotency_key: `demo-hmac:noarchive-${n}`, source: "demo-hmac",
      received_at_ms: Date.now(), headers: {}, body: `not json {${n}`,
    });
    const producer = await faulty.producer();
    await producer.send(poison(1));
    const kept = await waitFor(async () => (await rows(faulty.db, "SELECT id FROM dead_letters WHERE event_id = 'evt_noarchive_1'"))[0], { what: "the first entry" });
    await producer.send(poison(2));
    const failed = await waitFor(() => faulty.logs.filter((l) => l.includes('"event":"store_failed"') && l.includes("could not be archived")).length >= 2 && faulty.logs, { what: "retried batches" });
    assert.ok(failed.some((l) => l.includes("ARCHIVE")), "the error names the binding");
    assert.deepEqual((await rows(faulty.db, "SELECT id FROM dead_letters")).map((r) => r.id), [kept.id], "nothing evicted, nothing stored past capacity");
    assert.equal((await rows(faulty.db, "SELECT count(*) AS n FROM dead_letter_tombstones"))[0].n, 0);
  } finally {
    await faulty.dispose();
  }
});

test("a batch that inserts and evicts its own entries archives them as inserted, and they restore", async () => {
  const own = await startRelay({ vars: { DLQ_CAPACITY: "1" } });
  const ownAdmin = adminClient(own);
  const ownBucket = await own.mf.getR2Bucket("ARCHIVE", "hookrelay-dlq");
  try {
    const poison = (n) => ({
      v: 1, event_id: `evt_own_${n}`, idempotency_key: `demo-hmac:own-${n}`, source: "demo-hmac",
      received_at_ms: Date.now(), headers: {}, body: `not json {${n}`,
    });
    // The relay dead-letters a batch of poison messages as one webhooks-dlq batch.
    await (await own.producer()).sendBatch([1, 2, 3].map((n) => ({ body: poison(n) })));
    const tombs = await waitFor(async () => {
      const t = await rows(own.db, "SELECT * FROM dead_letter_tombstones ORDER BY id");
      return t.length === 2 && t;
    }, { what: "two tombstones" });
    for (const t of tombs) {
      const o = await ownBucket.get(t.archive_key);
      assert.ok(o, `an object at ${t.archive_key}`);
      const [row] = (await o.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
      assert.equal(row.id, t.id);
      assert.equal(row.status, "pending");
      assert.equal(JSON.parse(row.envelope).identity.event_id, t.event_id);
    }
    const [survivor] = await rows(own.db, "SELECT id FROM dead_letters WHERE status = 'pending'");
    assert.equal((await ownAdmin.post(`webhook-dlq/${survivor.id}/archive`, { reason: "make room for the restore" })).status, 200);
    const res = await ownAdmin.post(`webhook-dlq/${tombs[0].id}/restore`, { reason: "bring it back" });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    const back = (await rows(own.db, "SELECT * FROM dead_letters WHERE id = ?", tombs[0].id))[0];
    const archivedRow = JSON.parse((await (await ownBucket.get(tombs[0].archive_key)).text()).trim());
    assert.equal(back.envelope, archivedRow.envelope, "the envelope is byte-equal");
    assert.equal(back.seen_count, 1, "columns the insert left to defaults take them again");
  } finally {
    await own.dispose();
  }
});

test("?status= with an unknown value is refused, naming every status the listing takes, evicted included", async () => {
  const res = await admin.get("webhook-dlq?status=evcted");
  assert.equal(res.status, 400);
  for (const s of ["pending", "replayed", "poisoned", "archived", "discarded", "evicted"]) {
    assert.match(res.error.message, new RegExp(`\\b${s}\\b`), res.error.message);
  }
});

test("concurrent restores of one entry: one restores it, the others answer 409 naming the conflict, and nothing is written twice", async () => {
  const own = await startRelay({ vars: { DLQ_CAPACITY: "1" }, extraWorkers: [BURST_WORKER] });
  const ownAdmin = adminClient(own);
  try {
    const poison = (n) => ({
      v: 1, event_id: `evt_race_${n}`, idempotency_key: `demo-hmac:race-${n}`, source: "demo-hmac",
      received_at_ms: Date.now(), headers: {}, body: `not json {${n}`,
    });
    await (await own.producer()).sendBatch([1, 2].map((n) => ({ body: poison(n) })));
    const [tomb] = await waitFor(async () => {
      const t = await rows(own.db, "SELECT id FROM dead_letter_tombstones");
      return t.length === 1 && t;
    }, { what: "a tombstone" });
    const [survivor] = await rows(own.db, "SELECT id FROM dead_letters WHERE status = 'pending'");
    assert.equal((await ownAdmin.post(`webhook-dlq/${survivor.id}/archive`, { reason: "make room for the restore" })).status, 200);
    // Each restore reads the tombstone, reads the archive object, then
    // writes; arriving together, the others read before the first write.
    const restore = { path: `webhook-dlq/${tomb.id}/restore`, body: { reason: "bring it back" } };
    const answers = await burst(own, [restore, restore, restore, restore, restore]);
    const summary = JSON.stringify(answers);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409, 409, 409, 409], summary);
    const conflicts = answers.filter((a) => a.status === 409).map((a) => a.json.error);
    assert.ok(conflicts.every((e) => e.code === "CONFLICT"), summary);
    const raced = conflicts.filter((e) => /changed while it was being restored/.test(e.message));
    assert.ok(raced.length > 0, `no restore read the tombstone before another one's write: ${summary}`);
    assert.ok(raced.every((e) => e.message.includes(`GET /api/v1/admin/webhook-dlq/${tomb.id}`)), "it says what to do next");
    assert.equal((await rows(own.db, "SELECT count(*) AS n FROM dead_letters WHERE id = ?", tomb.id))[0].n, 1);
    assert.equal((await rows(own.db, "SELECT count(*) AS n FROM dead_letter_tombstones"))[0].n, 0);
    const audit = await rows(own.db, "SELECT outcome FROM replay_audit WHERE entry_id = ? AND action = 'restore'", tomb.id);
    assert.deepEqual(audit, [{ outcome: "succeeded" }], "one audit record, for the restore that wrote");
  } finally {
    await own.dispose();
  }
});

test("concurrent restores of different entries into one free slot: one restores, the rest answer 409 AT_CAPACITY naming it, and the store never passes capacity", async () => {
  const own = await startRelay({ vars: { DLQ_CAPACITY: "2" }, extraWorkers: [BURST_WORKER] });
  const ownAdmin = adminClient(own);
  try {
    const poison = (n) => ({
      v: 1, event_id: `evt_cap_${n}`, idempotency_key: `demo-hmac:cap-${n}`, source: "demo-hmac",
      received_at_ms: Date.now(), headers: {}, body: `not json {${n}`,
    });
    // Six poison messages into a store of two: four are evicted, each with its tombstone.
    await (await own.producer()).sendBatch([1, 2, 3, 4, 5, 6].map((n) => ({ body: poison(n) })));
    const tombs = await waitFor(async () => {
      const t = await rows(own.db, "SELECT id FROM dead_letter_tombstones ORDER BY id");
      return t.length === 4 && t;
    }, { what: "four tombstones" });
    // One free slot: archive one of the two pending entries.
    const [kept] = await rows(own.db, "SELECT id FROM dead_letters WHERE status = 'pending' ORDER BY id LIMIT 1");
    assert.equal((await ownAdmin.post(`webhook-dlq/${kept.id}/archive`, { reason: "make room for one restore" })).status, 200);
    // Each restore reads one pending entry (room for one), then writes; arriving together, all pass that read.
    const answers = await burst(own, tombs.map((t) => ({ path: `webhook-dlq/${t.id}/restore`, body: { reason: "bring it back" } })));
    const summary = JSON.stringify(answers);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409, 409, 409], summary);
    for (const refused of answers.filter((a) => a.status === 409).map((a) => a.json.error)) {
      assert.equal(refused.code, "AT_CAPACITY", summary);
      assert.match(refused.message, /DLQ_CAPACITY 2/, summary);
    }
    assert.equal((await rows(own.db, "SELECT count(*) AS n FROM dead_letters WHERE status = 'pending'"))[0].n, 2, "the store is at capacity, not past it");
    assert.equal((await rows(own.db, "SELECT count(*) AS n FROM dead_letter_tombstones"))[0].n, 3, "the refused ones stay evicted");
    const audit = await rows(own.db, "SELECT entry_id FROM replay_audit WHERE action = 'restore'");
    assert.equal(audit.length, 1, "one audit record, for the restore that wrote");
  } finally {
    await own.dispose();
  }
});

test("a restored entry keeps when it was dead-lettered but takes a fresh place for eviction: the next eviction takes an older pending entry", async () => {
  const own = await startRelay({ vars: { DLQ_CAPACITY: "2" } });
  const ownAdmin = adminClient(own);
  try {
    const poison = (n) => ({
      v: 1, event_id: `evt_order_${n}`, idempotency_key: `demo-hmac:order-${n}`, source: "demo-hmac",
      received_at_ms: Date.now(), headers: {}, body: `not json {${n}`,
    });
    const producer = await own.producer();
    const entryOf = (n) => waitFor(async () => (await rows(own.db, "SELECT * FROM dead_letters WHERE event_id = ?", `evt_order_${n}`))[0], { what: `entry ${n}` });
    // One at a time, so each has its own created_at: 1 is the oldest.
    let first, second, third;
    await producer.send(poison(1));
    first = await entryOf(1);
    await producer.send(poison(2));
    second = await entryOf(2);
    await producer.send(poison(3));
    third = await entryOf(3);
    const [tomb] = await waitFor(async () => rows(own.db, "SELECT id FROM dead_letter_tombstones WHERE id = ?", first.id).then((r) => r.length && r), { what: "the oldest entry evicted" });
    assert.ok(first.created_at <= second.created_at && second.created_at <= third.created_at);
    // Room for it: archive the newest, then restore the oldest.
    assert.equal((await ownAdmin.post(`webhook-dlq/${third.id}/archive`, { reason: "make room for the restore" })).status, 200);
    const restored = await ownAdmin.post(`webhook-dlq/${tomb.id}/restore`, { reason: "bring it back" });
    assert.equal(restored.status, 200, JSON.stringify(restored.json));
    const back = (await rows(own.db, "SELECT * FROM dead_letters WHERE id = ?", first.id))[0];
    assert.equal(back.created_at, first.created_at, "created_at stays when it was dead-lettered");
    assert.ok(back.restored_at >= second.created_at, "restored_at is the restore's time");
    const one = await ownAdmin.get(`webhook-dlq/${first.id}`);
    assert.equal(one.data.restored_at, back.restored_at, "the entry shows when it was restored");
    // A new dead letter at capacity evicts the oldest by that order: entry 2, not the restored one.
    await producer.send(poison(4));
    await waitFor(async () => (await rows(own.db, "SELECT id FROM dead_letter_tombstones WHERE id = ?", second.id)).length === 1, { what: "entry 2 evicted" });
    const pending = (await rows(own.db, "SELECT event_id FROM dead_letters WHERE status = 'pending' ORDER BY event_id")).map((r) => r.event_id);
    assert.deepEqual(pending, ["evt_order_1", "evt_order_4"], "the restored entry stays");
  } finally {
    await own.dispose();
  }
});
