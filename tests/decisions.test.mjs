// Operator decisions on one entry (archive, unarchive, discard) and the
// incident groups, against a real local downstream: every refusal, what
// each decision does to the depth and to replay-all, and that a discard
// erases the payload but keeps the evidence.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";

let relay, admin, downstream;
const broken = { decide: true };
const SOURCES = {};
const SECRETS = {};

before(async () => {
  downstream = await startDownstream({
    // The groups' downstream answers whatever status the event asks for.
    "/by-body": (req) => ({ status: JSON.parse(req.body).status }),
    "/decide": () => ({ status: broken.decide ? 422 : 200 }),
  });
  for (const [name, path] of [["grp-a", "/by-body"], ["grp-b", "/by-body"], ["decide", "/decide"]]) {
    SOURCES[name] = { scheme: "hmac-sha256", downstream: downstream.url(path) };
    SECRETS[`WEBHOOK_SECRET_${name.toUpperCase().replace("-", "_")}`] = `${name}-webhook-secret`;
  }
  relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify(SOURCES), ...SECRETS, DOWNSTREAM_SIGNING_SECRET: "decide-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
  });
  admin = adminClient(relay, [...Object.values(SECRETS), "decide-down-secret"]);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const secretOf = (source) => SECRETS[`WEBHOOK_SECRET_${source.toUpperCase().replace("-", "_")}`];

