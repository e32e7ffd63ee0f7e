// Governed replay against a real local downstream: one entry, already
// delivered events, poisoning after repeated failures, replay-all counts,
// and a canary that stops the run.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { SECRETS as RELAY_SECRETS } from "./support/harness.mjs";
import { token } from "./support/admin.mjs";
import { mintToken } from "../scripts/admin-jwt.mjs";

/** A token of the internal kind the DLQ worker mints (HS256, role relay-internal, one minute). */
const internalToken = (secret) => mintToken(secret, { sub: "hookrelay-dlq", role: "relay-internal", ttlS: 60 });

let relay, admin, downstream;
const broken = { fixable: true, mixed: new Set() };
const SOURCES = {};
const SECRETS = {};

before(async () => {
  downstream = await startDownstream({
    "/fixable": () => ({ status: broken.fixable ? 400 : 200 }),
    "/never": () => ({ status: 422 }),
    "/mixed": (req) => ({ status: broken.mixed.has(JSON.parse(req.body ?? "{}").n) ? 400 : 200 }),
  });
  // Each replay-all test has its own source, so one test's leftovers never enter another's run.
  for (const [name, path] of [["fixable", "/fixable"], ["never", "/never"], ["mixed", "/mixed"], ["canary", "/mixed"], ["slices", "/mixed"]]) {
    SOURCES[name] = { scheme: "hmac-sha256", downstream: downstream.url(path) };
    SECRETS[`WEBHOOK_SECRET_${name.toUpperCase()}`] = `${name}-webhook-secret`;
  }
  // Only the relay gets the delivery configuration: replays run there.
  relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify(SOURCES), ...SECRETS, DOWNSTREAM_SIGNING_SECRET: "replay-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
  });
  admin = adminClient(relay, [...Object.values(SECRETS), "replay-down-secret"]);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function deadLettered(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS[`WEBHOOK_SECRET_${source.toUpperCase()}`], operationId }) });
  assert.equal(res.status, 202);
  const { event_id } = await res.json();
  const row = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", event_id))[0], { what: `dead letter of ${event_id}` });
  return { event_id, id: row.id };
}
const entry = async (id) => (await admin.get(`webhook-dlq/${id}`)).data;
const calls = (path, eventId) => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === eventId).length;

test("a replay after the downstream is fixed delivers once, closes the entry and writes the audit record", async () => {
  broken.fixable = true;
  const { event_id, id } = await deadLettered("fixable", { n: 1 }, "fix-1");
  assert.equal(calls("/fixable", event_id), 1);
  assert.equal((await admin.post(`webhook-dlq/${id}/replay`, { reason: "  no " })).status, 400, "a reason of under 5 characters");
  assert.equal((await admin.post(`webhook-dlq/${id}/replay`, {})).status, 400);
  assert.equal((await admin.post("webhook-dlq/dlq_000000000000000000000000/replay", { reason: "does not exist" })).status, 404);

  broken.fixable = false;
  const res = await admin.post(`webhook-dlq/${id}/replay`, { reason: "downstream fixed in deploy 42" });
  assert.equal(res.status, 200);
  assert.equal(res.data.outcome, "succeeded");
  assert.equal(res.data.delivery, "delivered");
  assert.equal(calls("/fixable", event_id), 2);
  const [req] = downstream.hits("/fixable").filter((r) => r.headers["x-operation-id"] === event_id).slice(-1);
  assert.equal(req.headers["x-idempotency-key"], "fixable:fix-1", "the original identity is kept");
  assert.equal((await entry(id)).status, "replayed");
  const [ev] = await rows(relay.db, "SELECT * FROM events WHERE event_id = ?", event_id);
  assert.equal(ev.delivery_status, "delivered");

  const audit = (await admin.get(`audit?entry_id=${id}`)).data.items;
  assert.equal(audit.length, 1);
  assert.equal(audit[0].actor, "test-admin");
  assert.equal(audit[0].reason, "downstream fixed in deploy 42");
  assert.equal(audit[0].outcome, "succeeded");
  assert.ok(audit[0].at > 0);

  const again = await admin.post(`webhook-dlq/${id}/replay`, { reason: "one more time" });
  assert.equal(again.status, 409);
  assert.equal(again.error.code, "CONFLICT");
});

