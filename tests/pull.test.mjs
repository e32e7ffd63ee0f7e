// Pull destinations (DESIGN §3 "Pull destinations", §4 "Pulling"; issue 43),
// end to end in Miniflare:
// - a webhook routed to a pull destination is stored `pending` and due,
//   with no call and no `deliveries` message;
// - a pull leases it with the fields §4 names, its body byte-exact and its
//   headers redacted; an empty pull answers `next_due_in_ms`;
// - an ack with 200 makes it `delivered`, and a second ack changes nothing;
//   an ack with 500 makes it `pending` with `due_at`; an ack of an old lease
//   is `lease_expired`; an ack naming another destination's delivery is
//   `unknown`; a 4xx is retried like any failure, and the sixth failed ack
//   dead-letters the delivery (an entry naming the destination);
// - a name that is not a pull destination is 404, an unknown field is 400
//   naming it; an admin token pulls any pull destination, a pull token only
//   its own (another's is 403), signed with its PULL_TOKEN_SECRET_<NAME>
//   when that is set (one signed otherwise is refused), and refused by
//   every admin route;
// - a dead-lettered delivery's replay succeeds by making it pullable again
//   with a fresh budget (six more attempts, then an entry of its own), and
//   a delivered one is never revived;
// - a delivery due and unpulled past PARK_MAX_AGE is dead-lettered
//   (`TIMEOUT`) by the periodic check, and is pullable again once replayed.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { token, ALL_SECRETS, adminClient } from "./support/admin.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "pull-source-secret";
const OUTBOX_SECRET = "outbox-pull-token-secret";
let relay;
let downstream;
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function start() {
  if (relay) return relay;
  downstream = await startDownstream({ "/web": () => ({ status: 200 }) });
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ shop: { scheme: "hmac-sha256", routes: [{ to: "inbox" }, { to: "outbox" }, { to: "web" }] } }),
      DESTINATIONS: JSON.stringify({ inbox: { pull: { lease_s: 30 } }, outbox: { pull: {} }, web: { url: downstream.url("/web") } }),
      [secretNameFor("shop")]: SOURCE_SECRET,
      RETRY_DELAYS_S: "30,60,120,240,480",
      MESSAGE_OVERDUE: "5s",
      // outbox's pull tokens are signed with its own secret (both workers read it).
      PULL_TOKEN_SECRET_OUTBOX: OUTBOX_SECRET,
    },
  });
  return relay;
}

async function send(body) {
  const res = await relay.fetch("/webhooks/shop", {
    method: "POST",
    body,
    headers: { ...hmacHeaders(body, { secret: SOURCE_SECRET, operationId: `pull-${Math.random()}` }), "content-type": "application/json; charset=utf-8", authorization: "Bearer provider-credential" },
  });
  assert.equal(res.status, 202, await res.clone().text());
  return res.json();
}

