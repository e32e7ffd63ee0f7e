// The alarm watchdog (DESIGN §5, Alarms): each kind fires one signed alert
// to a real loopback receiver and later one resolve; a breaker cycling
// OPEN → HALF_OPEN → OPEN alarms; the cannot-store alarm reaches the
// receiver while the DLQ worker's tables are gone; a receiver that answers
// 500 stops nothing and shows in GET /alerts. The watchdog runs on the
// relay's */5 cron, triggered here as a scheduled event; thresholds are
// shortened through configuration only.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows, SECRETS } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { checkHmacSha256 } from "../scripts/webhook-signatures.mjs";
import { insertPendingEntry } from "./support/dead-letters.mjs";

const DOWN_SECRET = "alarm-down-secret";
const answer = { "/alerts": () => 200, "/broken-alerts": () => 500, "/dest": () => 500 };
let receiver;

before(async () => {
  const behaviours = Object.fromEntries(Object.keys(answer).map((p) => [p, (req) => ({ status: answer[p](req) })]));
  // A receiver that takes 20 s to answer anything.
  behaviours["/hanging-alerts"] = () => ({ status: 200, delayMs: 20_000 });
  receiver = await startDownstream(behaviours);
});
after(() => receiver?.close());

const alerts = (path = "/alerts") => receiver.hits(path).map((r) => ({ ...r, json: JSON.parse(r.body) }));
const alertsFor = (id, state, path) => alerts(path).filter((a) => a.json.alert.id === id && a.json.alert.state === state);

// Runs the relay's 5-minute cron once (the watchdog), as the platform would.
async function watchdog(relay) {
  const worker = await relay.mf.getWorker("hookrelay");
  const result = await worker.scheduled({ cron: "*/5 * * * *" });
  assert.equal(result.outcome, "ok", JSON.stringify(result));
}

/** Every alert is signed like a downstream delivery and carries no secret nor the receiver's URL. */
function assertSignedAndClean(list) {
  const secrets = [...Object.values(SECRETS), DOWN_SECRET, receiver.url("/alerts"), receiver.url("/broken-alerts")];
  for (const a of list) {
    const check = checkHmacSha256(a.headers, a.body, DOWN_SECRET);
    assert.ok(check.ok, `${a.json.alert.id}: ${check.reason}`);
    const { id, state, since } = a.json.alert;
    assert.equal(a.headers["x-operation-id"], `${id}:${state}:${since}`);
    assert.equal(typeof a.json.text, "string");
    for (const s of secrets) assert.ok(!a.body.includes(s), `a secret or the receiver URL is in ${id}`);
  }
}

const poison = (n) => ({
  v: 1, event_id: `evt_alarm_${n}`, idempotency_key: `demo-hmac:alarm-${n}`, source: "demo-hmac",
  received_at_ms: Date.now(), headers: {}, body: `not json {${n}`,
});