test("a provider's redelivery of a refused event makes no second call; its replay delivers it once", async () => {
  broken.fixable = true;
  const { event_id, id } = await deadLettered("fixable", { n: 2 }, "fix-2");
  broken.fixable = false;
  // The provider redelivers the same webhook: a duplicate, acked and
  // counted, with no second side effect (DESIGN §3); the DLQ entry is the
  // way to send it again.
  const body = JSON.stringify({ n: 2 });
  await relay.fetch("/webhooks/fixable", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS.WEBHOOK_SECRET_FIXABLE, operationId: "fix-2" }) });
  await waitFor(async () => (await rows(relay.db, "SELECT duplicate_count FROM events WHERE event_id = ?", event_id))[0]?.duplicate_count === 1, { what: "the duplicate counted" });
  assert.equal(calls("/fixable", event_id), 1, "the duplicate made no call");
  const res = await admin.post(`webhook-dlq/${id}/replay`, { reason: "downstream fixed, replaying" });
  assert.equal(res.data.outcome, "succeeded");
  assert.equal(res.data.delivery, "delivered");
  assert.equal(calls("/fixable", event_id), 2, "the replay delivered it");
  const again = await admin.post(`webhook-dlq/${id}/replay`, { reason: "replay it once more" });
  assert.equal(again.status, 409, "a replayed entry is not replayed twice");
  assert.equal(calls("/fixable", event_id), 2, "no second delivery");
});

test("an entry whose replays keep failing is poisoned after five and kept for audit", async () => {
  const { id } = await deadLettered("never", { n: 3 }, "never-3");
  for (let i = 1; i <= 4; i++) {
    const res = await admin.post(`webhook-dlq/${id}/replay`, { reason: `attempt number ${i}` });
    assert.equal(res.data.outcome, "failed");
    assert.equal(res.data.replay_attempts, i);
    assert.equal(res.data.error.code, "UPSTREAM_4XX");
  }
  const fifth = await admin.post(`webhook-dlq/${id}/replay`, { reason: "attempt number 5" });
  assert.equal(fifth.data.outcome, "poisoned");
  assert.equal(fifth.data.status, "poisoned");
  const kept = await entry(id);
  assert.equal(kept.status, "poisoned");
  assert.equal(kept.replay_attempts, 5);
  assert.equal((await admin.post(`webhook-dlq/${id}/replay`, { reason: "attempt number 6" })).status, 409);
  const stats = (await admin.get("webhook-dlq/stats")).data;
  assert.equal(stats.counters.drop_poison, 1);
  assert.equal(stats.by_status.poisoned, 1);
  assert.equal((await admin.get(`audit?entry_id=${id}`)).data.items.length, 5);
});

test("replay-all over a mix of succeeding and failing entries reports counts that add up", async () => {
  broken.mixed = new Set([10, 11, 12, 13, 14, 15]);
  const ids = [];
  for (const n of [10, 11, 12, 13, 14, 15]) ids.push((await deadLettered("mixed", { n }, `mixed-${n}`)).id);
  // Two pending entries with one payload: the run replays it once.
  const [dup] = await rows(relay.db, "SELECT content_hash FROM dead_letters WHERE id = ?", ids[0]);
  await relay.db.prepare("UPDATE dead_letters SET content_hash = ? WHERE id = ?").bind(dup.content_hash, ids[5]).run();
  broken.mixed = new Set([11, 13]);

  const res = await admin.post("webhooks/dlq/replay-all", { reason: "downstream mostly fixed", concurrency: 2, filter: { source: "mixed" } });
  assert.equal(res.status, 200);
  const d = res.data;
  // The seed's arithmetic (DESIGN §4): attempted = succeeded + failed + deduped.
  assert.equal(d.attempted, 6);
  assert.equal(d.succeeded, 3);
  assert.equal(d.failed, 2);
  assert.equal(d.deduped, 1);
  assert.equal(d.attempted, d.succeeded + d.failed + d.deduped);
  assert.equal(d.remaining, 2, "the two failures are still pending");
  assert.equal(d.next_cursor, null);
  const statuses = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, (await entry(id)).status])));
  assert.equal(Object.values(statuses).filter((s) => s === "replayed").length, 4);
  const stats = (await admin.get("webhook-dlq/stats")).data;
  assert.ok(stats.replay.deduped >= 1);
});