async function call(path, body, auth = `Bearer ${token()}`) {
  const headers = { "content-type": "application/json" };
  if (auth) headers.authorization = auth;
  const res = await relay.fetch(`/api/v1/pull/${path}`, { method: "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  for (const secret of ALL_SECRETS()) assert.ok(!text.includes(secret), `a secret appeared in the answer to ${path}`);
  return { status: res.status, json: JSON.parse(text) };
}
const pull = (destination, body = {}) => call(destination, body);
const ack = (destination, results) => call(`${destination}/ack`, { results });
const delivery = async (id, destination) => (await rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ? AND destination = ?", id, destination))[0];

/** Sends one event and waits until its pull deliveries are stored. */
async function stored(body) {
  const { event_id } = await send(body);
  await waitFor(async () => (await delivery(event_id, "inbox")) && (await delivery(event_id, "outbox")) && (await delivery(event_id, "web"))?.state === "delivered", { what: "the deliveries stored" });
  return event_id;
}

test("a pull destination's delivery is stored pending and due, with no call and no deliveries message", async () => {
  await start();
  const event_id = await stored(JSON.stringify({ n: "stored" }));
  const row = await delivery(event_id, "inbox");
  assert.equal(row.state, "pending");
  assert.equal(row.attempts, 0, "no call was made");
  assert.ok(row.due_at > 0 && row.due_at <= Date.now(), `due now (due_at ${row.due_at})`);
  assert.equal(downstream.hits("/web").length >= 1, true, "the URL destination was called");
  // The periodic check neither sends a message for it nor counts it overdue,
  // even long past due; a pull lease that passed with no ack it settles as
  // a failed TIMEOUT attempt (never as a call's lease_expired), and the
  // late ack of that lease changes nothing. (An hour is long past
  // MESSAGE_OVERDUE and well within PARK_MAX_AGE.)
  const hourAgo = Date.now() - 3_600_000;
  await relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = 'inbox'").bind(hourAgo, event_id).run();
  const periodic = async () => (await relay.mf.getWorker("hookrelay")).scheduled({ cron: "*/1 * * * *" });
  await periodic();
  const after = await delivery(event_id, "inbox");
  assert.equal(after.due_at, hourAgo, "no message marked outstanding");
  assert.equal(after.state, "pending");
  assert.ok(!relay.logs.some((l) => l.includes('"event":"messages_resent"')), "nothing re-sent");
  const leased = (await pull("outbox", { max: 100 })).json.data.items.find((i) => i.event_id === event_id);
  await relay.db.prepare("UPDATE deliveries SET lease_until = claimed_at + 1 WHERE event_id = ? AND destination = 'outbox'").bind(event_id).run();
  await periodic();
  const ended = await delivery(event_id, "outbox");
  assert.deepEqual([ended.state, ended.attempts, ended.last_error], ["pending", 1, "TIMEOUT"], "a failed attempt, due again");
  assert.ok(ended.due_at >= Date.now() + 20_000, `due after the first retry delay (30 s), not now: ${ended.due_at - Date.now()} ms`);
  assert.ok(!relay.logs.some((l) => l.includes('"event":"lease_expired"')), "not counted as a call's lease_expired");
  const late = await ack("outbox", [{ delivery_id: leased.delivery_id, lease_id: leased.lease_id, status: 500 }]);
  assert.equal(late.json.data.results[0].state, "lease_expired", "the ended lease's ack changes nothing");
  assert.equal((await delivery(event_id, "outbox")).attempts, 1);
  // Due again now (as its delay would make it): pulled under a new lease, then delivered.
  await relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = 'outbox'").bind(Date.now() - 1, event_id).run();
  const again = (await pull("outbox", { max: 100 })).json.data.items.find((i) => i.event_id === event_id);
  assert.notEqual(again.lease_id, leased.lease_id);
  await ack("outbox", [{ delivery_id: again.delivery_id, lease_id: again.lease_id, status: 200 }]);
  assert.equal((await delivery(event_id, "outbox")).state, "delivered");
  // Drain it so the next tests start from an empty destination.
  const { json } = await pull("inbox", { max: 100 });
  await ack("inbox", json.data.items.map((i) => ({ delivery_id: i.delivery_id, lease_id: i.lease_id, status: 200 })));
});

test("a pull leases a due delivery with the fields of §4; a 200 delivers it once; an empty pull answers next_due_in_ms", async () => {
  await start();
  const body = '{"amount": 10.50, "note": "é ✓ \\u0000 keep   spacing"}';
  const event_id = await stored(body);
  const before = Date.now();
  const { status, json } = await pull("inbox");
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(json.status, "success");
  const items = json.data.items;
  assert.equal(items.length, 1, JSON.stringify(json.data));
  const item = items[0];
  assert.deepEqual(Object.keys(item).sort(), ["attempt", "body", "content_type", "delivery_id", "event_id", "headers", "key", "lease_id", "lease_until", "received_at", "source"]);
  assert.equal(item.event_id, event_id);
  assert.equal(item.source, "shop");
  assert.equal(item.attempt, 1);
  assert.equal(item.body, body, "the body byte-exact");
  assert.equal(item.content_type, "application/json; charset=utf-8");
  assert.equal(item.headers.authorization, "[REDACTED]", "credentials redacted");
  assert.ok(Object.keys(item.headers).every((h) => h === h.toLowerCase()));
  assert.ok(item.lease_until >= before + 30_000 && item.lease_until <= Date.now() + 30_000, "leased for lease_s");
  assert.equal((await delivery(event_id, "inbox")).state, "delivering");

  const empty = await pull("inbox");
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.json.data.items, []);
  assert.ok("next_due_in_ms" in empty.json.data, JSON.stringify(empty.json.data));

  const first = await ack("inbox", [{ delivery_id: item.delivery_id, lease_id: item.lease_id, status: 200 }]);
  assert.equal(first.status, 200, JSON.stringify(first.json));
  assert.deepEqual(first.json.data.results, [{ delivery_id: item.delivery_id, state: "delivered" }]);
  const row = await delivery(event_id, "inbox");
  assert.equal(row.state, "delivered");
  assert.equal(row.attempts, 1);
  const again = await ack("inbox", [{ delivery_id: item.delivery_id, lease_id: item.lease_id, status: 500 }]);
  assert.deepEqual(again.json.data.results, [{ delivery_id: item.delivery_id, state: "delivered" }]);
  const unchanged = await delivery(event_id, "inbox");
  assert.deepEqual(unchanged, row, "a second ack changes nothing");
});

test("a 500 makes it pending with due_at; an ack of an old lease is lease_expired; another destination's delivery is unknown", async () => {
  await start();
  const event_id = await stored(JSON.stringify({ n: "retry" }));
  const first = (await pull("inbox")).json.data.items[0];
  assert.equal(first.event_id, event_id);
  const now = Date.now();
  const failed = await ack("inbox", [{ delivery_id: event_id, lease_id: first.lease_id, status: 500, error: "consumer down" }]);
  const [result] = failed.json.data.results;
  assert.equal(result.state, "pending", JSON.stringify(result));
  assert.ok(result.due_at >= now + 30_000 && result.due_at <= Date.now() + 30_000, `due after the first delay (${result.due_at - now} ms)`);
  const row = await delivery(event_id, "inbox");
  assert.equal(row.state, "pending");
  assert.equal(row.attempts, 1);
  assert.equal(row.due_at, result.due_at);
  assert.equal(row.last_error, "UPSTREAM_5XX");

  // Not due for 30 s: an empty pull says when the next is.
  const waiting = await pull("inbox");
  assert.deepEqual(waiting.json.data.items, []);
  assert.ok(waiting.json.data.next_due_in_ms > 25_000, JSON.stringify(waiting.json.data));

  // Made due again, it is handed out under a fresh lease; the old one is over.
  await relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = 'inbox'").bind(Date.now() - 1, event_id).run();
  const second = (await pull("inbox")).json.data.items[0];
  assert.equal(second.attempt, 2);
  assert.notEqual(second.lease_id, first.lease_id, "a fresh lease_id per lease");
  const old = await ack("inbox", [{ delivery_id: event_id, lease_id: first.lease_id, status: 200 }]);
  assert.deepEqual(old.json.data.results, [{ delivery_id: event_id, state: "lease_expired" }]);
  assert.equal((await delivery(event_id, "inbox")).state, "delivering", "nothing changed");

  // The outbox's delivery of the same event is not the inbox's to ack.
  const other = await ack("outbox", [{ delivery_id: "evt_no_such", lease_id: second.lease_id, status: 200 }]);
  assert.deepEqual(other.json.data.results, [{ delivery_id: "evt_no_such", state: "unknown" }]);
  const outItem = (await pull("outbox")).json.data.items.find((i) => i.event_id === event_id);
  assert.ok(outItem, "the outbox has its own delivery of the event");
  const crossed = await ack("inbox", [{ delivery_id: "evt_unrelated", lease_id: outItem.lease_id, status: 200 }]);
  assert.equal(crossed.json.data.results[0].state, "unknown");
  const done = await ack("inbox", [{ delivery_id: event_id, lease_id: second.lease_id, status: 204 }]);
  assert.equal(done.json.data.results[0].state, "delivered");
  await ack("outbox", [{ delivery_id: outItem.delivery_id, lease_id: outItem.lease_id, status: 200 }]);
});

test("a name that is not a pull destination is 404, an unknown field is 400 naming it, and only an admin or that destination's pull token pulls", async () => {
  await start();
  for (const name of ["web", "nowhere"]) {
    const res = await pull(name);
    assert.equal(res.status, 404, `${name}: ${JSON.stringify(res.json)}`);
    assert.equal(res.json.status, "error");
    assert.equal((await ack(name, [{ delivery_id: "x", lease_id: "y", status: 200 }])).status, 404);
  }
  const unknown = await pull("inbox", { max: 5, wait_s: 10 });
  assert.equal(unknown.status, 400);
  assert.match(unknown.json.error.message, /wait_s/);
  const deep = await ack("inbox", [{ delivery_id: "x", lease_id: "y", status: 200, stauts: 500 }]);
  assert.equal(deep.status, 400);
  assert.match(deep.json.error.message, /results\[0\]\.stauts/);
  const badMax = await pull("inbox", { max: 101 });
  assert.equal(badMax.status, 400);
  assert.match(badMax.json.error.message, /max/);
  assert.equal((await call("inbox", {}, null)).status, 401, "no token");
  assert.equal((await call("inbox", {}, `Bearer ${token({ secret: "not-the-secret" })}`)).status, 401, "a forged token");
  assert.equal((await call("inbox", {}, `Bearer ${token({ claims: { role: "viewer" } })}`)).status, 403, "another role");
  // Pull tokens: scoped to one destination, signed with its own secret when it has one.
  const inboxToken = `Bearer ${token({ claims: { role: "pull", destination: "inbox" } })}`;
  assert.equal((await call("inbox", {}, inboxToken)).status, 200, "a pull token pulls its own destination");
  assert.equal((await call("inbox/ack", { results: [{ delivery_id: "nothing-here", lease_id: "none", status: 200 }] }, inboxToken)).status, 200, "and acks it");
  const elsewhere = await call("outbox", {}, inboxToken);
  assert.equal(elsewhere.status, 403, "another destination's pull is forbidden");
  assert.match(elsewhere.json.error.message, /pull token for destination 'inbox': it may only pull and ack POST \/api\/v1\/pull\/inbox/, "and says which one it may pull");
  const outboxOwn = `Bearer ${token({ secret: OUTBOX_SECRET, claims: { role: "pull", destination: "outbox" } })}`;
  assert.equal((await call("outbox", {}, outboxOwn)).status, 200, "signed with PULL_TOKEN_SECRET_OUTBOX");
  const outboxRevoked = `Bearer ${token({ claims: { role: "pull", destination: "outbox" } })}`;
  assert.equal((await call("outbox", {}, outboxRevoked)).status, 401, "signed with ADMIN_JWT_SECRET while outbox has its own secret: revoked");
  for (const [auth, status] of [[inboxToken, 403], [outboxOwn, 403]]) {
    const res = await relay.fetch("/api/v1/admin/webhook-dlq/stats", { headers: { authorization: auth } });
    assert.equal(res.status, status, "a pull token is refused by admin routes");
    assert.match((await res.json()).error.message, /^this is a pull token for destination '(inbox|outbox)'/);
  }
  const get = await relay.fetch("/api/v1/pull/inbox");
  assert.equal(get.status, 405);
});

test("the sixth failed ack dead-letters the delivery, an entry naming the destination", async () => {
  await start();
  const event_id = await stored(JSON.stringify({ n: "six" }));
  let last;
  for (let attempt = 1; attempt <= 6; attempt += 1) {
    // Each retry made due at once, rather than waiting out the schedule.
    await relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = 'inbox'").bind(Date.now() - 1, event_id).run();
    const item = (await pull("inbox")).json.data.items.find((i) => i.event_id === event_id);
    assert.equal(item?.attempt, attempt, `attempt ${attempt}`);
    last = (await ack("inbox", [{ delivery_id: event_id, lease_id: item.lease_id, status: 400, error: "refused" }])).json.data.results[0];
    if (attempt < 6) assert.equal(last.state, "pending", `a 4xx is retried (attempt ${attempt})`);
  }
  assert.equal(last.state, "dead_lettered");
  const entry = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ? AND destination = 'inbox'", event_id))[0], { what: "the dead letter" });
  assert.equal(entry.attempts, 6);
  await waitFor(async () => (await delivery(event_id, "inbox")).state === "dead_lettered", { what: "the row closed dead_lettered" });
  const outbox = (await pull("outbox", { max: 100 })).json.data.items.find((i) => i.event_id === event_id);
  assert.ok(outbox, "the outbox's delivery of the same event is untouched");
  await ack("outbox", [{ delivery_id: outbox.delivery_id, lease_id: outbox.lease_id, status: 200 }]);
});

test("a dead-lettered pull delivery's replay makes it pullable again with a fresh budget; its next dead letter is an entry of its own", async () => {
  await start();
  const event_id = await stored(JSON.stringify({ n: "revive" }));
  const failSix = async () => {
    let last;
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      await relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = 'inbox'").bind(Date.now() - 1, event_id).run();
      const item = (await pull("inbox")).json.data.items.find((i) => i.event_id === event_id);
      assert.equal(item?.attempt, attempt, `attempt ${attempt}`);
      last = (await ack("inbox", [{ delivery_id: event_id, lease_id: item.lease_id, status: 503 }])).json.data.results[0];
    }
    assert.equal(last.state, "dead_lettered");
  };
  await failSix();
  const entries = () => rows(relay.db, "SELECT id, status, error_code, attempts FROM dead_letters WHERE event_id = ? AND destination = 'inbox' ORDER BY created_at", event_id);
  const [first] = await waitFor(async () => (await entries()).length === 1 && (await entries()), { what: "the first entry" });
  await waitFor(async () => (await delivery(event_id, "inbox")).state === "dead_lettered", { what: "the row closed" });
  const admin = adminClient(relay);
  const replay = await admin.post(`webhook-dlq/${first.id}/replay`, { reason: "the inbox consumer is back" });
  assert.equal(replay.status, 200, JSON.stringify(replay.json));
  assert.deepEqual([replay.data.outcome, replay.data.status, replay.data.delivery], ["succeeded", "replayed", "not_forwarded"],
    `making it pullable again is the replay's success, with no call: ${JSON.stringify(replay.data)}`);
  const row = await delivery(event_id, "inbox");
  assert.deepEqual([row.state, row.attempts, row.handed_off_at, row.entry_stored_at, row.lease_id], ["pending", 0, null, null, null], "pending with a fresh budget");
  assert.ok(row.revived_at > 0 && row.due_at <= Date.now());
  // The fresh budget is six more attempts, then a second entry, apart from the replayed one.
  await failSix();
  const both = await waitFor(async () => (await entries()).length === 2 && (await entries()), { what: "a second entry" });
  assert.deepEqual(both.map((e) => [e.status, e.error_code, e.attempts]), [["replayed", "UPSTREAM_5XX", 6], ["pending", "UPSTREAM_5XX", 6]]);
  await waitFor(async () => (await delivery(event_id, "inbox")).state === "dead_lettered", { what: "the row closed again" });
  // Replayed and then delivered: a replay of the delivered one succeeds without reviving it.
  await admin.post(`webhook-dlq/${both[1].id}/replay`, { reason: "the inbox consumer is back again" });
  const item = (await pull("inbox")).json.data.items.find((i) => i.event_id === event_id);
  assert.equal(item?.attempt, 1);
  assert.equal((await ack("inbox", [{ delivery_id: event_id, lease_id: item.lease_id, status: 204 }])).json.data.results[0].state, "delivered");
  const again = await admin.post(`webhook-dlq/${first.id}/replay`, { reason: "replay the old entry once more" });
  assert.equal(again.status, 409, JSON.stringify(again.json));
  assert.equal((await delivery(event_id, "inbox")).state, "delivered", "a delivered pull delivery is never revived");
});

test("a pull delivery due and unpulled past PARK_MAX_AGE is dead-lettered TIMEOUT; a pull no longer hands it out; its replay does", async () => {
  await start();
  const event_id = await stored(JSON.stringify({ n: "unpulled" }));
  // Seventy-three hours pass with no consumer (PARK_MAX_AGE is 72 h).
  await relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = 'outbox'").bind(Date.now() - 73 * 3_600_000, event_id).run();
  await (await relay.mf.getWorker("hookrelay")).scheduled({ cron: "*/1 * * * *" });
  const entry = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ? AND destination = 'outbox'", event_id))[0], { what: "the unpulled delivery's entry" });
  assert.equal(entry.error_code, "TIMEOUT");
  assert.match(JSON.parse(entry.envelope).failure.message, /unpulled for \d+s, more than PARK_MAX_AGE \(259200s\)/);
  await waitFor(async () => (await delivery(event_id, "outbox")).state === "dead_lettered", { what: "the row closed" });
  const story = await rows(relay.db, "SELECT step, code FROM event_steps WHERE event_id = ? AND step = 'dead_lettered'", event_id);
  assert.deepEqual(story.map((s) => s.code), ["TIMEOUT"]);
  assert.ok(!(await pull("outbox", { max: 100 })).json.data.items.some((i) => i.event_id === event_id), "a dead-lettered delivery is not handed out");
  // The same inbox delivery of the event is younger: untouched.
  assert.equal((await delivery(event_id, "inbox")).state, "pending");
  const replay = await adminClient(relay).post(`webhook-dlq/${entry.id}/replay`, { reason: "the outbox consumer is running again" });
  assert.equal(replay.status, 200, JSON.stringify(replay.json));
  const item = (await pull("outbox", { max: 100 })).json.data.items.find((i) => i.event_id === event_id);
  assert.equal(item?.attempt, 1, "pullable again");
  assert.equal((await ack("outbox", [{ delivery_id: event_id, lease_id: item.lease_id, status: 200 }])).json.data.results[0].state, "delivered");
});