test("the dlq kinds and storage each fire one signed alert, and the dlq kinds resolve once", async () => {
  const relay = await startRelay({
    vars: {
      ALERT_WEBHOOK_URL: receiver.url("/alerts"), DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, DLQ_CAPACITY: "2",
      ALERT_DLQ_OLDEST: "1s", ALERT_DLQ_INGRESS_PER_HOUR: "1", D1_MAX_BYTES: "1KB",
    },
  });
  try {
    const producer = await relay.producer();
    for (const n of [1, 2]) await producer.send(poison(n));
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters"))[0].n === 2, { what: "two dead letters" });
    const kinds = ["dlq_oldest:dlq", "dlq_ingress:dlq", "dlq_capacity:dlq", "storage:d1"];
    await waitFor(async () => {
      await watchdog(relay);
      return kinds.every((id) => alertsFor(id, "firing").length > 0);
    }, { what: "every dlq and storage alarm to fire", timeoutMs: 20000, intervalMs: 300 });
    // More runs while the conditions hold send nothing more.
    await watchdog(relay);
    await watchdog(relay);
    for (const id of kinds) assert.equal(alertsFor(id, "firing").length, 1, id);
    // DESIGN §5's detail: counts, the dominant code, the oldest id, the threshold.
    for (const id of kinds.slice(0, 3)) {
      const d = alertsFor(id, "firing")[0].json.alert.detail;
      assert.equal(d.pending, 2, id);
      assert.equal(d.dominant_code?.count, 2, `${id}: ${JSON.stringify(d)}`);
      assert.match(d.oldest_id ?? "", /^dlq_/, `${id}: ${JSON.stringify(d)}`);
    }
    const storage = alertsFor("storage:d1", "firing")[0].json.alert.detail;
    assert.equal(storage.cap_bytes, 1000);
    assert.ok(storage.size_bytes >= 900, JSON.stringify(storage));
    // The entries are resolved and an hour passes for them (and for their
    // arrivals, which the dlq_ingress alarm counts by the minute).
    await relay.db.prepare("UPDATE dead_letters SET status = 'archived', created_at = created_at - 7200000").run();
    await relay.db.prepare("UPDATE dead_letter_arrivals SET minute = minute - 120").run();
    for (let i = 0; i < 3; i++) await watchdog(relay);
    for (const id of kinds.slice(0, 3)) {
      assert.equal(alertsFor(id, "resolved").length, 1, id);
      assert.equal(alertsFor(id, "firing").length, 1, id);
      assert.ok(alertsFor(id, "resolved")[0].json.alert.resolved_at > 0);
    }
    assertSignedAndClean(alerts());
    const admin = adminClient(relay, [DOWN_SECRET, receiver.url("/alerts")]);
    const listed = await admin.get("alerts");
    assert.equal(listed.status, 200);
    assert.equal(listed.data.receiver_configured, true);
    assert.equal(listed.data.items[0].id, "storage:d1", "firing first");
    const oldest = listed.data.items.find((i) => i.id === "dlq_oldest:dlq");
    assert.equal(oldest.state, "resolved");
    assert.equal(oldest.delivery.sent, "resolved");
    const tested = await admin.post("alerts/test", {});
    assert.equal(tested.status, 200, JSON.stringify(tested.json));
    assert.deepEqual([tested.data.sent, tested.data.status, tested.data.error], [true, 200, null]);
    const testAlert = alertsFor("test:manual", "firing");
    assert.equal(testAlert.length, 1);
    assert.equal(testAlert[0].headers["x-operation-id"], tested.data.operation_id);
    assertSignedAndClean(testAlert);
  } finally {
    await relay.dispose();
  }
});

test("storage fires with a small D1_MAX_BYTES, and resolves once, signed, when a larger cap takes effect and the dedupe window is whole again", async () => {
  const relay = await startRelay({
    vars: { ALERT_WEBHOOK_URL: receiver.url("/alerts"), DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, D1_MAX_BYTES: "1KB", EVENT_RETENTION: "3s" },
  });
  // The receiver is shared with the other tests: this test's alerts are those after `from`.
  const from = alerts().length;
  const storageAlerts = (state) => alerts().slice(from).filter((a) => a.json.alert.id === "storage:d1" && a.json.alert.state === state);
  try {
    // A young delivered event: above the cap the sweep takes it whatever
    // its age, which shortens the dedupe window until EVENT_RETENTION passes.
    const ingested = Date.now();
    await relay.db
      .prepare("INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status) VALUES ('k-storage', 'evt_storage', 'demo-hmac', ?1, ?1, ?1, '{}', 'x', 1, 'delivered')")
      .bind(ingested)
      .run();
    await watchdog(relay);
    const [fired] = storageAlerts("firing");
    assert.ok(fired, "storage fired");
    assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM events"))[0].n, 0, "the size rule swept the event");
    assert.equal(fired.json.alert.detail.cap_bytes, 1000);
    assert.ok(fired.json.alert.detail.size_bytes >= 900, JSON.stringify(fired.json.alert.detail));
    // The watchdog runs before the sweep step: the next run's figures show
    // the window the size rule shortened (the listing shows the latest).
    await watchdog(relay);
    const listed = (await adminClient(relay, [DOWN_SECRET, receiver.url("/alerts")]).get("alerts")).data.items.find((i) => i.id === "storage:d1");
    assert.ok(listed.detail.effective_dedupe_window_ms < listed.detail.event_retention_ms, JSON.stringify(listed.detail));

    // The operator raises the cap; the condition ends once the window is whole (3 s after the swept event).
    await relay.reconfigure({ D1_MAX_BYTES: "1GB" });
    const resolved = await waitFor(async () => {
      await watchdog(relay);
      return storageAlerts("resolved")[0];
    }, { what: "the storage resolve", timeoutMs: 30000, intervalMs: 300 });
    assert.ok(resolved.json.alert.resolved_at >= ingested + 3000, "not before the dedupe window is whole again");
    assert.equal(resolved.json.alert.since, fired.json.alert.since, "the same episode");
    await watchdog(relay);
    await watchdog(relay);
    assert.equal(storageAlerts("resolved").length, 1, "one resolve");
    assert.equal(storageAlerts("firing").length, 1, "and no new firing");
    assertSignedAndClean([fired, resolved]);
    const item = (await adminClient(relay, [DOWN_SECRET, receiver.url("/alerts")]).get("alerts")).data.items.find((i) => i.id === "storage:d1");
    assert.deepEqual([item.state, item.delivery.sent, item.delivery.last_error], ["resolved", "resolved", null]);
  } finally {
    await relay.dispose();
  }
});

