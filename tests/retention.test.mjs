// The retention sweep (DESIGN §5): rows leave D1 for the R2 archive by age
// and by size, archive first and delete after, and a crash in between is
// finished by the next run with each row archived once by key. Durations
// and sizes are shortened through configuration only (EVENT_RETENTION,
// DLQ_RETENTION, D1_MAX_BYTES); the sweep runs through the admin API's
// POST maintenance/run, which hands it to the relay through RELAY.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, rows, waitFor } from "./support/harness.mjs";
import { adminClient } from "./support/admin.mjs";

const started = [];
after(() => Promise.all(started.map((r) => r.dispose())));

async function start(vars) {
  const relay = await startRelay({ vars });
  started.push(relay);
  const bucket = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay");
  return { relay, admin: adminClient(relay), bucket };
}

/** Inserts an event as the consumer stores it, `ageMs` old. */
async function insertEvent(db, id, status, ageMs, extra = {}) {
  const at = Date.now() - ageMs;
  await db
    .prepare(
      "INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status, parked_destination, parked_at) VALUES (?1, ?2, 'demo-hmac', ?3, ?3, ?3, '{}', ?4, ?5, ?6, ?7, ?8)",
    )
    .bind(`key-${id}`, id, at, `{"n":"${id}"}`, 9 + id.length, status, extra.parked ?? null, extra.parked ? at : null)
    .run();
  await db.prepare("INSERT INTO event_steps (event_id, at, step, component) VALUES (?1, ?2, 'delivered', 'consumer')").bind(id, at).run();
}

/** Every object under `prefix`, as { key: rows }. */
async function archived(bucket, prefix) {
  const out = {};
  let cursor;
  do {
    const page = await bucket.list({ prefix, cursor, include: ["customMetadata"] });
    for (const o of page.objects) {
      const text = await (await bucket.get(o.key)).text();
      out[o.key] = text.trim().split("\n").map((line) => JSON.parse(line));
      assert.equal(Number(o.customMetadata.rows), out[o.key].length, `${o.key} metadata rows`);
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out;
}

const run = async (admin) => {
  const res = await admin.post("maintenance/run", {});
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return res.data;
};

test("EVENT_RETENTION=2s: old delivered events go to R2 and leave D1; parked and pending stay; objects parse back to the same rows", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  for (const [id, status, extra] of [
    ["evt_old_delivered", "delivered"],
    ["evt_old_none", "none"],
    ["evt_old_failed", "failed"],
    ["evt_old_pending", "pending"],
    ["evt_old_delivering", "delivering"],
    ["evt_old_parked", "parked", { parked: "https://down.example/x" }],
  ]) {
    await insertEvent(db, id, status, 60_000, extra);
  }
  await insertEvent(db, "evt_young", "delivered", 0);
  const before = await rows(db, "SELECT * FROM events WHERE event_id IN ('evt_old_delivered','evt_old_none','evt_old_failed') ORDER BY ingested_at, event_id");

  const data = await run(admin);
  assert.equal(data.archived.events, 3, JSON.stringify(data));
  assert.equal(data.archived.event_steps, 3);
  assert.equal(data.more, false);
  assert.ok(data.objects_written >= 2, "events and their steps");
  assert.deepEqual(data.alarms, { fired: [], resolved: [] });
  assert.equal(typeof data.took_ms, "number");

  const left = (await rows(db, "SELECT event_id FROM events ORDER BY event_id")).map((r) => r.event_id);
  assert.deepEqual(left, ["evt_old_delivering", "evt_old_parked", "evt_old_pending", "evt_young"]);
  // The seeded step of each kept event is still there (the run's legacy
  // backfill adds steps of its own for the parked one: not counted here).
  const steps = await rows(db, "SELECT count(*) AS n FROM event_steps WHERE step = 'delivered' AND component = 'consumer'");
  assert.equal(steps[0].n, 4, "the kept events keep their steps");

  const objects = await archived(bucket, "events/");
  const keys = Object.keys(objects);
  assert.equal(keys.length, 1);
  assert.match(keys[0], /^events\/\d{4}-\d{2}-\d{2}\/evt_old_[a-z]+~evt_old_[a-z]+~\d+\.ndjson$/, "first~last~chunk number");
  const got = Object.values(objects)[0].sort((a, b) => a.ingested_at - b.ingested_at || a.event_id.localeCompare(b.event_id));
  assert.deepEqual(got, before, "the archived rows are the rows D1 held");
  const stepObjects = await archived(bucket, "event_steps/");
  assert.equal(Object.values(stepObjects).flat().length, 3);

  const listing = await admin.get("archive?table=events");
  assert.equal(listing.status, 200, JSON.stringify(listing.json));
  assert.deepEqual(listing.data.items.map((i) => [i.key, i.table, i.rows]), [[keys[0], "events", 3]]);
  const bad = await admin.get("archive?day=2026-13-1");
  assert.equal(bad.status, 400);
  assert.match(bad.error.message, /day/);
  for (const impossible of ["2026-13-45", "2026-02-30"]) {
    const res = await admin.get(`archive?day=${impossible}`);
    assert.equal(res.status, 400, `${impossible}: ${JSON.stringify(res.json)}`);
    assert.ok(res.error.message.includes(impossible), res.error.message);
  }
  const badTable = await admin.get("archive?table=secrets");
  assert.equal(badTable.status, 400);
  assert.match(badTable.error.message, /table/);


  const stats = (await admin.get("webhook-dlq/stats")).data;
  assert.equal(stats.rows.events, 4, "rows per table from the kept counters");
  // 4 kept events' seeded steps, and the legacy backfill's own step for
  // the parked one (src/maintenance/legacy.rs).
  assert.equal(stats.rows.event_steps, 5);
  assert.equal(stats.rows.deliveries, 1, "the deliveries table's count: the one row the backfill copied for the legacy parked event");
  const oldestKept = (await rows(db, "SELECT min(ingested_at) AS t FROM events"))[0].t;
  assert.equal(stats.oldest_kept.events, oldestKept);
  assert.equal(stats.hourly.length, 24);
  assert.ok(stats.hourly.every((h, i) => i === 0 || h.hour - stats.hourly[i - 1].hour === 3_600_000), "oldest first, hour by hour");
  assert.equal(stats.hourly.reduce((n, h) => n + h.parked, 0), 1, "the parked event, in its hour");
  assert.deepEqual(stats.archive, { objects: 2, rows: 6 });
  assert.equal(stats.storage.event_retention_ms, 2000);
  assert.equal(stats.last_sweep.error, null);
  assert.deepEqual(stats.last_sweep.result, { archived: data.archived, objects_written: data.objects_written, more: false });
});

test("an event that turns pending or gains an attempt while its chunk is moved stays in D1 with it; the next run archives it again, nothing is lost", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  const ids = ["evt_a_plain", "evt_b_turns_pending", "evt_c_gains_attempt", "evt_d_plain"];
  for (const id of ids) await insertEvent(db, id, "delivered", 60_000);
  // Without linked rows the chunk neither reads nor deletes the linked
  // tables, so drop the steps insertEvent wrote.
  await db.prepare("DELETE FROM event_steps").run();
  // The journal is written when the chunk is chosen, before its rows are
  // read and put: a real D1 trigger there plays a replay that lands
  // between the candidate read and the delete.
  await db
    .prepare(
      `CREATE TRIGGER race_the_sweep AFTER UPDATE OF journal ON sweep_state WHEN NEW.journal IS NOT NULL
       BEGIN
         UPDATE events SET delivery_status = 'pending' WHERE event_id = 'evt_b_turns_pending';
         INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at) VALUES ('evt_c_gains_attempt', 'm-race', 1, 'transient', 'UPSTREAM_5XX', 'late', 1);
       END`,
    )
    .run();
  const first = await run(admin);
  assert.equal(first.archived.events, 4, "all four were put with the chunk");
  const left = (await rows(db, "SELECT event_id, delivery_status FROM events ORDER BY event_id")).map((r) => `${r.event_id}:${r.delivery_status}`);
  assert.deepEqual(left, ["evt_b_turns_pending:pending", "evt_c_gains_attempt:delivered"], "an in-flight event and one with rows not archived stay");
  assert.equal((await rows(db, "SELECT count(*) AS n FROM attempts"))[0].n, 1, "the late attempt stays with its event");

  await db.prepare("DROP TRIGGER race_the_sweep").run();
  await db.prepare("UPDATE events SET delivery_status = 'delivered' WHERE event_id = 'evt_b_turns_pending'").run();
  const second = await run(admin);
  assert.equal(second.archived.events, 2, JSON.stringify(second));
  assert.equal(second.archived.attempts, 1, "the late attempt goes with its event");
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 0);
  const events = Object.values(await archived(bucket, "events/")).flat().map((r) => r.event_id);
  assert.deepEqual([...new Set(events)].sort(), ids, "every event is in the archive");
  const attempts = Object.values(await archived(bucket, "attempts/")).flat();
  assert.deepEqual(attempts.map((a) => a.event_id), ["evt_c_gains_attempt"]);
});