/** Sends a webhook whose delivery is refused, and waits for its dead letter. */
async function deadLettered(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: secretOf(source), operationId }) });
  assert.equal(res.status, 202);
  const { event_id } = await res.json();
  const row = await waitFor(async () => (await rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ?", event_id))[0], { what: `dead letter of ${event_id}` });
  return { event_id, id: row.id };
}
const entry = async (id) => (await admin.get(`webhook-dlq/${id}`)).data;
const depth = async () => (await admin.get("webhook-dlq/stats")).data.depth;
const auditOf = async (id) => (await admin.get(`audit?entry_id=${id}`)).data.items.reverse();
const callsFor = (eventId) => downstream.hits("/decide").filter((r) => r.headers["x-operation-id"] === eventId).length;

// First in the file, so the groups hold exactly the entries made here.
test("groups: three error signatures over two sources come back largest first with counts, sources and a sample", async () => {
  const made = [];
  for (const [source, status, n] of [["grp-a", 400, 1], ["grp-b", 400, 2], ["grp-a", 400, 3], ["grp-b", 401, 4], ["grp-b", 401, 5]]) {
    made.push({ source, status, ...(await deadLettered(source, { status, n }, `grp-${n}`)) });
  }
  // A body that is not an event at all: BAD_PAYLOAD, the third signature.
  const producer = await relay.producer();
  await producer.send({ v: 1, event_id: "evt_grp_bad", idempotency_key: "grp-a:bad", source: "grp-a", received_at_ms: Date.now(), body: "bad {" });
  await waitFor(async () => (await rows(relay.db, "SELECT 1 FROM dead_letters WHERE event_id = 'evt_grp_bad'")).length, { what: "the BAD_PAYLOAD entry" });

  const res = await admin.get("webhook-dlq/groups");
  assert.equal(res.status, 200);
  const items = res.data.items;
  assert.deepEqual(items.map((g) => [g.code, g.count, g.sources]), [
    ["UPSTREAM_4XX", 3, ["grp-a", "grp-b"]],
    ["AUTH_EXPIRED", 2, ["grp-b"]],
    ["BAD_PAYLOAD", 1, ["grp-a"]],
  ]);
  for (const g of items) {
    assert.match(g.signature, /^sig_[0-9a-f]{16}$/);
    assert.equal(g.class, "poison");
    assert.ok(g.first_seen_at <= g.last_seen_at);
    const sample = await entry(g.sample_id);
    assert.equal(sample.error_signature, g.signature, "the sample belongs to its group");
    assert.equal(g.message, sample.envelope.failure.message);
  }
  const fours = made.filter((m) => m.status === 400).map((m) => m.id);
  assert.equal(items[0].sample_id, fours[fours.length - 1], "the sample is the newest entry");
  assert.match(items[0].message, /downstream answered 400/);

  const onlyB = (await admin.get("webhook-dlq/groups?source=grp-b")).data.items;
  assert.deepEqual(onlyB.map((g) => [g.code, g.count, g.sources]), [["AUTH_EXPIRED", 2, ["grp-b"]], ["UPSTREAM_4XX", 1, ["grp-b"]]]);
  assert.deepEqual((await admin.get("webhook-dlq/groups?code=BAD_PAYLOAD&class=poison")).data.items.map((g) => g.count), [1]);
  assert.deepEqual((await admin.get("webhook-dlq/groups?status=archived")).data.items, [], "pending only, unless status says otherwise");

  for (const [query, param] of [["limit=5", "limit"], ["signature=sig_0123456789abcdef", "signature"], ["stauts=pending", "stauts"], ["status=gone", "status"], ["code=NOPE", "code"]]) {
    const bad = await admin.get(`webhook-dlq/groups?${query}`);
    assert.equal(bad.status, 400, query);
    assert.equal(bad.error.code, "BAD_REQUEST");
    assert.ok(bad.error.message.startsWith(`${param}:`), `${query}: ${bad.error.message}`);
  }
  assert.equal((await admin.post("webhook-dlq/groups", {})).status, 405);
});

test("decisions refuse a bad body, an unknown entry and a refused transition, and change nothing", async () => {
  broken.decide = true;
  const { id } = await deadLettered("decide", { n: 1 }, "decide-1");
  const cases = [
    [{}, 400, /^reason:/],
    [{ reason: "no" }, 400, /^reason:/],
    [{ reason: "a good reason", force: true }, 400, /^force: is not a field of this body/],
    [["a good reason"], 400, /^body:/],
  ];
  for (const action of ["archive", "unarchive", "discard"]) {
    for (const [body, status, message] of cases) {
      const res = await admin.post(`webhook-dlq/${id}/${action}`, body);
      assert.equal(res.status, status, `${action} ${JSON.stringify(body)}`);
      assert.match(res.error.message, message, `${action} ${JSON.stringify(body)}`);
    }
    const missing = await admin.post(`webhook-dlq/dlq_000000000000000000000000/${action}`, { reason: "no such entry" });
    assert.equal(missing.status, 404, action);
    assert.match(missing.error.message, /dlq_000000000000000000000000/);
    assert.equal((await admin.get(`webhook-dlq/${id}/${action}`)).status, 405);
  }
  const refused = await admin.post(`webhook-dlq/${id}/unarchive`, { reason: "bring it back" });
  assert.equal(refused.status, 409);
  assert.equal(refused.error.code, "CONFLICT");
  assert.equal(refused.error.message, "only an archived entry can be unarchived; this one is pending");
  assert.equal((await entry(id)).status, "pending");
  assert.deepEqual(await auditOf(id), [], "a refused decision leaves no audit record");
});

test("archived entries leave the depth and replay-all; unarchived, they are pending again and replay-all replays them", async () => {
  broken.decide = true;
  const a = await deadLettered("decide", { n: 2 }, "decide-2");
  const b = await deadLettered("decide", { n: 3 }, "decide-3");
  const before = await depth();

  const archived = await admin.post(`webhook-dlq/${a.id}/archive`, { reason: "known issue, kept as history" });
  assert.equal(archived.status, 200);
  assert.deepEqual(archived.data, { id: a.id, status: "archived", previous_status: "pending", action: "archive" });
  assert.equal((await entry(a.id)).status, "archived");
  assert.equal(await depth(), before - 1, "an archived entry is out of the depth");
  const twice = await admin.post(`webhook-dlq/${a.id}/archive`, { reason: "archive it again" });
  assert.equal(twice.status, 409);
  assert.equal(twice.error.message, "this entry is already archived");
  assert.equal((await admin.post(`webhook-dlq/${a.id}/replay`, { reason: "replay an archived one" })).status, 409);

  broken.decide = false;
  const run = await admin.post("webhooks/dlq/replay-all", { reason: "downstream fixed", filter: { source: "decide" } });
  assert.equal(run.status, 200);
  assert.ok(!run.data.results.some((r) => r.id === a.id), "replay-all skipped the archived entry");
  assert.ok(run.data.results.some((r) => r.id === b.id && r.outcome === "succeeded"));
  assert.equal(callsFor(a.event_id), 1, "only the original call reached the downstream");
  assert.equal((await entry(a.id)).status, "archived");
  const afterRun = await depth();

  const back = await admin.post(`webhook-dlq/${a.id}/unarchive`, { reason: "fixed now, replay it" });
  assert.deepEqual(back.data, { id: a.id, status: "pending", previous_status: "archived", action: "unarchive" });
  assert.equal(await depth(), afterRun + 1, "an unarchived entry is back in the depth");
  const again = await admin.post("webhooks/dlq/replay-all", { reason: "replay the unarchived one", filter: { source: "decide" } });
  assert.deepEqual(again.data.results.map((r) => [r.id, r.outcome]), [[a.id, "succeeded"]]);
  assert.equal(callsFor(a.event_id), 2);
  assert.equal((await entry(a.id)).status, "replayed");

  const audit = await auditOf(a.id);
  assert.deepEqual(audit.map((r) => [r.action, r.outcome, r.actor]), [
    ["archive", "succeeded", "test-admin"],
    ["unarchive", "succeeded", "test-admin"],
    ["replay", "succeeded", "test-admin"],
  ]);
  assert.equal(audit[0].reason, "known issue, kept as history");
  const counters = (await admin.get("webhook-dlq/stats")).data.counters;
  assert.ok(counters.archived >= 1 && counters.unarchived >= 1, JSON.stringify(counters));
});

test("a discarded entry loses its payload but keeps its identity, failure evidence and history; it is terminal", async () => {
  broken.decide = true;
  const c = await deadLettered("decide", { n: 4, secret_ish: "payload-marker-discard" }, "decide-4");
  const kept = await entry(c.id);
  assert.ok(kept.envelope.input.original, "the payload is there before");
  assert.match(kept.envelope.input.excerpt, /payload-marker-discard/);

  const res = await admin.post(`webhook-dlq/${c.id}/discard`, { reason: "test traffic, erase it" });
  assert.equal(res.status, 200);
  assert.deepEqual(res.data, { id: c.id, status: "discarded", previous_status: "pending", action: "discard" });

  const gone = await entry(c.id);
  assert.equal(gone.status, "discarded");
  assert.equal(gone.envelope.input.original, null);
  assert.equal(gone.envelope.input.excerpt, "");
  assert.equal(gone.envelope.input.erased, true);
  assert.ok(!JSON.stringify(gone).includes("payload-marker-discard"), "no trace of the payload");
  assert.equal(gone.event_id, c.event_id);
  assert.equal(gone.envelope.identity.event_id, c.event_id);
  assert.equal(gone.envelope.identity.idempotency_key, "decide:decide-4");
  assert.equal(gone.error_code, "UPSTREAM_4XX");
  assert.equal(gone.envelope.failure.code, "UPSTREAM_4XX");
  assert.equal(gone.envelope.failure.signature, kept.envelope.failure.signature);
  assert.deepEqual(gone.envelope.delivery, kept.envelope.delivery, "the attempt history stays");
  assert.equal(gone.content_hash, kept.content_hash);

  for (const action of ["discard", "archive", "unarchive", "replay"]) {
    const refused = await admin.post(`webhook-dlq/${c.id}/${action}`, { reason: "try once more" });
    assert.equal(refused.status, 409, action);
  }
  const audit = await auditOf(c.id);
  assert.deepEqual(audit.map((r) => [r.action, r.outcome, r.reason]), [["discard", "succeeded", "test traffic, erase it"]]);
  assert.ok((await admin.get("webhook-dlq/stats")).data.counters.discarded >= 1);
  const run = await admin.post("webhooks/dlq/replay-all", { reason: "replay everything pending", filter: { source: "decide" } });
  assert.ok(!run.data.results.some((r) => r.id === c.id), "replay-all never touches a discarded entry");
});

test("a poisoned entry can be archived, and an archived one discarded", async () => {
  broken.decide = true;
  const d = await deadLettered("decide", { n: 5 }, "decide-5");
  await relay.db.prepare("UPDATE dead_letters SET status = 'poisoned' WHERE id = ?").bind(d.id).run();
  const archived = await admin.post(`webhook-dlq/${d.id}/archive`, { reason: "poisoned, keep as history" });
  assert.equal(archived.data.previous_status, "poisoned");
  const discarded = await admin.post(`webhook-dlq/${d.id}/discard`, { reason: "and now erase it" });
  assert.deepEqual(discarded.data, { id: d.id, status: "discarded", previous_status: "archived", action: "discard" });
});

test("two archives racing on one entry: one wins, the other is a 409, and one audit record is written", async () => {
  broken.decide = true;
  const e = await deadLettered("decide", { n: 6 }, "decide-6");
  const answers = await Promise.all([1, 2, 3].map((i) => admin.post(`webhook-dlq/${e.id}/archive`, { reason: `racer number ${i}` })));
  assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409, 409]);
  assert.equal((await auditOf(e.id)).length, 1);
  assert.equal((await entry(e.id)).status, "archived");
});