test("a breaker cycling OPEN → HALF_OPEN → OPEN, parked events and a silent source alarm, then resolve once", async () => {
  answer["/dest"] = () => 500;
  const relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ park: { scheme: "hmac-sha256", downstream: receiver.url("/dest") }, quiet: { scheme: "hmac-sha256", expect_every: "2s" } }),
      WEBHOOK_SECRET_PARK: "alarm-park-secret", WEBHOOK_SECRET_QUIET: "alarm-quiet-secret",
      DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, ALERT_WEBHOOK_URL: receiver.url("/alerts"),
      BREAKER_FAILURE_THRESHOLD: "1", BREAKER_COOLDOWN_S: "1", RETRY_DELAYS_S: "1,1,1,1,1",
      ALERT_BREAKER_OPEN: "3s", ALERT_PARKED_OLDEST: "1s",
    },
  });
  const send = async (source, secret, tag) => {
    const body = JSON.stringify({ tag });
    const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret, operationId: `op-${tag}` }) });
    assert.equal(res.status, 202, await res.clone().text());
  };
  try {
    await watchdog(relay); // starts watching: the quiet source is silent from now
    for (let i = 0; i < 3; i++) await send("park", "alarm-park-secret", `park-${i}`);
    // The drain's probes fail, so the breaker re-opens: its opened_at moves on, left_closed_at does not.
    await waitFor(async () => {
      const [b] = await rows(relay.db, "SELECT state, left_closed_at FROM breakers");
      return b && JSON.parse(b.state).opened_at_ms > b.left_closed_at + 1000 && Date.now() - b.left_closed_at > 3500;
    }, { what: "a breaker re-opened past ALERT_BREAKER_OPEN", timeoutMs: 30000, intervalMs: 200 });
    // Keyed by the destination's name: a `downstream` source's is the source's.
    const dest = "park";
    const ids = [`breaker_open:${dest}`, `parked_oldest:${dest}`, "source_silent:quiet"];
    await waitFor(async () => {
      await watchdog(relay);
      return ids.every((id) => alertsFor(id, "firing").length > 0);
    }, { what: "breaker_open, parked_oldest and source_silent to fire", timeoutMs: 20000, intervalMs: 300 });
    // The destination recovers, the drain delivers the parked events, the source speaks.
    answer["/dest"] = () => 200;
    await waitFor(async () => {
      const [b] = await rows(relay.db, "SELECT state_name FROM breakers");
      const [p] = await rows(relay.db, "SELECT count(*) AS n FROM events WHERE delivery_status = 'parked'");
      return b.state_name === "CLOSED" && p.n === 0;
    }, { what: "the breaker to close and the parked events to drain", timeoutMs: 30000, intervalMs: 200 });
    let hello = 0;
    await waitFor(async () => {
      await send("quiet", "alarm-quiet-secret", `hello-${hello++}`); // within expect_every
      await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM events WHERE source = 'quiet'"))[0].n === hello, { what: "the quiet source's event" });
      await watchdog(relay);
      return ids.every((id) => alertsFor(id, "resolved").length > 0);
    }, { what: "the three to resolve", timeoutMs: 20000, intervalMs: 300 });
    await watchdog(relay);
    for (const id of ids) {
      assert.equal(alertsFor(id, "firing").length, 1, id);
      assert.equal(alertsFor(id, "resolved").length, 1, id);
    }
    assertSignedAndClean(alerts().filter((a) => ids.includes(a.json.alert.id)));
  } finally {
    await relay.dispose();
  }
});