test("the first and the last event of a chunk turn unsweepable while it is moved: the middle rows go, the next chunk over the same first and last rows gets its own key, and nothing is overwritten or lost", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  const ids = ["evt_a_first", "evt_b_middle", "evt_c_middle", "evt_d_last"];
  // Each has a step, so the chunk reads and deletes the linked tables.
  for (const id of ids) await insertEvent(db, id, "delivered", 60_000);
  // The journal is written in the batch that reads the chunk's rows, after
  // them: a real D1 trigger there plays a replay of the first and the last
  // event (one of them also failing an attempt) that lands between the
  // chunk's read and its delete.
  await db
    .prepare(
      `CREATE TRIGGER race_the_ends AFTER UPDATE OF journal ON sweep_state WHEN NEW.journal IS NOT NULL
       BEGIN
         UPDATE events SET delivery_status = 'pending' WHERE event_id = 'evt_a_first';
         UPDATE events SET delivery_status = 'delivering' WHERE event_id = 'evt_d_last';
         INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at) VALUES ('evt_d_last', 'm-race', 1, 'transient', 'UPSTREAM_5XX', 'late', 1);
       END`,
    )
    .run();
  const first = await run(admin);
  assert.equal(first.archived.events, 4, JSON.stringify(first));
  const left = (await rows(db, "SELECT event_id FROM events ORDER BY event_id")).map((r) => r.event_id);
  assert.deepEqual(left, ["evt_a_first", "evt_d_last"], "the ends stay, the middle goes");
  const steps = (await rows(db, "SELECT event_id FROM event_steps ORDER BY event_id")).map((r) => r.event_id);
  assert.deepEqual(steps, ["evt_a_first", "evt_d_last"], "linked rows go only with an event that went");
  const [firstKey] = Object.keys(await archived(bucket, "events/"));

  await db.prepare("DROP TRIGGER race_the_ends").run();
  await db.prepare("UPDATE events SET delivery_status = 'delivered' WHERE event_id IN ('evt_a_first', 'evt_d_last')").run();
  const second = await run(admin);
  assert.equal(second.archived.events, 2, JSON.stringify(second));
  assert.equal(second.archived.attempts, 1, "the late attempt goes with its event");
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 0);
  assert.equal((await rows(db, "SELECT count(*) AS n FROM event_steps"))[0].n, 0);

  const objects = await archived(bucket, "events/");
  const keys = Object.keys(objects);
  assert.equal(keys.length, 2, `two objects, not one overwritten: ${keys}`);
  assert.ok(keys.every((k) => /\/evt_a_first~evt_d_last~\d+\.ndjson$/.test(k)), `both chunks start and end on the same rows: ${keys}`);
  assert.deepEqual(objects[firstKey].map((r) => r.event_id).sort(), ids, "the first object still holds the middle rows");
  const everyEvent = new Set(Object.values(objects).flat().map((r) => r.event_id));
  assert.deepEqual([...everyEvent].sort(), ids, "every event is in the archive");
  const stepObjects = Object.values(await archived(bucket, "event_steps/")).flat().map((r) => r.event_id);
  assert.deepEqual([...new Set(stepObjects)].sort(), ids, "and every step");
  const listing = await admin.get("archive?table=events");
  assert.deepEqual(listing.data.items.map((i) => i.key).sort(), keys.sort(), "GET /archive lists both");
});

