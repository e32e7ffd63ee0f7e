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
  const steps = await rows(db, "SELECT count(*) AS n FROM event_steps");
  assert.equal(steps[0].n, 4, "the kept events keep their steps");

  const objects = await archived(bucket, "events/");
  const keys = Object.keys(objects);
  assert.equal(keys.length, 1);
  assert.match(keys[0], /^events\/\d{4}-\d{2}-\d{2}\/evt_old_[a-z]+~evt_old_[a-z]+\.ndjson$/);
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
  const badTable = await admin.get("archive?table=secrets");
  assert.equal(badTable.status, 400);
  assert.match(badTable.error.message, /table/);


  const stats = (await admin.get("webhook-dlq/stats")).data;
  assert.equal(stats.rows.events, 4, "rows per table from the kept counters");
  assert.equal(stats.rows.event_steps, 4);
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
  // 600 young events (more than one chunk of 450), all within EVENT_RETENTION (30d).
  await db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 599)
       INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status)
       SELECT printf('k%04d', i), printf('evt_%04d', i), 'demo-hmac', ?1 + i * 1000, ?1 + i * 1000, ?1 + i * 1000, '{}', 'x', 1, 'delivered' FROM n`,
    )
    .bind(Date.now() - 600_000)
    .run();
  await insertEvent(db, "evt_parked", "parked", 3_600_000, { parked: "https://down.example/x" });
  const sizeBefore = (await admin.get("webhook-dlq/stats")).data.storage.size_bytes;
  const first = await run(admin);
  assert.equal(first.archived.events, 600, JSON.stringify(first));
  const objects = await archived(bucket, "events/");
  const day = new Date(Date.now() - 600_000).toISOString().slice(0, 10);
  assert.deepEqual(Object.keys(objects).sort(), [`events/${day}/evt_0000~evt_0449.ndjson`, `events/${day}/evt_0450~evt_0599.ndjson`], "oldest first, in chunks of 450");
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