test("while the DLQ worker's tables are gone, the cannot-store alert reaches the receiver once, and the message is kept", async () => {
  const relay = await startRelay({
    vars: { ALERT_WEBHOOK_URL: receiver.url("/alerts"), DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, DLQ_RETRY_DELAY_S: "1" },
  });
  const tables = ["dead_letters", "dead_letter_tombstones", "counters", "alarms", "sweep_state", "events"];
  try {
    for (const t of tables) await relay.db.prepare(`ALTER TABLE ${t} RENAME TO ${t}_away`).run();
    await (await relay.producer("WEBHOOKS_DLQ")).send(poison(30));
    const fired = await waitFor(() => alertsFor("dlq_cannot_store:dlq", "firing")[0], { what: "the cannot-store alert", timeoutMs: 20000 });
    assert.match(fired.json.alert.detail.message, /no such table/);
    // More failing retries and a watchdog run while D1 fails send nothing more.
    await waitFor(() => relay.logs.filter((l) => l.includes('"event":"store_failed"')).length >= 3, { what: "three failed stores", timeoutMs: 20000 });
    await watchdog(relay).catch(() => {});
    assert.equal(alertsFor("dlq_cannot_store:dlq", "firing").length, 1);
    assertSignedAndClean([fired]);
    for (const t of tables) await relay.db.prepare(`ALTER TABLE ${t}_away RENAME TO ${t}`).run();
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE event_id = 'evt_alarm_30'"))[0].n === 1, { what: "the dead letter stored once D1 answers", timeoutMs: 20000 });
    const listed = await adminClient(relay, [DOWN_SECRET]).get("alerts");
    const item = listed.data.items.find((i) => i.id === "dlq_cannot_store:dlq");
    assert.equal(item.state, "firing");
    assert.equal(item.delivery.sent, "firing");
    assert.ok(item.detail.failures >= 1);
    // It resolves once the watchdog's D1 reads succeed and no failure was
    // reported for cannot_store::QUIET_MS (2 minutes), with one resolve.
    const resolved = await waitFor(async () => {
      await watchdog(relay);
      return alertsFor("dlq_cannot_store:dlq", "resolved")[0];
    }, { what: "the cannot-store resolve", timeoutMs: 180000, intervalMs: 3000 });
    await watchdog(relay);
    assert.equal(alertsFor("dlq_cannot_store:dlq", "resolved").length, 1);
    assert.equal(alertsFor("dlq_cannot_store:dlq", "firing").length, 1);
    assertSignedAndClean([resolved]);
  } finally {
    await relay.dispose();
  }
});

test("a receiver that answers 500 stops nothing: the run succeeds, the alert is retried next run and GET /alerts shows the error", async () => {
  const relay = await startRelay({
    vars: { ALERT_WEBHOOK_URL: receiver.url("/broken-alerts"), DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, ALERT_DLQ_INGRESS_PER_HOUR: "0" },
  });
  try {
    await (await relay.producer()).send(poison(40));
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters"))[0].n === 1, { what: "a dead letter" });
    await watchdog(relay);
    await watchdog(relay);
    assert.equal(alertsFor("dlq_ingress:dlq", "firing", "/broken-alerts").length, 2, "sent again on the next run");
    const admin = adminClient(relay, [DOWN_SECRET, receiver.url("/broken-alerts")]);
    const item = (await admin.get("alerts")).data.items.find((i) => i.id === "dlq_ingress:dlq");
    assert.equal(item.state, "firing");
    assert.equal(item.delivery.sent, null);
    assert.equal(item.delivery.attempts, 2);
    assert.match(item.delivery.last_error, /500/);
    const tested = await admin.post("alerts/test", {});
    assert.deepEqual([tested.status, tested.data.sent, tested.data.status], [200, false, 500]);
  } finally {
    await relay.dispose();
  }
});

