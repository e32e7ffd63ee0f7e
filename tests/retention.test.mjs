// The retention sweep (DESIGN §5): rows leave D1 for the R2 archive by age
// and by size, archive first and delete after, and a crash in between is
// finished by the next run with each row archived once by key. Durations
// and sizes are shortened through configuration only (EVENT_RETENTION,
// DLQ_RETENTION, D1_MAX_BYTES); the sweep runs through the admin API's
// POST maintenance/run, which hands it to the relay through RELAY.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, rows } from "./support/harness.mjs";
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

  const again = await run(admin);
  assert.deepEqual(again.archived, {}, "nothing left to sweep");
});

test("a crash between the R2 write and the D1 delete leaves the rows; the next run finishes with each row archived once by key", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  for (const id of ["evt_a", "evt_b", "evt_c"]) await insertEvent(db, id, "delivered", 60_000);
  // The delete batch touches event_steps: with it renamed away, the batch
  // fails after the objects were put.
  await db.prepare("ALTER TABLE event_steps RENAME TO event_steps_away").run();
  const failed = await admin.post("maintenance/run", {});
  assert.notEqual(failed.status, 200, "the run reports its failure");
  assert.match(failed.error.message, /event_steps/, "naming the table D1 could not reach");
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 3, "nothing deleted");
  const journal = await rows(db, "SELECT journal, last_error FROM sweep_state");
  assert.ok(journal[0].journal, "the chunk is journaled");
  assert.match(journal[0].last_error, /event_steps/);
  const first = await archived(bucket, "events/");
  assert.equal(Object.keys(first).length, 1, "the events object was written before the failure");

  await db.prepare("ALTER TABLE event_steps_away RENAME TO event_steps").run();
  const data = await run(admin);
  assert.equal(data.archived.events, 3, JSON.stringify(data));
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 0);
  const second = await archived(bucket, "events/");
  assert.deepEqual(Object.keys(second), Object.keys(first), "the same key, overwritten");
  const ids = Object.values(second).flat().map((r) => r.event_id).sort();
  assert.deepEqual(ids, ["evt_a", "evt_b", "evt_c"], "each row once");
  const state = await rows(db, "SELECT journal, last_error, archive_objects, archive_rows FROM sweep_state");
  assert.equal(state[0].journal, null);
  assert.equal(state[0].last_error, null);
});

test("a small D1_MAX_BYTES sweeps the oldest sweepable events first, whatever their age; more:true while work is left", async () => {
  const { relay, admin, bucket } = await start({ D1_MAX_BYTES: "1KB" });
  const db = relay.db;
  // 600 young events: more than one chunk (450), all within EVENT_RETENTION (30d).
  const stmts = [];
  for (let i = 0; i < 600; i++) {
    const id = `evt_${String(i).padStart(4, "0")}`;
    const at = Date.now() - 600_000 + i * 1000;
    stmts.push(
      db
        .prepare("INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status) VALUES (?1, ?2, 'demo-hmac', ?3, ?3, ?3, '{}', 'x', 1, 'delivered')")
        .bind(`k-${id}`, id, at),
    );
  }
  await db.batch(stmts);
  await insertEvent(db, "evt_parked", "parked", 3_600_000, { parked: "https://down.example/x" });
  const first = await run(admin);
  assert.ok(first.archived.events > 0, JSON.stringify(first));
  // The oldest went first.
  const oldestLeft = await rows(db, "SELECT min(event_id) AS id FROM events WHERE delivery_status = 'delivered'");
  const archivedIds = Object.values(await archived(bucket, "events/")).flat().map((r) => r.event_id).sort();
  assert.equal(archivedIds[0], "evt_0000");
  assert.ok(archivedIds.at(-1) < (oldestLeft[0].id ?? "evt_9999"), "nothing younger went before something older");
  // SQLite keeps the freed pages, so the size does not drop below 1KB and
  // the size rule stops for the run once a delete did not lower it; the
  // next runs go on from the oldest left.
  let total = first.archived.events;
  for (let i = 0; i < 5 && total < 600; i++) total += (await run(admin)).archived.events ?? 0;
  assert.equal(total, 600, "every sweepable event, over several runs");
  const left = await rows(db, "SELECT event_id FROM events");
  assert.deepEqual(left.map((r) => r.event_id), ["evt_parked"], "a parked event is never swept, by either rule");
});

test("maintenance/run answers more:true while the step's budget left work", async () => {
  const { relay, admin } = await start({ EVENT_RETENTION: "2s", DLQ_RETENTION: "2s" });
  const db = relay.db;
  // 12 resolved dead letters: at most 10 entries per chunk, and each chunk
  // costs D1 calls and R2 puts against the budget of 40 subrequests.
  const stmts = [];
  const old = Date.now() - 60_000;
  for (let i = 0; i < 120; i++) {
    stmts.push(
      db
        .prepare("INSERT INTO dead_letters (id, kind, status, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope, resolved_at) VALUES (?1, 'retries_exhausted', 'archived', ?1, 'UPSTREAM_5XX', 'transient', 'sig', 6, ?1, ?2, ?2, '{}', ?2)")
        .bind(`dlq_${String(i).padStart(24, "0")}`, old),
    );
  }
  await db.batch(stmts);
  const first = await run(admin);
  assert.equal(first.more, true, JSON.stringify(first));
  assert.ok(first.archived.dead_letters > 0 && first.archived.dead_letters < 120);
  const tomb = await rows(db, "SELECT cause, prior_status, archive_key FROM dead_letter_tombstones ORDER BY id LIMIT 1");
  assert.deepEqual(tomb[0], { cause: "swept", prior_status: "archived", archive_key: `dead_letters/${new Date(old).toISOString().slice(0, 10)}/dlq_${"0".repeat(24)}.ndjson` });
  // The continuation messages on hookrelay-control finish the rest.
  const { waitFor } = await import("./support/harness.mjs");
  await waitFor(async () => (await rows(db, "SELECT count(*) AS n FROM dead_letters"))[0].n === 0, { timeoutMs: 60_000, what: "the continuation to sweep every resolved entry" });
  const tombs = await rows(db, "SELECT count(*) AS n FROM dead_letter_tombstones WHERE cause = 'swept'");
  assert.equal(tombs[0].n, 120, "each swept entry leaves a tombstone");
});