test("a dead letter unarchived or discarded while its chunk is moved stays in D1 with no tombstone, and no copy of it (nor its old payload) stays in R2; tombstones are counted exactly", async () => {
  const { relay, admin, bucket } = await start({ DLQ_RETENTION: "2s" });
  const db = relay.db;
  const at = Date.now() - 60_000;
  const insert = (id, eventId, envelope) =>
    db
      .prepare(
        `INSERT INTO dead_letters (id, kind, status, event_id, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope, resolved_at)
         VALUES (?1, 'retries_exhausted', 'archived', ?2, ?1, 'UPSTREAM_5XX', 'transient', 'sig', 6, 'h-' || ?1, ?3, ?3, ?4, ?3)`,
      )
      .bind(id, eventId, at, JSON.stringify(envelope))
      .run();
  await insert("dlq_1_unarchived", null, { n: 1 });
  await insert("dlq_2_discarded", "evt_claimed", { input: { body_ref: "evt_claimed", original: "SECRET-PAYLOAD", excerpt: "SECRET" } });
  await insert("dlq_3_plain", null, { n: 3 });
  await db.prepare("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES ('evt_claimed', 'demo-hmac', 'SECRET-BODY', 11, ?1)").bind(at).run();
  // A tombstone an earlier exit left under the id of an entry in D1 (a
  // re-dead-lettered message): the sweep's tombstone replaces it.
  await db
    .prepare("INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at, cause) VALUES ('dlq_3_plain', 'h-old', NULL, NULL, 'UPSTREAM_5XX', ?1, 'evicted')")
    .bind(Date.now())
    .run();
  await db
    .prepare(
      `CREATE TRIGGER race_the_entries AFTER UPDATE OF journal ON sweep_state WHEN NEW.journal IS NOT NULL
       BEGIN
         UPDATE dead_letters SET status = 'pending', resolved_at = NULL WHERE id = 'dlq_1_unarchived';
         UPDATE dead_letters SET status = 'discarded', resolved_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000,
           envelope = json_set(envelope, '$.input.original', NULL, '$.input.excerpt', '', '$.input.erased', json('true'))
           WHERE id = 'dlq_2_discarded';
         DELETE FROM payloads WHERE event_id = 'evt_claimed';
       END`,
    )
    .run();
  const data = await run(admin);
  assert.equal(data.archived.dead_letters, 3, "all three were read and put");

  const left = await rows(db, "SELECT id, status FROM dead_letters ORDER BY id");
  assert.deepEqual(left, [{ id: "dlq_1_unarchived", status: "pending" }, { id: "dlq_2_discarded", status: "discarded" }], "an entry that changed since the read is not swept");
  const tombs = await rows(db, "SELECT id, cause, prior_status, content_hash FROM dead_letter_tombstones ORDER BY id");
  assert.deepEqual(tombs, [{ id: "dlq_3_plain", cause: "swept", prior_status: "archived", content_hash: "h-dlq_3_plain" }], "only the swept entry has a tombstone");
  const counter = (await rows(db, "SELECT value FROM counters WHERE name = 'rows:dead_letter_tombstones'"))[0].value;
  assert.equal(counter, tombs.length, "the tombstones' row counter matches the table");
  assert.equal((await admin.get("webhook-dlq/stats")).data.rows.dead_letter_tombstones, tombs.length);

  const day = new Date(at).toISOString().slice(0, 10);
  const inR2 = Object.keys({ ...(await archived(bucket, "dead_letters/")), ...(await archived(bucket, "payloads/")) }).sort();
  assert.deepEqual(inR2, [`dead_letters/${day}/dlq_3_plain.ndjson`], "no copy of a kept entry, and no payload from before the discard");
  const state = await rows(db, "SELECT journal, archive_objects, archive_rows FROM sweep_state");
  assert.deepEqual(state[0], { journal: null, archive_objects: 1, archive_rows: 1 }, "the totals count what the archive holds");
});

test("a journal's redo after an entry was unarchived leaves that entry pending in D1 with no tombstone and no copy, and sweeps the rest", async () => {
  const { relay, admin, bucket } = await start({ DLQ_RETENTION: "2s" });
  const db = relay.db;
  const at = await insertResolvedEntries(db, 2, 60_000);
  const [unarchived, swept] = ["dlq_" + "0".repeat(24), "dlq_" + "0".repeat(23) + "1"];
  const day = new Date(at).toISOString().slice(0, 10);
  // A run put both entries and crashed before its delete (its journal and
  // its objects are left); then an operator unarchived the first one.
  const journal = { table: "dead_letters", rule: "age", rows: [{ id: unarchived, at }, { id: swept, at }], exhausted: false, linked: false };
  await db.prepare("UPDATE sweep_state SET journal = ?1").bind(JSON.stringify(journal)).run();
  for (const id of [unarchived, swept]) await bucket.put(`dead_letters/${day}/${id}.ndjson`, "{}\n", { customMetadata: { rows: "1" } });
  await db.prepare("UPDATE dead_letters SET status = 'pending', resolved_at = NULL WHERE id = ?1").bind(unarchived).run();

  const data = await run(admin);
  assert.equal(data.archived.dead_letters, 1, JSON.stringify(data));
  const left = await rows(db, "SELECT id, status FROM dead_letters");
  assert.deepEqual(left, [{ id: unarchived, status: "pending" }], "an entry missing from the redo's read is not deleted");
  const tombs = (await rows(db, "SELECT id FROM dead_letter_tombstones")).map((t) => t.id);
  assert.deepEqual(tombs, [swept]);
  assert.deepEqual(Object.keys(await archived(bucket, "dead_letters/")), [`dead_letters/${day}/${swept}.ndjson`], "the pending entry's stale copy is erased");
  assert.equal((await rows(db, "SELECT journal FROM sweep_state"))[0].journal, null);
});

test("a claim-checked body whose message may still be queued is kept whatever EVENT_RETENTION; once past the queues' horizon it goes", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  const day = 86_400_000;
  for (const [id, age] of [["evt_claim_retrying", 60_000], ["evt_claim_expired", 29 * day]]) {
    await db.prepare("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES (?1, 'demo-hmac', 'big', 3, ?2)").bind(id, Date.now() - age).run();
  }
  const data = await run(admin);
  assert.equal(data.archived.payloads, 1, JSON.stringify(data));
  const left = (await rows(db, "SELECT event_id FROM payloads")).map((r) => r.event_id);
  assert.deepEqual(left, ["evt_claim_retrying"], "a body whose message is still retrying is not an orphan yet");
  const objects = Object.values(await archived(bucket, "payloads/")).flat().map((r) => r.event_id);
  assert.deepEqual(objects, ["evt_claim_expired"]);
});