test("without ALERT_WEBHOOK_URL alarms are still listed and the test route answers 409 naming it", async () => {
  const relay = await startRelay({ vars: { ALERT_DLQ_INGRESS_PER_HOUR: "0" } });
  try {
    await (await relay.producer()).send(poison(50));
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters"))[0].n === 1, { what: "a dead letter" });
    await watchdog(relay);
    const admin = adminClient(relay);
    const listed = await admin.get("alerts");
    assert.equal(listed.data.receiver_configured, false);
    assert.equal(listed.data.items.find((i) => i.id === "dlq_ingress:dlq")?.state, "firing");
    const tested = await admin.post("alerts/test", {});
    assert.equal(tested.status, 409);
    assert.match(tested.error.message, /ALERT_WEBHOOK_URL/);
  } finally {
    await relay.dispose();
  }
});

for (const [name, receiverVars] of [
  ["without ALERT_WEBHOOK_URL", {}],
  ["with a receiver that has answered 500 for longer than DLQ_RETENTION", { ALERT_WEBHOOK_URL: () => receiver.url("/broken-alerts"), DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET }],
]) {
  test(`${name}, 600 undelivered resolved episodes owe nothing: a new condition fires once and resolves once, and the sweep takes the old episodes`, async () => {
    const vars = Object.fromEntries(Object.entries(receiverVars).map(([k, v]) => [k, typeof v === "function" ? v() : v]));
    const relay = await startRelay({ vars: { ALERT_DLQ_INGRESS_PER_HOUR: "0", DLQ_RETENTION: "1h", ...vars } });
    const db = relay.db;
    const hasReceiver = "ALERT_WEBHOOK_URL" in vars;
    const sentBefore = alerts("/broken-alerts").length;
    try {
      // 600 episodes of a source alarm, resolved two hours ago, their alerts never delivered.
      const old = Date.now() - 3 * 3_600_000;
      await db
        .prepare(
          `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 599)
           INSERT INTO alarms (id, since, kind, subject, state, resolved_at, detail, clear_runs, sent_state, attempts, updated_at)
           SELECT 'source_silent:quiet', ?1 + i, 'source_silent', 'quiet', 'resolved', ?1 + i + 3600000, '{}', 2, NULL, ?2, ?1 FROM n`,
        )
        .bind(old, hasReceiver ? 40 : 0)
        .run();
      await insertPendingEntry(db, "dlq_pile_1");
      const eps = () => rows(db, "SELECT state FROM alarms WHERE id = 'dlq_ingress:dlq'");
      for (let i = 0; i < 3; i++) await watchdog(relay);
      assert.deepEqual(await eps(), [{ state: "firing" }], "one episode over three runs, not one per run");
      const admin = adminClient(relay, [DOWN_SECRET, receiver.url("/broken-alerts")]);
      const listed = await admin.get("alerts");
      assert.equal(listed.data.receiver_configured, hasReceiver);
      const firing = listed.data.items.find((i) => i.id === "dlq_ingress:dlq");
      assert.equal(firing.delivery.owed, hasReceiver, "owed only to a receiver");
      const posted = alerts("/broken-alerts").slice(sentBefore);
      assert.equal(posted.filter((a) => a.json.alert.id === "source_silent:quiet").length, 0, "no stale resolve is sent");
      assert.equal(posted.filter((a) => a.json.alert.id === "dlq_ingress:dlq").length, hasReceiver ? 3 : 0, "the new alert is tried on every run");

      await db.prepare("UPDATE dead_letters SET created_at = created_at - 7200000").run();
      await db.prepare("UPDATE dead_letter_arrivals SET minute = minute - 120").run();
      for (let i = 0; i < 3; i++) await watchdog(relay);
      assert.deepEqual(await eps(), [{ state: "resolved" }], "resolved once, and no new episode");

      // The episodes resolved longer ago than DLQ_RETENTION leave for the archive.
      await waitFor(async () => {
        const res = await admin.post("maintenance/run", {});
        assert.equal(res.status, 200, JSON.stringify(res.json));
        return res.data.more === false;
      }, { what: "the sweep to finish", timeoutMs: 30_000, intervalMs: 200 });
      assert.equal((await rows(db, "SELECT count(*) AS n FROM alarms WHERE id = 'source_silent:quiet'"))[0].n, 0, "the old episodes left D1");
      assert.deepEqual(await eps(), [{ state: "resolved" }], "the recent one stays");
    } finally {
      await relay.dispose();
    }
  });
}