test("a canary that fails stops the run: nothing past the canary is replayed", async () => {
  broken.mixed = new Set([20, 21, 22, 23, 24]);
  const ids = [];
  for (const n of [20, 21, 22, 23, 24]) ids.push((await deadLettered("canary", { n }, `canary-${n}`)).id);
  const before = downstream.hits("/mixed").length;
  // Entries 20 and 21 are the oldest, so they form the canary; 20 still fails.
  broken.mixed = new Set([20]);
  const res = await admin.post("webhooks/dlq/replay-all", { reason: "canary first, please", canary: 2, concurrency: 5, filter: { source: "canary" } });
  assert.equal(res.status, 200);
  assert.equal(res.data.canary.size, 2);
  assert.equal(res.data.canary.passed, false);
  assert.equal(res.data.canary.failed, 1);
  assert.match(res.data.stopped, /canary/);
  assert.equal(res.data.attempted, 2);
  assert.equal(downstream.hits("/mixed").length - before, 2, "only the canary reached the downstream");
  for (const id of ids.slice(2)) {
    const e = await entry(id);
    assert.equal(e.status, "pending");
    assert.equal(e.replay_attempts, 0);
  }

  broken.mixed = new Set();
  const rest = await admin.post("webhooks/dlq/replay-all", { reason: "canary fixed, go on", canary: 1, filter: { source: "canary" }, rate_per_s: 20 });
  assert.equal(rest.data.canary.passed, true);
  assert.equal(rest.data.failed, 0);
  assert.ok(rest.data.succeeded >= 4);
});

test("replay-all works through a backlog a slice at a time with a continuation cursor", async () => {
  broken.mixed = new Set([30, 31, 32, 33, 34]);
  for (const n of [30, 31, 32, 33, 34]) await deadLettered("slices", { n }, `slice-${n}`);
  broken.mixed = new Set();
  let cursor = null;
  let calls = 0;
  let replayed = 0;
  do {
    const res = await admin.post("webhooks/dlq/replay-all", { reason: "drain in slices", max_entries: 2, filter: { source: "slices" }, ...(cursor ? { cursor } : {}) });
    assert.equal(res.status, 200);
    assert.ok(res.data.attempted <= 2);
    replayed += res.data.succeeded;
    cursor = res.data.next_cursor;
    calls++;
  } while (cursor);
  assert.equal(replayed, 5);
  assert.equal(calls, 3);
});

test("the relay's internal replay route refuses every caller but the DLQ worker", async () => {
  const call = JSON.stringify({ event: {}, queue_message_id: "m", entry_code: "UNKNOWN" });
  const post = (headers) => relay.fetch("/internal/v1/replay", { method: "POST", body: call, headers });
  const cases = [
    [{}, 401, "no token"],
    [{ authorization: "Bearer not-a-token" }, 401, "a malformed token"],
    // An admin token is signed with ADMIN_JWT_SECRET, not the internal secret.
    [{ authorization: `Bearer ${token()}` }, 401, "an admin token"],
    // Under the internal secret, but not the internal role.
    [{ authorization: `Bearer ${mintToken(RELAY_SECRETS.RELAY_INTERNAL_SECRET, { role: "admin", ttlS: 60 })}` }, 403, "the admin role"],
    [{ authorization: `Bearer ${internalToken("some-other-secret")}` }, 401, "a token under another secret"],
  ];
  for (const [headers, status, what] of cases) {
    const res = await post(headers);
    assert.equal(res.status, status, `${what}: ${await res.text()}`);
  }
  const res = await post({ authorization: `Bearer ${internalToken(RELAY_SECRETS.RELAY_INTERNAL_SECRET)}` });
  assert.equal(res.status, 200, "the DLQ worker's own kind of token is let in");
  const answer = await res.json();
  assert.ok(answer.failure, "an empty event is a failure, never a success");
});