/** Inserts `n` resolved (archived) dead letters, resolved `ageMs` ago. */
async function insertResolvedEntries(db, n, ageMs) {
  const at = Date.now() - ageMs;
  await db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
       INSERT INTO dead_letters (id, kind, status, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope, resolved_at)
       SELECT printf('dlq_%024d', i), 'retries_exhausted', 'archived', printf('m%d', i), 'UPSTREAM_5XX', 'transient', 'sig', 6, printf('h%d', i), ?2, ?2, '{"n":' || i || '}', ?2 FROM n`,
    )
    .bind(n, at)
    .run();
  return at;
}

test("a crash between the R2 write and the D1 delete leaves the rows; the next run finishes with each row archived once by key", async () => {
  const { relay, admin, bucket } = await start({ DLQ_RETENTION: "2s" });
  const db = relay.db;
  await insertResolvedEntries(db, 3, 60_000);
  const before = await rows(db, "SELECT * FROM dead_letters ORDER BY id");
  // Only the delete batch writes a tombstone's archive key: with that
  // column really gone (migration 0010 added it), the batch fails after
  // the objects were put. (Renaming the table away would fail earlier: the
  // run reads the tombstones' candidates with the other small tables.)
  await db.prepare("ALTER TABLE dead_letter_tombstones DROP COLUMN archive_key").run();
  const failed = await admin.post("maintenance/run", {});
  assert.notEqual(failed.status, 200, "the run reports its failure");
  assert.match(failed.error.message, /dead_letter_tombstones/, "naming the table D1 could not reach");
  assert.equal((await rows(db, "SELECT count(*) AS n FROM dead_letters"))[0].n, 3, "nothing deleted");
  const journal = await rows(db, "SELECT journal, last_error FROM sweep_state");
  assert.ok(journal[0].journal, "the chunk is journaled");
  assert.match(journal[0].last_error, /dead_letter_tombstones/);
  const first = await archived(bucket, "dead_letters/");
  assert.equal(Object.keys(first).length, 3, "the objects were written before the failure");

  await db.prepare("ALTER TABLE dead_letter_tombstones ADD COLUMN archive_key TEXT").run();
  const data = await run(admin);
  assert.equal(data.archived.dead_letters, 3, JSON.stringify(data));
  assert.equal((await rows(db, "SELECT count(*) AS n FROM dead_letters"))[0].n, 0);
  const second = await archived(bucket, "dead_letters/");
  assert.deepEqual(Object.keys(second), Object.keys(first), "the same keys, overwritten");
  assert.deepEqual(Object.values(second).flat(), before, "each row once, as D1 held it");
  const state = await rows(db, "SELECT journal, last_error, archive_objects, archive_rows FROM sweep_state");
  assert.deepEqual(state[0], { journal: null, last_error: null, archive_objects: 3, archive_rows: 3 }, "the redo is not counted twice");
  const tombs = await rows(db, "SELECT id, cause, prior_status, archive_key FROM dead_letter_tombstones ORDER BY id");
  assert.deepEqual(tombs.map((t) => [t.cause, t.prior_status, t.archive_key]), Object.keys(first).sort().map((k) => ["swept", "archived", k]));
});

test("a small D1_MAX_BYTES sweeps the oldest sweepable events first, whatever their age", async () => {
  const { relay, admin, bucket } = await start({ D1_MAX_BYTES: "1KB" });
  const db = relay.db;
  // 600 young events (more than one chunk of 450), all within EVENT_RETENTION (30d),
  // one second apart over ten minutes from yesterday's noon (UTC): one archive day whatever the
  // hour the test runs (from now - 10 min they crossed midnight near 00:00).
  const youngBase = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - 12 * 3_600_000;
  await db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 599)
       INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status)
       SELECT printf('k%04d', i), printf('evt_%04d', i), 'demo-hmac', ?1 + i * 1000, ?1 + i * 1000, ?1 + i * 1000, '{}', 'x', 1, 'delivered' FROM n`,
    )
    .bind(youngBase)
    .run();
  await insertEvent(db, "evt_parked", "parked", 3_600_000, { parked: "https://down.example/x" });
  const sizeBefore = (await admin.get("webhook-dlq/stats")).data.storage.size_bytes;
  const first = await run(admin);
  assert.equal(first.archived.events, 600, JSON.stringify(first));
  const objects = await archived(bucket, "events/");
  const day = new Date(youngBase).toISOString().slice(0, 10);
  assert.deepEqual(Object.keys(objects).sort().map((k) => k.replace(/~\d+\.ndjson$/, "")), [`events/${day}/evt_0000~evt_0449`, `events/${day}/evt_0450~evt_0599`], "oldest first, in chunks of 450");
  const left = await rows(db, "SELECT event_id FROM events");
  assert.deepEqual(left.map((r) => r.event_id), ["evt_parked"], "a parked event is never swept, by either rule");
  const stats = (await admin.get("webhook-dlq/stats")).data;
  console.log(`# D1 meta.size_after: before ${sizeBefore}, after deleting 600 events ${stats.storage.size_bytes}`);
  assert.equal(stats.storage.cap_bytes, 1000);
  assert.ok(stats.storage.effective_dedupe_window_ms < stats.storage.event_retention_ms, JSON.stringify(stats.storage));
  assert.equal(stats.rows.events, 1, "rows per table from the kept counters");
  assert.equal(stats.archive.rows, 600);
  assert.equal(stats.hourly.length, 24);
});

