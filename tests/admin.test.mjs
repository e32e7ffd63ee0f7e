// The admin API through the relay's origin: authentication, listing with
// filters and cursor pagination, one envelope, stats, and events.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows, SECRETS } from "./support/harness.mjs";
import { adminClient, token } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";

let relay, admin;
before(async () => {
  relay = await startRelay();
  admin = adminClient(relay);
  const producer = await relay.producer();
  // Seven dead letters: four BAD_PAYLOAD from demo-hmac, three SCHEMA_MISMATCH from demo-github.
  for (let n = 0; n < 7; n++) {
    const msg = n < 4
      ? { v: 1, event_id: `evt_adm_${n}`, idempotency_key: `demo-hmac:adm-${n}`, source: "demo-hmac", received_at_ms: Date.now(), body: `bad ${n} {` }
      : { v: 1, event_id: `evt_adm_${n}`, source: "demo-github", received_at_ms: Date.now(), body: `{"n":${n}}`, idempotency_key: 7 };
    await producer.send(msg);
    await waitFor(async () => (await rows(relay.db, "SELECT 1 FROM dead_letters WHERE event_id = ?", `evt_adm_${n}`)).length, { what: `entry ${n}` });
  }
});
after(() => relay?.dispose());

test("every admin route refuses a missing, malformed, forged, expired or premature token with 401 and a non-admin with 403", async () => {
  const now = Math.floor(Date.now() / 1000);
  const cases = [
    ["no header", null, 401],
    ["not bearer", "Basic YWRtaW46YWRtaW4=", 401],
    ["garbage", "Bearer not.a.jwt", 401],
    ["wrong secret", `Bearer ${token({ secret: "not-the-secret" })}`, 401],
    ["expired", `Bearer ${token({ claims: { exp: now - 1 } })}`, 401],
    ["not yet valid", `Bearer ${token({ claims: { nbf: now + 600 } })}`, 401],
    ["alg none", `Bearer ${token().split(".").slice(0, 1).map(() => Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url"))}.${token().split(".")[1]}.`, 401],
    ["alg HS512", `Bearer ${token({ header: { alg: "HS512" } })}`, 401],
    ["tampered payload", `Bearer ${(() => { const [h, , s] = token().split("."); return `${h}.${Buffer.from(JSON.stringify({ role: "admin", exp: now + 600, sub: "mallory" })).toString("base64url")}.${s}`; })()}`, 401],
    ["no role", `Bearer ${token({ claims: { role: undefined } })}`, 403],
    ["role user", `Bearer ${token({ claims: { role: "user" } })}`, 403],
  ];
  const routes = [
    ["GET", "webhook-dlq"],
    ["GET", "webhook-dlq/stats"],
    ["GET", "webhook-dlq/dlq_x"],
    ["POST", "webhook-dlq/dlq_x/replay"],
    ["GET", "webhook-dlq/groups"],
    ["POST", "webhook-dlq/dlq_x/archive"],
    ["POST", "webhook-dlq/dlq_x/unarchive"],
    ["POST", "webhook-dlq/dlq_x/discard"],
    ["GET", "events/evt_x"],
    ["POST", "webhooks/dlq/replay-all"],
    ["GET", "events"],
    ["GET", "audit"],
  ];
  for (const [method, path] of routes) {
    for (const [label, auth, status] of cases) {
      const res = method === "GET" ? await admin.get(path, auth) : await admin.post(path, { reason: "a good reason" }, auth);
      assert.equal(res.status, status, `${method} ${path} with ${label}`);
      assert.equal(res.error.code, status === 401 ? "UNAUTHORIZED" : "FORBIDDEN");
    }
  }
  const ok = await admin.get("webhook-dlq");
  assert.equal(ok.status, 200);
});

