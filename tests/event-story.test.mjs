// GET /api/v1/admin/events/:event_id: the whole story of one event in one
// call, for an event that was dead-lettered and then replayed, and for one
// that simply arrived.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { deadline } from "./support/schedule.mjs";

let relay, admin, downstream;
const broken = { story: true };
const SECRETS = { WEBHOOK_SECRET_STORY: "story-webhook-secret", WEBHOOK_SECRET_QUIET: "quiet-webhook-secret" };

before(async () => {
  downstream = await startDownstream({ "/story": () => ({ status: broken.story ? 400 : 200 }) });
  const SOURCES = { story: { scheme: "hmac-sha256", downstream: downstream.url("/story") }, quiet: { scheme: "hmac-sha256" } };
  relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify(SOURCES), ...SECRETS, DOWNSTREAM_SIGNING_SECRET: "story-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
  });
  admin = adminClient(relay, [...Object.values(SECRETS), "story-down-secret"]);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function send(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS[`WEBHOOK_SECRET_${source.toUpperCase()}`], operationId }) });
  assert.equal(res.status, 202);
  return (await res.json()).event_id;
}

test("the story of a dead-lettered, then replayed event shows the failed call, the attempt, the entry and the replay decision", async () => {
  broken.story = true;
  const eventId = await send("story", { n: 1 }, "story-1");
  const [dl] = await waitFor(async () => rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ?", eventId).then((r) => r.length && r), { what: "the dead letter" });
  broken.story = false;
  const replay = await admin.post(`webhook-dlq/${dl.id}/replay`, { reason: "downstream fixed, replay it" });
  assert.equal(replay.data.outcome, "succeeded");

  const res = await admin.get(`events/${eventId}`);
  assert.equal(res.status, 200);
  const { event, attempts, steps, dead_letters, decisions } = res.data;
  assert.equal(event.event_id, eventId);
  assert.equal(event.idempotency_key, "story:story-1");
  assert.equal(event.source, "story");
  assert.equal(event.delivery_status, "delivered");
  assert.equal(event.delivery_attempts, 2);
  assert.ok(event.delivered_at >= event.ingested_at);
  assert.equal(event.duplicate_count, 0);
  assert.ok(event.received_at > 0);
  assert.equal(event.parked_at, null);
  // The event itself, as kept: its body inline, its headers with the
  // signature redacted.
  assert.equal(event.body, JSON.stringify({ n: 1 }));
  assert.equal(event.body_ref, null);
  assert.equal(event.body_bytes, event.body.length);
  assert.equal(event.headers["content-type"], "application/json");
  assert.equal(event.headers["x-operation-id"], "story-1");
  assert.equal(event.headers["x-signature"], "[REDACTED]");

  assert.ok(attempts.length >= 1, "the consumer's failed attempt");
  assert.equal(attempts[0].code, "UPSTREAM_4XX");
  assert.equal(attempts[0].class, "poison");

  // The first attempt is the webhooks consumer's (one hop for the common case).
  assert.deepEqual(steps.map((s) => [s.step, s.component, s.code]), [
    ["delivery_failed", "consumer", "UPSTREAM_4XX"],
    ["delivered", "replay", null],
  ]);
  assert.match(steps[0].detail, /downstream answered 400/);
  assert.ok(steps[0].at <= steps[1].at);

  assert.deepEqual(dead_letters.map((d) => [d.id, d.status, d.error_code]), [[dl.id, "replayed", "UPSTREAM_4XX"]]);
  assert.ok(!("envelope" in dead_letters[0]), "entries are summaries");
  assert.deepEqual(decisions.map((d) => [d.entry_id, d.action, d.outcome, d.actor, d.reason]), [
    [dl.id, "replay", "succeeded", "test-admin", "downstream fixed, replay it"],
  ]);

  // Discard it too: every decision about the entry is in the story, oldest first.
  await admin.post(`webhook-dlq/${dl.id}/discard`, { reason: "done with it, erase" });
  const later = (await admin.get(`events/${eventId}`)).data.decisions;
  assert.deepEqual(later.map((d) => d.action), ["replay", "discard"]);
});

test("the story of a claim-checked event carries its body from the payload store, and its redacted headers", async () => {
  const payload = { n: 3, pad: "z".repeat(200_000) };
  const eventId = await send("quiet", payload, "quiet-big");
  const story = await waitFor(async () => {
    const res = await admin.get(`events/${eventId}`);
    return res.status === 200 && res.data;
  }, { what: "the claim-checked event" });
  assert.equal(story.event.body_ref, eventId, "kept in the payload store, not inline");
  assert.equal(story.event.body, JSON.stringify(payload));
  assert.equal(story.event.body_bytes, JSON.stringify(payload).length);
  assert.equal(story.event.headers["x-signature"], "[REDACTED]");
  assert.equal(story.event.headers["x-timestamp"].length > 0, true);
});

test("an event that simply arrived has a story with no failure, and an unknown id is a 404 naming it", async () => {
  const eventId = await send("quiet", { n: 2 }, "quiet-2");
  const story = await waitFor(async () => {
    const res = await admin.get(`events/${eventId}`);
    return res.status === 200 && res.data;
  }, { what: "the ingested event" });
  assert.equal(story.event.delivery_status, "none");
  assert.equal(story.event.body, JSON.stringify({ n: 2 }));
  assert.equal(story.event.headers["x-operation-id"], "quiet-2");
  assert.deepEqual([story.attempts, story.steps, story.dead_letters, story.decisions], [[], [], [], []]);

  const missing = await admin.get("events/evt_00000000000000000000000000000000");
  assert.equal(missing.status, 404);
  assert.equal(missing.error.code, "NOT_FOUND");
  assert.match(missing.error.message, /evt_00000000000000000000000000000000/);

  const bad = await admin.get(`events/${eventId}?verbose=1`);
  assert.equal(bad.status, 400);
  assert.match(bad.error.message, /^verbose: unknown query parameter/);
  assert.equal((await admin.post(`events/${eventId}`, {})).status, 405);
});

test("once retention swept the event's row, its story still answers 200 with its entries, decisions and the archive key that holds the row", async () => {
  const own = await startRelay({
    vars: { EVENT_RETENTION: "2s" },
    relayVars: { SOURCES: JSON.stringify({ story: { scheme: "hmac-sha256", downstream: downstream.url("/story") } }), ...SECRETS, DOWNSTREAM_SIGNING_SECRET: "story-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
  });
  const ownAdmin = adminClient(own, [...Object.values(SECRETS), "story-down-secret"]);
  const bucket = await own.mf.getR2Bucket("ARCHIVE", "hookrelay");
  try {
    broken.story = true;
    const body = JSON.stringify({ n: "swept" });
    const res = await own.fetch("/webhooks/story", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS.WEBHOOK_SECRET_STORY, operationId: "story-swept" }) });
    assert.equal(res.status, 202);
    const eventId = (await res.json()).event_id;
    const [dl] = await waitFor(async () => rows(own.db, "SELECT id FROM dead_letters WHERE event_id = ?", eventId).then((r) => r.length && r), { what: "the dead letter" });
    assert.equal((await ownAdmin.post(`webhook-dlq/${dl.id}/archive`, { reason: "keep it as history" })).status, 200);
    const [row] = await waitFor(async () => rows(own.db, "SELECT * FROM events WHERE event_id = ? AND delivery_status = 'failed'", eventId).then((r) => r.length && r), { what: "the event marked failed" });

    // The sweep takes it once it is older than EVENT_RETENTION.
    await waitFor(async () => {
      const run = await ownAdmin.post("maintenance/run", {});
      assert.equal(run.status, 200, JSON.stringify(run.json));
      return (await rows(own.db, "SELECT event_id FROM events WHERE event_id = ?", eventId)).length === 0;
    }, { what: "the sweep to take the event", timeoutMs: 20000, intervalMs: 500 });

    const story = await ownAdmin.get(`events/${eventId}`);
    assert.equal(story.status, 200, JSON.stringify(story.json));
    const { event, event_archive_key, attempts, steps, dead_letters, decisions } = story.data;
    assert.equal(event, null, "the row is gone from D1");
    assert.deepEqual([attempts, steps], [[], []], "swept with the event");
    assert.deepEqual(dead_letters.map((d) => [d.id, d.status]), [[dl.id, "archived"]]);
    assert.deepEqual(decisions.map((d) => [d.entry_id, d.action, d.reason]), [[dl.id, "archive", "keep it as history"]]);
    assert.match(event_archive_key ?? "", /^events\/\d{4}-\d{2}-\d{2}\/.+\.ndjson$/);
    const object = await bucket.get(event_archive_key);
    assert.ok(object, `an object at ${event_archive_key}`);
    const archived = (await object.text()).trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(archived.find((r) => r.event_id === eventId), row, "the object holds the event's row as D1 held it");

    const missing = await ownAdmin.get("events/evt_11111111111111111111111111111111");
    assert.equal(missing.status, 404, "an id that never existed is still a 404");
  } finally {
    await own.dispose();
  }
});