test("maintenance/run answers more:true while work is left, and the continuation messages finish it", async () => {
  const { relay, admin, bucket } = await start({ DLQ_RETENTION: "2s" });
  const db = relay.db;
  // 120 resolved entries: 10 per chunk, and each chunk costs D1 calls and
  // R2 puts against one step's budget of 40 subrequests.
  const old = await insertResolvedEntries(db, 120, 60_000);
  const first = await run(admin);
  assert.equal(first.more, true, JSON.stringify(first));
  assert.ok(first.archived.dead_letters > 0 && first.archived.dead_letters < 120, JSON.stringify(first));
  const tomb = await rows(db, "SELECT cause, prior_status, archive_key FROM dead_letter_tombstones ORDER BY id LIMIT 1");
  assert.deepEqual(tomb[0], { cause: "swept", prior_status: "archived", archive_key: `dead_letters/${new Date(old).toISOString().slice(0, 10)}/dlq_${"0".repeat(24)}.ndjson` });
  await waitFor(async () => JSON.parse((await rows(db, "SELECT last_result FROM sweep_state"))[0].last_result).more === false, {
    timeoutMs: 60_000,
    what: "the continuation messages to finish the sweep",
  });
  assert.equal((await rows(db, "SELECT count(*) AS n FROM dead_letters"))[0].n, 0);
  // Each swept entry left a tombstone; with DLQ_RETENTION=2s the older
  // tombstones were swept in turn, to the archive.
  const inD1 = (await rows(db, "SELECT id FROM dead_letter_tombstones WHERE cause = 'swept'")).map((r) => r.id);
  const tombObjects = Object.values(await archived(bucket, "dead_letter_tombstones/")).flat();
  assert.equal(new Set([...inD1, ...tombObjects.map((t) => t.id)]).size, 120, "each swept entry leaves a tombstone");
  assert.ok(tombObjects.every((t) => t.cause === "swept" && t.archive_key.startsWith("dead_letters/")));
  assert.equal(Object.keys(await archived(bucket, "dead_letters/")).length, 120, "one object per entry");
  const stats = (await admin.get("webhook-dlq/stats")).data;
  assert.equal(stats.archive.rows, 120 + tombObjects.length);
  assert.equal(stats.last_sweep.error, null);
  assert.equal(stats.last_sweep.result.more, false);
});

test("a continuation step that fails (a column really gone) is retried still current, and the chain finishes without another run", async () => {
  const { relay, admin } = await start({ DLQ_RETENTION: "2s" });
  const db = relay.db;
  await insertResolvedEntries(db, 40, 60_000);
  const first = await run(admin);
  assert.equal(first.more, true, JSON.stringify(first));
  // The next step, from the continuation message a second later, fails in
  // its delete batch (after its puts), as in the crash test above.
  await db.prepare("ALTER TABLE dead_letter_tombstones DROP COLUMN archive_key").run();
  const failedLines = () => relay.logs.filter((l) => l.includes('"event":"sweep_continuation_failed"'));
  await waitFor(() => failedLines().length >= 1, { what: "the continuation step to fail", timeoutMs: 20_000 });
  await db.prepare("ALTER TABLE dead_letter_tombstones ADD COLUMN archive_key TEXT").run();
  // No maintenance/run and no cron from here: the retried message must carry the chain on.
  await waitFor(async () => (await rows(db, "SELECT count(*) AS n FROM dead_letters"))[0].n === 0, {
    what: "the retried continuation to finish the sweep",
    timeoutMs: 60_000,
    intervalMs: 500,
  });
  await waitFor(async () => JSON.parse((await rows(db, "SELECT last_result FROM sweep_state"))[0].last_result).more === false, {
    what: "the chain to run to its end",
    timeoutMs: 60_000,
  });
  const state = await rows(db, "SELECT journal, last_error FROM sweep_state");
  assert.deepEqual(state[0], { journal: null, last_error: null });
});

test("the audit route says how far back D1 holds it: records older than DLQ_RETENTION are in the archive, not in the page", async () => {
  const { relay, admin, bucket } = await start({ DLQ_RETENTION: "2s" });
  const db = relay.db;
  const old = Date.now() - 60_000;
  await db
    .prepare("INSERT INTO replay_audit (entry_id, actor, reason, outcome, at, action) VALUES ('dlq_old', 'ops', 'an old decision', 'succeeded', ?1, 'replay')")
    .bind(old)
    .run();
  const deadline = Date.now() + 30_000;
  while ((await run(admin)).more) assert.ok(Date.now() < deadline, "the sweep finishes within 30 s");
  const before = Date.now();
  const page = await admin.get("audit");
  assert.equal(page.status, 200, JSON.stringify(page));
  assert.equal(page.data.retention_ms, 2000);
  assert.equal(page.data.archived_under, "replay_audit/");
  assert.ok(page.data.held_since >= before - 2000 && page.data.held_since <= Date.now() - 2000, `held_since ${page.data.held_since}`);
  assert.ok(page.data.held_since > old, "the old record is before what D1 holds");
  assert.ok(!page.data.items.some((r) => r.entry_id === "dlq_old"), "and it is no longer in the page");
  const objects = Object.values(await archived(bucket, "replay_audit/")).flat();
  assert.deepEqual(objects.map((r) => [r.entry_id, r.at]), [["dlq_old", old]], "it is in the archive under the prefix the route names");
});

