// Issue 42's admin API: `since`/`until` on the dead-letter list and groups,
// `GET /api/v1/admin/whoami` (any valid token: admin or pull), and
// `GET /api/v1/admin/activity` (events accepted, deliveries settled, dead
// letters, oldest first from a cursor), on real local D1.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient, token } from "./support/admin.mjs";
import { insertPendingEntry } from "./support/dead-letters.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const HOUR = 3_600_000;
const secrets = { [secretNameFor("act-ok")]: "act-ok-secret", [secretNameFor("act-bad")]: "act-bad-secret" };
let relay, admin, downstream;
const started = Date.now();

before(async () => {
  downstream = await startDownstream({ "/ok": () => ({ status: 200 }), "/bad": () => ({ status: 400 }) });
  const SOURCES = {
    "act-ok": { scheme: "hmac-sha256", downstream: downstream.url("/ok") },
    "act-bad": { scheme: "hmac-sha256", downstream: downstream.url("/bad") },
  };
  relay = await startRelay({ relayVars: { SOURCES: JSON.stringify(SOURCES), ...secrets, DOWNSTREAM_SIGNING_SECRET: "act-down", BREAKER_FAILURE_THRESHOLD: "1000" } });
  admin = adminClient(relay, [...Object.values(secrets), "act-down"]);
  // Three entries dead-lettered 3 h, 2 h and 10 min ago.
  for (const [id, age] of [["dlq_t3h", 3 * HOUR], ["dlq_t2h", 2 * HOUR], ["dlq_t10m", 10 * 60_000]]) await insertPendingEntry(relay.db, id, age);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const ids = (res) => res.data.items.map((e) => e.id).filter((id) => id.startsWith("dlq_t"));

test("since and until narrow the dead-letter list and the groups to when entries were dead-lettered", async () => {
  const now = Date.now();
  const iso = (ms) => new Date(ms).toISOString();
  const cases = [
    [`since=${now - HOUR}`, ["dlq_t10m"]],
    [`until=${iso(now - 90 * 60_000)}`, ["dlq_t2h", "dlq_t3h"]],
    [`since=${iso(now - 150 * 60_000)}&until=${now - HOUR}`, ["dlq_t2h"]],
    [`since=${now - 4 * HOUR}`, ["dlq_t10m", "dlq_t2h", "dlq_t3h"]],
  ];
  for (const [query, want] of cases) {
    const list = await admin.get(`webhook-dlq?${query}`);
    assert.equal(list.status, 200, JSON.stringify(list.json));
    assert.deepEqual(ids(list), want, query);
    const groups = await admin.get(`webhook-dlq/groups?${query}`);
    assert.equal(groups.status, 200, JSON.stringify(groups.json));
    const group = groups.data.items.find((g) => g.signature === "sig");
    assert.equal(group?.count ?? 0, want.length, `groups ${query}`);
  }
});

test("a bad, swapped or misplaced time is refused with 400 naming it", async () => {
  const cases = [
    ["webhook-dlq?since=yesterday", "since"],
    ["webhook-dlq?since=2000&until=1000", "since"],
    ["webhook-dlq/groups?until=2026-13-01T00:00:00Z", "until"],
    ["webhook-dlq?status=evicted&since=1", "since"],
    ["webhook-dlq/groups?after=1", "after"],
  ];
  for (const [path, param] of cases) {
    const res = await admin.get(path);
    assert.equal(res.status, 400, path);
    assert.ok(res.error.message.startsWith(`${param}:`), `${path}: ${res.error.message}`);
  }
});

test("whoami answers any valid token with who it is, and refuses the rest as every admin route does", async () => {
  const now = Math.floor(Date.now() / 1000);
  const me = await admin.get("whoami");
  assert.equal(me.status, 200);
  assert.deepEqual(Object.keys(me.data).sort(), ["exp", "role", "sub"]);
  assert.equal(me.data.sub, "test-admin");
  assert.equal(me.data.role, "admin");
  assert.ok(Math.abs(me.data.exp - (now + 600)) < 30, `exp in unix seconds: ${me.data.exp}`);
  const pull = `Bearer ${token({ claims: { sub: "laptop", role: "pull", destination: "demo-pull" } })}`;
  const p = await admin.get("whoami", pull);
  assert.equal(p.status, 200);
  assert.deepEqual({ ...p.data, exp: 0 }, { sub: "laptop", role: "pull", destination: "demo-pull", exp: 0 });
  // A pull token opens nothing else.
  assert.equal((await admin.get("webhook-dlq", pull)).status, 403);
  const refusals = [
    [`Bearer ${token({ claims: { role: "viewer" } })}`, 403],
    [`Bearer ${token({ claims: { exp: now - 1 } })}`, 401],
    [`Bearer ${token({ secret: "not-the-secret" })}`, 401],
    [`Bearer ${token({ claims: { role: "pull" } })}`, 401],
    [null, 401],
  ];
  for (const [auth, status] of refusals) assert.equal((await admin.get("whoami", auth)).status, status, String(auth));
  assert.equal((await admin.post("whoami", {})).status, 405);
  const extra = await admin.get("whoami?verbose=1");
  assert.equal(extra.status, 400);
  assert.match(extra.error.message, /^verbose:/);
});

async function send(source, n) {
  const body = JSON.stringify({ n, source });
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: secrets[secretNameFor(source)], operationId: `${source}-${n}` }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}

/** Every activity item after `after`, following next_cursor page by page (never null). */
async function activity(query, limit = 200) {
  const items = [];
  let after = String(started);
  for (let pages = 0; pages < 50; pages++) {
    const res = await admin.get(`activity?after=${encodeURIComponent(after)}&limit=${limit}${query}`);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(typeof res.data.next_cursor, "string", "next_cursor is never null");
    items.push(...res.data.items);
    after = res.data.next_cursor;
    if (res.data.items.length < limit) return items;
  }
  throw new Error("activity did not end");
}

test("activity lists events accepted, deliveries settled and dead letters, oldest first, by source and destination", async () => {
  const ok = await send("act-ok", 1);
  const bad = await send("act-bad", 1);
  const seen = await waitFor(async () => {
    const items = await activity("");
    const kinds = (id) => items.filter((i) => i.event_id === id).map((i) => `${i.kind}:${i.outcome ?? ""}`).sort();
    const done = kinds(ok).join() === "delivery:delivered,event:" && kinds(bad).join() === "dead_letter:,delivery:dead_lettered,event:";
    return done && items;
  }, { timeoutMs: 30_000, intervalMs: 250, what: "the two events' activity" });
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1].at <= seen[i].at, "oldest first");
  const accepted = seen.find((i) => i.event_id === ok && i.kind === "event");
  assert.deepEqual(Object.keys(accepted).sort(), ["at", "code", "destination", "entry_id", "event_id", "idempotency_key", "kind", "outcome", "source"]);
  assert.equal(accepted.idempotency_key, "act-ok:act-ok-1");
  assert.equal(accepted.source, "act-ok");
  const delivered = seen.find((i) => i.event_id === ok && i.kind === "delivery");
  assert.deepEqual([delivered.destination, delivered.outcome, delivered.idempotency_key], ["act-ok", "delivered", "act-ok:act-ok-1"]);
  const failed = seen.find((i) => i.event_id === bad && i.kind === "delivery");
  assert.deepEqual([failed.outcome, failed.code], ["dead_lettered", "UPSTREAM_4XX"]);
  const letter = seen.find((i) => i.event_id === bad && i.kind === "dead_letter");
  assert.match(letter.entry_id, /^dlq_/);
  assert.equal(letter.code, "UPSTREAM_4XX");
  // The filters, and a page of one at a time with no item twice.
  assert.ok((await activity("&source=act-bad")).every((i) => i.source === "act-bad"));
  const toOk = await activity("&destination=act-ok");
  assert.deepEqual(toOk.filter((i) => i.event_id === ok).map((i) => i.kind).sort(), ["delivery", "event"]);
  assert.ok(toOk.every((i) => i.event_id !== bad));
  const paged = await activity("", 1);
  const key = (i) => `${i.kind}/${i.event_id}/${i.destination}/${i.entry_id}`;
  assert.deepEqual(paged.map(key), seen.map(key), "pages of one walk the same items once each");
});

test("activity refuses an unknown parameter and a bad position by name", async () => {
  for (const [query, param] of [["cursor=x", "cursor"], ["after=yesterday", "after"], ["after=c1.nope", "after"], ["limit=0", "limit"], ["source=Not%20A%20Source", "source"]]) {
    const res = await admin.get(`activity?${query}`);
    assert.equal(res.status, 400, query);
    assert.ok(res.error.message.startsWith(`${param}:`), `${query}: ${res.error.message}`);
  }
  const first = await admin.get("activity");
  assert.equal(first.status, 200);
  assert.equal(typeof first.data.next_cursor, "string");
  const rowsNow = await rows(relay.db, "SELECT count(*) AS n FROM events");
  assert.ok(rowsNow[0].n >= 0);
});