test("the story of a swept event with no dead letter answers 200 with the archive key that holds its row, not 404", async () => {
  const retentionMs = 2_000;
  const own = await startRelay({
    vars: { EVENT_RETENTION: `${retentionMs / 1000}s` },
    relayVars: { SOURCES: JSON.stringify({ quiet: { scheme: "hmac-sha256" } }), ...SECRETS },
  });
  const ownAdmin = adminClient(own, Object.values(SECRETS));
  const bucket = await own.mf.getR2Bucket("ARCHIVE", "hookrelay");
  try {
    const body = JSON.stringify({ n: "swept quietly" });
    const res = await own.fetch("/webhooks/quiet", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS.WEBHOOK_SECRET_QUIET, operationId: "quiet-swept" }) });
    assert.equal(res.status, 202);
    const eventId = (await res.json()).event_id;
    const [row] = await waitFor(async () => rows(own.db, "SELECT * FROM events WHERE event_id = ?", eventId).then((r) => r.length && r), { what: "the event ingested" });
    // The sweep takes it once it is older than EVENT_RETENTION.
    await waitFor(async () => {
      const run = await ownAdmin.post("maintenance/run", {});
      assert.equal(run.status, 200, JSON.stringify(run.json));
      return (await rows(own.db, "SELECT event_id FROM events WHERE event_id = ?", eventId)).length === 0;
    }, { what: "the sweep to take the event", timeoutMs: deadline(retentionMs), intervalMs: 500 });

    const story = await ownAdmin.get(`events/${eventId}`);
    assert.equal(story.status, 200, JSON.stringify(story.json));
    const { event, event_archive_key, dead_letters, decisions } = story.data;
    assert.equal(event, null, "the row is gone from D1");
    assert.deepEqual([dead_letters, decisions], [[], []], "no entry names it");
    assert.match(event_archive_key ?? "", /^events\/\d{4}-\d{2}-\d{2}\/.+\.ndjson$/);
    const object = await bucket.get(event_archive_key);
    assert.ok(object, `an object at ${event_archive_key}`);
    const archived = (await object.text()).trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(archived.find((r) => r.event_id === eventId), row, "the object holds the event's row");
  } finally {
    await own.dispose();
  }
});