/** A small seeded generator (mulberry32), so each generated case repeats. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The rule of core/src/retention/tables.rs as this test's oracle (the SQL
// is built from core's statement; this checks what it does on real rows).
// A legacy event's (routed_at NULL) own delivery_status it may go in; an
// event with deliveries rows goes when none of them owes a call.
const SWEEPABLE_DELIVERY = ["none", "filtered", "delivered", "failed"];
const DELIVERY_STATES = ["pending", "delivering", "delivered", "parked", "dead_lettered"];
const OWES_A_CALL = ["pending", "delivering", "parked"];
const RESOLVED = ["replayed", "poisoned", "archived", "discarded"];
const FINISHED = ["completed", "aborted", "cancelled"];

/** Seeds every swept table with generated rows, old and young, held and not; answers what the rule says goes. */
async function seedEveryTable(db, random) {
  const HOUR = 3_600_000;
  const now = Date.now();
  const pick = (xs) => xs[Math.floor(random() * xs.length)];
  const at = () => (random() < 0.5 ? now - 2 * HOUR : now);
  const old = (t) => t < now - HOUR;
  const goes = { events: [], deliveries: [], attempts: [], payloads: [], dead_letters: [], jobs: [], drains: [], alarms: [], replay_audit: [], dead_letter_tombstones: [] };
  const stays = Object.fromEntries(Object.keys(goes).map((k) => [k, []]));
  const put = (table, id, go) => (go ? goes : stays)[table].push(id);
  const run = (sql, ...args) => db.prepare(sql).bind(...args).run();

  const events = [];
  for (let i = 0; i < 8; i++) {
    const [id, status, t] = [`evt_${i}`, pick([...SWEEPABLE_DELIVERY, "pending", "delivering"]), at()];
    await run("INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status) VALUES (?1, ?1, 'demo-hmac', ?2, ?2, ?2, '{}', '{}', 2, ?3)", id, t, status);
    const go = old(t) && SWEEPABLE_DELIVERY.includes(status);
    events.push({ id, go });
    put("events", id, go);
  }
  const insertRouted = async (id, t, summary) => {
    await run("INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status, routed_at) VALUES (?1, ?1, 'demo-hmac', ?2, ?2, ?2, '{}', '{}', 2, ?3, ?2)", id, t, summary);
  };
  const insertDelivery = (id, dest, state, t) =>
    run("INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, parked_at) VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5)", id, dest, state, t, state === "parked" ? t : null);
  for (let i = 0; i < 8; i++) {
    // The summary is drawn apart from the rows: the rows decide.
    const [id, t, summary] = [`evt_routed_${i}`, at(), pick(["pending", "parked", "failed", "delivered", "filtered"])];
    const states = Array.from({ length: Math.floor(random() * 3) }, () => pick(DELIVERY_STATES));
    await insertRouted(id, t, summary);
    const go = old(t) && !states.some((s) => OWES_A_CALL.includes(s));
    put("events", id, go);
    for (const [j, state] of states.entries()) {
      await insertDelivery(id, `dest-${j}`, state, t);
      put("deliveries", `${id}/dest-${j}`, go);
    }
  }
  for (let i = 0; i < 4; i++) {
    const dest = `dest-drain-${i}`;
    const [t, parked] = [at(), random() < 0.5];
    await run("INSERT INTO drains (destination, generation, next_step_at, updated_at) VALUES (?1, 1, ?2, ?3)", dest, now + 24 * HOUR, t);
    if (parked) {
      await insertRouted(`evt_drain_${i}`, now - 2 * HOUR, "parked");
      await insertDelivery(`evt_drain_${i}`, dest, "parked", now - 2 * HOUR);
      put("events", `evt_drain_${i}`, false);
      put("deliveries", `evt_drain_${i}/${dest}`, false);
    }
    put("drains", dest, old(t) && !parked);
  }
  for (let i = 0; i < 6; i++) {
    const dest = `https://d${i}.example/x`;
    const [t, parked] = [at(), random() < 0.5];
    await run("INSERT INTO drains (destination, generation, next_step_at, updated_at) VALUES (?1, 1, ?2, ?3)", dest, now + 24 * HOUR, t);
    if (parked) {
      await run("INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status, parked_destination, parked_at) VALUES (?1, ?1, 'demo-hmac', ?2, ?2, ?2, '{}', '{}', 2, 'parked', ?3, ?2)", `evt_parked_${i}`, now - 2 * HOUR, dest);
      put("events", `evt_parked_${i}`, false);
    }
    put("drains", dest, old(t) && !parked);
  }
  for (let i = 0; i < 8; i++) {
    const parent = pick([null, "evt_missing", pick(events)]);
    const t = at();
    const event = parent && typeof parent === "object" ? parent.id : parent;
    const res = await db.prepare("INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at) VALUES (?1, 'm', 1, 'transient', 'UPSTREAM_5XX', 'x', ?2) RETURNING id").bind(event, t).all();
    put("attempts", String(res.results[0].id), typeof parent === "object" && parent ? parent.go : old(t));
  }
  for (let i = 0; i < 6; i++) {
    const [id, t, held] = [`evt_body_${i}`, random() < 0.5 ? now - 29 * 24 * HOUR : now - 2 * HOUR, random() < 0.5];
    await run("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES (?1, 'demo-hmac', 'b', 1, ?2)", id, t);
    if (held) {
      await run("INSERT INTO dead_letters (id, kind, status, event_id, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope) VALUES (?1, 'retries_exhausted', 'pending', ?2, ?1, 'UPSTREAM_5XX', 'transient', 'sig', 6, ?1, ?3, ?3, ?4)", `dlq_holds_${i}`, id, now, JSON.stringify({ input: { body_ref: id } }));
      put("dead_letters", `dlq_holds_${i}`, false);
    }
    put("payloads", id, t < now - 28 * 24 * HOUR && !held);
  }
  for (let i = 0; i < 8; i++) {
    const [id, status, t] = [`dlq_${i}`, pick([...RESOLVED, "pending"]), at()];
    const resolved = status === "pending" ? null : t;
    await run("INSERT INTO dead_letters (id, kind, status, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope, resolved_at) VALUES (?1, 'retries_exhausted', ?2, ?1, 'UPSTREAM_5XX', 'transient', 'sig', 6, ?1, ?3, ?3, '{}', ?4)", id, status, now - 3 * HOUR, resolved);
    put("dead_letters", id, status !== "pending" && old(t));
  }
  for (let i = 0; i < 8; i++) {
    const [id, status, t] = [`job_${i}`, pick([...FINISHED, "paused", "awaiting_approval"]), at()];
    const finished = FINISHED.includes(status) ? t : null;
    await run("INSERT INTO jobs (id, action, status, reason, actor, spec, matched, created_at, updated_at, finished_at) VALUES (?1, 'archive', ?2, 'generated', 'test', '{}', 1, ?3, ?3, ?4)", id, status, t, finished);
    await run("INSERT INTO job_entries (job_id, entry_id, seq, content_hash) VALUES (?1, 'dlq_x', 0, 'h')", id);
    put("jobs", id, finished !== null && old(t));
  }
  for (let i = 0; i < 6; i++) {
    const t = at();
    await run("INSERT INTO alarms (id, since, kind, subject, state, resolved_at, detail, sent_state, updated_at) VALUES (?1, ?2, 'source_silent', ?3, 'resolved', ?2, '{}', 'resolved', ?2)", `source_silent:gen${i}`, t, `gen${i}`);
    put("alarms", `source_silent:gen${i}@${t}`, old(t));
  }
  for (let i = 0; i < 6; i++) {
    const t = at();
    const res = await db.prepare("INSERT INTO replay_audit (entry_id, actor, reason, outcome, at) VALUES ('dlq_x', 'ops', 'generated', 'succeeded', ?1) RETURNING id").bind(t).all();
    put("replay_audit", String(res.results[0].id), old(t));
  }
  for (let i = 0; i < 6; i++) {
    const t = at();
    await run("INSERT INTO dead_letter_tombstones (id, content_hash, error_code, evicted_at, cause) VALUES (?1, 'h', 'UPSTREAM_5XX', ?2, 'evicted')", `tomb_${i}`, t);
    put("dead_letter_tombstones", `tomb_${i}`, old(t));
  }
  return { goes, stays };
}

