// The maintenance lease (core::retention::lease): a cron, maintenance/run
// calls and the sweep's continuation messages that start together take
// turns, so no two sweep steps chunk the same rows differently. While the
// lease is held a run does nothing and maintenance/run answers more: true;
// concurrent runs over events whose age crosses EVENT_RETENTION while they
// run (so each run's cutoff ends its chunks elsewhere) archive every event
// exactly once by key, and D1 ends with none of them.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, rows, waitFor } from "./support/harness.mjs";
import { adminClient } from "./support/admin.mjs";
import { BURST_WORKER, burst } from "./support/burst.mjs";
import { insertPendingEntry } from "./support/dead-letters.mjs";

const started = [];
after(() => Promise.all(started.map((r) => r.dispose())));

async function start(vars) {
  const relay = await startRelay({ vars, extraWorkers: [BURST_WORKER] });
  started.push(relay);
  return { relay, admin: adminClient(relay), bucket: await relay.mf.getR2Bucket("ARCHIVE", "hookrelay") };
}

/** Inserts `n` delivered events, the i-th ingested at `at(i)`. */
async function insertEvents(db, n, first, stepMs) {
  await db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
       INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status)
       SELECT printf('k%05d', i), printf('evt_%05d', i), 'demo-hmac', ?2 + i * ?3, ?2 + i * ?3, ?2 + i * ?3, '{}', 'x', 1, 'delivered' FROM n`,
    )
    .bind(n, first, stepMs)
    .run();
}

async function cron(relay) {
  const worker = await relay.mf.getWorker("hookrelay");
  const result = await worker.scheduled({ cron: "*/5 * * * *" });
  assert.equal(result.outcome, "ok", JSON.stringify(result));
}

const busyLines = (relay) => relay.logs.filter((l) => l.includes('"event":"maintenance_busy"')).length;

test("while another run holds the lease, maintenance/run and the cron do nothing; once it expires the next run sweeps and gives it back", async () => {
  const { relay, admin } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  await insertEvents(db, 10, Date.now() - 60_000, 1);
  const heldUntil = Date.now() + 60_000;
  await db.prepare("UPDATE sweep_state SET lease_until = ?1").bind(heldUntil).run();
  const held = await admin.post("maintenance/run", {});
  assert.equal(held.status, 200, JSON.stringify(held.json));
  assert.deepEqual({ ...held.data, took_ms: 0 }, { archived: {}, objects_written: 0, more: true, busy_until: heldUntil, alarms: { fired: [], resolved: [] }, took_ms: 0 });
  await cron(relay);
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 10, "nothing swept while the lease is held");
  assert.equal(busyLines(relay), 2, "each run logged that another holds the lease");
  assert.equal((await rows(db, "SELECT last_run_at FROM sweep_state"))[0].last_run_at, null, "no run was recorded");

  // Expired by more than core::retention::lease::MAX_CLOCK_SKEW_MS (30 s):
  // a lease only just past could still be held by a holder whose clock is behind.
  const justPast = Date.now() - 1;
  await db.prepare("UPDATE sweep_state SET lease_until = ?1").bind(justPast).run();
  const stillHeld = await admin.post("maintenance/run", {});
  assert.equal(stillHeld.status, 200, JSON.stringify(stillHeld.json));
  assert.equal(stillHeld.data.busy_until, justPast, "1 ms past is within the clock skew: still the holder's");
  await db.prepare("UPDATE sweep_state SET lease_until = ?1").bind(Date.now() - 31_000).run();
  const ran = await admin.post("maintenance/run", {});
  assert.equal(ran.status, 200, JSON.stringify(ran.json));
  assert.equal(ran.data.archived.events, 10, JSON.stringify(ran.data));
  assert.equal(ran.data.more, false);
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 0);
  assert.equal((await rows(db, "SELECT lease_until FROM sweep_state"))[0].lease_until, null, "the run gave the lease back");
});

test("two maintenance runs and a cron at the same moment take turns: every event is archived exactly once by key and leaves D1", async () => {
  const { relay, admin, bucket } = await start({ EVENT_RETENTION: "2s" });
  const db = relay.db;
  // 1500 events 1 ms apart, the oldest just past EVENT_RETENTION: each
  // millisecond one more becomes sweepable, so runs at different moments
  // would end their last chunk at different events, under different keys.
  const N = 1500;
  await insertEvents(db, N, Date.now() - 2_300, 1);
  const [answers] = await Promise.all([burst(relay, [{ path: "maintenance/run", body: {} }, { path: "maintenance/run", body: {} }]), cron(relay)]);
  for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.json));
  assert.ok(busyLines(relay) >= 1, "a run found the lease held");
  // The rest become sweepable; runs (and the continuation messages) finish.
  await waitFor(async () => {
    const res = await admin.post("maintenance/run", {});
    assert.equal(res.status, 200, JSON.stringify(res.json));
    return res.data.more === false && (await rows(db, "SELECT count(*) AS n FROM events"))[0].n === 0;
  }, { what: "every event swept", timeoutMs: 60_000, intervalMs: 300 });

  const seen = new Map();
  let cursor;
  do {
    const page = await bucket.list({ prefix: "events/", cursor });
    for (const o of page.objects) {
      const lines = (await (await bucket.get(o.key)).text()).trim().split("\n");
      for (const line of lines) {
        const id = JSON.parse(line).event_id;
        seen.set(id, [...(seen.get(id) ?? []), o.key]);
      }
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  const twice = [...seen].filter(([, keys]) => keys.length > 1);
  assert.deepEqual(twice.slice(0, 3), [], `${twice.length} events are archived under more than one key`);
  assert.equal(seen.size, N, "every event is archived");
  const stats = (await admin.get("webhook-dlq/stats")).data;
  assert.equal(stats.archive.rows, N, "the archive's kept count matches its objects");
});

const episodes = async (db, id) => rows(db, "SELECT state, since, resolved_at FROM alarms WHERE id = ?1 ORDER BY since", id);

test("while a sweep holds the sweep's lease, maintenance/run and the cron still fire and resolve alarms (the watchdog has its own lease)", async () => {
  const { relay, admin } = await start({ EVENT_RETENTION: "2s", ALERT_DLQ_INGRESS_PER_HOUR: "0" });
  const db = relay.db;
  await insertEvents(db, 10, Date.now() - 60_000, 1);
  // A long backlog's continuation holds the sweep's lease.
  const heldUntil = Date.now() + 120_000;
  await db.prepare("UPDATE sweep_state SET lease_until = ?1").bind(heldUntil).run();
  await insertPendingEntry(db, "dlq_lease_1");

  const fired = await admin.post("maintenance/run", {});
  assert.equal(fired.status, 200, JSON.stringify(fired.json));
  assert.equal(fired.data.more, true);
  assert.equal(fired.data.busy_until, heldUntil, "the sweep step found its lease held");
  assert.deepEqual(fired.data.alarms, { fired: ["dlq_ingress:dlq"], resolved: [] }, "and the watchdog ran anyway");
  assert.deepEqual((await episodes(db, "dlq_ingress:dlq")).map((e) => e.state), ["firing"]);

  // The entry is an hour and more old now: two quiet runs resolve the alarm.
  await db.prepare("UPDATE dead_letters SET created_at = created_at - 7200000").run();
  await db.prepare("UPDATE dead_letter_arrivals SET minute = minute - 120").run();
  await cron(relay);
  const resolved = await admin.post("maintenance/run", {});
  assert.equal(resolved.status, 200, JSON.stringify(resolved.json));
  assert.deepEqual(resolved.data.alarms, { fired: [], resolved: ["dlq_ingress:dlq"] });
  assert.deepEqual((await episodes(db, "dlq_ingress:dlq")).map((e) => e.state), ["resolved"], "one episode, resolved");
  assert.equal((await rows(db, "SELECT count(*) AS n FROM events"))[0].n, 10, "the sweep itself waited for its lease");
  assert.deepEqual(await rows(db, "SELECT lease_until, watch_lease_until FROM sweep_state"), [{ lease_until: heldUntil, watch_lease_until: null }], "the watchdog gave its own lease back and left the sweep's alone");
});

test("two maintenance runs and a cron at the same moment run one watchdog at a time: a new condition opens one episode", async () => {
  const { relay } = await start({ ALERT_DLQ_INGRESS_PER_HOUR: "0" });
  const db = relay.db;
  for (let round = 0; round < 3; round++) {
    await insertPendingEntry(db, `dlq_race_${round}`);
    const [answers] = await Promise.all([
      burst(relay, [{ path: "maintenance/run", body: {} }, { path: "maintenance/run", body: {} }, { path: "maintenance/run", body: {} }]),
      cron(relay),
    ]);
    for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.json));
    const eps = await episodes(db, "dlq_ingress:dlq");
    assert.equal(eps.filter((e) => e.state === "firing").length, 1, `round ${round}: ${JSON.stringify(eps)}`);
    assert.equal(eps.length, round + 1, `round ${round}: one new episode per condition, ${JSON.stringify(eps)}`);
    const fired = answers.flatMap((a) => a.json.data.alarms.fired);
    assert.ok(fired.length <= 1, `at most one run says it fired the alarm: ${JSON.stringify(fired)}`);
    // The condition ends, and two quiet runs resolve it before the next round.
    await db.prepare("UPDATE dead_letters SET created_at = created_at - 7200000").run();
    await db.prepare("UPDATE dead_letter_arrivals SET minute = minute - 120").run();
    await cron(relay);
    await cron(relay);
    assert.equal((await episodes(db, "dlq_ingress:dlq")).filter((e) => e.state === "firing").length, 0);
  }
});