test("entries are listed newest first, filtered, and paginated with an opaque cursor", async () => {
  const seen = [];
  let cursor = null;
  let pages = 0;
  do {
    const res = await admin.get(`webhook-dlq?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    assert.equal(res.status, 200);
    assert.ok(res.data.items.length <= 3);
    seen.push(...res.data.items);
    cursor = res.data.next_cursor;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.equal(seen.length, 7);
  assert.equal(new Set(seen.map((e) => e.id)).size, 7, "no entry twice");
  const times = seen.map((e) => e.created_at);
  assert.deepEqual(times, [...times].sort((a, b) => b - a), "newest first");
  assert.ok(!("envelope" in seen[0]), "the listing is a summary");

  const schema = await admin.get("webhook-dlq?code=SCHEMA_MISMATCH");
  assert.deepEqual(schema.data.items.map((e) => e.error_code), ["SCHEMA_MISMATCH", "SCHEMA_MISMATCH", "SCHEMA_MISMATCH"]);
  const hmac = await admin.get("webhook-dlq?source=demo-hmac&class=poison&status=pending");
  assert.equal(hmac.data.items.length, 4);
  assert.equal((await admin.get("webhook-dlq?source=nobody")).data.items.length, 0);

  for (const bad of ["code=NOPE", "class=sometimes", "status=gone", "limit=0", "limit=201", "cursor=garbage"]) {
    const res = await admin.get(`webhook-dlq?${bad}`);
    assert.equal(res.status, 400, bad);
    assert.equal(res.error.code, "BAD_REQUEST");
  }
});

test("one entry answers with its whole envelope; an unknown id is 404", async () => {
  const [first] = (await admin.get("webhook-dlq?limit=1")).data.items;
  const res = await admin.get(`webhook-dlq/${first.id}`);
  assert.equal(res.status, 200);
  const env = res.data.envelope;
  assert.equal(env.id, first.id);
  for (const part of ["identity", "timing", "delivery", "failure", "transport", "input"]) assert.ok(env[part], part);
  assert.equal((await admin.get("webhook-dlq/dlq_000000000000000000000000")).status, 404);
  assert.equal((await admin.post("webhook-dlq/stats", {})).status, 405);
});

test("stats match the state", async () => {
  const { data } = await admin.get("webhook-dlq/stats");
  assert.equal(data.depth, 7);
  assert.equal(data.by_status.pending, 7);
  assert.equal(data.by_status.replayed, 0);
  assert.equal(data.by_class.poison, 7);
  assert.equal(data.dominant_failure_code, "BAD_PAYLOAD");
  assert.equal(data.ingress_last_hour, 7);
  assert.ok(data.oldest_pending_age_s >= 0 && data.oldest_pending_age_s < 600);
  assert.equal(data.counters.dead_lettered, 7);
  assert.deepEqual(data.replay, { succeeded: 0, failed: 0, poisoned: 0, deduped: 0 });
  assert.deepEqual(data.breakers, []);
});

test("events answer 'did this webhook arrive?' by key, source and time", async () => {
  const body = JSON.stringify({ arrive: true });
  const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body, headers: hmacHeaders(body, { operationId: "arrived-1" }) });
  assert.equal(res.status, 202);
  const since = new Date(Date.now() - 60_000).toISOString();
  const found = await waitFor(async () => (await admin.get(`events?key=${encodeURIComponent("demo-hmac:arrived-1")}`)).data.items[0], { what: "the event" });
  assert.equal(found.source, "demo-hmac");
  assert.equal(found.duplicate_count, 0);
  assert.equal(found.delivery_status, "none");
  assert.ok(found.ingested_at > 0);
  assert.equal((await admin.get(`events?source=demo-hmac&since=${encodeURIComponent(since)}`)).data.items.length, 1);
  assert.equal((await admin.get(`events?since=${Date.now() + 60_000}`)).data.items.length, 0);
  assert.equal((await admin.get("events?since=yesterday")).status, 400);
});

test("no admin answer ever contains a secret", async () => {
  // adminClient scans every answer; this adds the configured webhook secrets explicitly.
  const scanned = adminClient(relay, Object.values(SECRETS));
  for (const path of ["webhook-dlq", "webhook-dlq/stats", "events", "audit"]) assert.equal((await scanned.get(path)).status, 200);
});

test("a query parameter a route does not know is refused with 400 naming it, on every route", async () => {
  const cases = [
    ["GET", "webhook-dlq/stats?verbose=1", "verbose"],
    ["GET", "webhook-dlq/dlq_000000000000000000000000?expand=1", "expand"],
    ["GET", "webhook-dlq?stauts=pending", "stauts"],
    ["GET", "events?soruce=demo-hmac", "soruce"],
    ["GET", "jobs/job_1?x=1", "x"],
    ["POST", "webhooks/dlq/replay-all?dry=1", "dry"],
    ["POST", "jobs?dry_run=true", "dry_run"],
  ];
  for (const [method, path, param] of cases) {
    const res = method === "GET" ? await admin.get(path) : await admin.post(path, { reason: "should not run" });
    assert.equal(res.status, 400, `${method} ${path}: ${JSON.stringify(res.json)}`);
    assert.ok(res.error.message.includes(param) || JSON.stringify(res.error).includes(param), `${method} ${path} names ${param}: ${JSON.stringify(res.error)}`);
  }
});