const ID_OF = {
  events: "event_id",
  deliveries: "(event_id || '/' || destination)",
  attempts: "CAST(id AS TEXT)",
  payloads: "event_id",
  dead_letters: "id",
  jobs: "id",
  drains: "destination",
  alarms: "(id || '@' || since)",
  replay_audit: "CAST(id AS TEXT)",
  dead_letter_tombstones: "id",
};

/** A row's id as ID_OF reads it, from its archived copy. */
const KEY_OF = {
  events: (r) => r.event_id,
  deliveries: (r) => `${r.event_id}/${r.destination}`,
  attempts: (r) => String(r.id),
  payloads: (r) => r.event_id,
  dead_letters: (r) => r.id,
  jobs: (r) => r.id,
  drains: (r) => r.destination,
  alarms: (r) => `${r.id}@${r.since}`,
  replay_audit: (r) => String(r.id),
  dead_letter_tombstones: (r) => r.id,
};

test("on generated rows of every swept table, the sweep takes exactly what the rule says, archives each row it took, and keeps the rest", async () => {
  for (const seed of [1, 2, 3]) {
    const { relay, admin, bucket } = await start({ EVENT_RETENTION: "1h", DLQ_RETENTION: "1h" });
    const db = relay.db;
    const { goes, stays } = await seedEveryTable(db, rng(seed));
    const deadline = Date.now() + 60_000;
    while ((await run(admin)).more) assert.ok(Date.now() < deadline, "the sweep finishes within a minute");
    // A legacy parked event is kept while it is parked. But each run's
    // legacy backfill copies it into a delivery to the destination named
    // after its source (demo-hmac, not configured here), whose drain then
    // dead-letters it: no longer parked, it may go, and its entry keeps it.
    // Its delivery stays pending (handed off) until the DLQ worker's triage
    // stores the entry and closes it in the same write, so the sweep never
    // takes the event before its entry exists (issue 40 item 10): checked
    // at once, with no wait.
    const deadLettered = async () => new Set((await rows(db, "SELECT event_id FROM dead_letters WHERE event_id LIKE 'evt_parked_%'")).map((r) => r.event_id));
    const parkedGone = async () => {
      const left = new Set((await rows(db, "SELECT event_id FROM events WHERE event_id LIKE 'evt_parked_%'")).map((r) => r.event_id));
      return stays.events.filter((id) => id.startsWith("evt_parked_") && !left.has(id));
    };
    {
      const [gone, entries] = [await parkedGone(), await deadLettered()];
      assert.deepEqual(gone.filter((id) => !entries.has(id)), [], `seed ${seed}: a legacy parked event the sweep took has its dead-letter entry`);
    }
    const settled = await deadLettered();
    stays.events = stays.events.filter((id) => !settled.has(id));
    // So may the drain that only such an event held (evt_parked_i, parked
    // for https://di.example/x), once a later step finds it settled.
    stays.drains = stays.drains.filter((d) => !settled.has(`evt_parked_${/^https:\/\/d(\d+)\.example\/x$/.exec(d)?.[1]}`));
    for (const table of Object.keys(goes)) {
      const left = new Set((await rows(db, `SELECT ${ID_OF[table]} AS id FROM ${table}`)).map((r) => String(r.id)));
      const went = goes[table].filter((id) => left.has(id));
      const lost = stays[table].filter((id) => !left.has(id));
      assert.deepEqual(went, [], `seed ${seed}: ${table} rows the rule lets go are still in D1`);
      assert.deepEqual(lost, [], `seed ${seed}: ${table} rows the rule keeps left D1`);
      const archivedIds = new Set(Object.values(await archived(bucket, `${table}/`)).flat().map(KEY_OF[table]));
      assert.deepEqual(goes[table].filter((id) => !archivedIds.has(id)), [], `seed ${seed}: every ${table} row that left D1 is in the archive`);
    }
    const entries = (await rows(db, "SELECT count(*) AS n FROM job_entries"))[0].n;
    assert.equal(entries, stays.jobs.length, `seed ${seed}: job entries go with their job, and only then`);
  }
});