test("a watchdog that fails answers maintenance/run with an error naming it (a table only it reads renamed away), and the next run succeeds", async () => {
  const relay = await startRelay({ vars: { ALERT_DLQ_INGRESS_PER_HOUR: "0" } });
  const admin = adminClient(relay);
  try {
    // Only the watchdog reads `breakers` here: the sweep step itself succeeds.
    await relay.db.prepare("ALTER TABLE breakers RENAME TO breakers_away").run();
    const failed = await admin.post("maintenance/run", {});
    assert.equal(failed.status, 503, JSON.stringify(failed.json));
    assert.equal(failed.error.code, "WATCHDOG_FAILED", failed.error.message);
    assert.match(failed.error.message, /^the alarm watchdog failed: .*no such table: breakers/, failed.error.message);
    assert.match(failed.error.message, /the sweep step ran/, failed.error.message);
    await relay.db.prepare("ALTER TABLE breakers_away RENAME TO breakers").run();
    // With the alarms table gone both parts fail, and the answer names both.
    await relay.db.prepare("ALTER TABLE alarms RENAME TO alarms_away").run();
    const both = await admin.post("maintenance/run", {});
    assert.equal(both.status, 503, JSON.stringify(both.json));
    assert.equal(both.error.code, "WATCHDOG_FAILED");
    assert.match(both.error.message, /no such table: alarms.*the sweep step failed too/, both.error.message);
    await relay.db.prepare("ALTER TABLE alarms_away RENAME TO alarms").run();
    const ran = await admin.post("maintenance/run", {});
    assert.equal(ran.status, 200, JSON.stringify(ran.json));
    assert.deepEqual(ran.data.alarms, { fired: [], resolved: [] });
  } finally {
    await relay.dispose();
  }
});

test("a receiver that hangs costs a run one ALERT_TIMEOUT, however many alerts are due, and they are sent again on the next run", async () => {
  const relay = await startRelay({
    vars: {
      ALERT_WEBHOOK_URL: receiver.url("/hanging-alerts"), DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, ALERT_TIMEOUT: "1s",
      ALERT_DLQ_INGRESS_PER_HOUR: "0", ALERT_DLQ_OLDEST: "1s", DLQ_CAPACITY: "1",
    },
  });
  const admin = adminClient(relay, [DOWN_SECRET, receiver.url("/hanging-alerts")]);
  const ids = ["dlq_capacity:dlq", "dlq_ingress:dlq", "dlq_oldest:dlq"];
  try {
    await insertPendingEntry(relay.db, "dlq_hang_1", 5_000);
    for (const round of [1, 2]) {
      const started = Date.now();
      const res = await admin.post("maintenance/run", {});
      const took = Date.now() - started;
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.ok(took < 4_000, `round ${round}: the run took ${took} ms for ${ids.length} alerts under ALERT_TIMEOUT=1s`);
      if (round === 1) assert.deepEqual([...res.data.alarms.fired].sort(), ids);
      for (const id of ids) assert.equal(alertsFor(id, "firing", "/hanging-alerts").length, round, `${id} sent in round ${round}`);
    }
    const items = (await admin.get("alerts")).data.items.filter((i) => ids.includes(i.id));
    for (const item of items) {
      assert.deepEqual([item.delivery.sent, item.delivery.owed, item.delivery.attempts], [null, true, 2], item.id);
      assert.match(item.delivery.last_error, /within 1000 ms \(ALERT_TIMEOUT\)/, item.id);
    }
  } finally {
    await relay.dispose();
  }
});