test("deliveries: an event is kept while any delivery row owes a call, whatever its summary says; one whose deliveries are final goes with them to R2; filtered goes; a legacy event is read by its own column; a drain stays while a delivery is parked for it", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  const old = 60_000;
  // [id, events.delivery_status (the summary), routed, deliveries rows]
  const events = [
    ["evt_half_parked", "parked", true, [["dest-a", "delivered"], ["dest-b", "parked"]]],
    // A summary a writer left behind (it says delivered, a row is still
    // pending): the rows decide.
    ["evt_stale_summary", "delivered", true, [["dest-a", "delivered"], ["dest-c", "pending"]]],
    ["evt_done", "failed", true, [["dest-a", "delivered"], ["dest-b", "dead_lettered"]]],
    ["evt_filtered", "filtered", true, []],
    ["evt_legacy_parked", "parked", false, []],
    ["evt_legacy_delivered", "delivered", false, []],
  ];
  for (const [id, status, routed, deliveries] of events) {
    await insertEvent(db, id, status, old, status === "parked" && !routed ? { parked: "https://down.example/legacy" } : {});
    const at = Date.now() - old;
    if (routed) await db.prepare("UPDATE events SET routed_at = ?2 WHERE event_id = ?1").bind(id, at).run();
    for (const [destination, state] of deliveries) {
      await db
        .prepare("INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, parked_at) VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5)")
        .bind(id, destination, state, at, state === "parked" ? at : null)
        .run();
    }
  }
  // Idle drains, all old enough: one with a parked delivery row, one with
  // a legacy parked event of its source, one with nothing parked (each
  // step due tomorrow, so no drain chain touches them meanwhile).
  for (const dest of ["dest-b", "demo-hmac", "dest-idle"]) {
    await db.prepare("INSERT INTO drains (destination, generation, next_step_at, updated_at) VALUES (?1, 1, ?2, ?3)").bind(dest, Date.now() + 86_400_000, Date.now() - old).run();
  }
  const doneRows = await rows(db, "SELECT * FROM deliveries WHERE event_id = 'evt_done' ORDER BY destination");
  // The deliveries' rows in the stats, from the counter migration 0018's
  // triggers keep (an insert that changes nothing counts nothing).
  await db.prepare("INSERT OR IGNORE INTO deliveries (event_id, destination, state, created_at, updated_at) VALUES ('evt_done', 'dest-a', 'pending', 1, 1)").run();
  assert.equal((await admin.get("webhook-dlq/stats")).data.rows.deliveries, 6);

  const data = await run(admin);
  assert.equal(data.archived.events, 3, JSON.stringify(data));
  assert.equal(data.archived.deliveries, 2, JSON.stringify(data));
  // 6 - 2 swept + 1: the same run's legacy backfill step copied the legacy
  // parked event into its deliveries row (src/maintenance/legacy.rs).
  assert.equal((await admin.get("webhook-dlq/stats")).data.rows.deliveries, 5, "the swept rows leave the count, the legacy copy joins it");
  assert.deepEqual(await rows(db, "SELECT destination, state FROM deliveries WHERE event_id = 'evt_legacy_parked'"), [{ destination: "demo-hmac", state: "parked" }]);
  assert.equal(data.archived.drains, 1, JSON.stringify(data));

  const left = (await rows(db, "SELECT event_id FROM events ORDER BY event_id")).map((r) => r.event_id);
  assert.deepEqual(left, ["evt_half_parked", "evt_legacy_parked", "evt_stale_summary"]);
  const kept = await rows(db, "SELECT event_id, destination, state FROM deliveries ORDER BY event_id, destination");
  assert.deepEqual(kept.map((r) => [r.event_id, r.destination, r.state]), [
    ["evt_half_parked", "dest-a", "delivered"],
    ["evt_half_parked", "dest-b", "parked"],
    ["evt_legacy_parked", "demo-hmac", "parked"],
    ["evt_stale_summary", "dest-a", "delivered"],
    ["evt_stale_summary", "dest-c", "pending"],
  ], "a kept event keeps every delivery row; a swept one's leave D1");
  const drains = (await rows(db, "SELECT destination FROM drains ORDER BY destination")).map((r) => r.destination);
  assert.deepEqual(drains, ["demo-hmac", "dest-b"], "a drain with a parked delivery row or a legacy parked event of its source stays");

  const objects = await archived(bucket, "deliveries/");
  const keys = Object.keys(objects);
  assert.equal(keys.length, 1, JSON.stringify(keys));
  const [eventKey] = Object.keys(await archived(bucket, "events/"));
  assert.equal(keys[0], eventKey.replace(/^events\//, "deliveries/"), "beside its events: same day, range and chunk number");
  assert.deepEqual(objects[keys[0]].sort((a, b) => a.destination.localeCompare(b.destination)), doneRows, "the archived rows are the rows D1 held");
  const listing = await admin.get("archive?table=deliveries");
  assert.equal(listing.status, 200, JSON.stringify(listing.json));
  assert.deepEqual(listing.data.items.map((i) => [i.key, i.table, i.rows]), [[keys[0], "deliveries", 2]]);
});

test("a delivery replayed, rewritten or added while its event's chunk is moved keeps the event and every delivery row in D1; the next run archives them as they are then", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  const at = Date.now() - 60_000;
  const ids = ["evt_a_plain", "evt_b_replayed", "evt_c_rewritten", "evt_d_gains_delivery"];
  for (const id of ids) {
    await insertEvent(db, id, "failed", 60_000);
    await db.prepare("UPDATE events SET routed_at = ?2 WHERE event_id = ?1").bind(id, at).run();
    await db
      .prepare("INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at) VALUES (?1, 'dest-a', 'dead_lettered', 3, ?2, ?2)")
      .bind(id, at)
      .run();
  }
  // The journal is written after the chunk's rows were read (same batch):
  // a real D1 trigger there plays writers landing between read and delete.
  await db
    .prepare(
      `CREATE TRIGGER race_the_sweep AFTER UPDATE OF journal ON sweep_state WHEN NEW.journal IS NOT NULL
       BEGIN
         UPDATE deliveries SET state = 'pending', updated_at = updated_at + 1 WHERE event_id = 'evt_b_replayed';
         UPDATE deliveries SET last_error = 'UPSTREAM_5XX', updated_at = updated_at + 1 WHERE event_id = 'evt_c_rewritten';
         INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at) VALUES ('evt_d_gains_delivery', 'dest-b', 'delivered', 1, 1, 1);
       END`,
    )
    .run();
  const first = await run(admin);
  assert.equal(first.archived.events, 4, JSON.stringify(first));
  const left = (await rows(db, "SELECT event_id FROM events ORDER BY event_id")).map((r) => r.event_id);
  assert.deepEqual(left, ["evt_b_replayed", "evt_c_rewritten", "evt_d_gains_delivery"]);
  const kept = (await rows(db, "SELECT event_id, destination FROM deliveries ORDER BY event_id, destination")).map((r) => `${r.event_id}/${r.destination}`);
  assert.deepEqual(kept, ["evt_b_replayed/dest-a", "evt_c_rewritten/dest-a", "evt_d_gains_delivery/dest-a", "evt_d_gains_delivery/dest-b"], "a kept event keeps every delivery row");

  await db.prepare("DROP TRIGGER race_the_sweep").run();
  await db.prepare("UPDATE deliveries SET state = 'delivered' WHERE event_id = 'evt_b_replayed'").run();
  const second = await run(admin);
  assert.equal(second.archived.events, 3, JSON.stringify(second));
  assert.equal(second.archived.deliveries, 4, JSON.stringify(second));
  assert.equal((await rows(db, "SELECT count(*) AS n FROM deliveries"))[0].n, 0);
  const archivedRows = Object.values(await archived(bucket, "deliveries/")).flat();
  const rewritten = archivedRows.filter((r) => r.event_id === "evt_c_rewritten").map((r) => r.last_error);
  assert.ok(rewritten.includes("UPSTREAM_5XX"), "the rewritten row is archived as it was when it left D1");
  const names = new Set(archivedRows.map((r) => `${r.event_id}/${r.destination}`));
  for (const k of ["evt_a_plain/dest-a", ...kept]) assert.ok(names.has(k), `${k} is in the archive`);
});
