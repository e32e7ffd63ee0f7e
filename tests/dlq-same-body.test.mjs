// Dedupe with the idempotency key (DESIGN §4 "Dedupe", issue 40 item 6):
// a dead letter's dedupe hash holds the event's idempotency key, so two
// events with the same body that fail make two entries, and each stays
// replayable; the same event failing again still joins its entry. Both for
// a delivery's entries (a 400 from the destination) and an ingest's (a
// `webhooks` message Cloudflare moved to the DLQ).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { deadline, deliveryScheduleMs, poisonScheduleMs } from "./support/schedule.mjs";

const SECRETS = { WEBHOOK_SECRET_SAME: "same-webhook-secret", WEBHOOK_SECRET_MOVED: "moved-webhook-secret" };
const broken = { refuse: true };
let relay, admin, downstream;

before(async () => {
  downstream = await startDownstream({
    "/refuse": () => ({ status: broken.refuse ? 400 : 200 }),
    "/moved": () => ({ status: 200 }),
  });
  const SOURCES = {
    same: { scheme: "hmac-sha256", downstream: downstream.url("/refuse") },
    moved: { scheme: "hmac-sha256", downstream: downstream.url("/moved") },
  };
  relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify(SOURCES), ...SECRETS, DOWNSTREAM_SIGNING_SECRET: "same-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
  });
  admin = adminClient(relay, [...Object.values(SECRETS), "same-down-secret"]);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const calls = (path, eventId) => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === eventId);
const entriesOf = (source) => rows(relay.db, "SELECT id, event_id, content_hash, seen_count, status, entry_kind FROM dead_letters WHERE source = ? ORDER BY event_id", source);

test("two events with the same body refused with a 400 make two delivery entries, and replay-all delivers each once", async () => {
  const body = JSON.stringify({ order: 7, status: "paid" });
  const ids = [];
  for (const op of ["same-1", "same-2"]) {
    const res = await relay.fetch("/webhooks/same", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS.WEBHOOK_SECRET_SAME, operationId: op }) });
    assert.equal(res.status, 202);
    ids.push((await res.json()).event_id);
  }
  assert.notEqual(ids[0], ids[1], "two events");
  // Both deliveries close, and each hand-off reaches the DLQ worker on its own.
  const entries = await waitFor(
    async () => {
      const d = await rows(relay.db, "SELECT state FROM deliveries WHERE event_id IN (?, ?)", ...ids);
      const e = await entriesOf("same");
      return d.length === 2 && d.every((r) => r.state === "dead_lettered") && e.length >= 2 && e;
    },
    { what: "both deliveries dead-lettered, an entry per event", timeoutMs: deadline(poisonScheduleMs(relay)) },
  );
  assert.deepEqual(entries.map((e) => e.event_id).sort(), [...ids].sort(), "an entry per event, not one for both");
  assert.notEqual(entries[0].content_hash, entries[1].content_hash);
  assert.ok(entries.every((e) => e.entry_kind === "delivery" && e.status === "pending" && e.seen_count === 1));

  broken.refuse = false;
  const res = await admin.post("webhooks/dlq/replay-all", { reason: "the destination takes paid orders again", filter: { source: "same" } });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.deepEqual([res.data.attempted, res.data.succeeded, res.data.failed, res.data.deduped], [2, 2, 0, 0], JSON.stringify(res.data));
  for (const id of ids) {
    assert.equal(calls("/refuse", id).filter((r) => r.status === 200).length, 1, `${id} delivered once`);
  }
  const delivered = await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE event_id IN (?, ?) AND state = 'delivered'", ...ids);
  assert.equal(delivered[0].n, 2);
});

test("two moved webhooks messages with the same body make two ingest entries; the same event again joins its own; replay-all delivers each once", async () => {
  const event = (n) => ({
    v: 1, event_id: `evt_moved_same_${n}`, idempotency_key: `moved:same-${n}`, source: "moved",
    received_at_ms: Date.now(), headers: { "content-type": "application/json" }, body: JSON.stringify({ same: true }),
  });
  const dlq = await relay.producer("WEBHOOKS_DLQ");
  await dlq.send(event(1));
  await dlq.send(event(2));
  const hop = deadline(deliveryScheduleMs(relay));
  let entries = await waitFor(async () => {
    const e = await entriesOf("moved");
    return e.length >= 2 && e;
  }, { what: "an ingest entry per event", timeoutMs: hop });
  assert.deepEqual(entries.map((e) => [e.event_id, e.entry_kind]), [["evt_moved_same_1", "ingest"], ["evt_moved_same_2", "ingest"]]);
  assert.notEqual(entries[0].content_hash, entries[1].content_hash);
  // The same event moved again (another message) joins its entry.
  await dlq.send(event(1));
  entries = await waitFor(async () => {
    const e = await entriesOf("moved");
    return e[0]?.seen_count === 2 && e;
  }, { what: "the first entry seen again", timeoutMs: hop });
  assert.equal(entries.length, 2);

  const res = await admin.post("webhooks/dlq/replay-all", { reason: "re-ingest the moved events", filter: { source: "moved" } });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.deepEqual([res.data.attempted, res.data.succeeded, res.data.failed], [2, 2, 0], JSON.stringify(res.data));
  await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE event_id IN ('evt_moved_same_1', 'evt_moved_same_2') AND state = 'delivered'"))[0].n === 2, {
    what: "both replayed events delivered",
    timeoutMs: hop,
  });
  for (const n of [1, 2]) assert.equal(calls("/moved", `evt_moved_same_${n}`).length, 1, `event ${n} delivered once`);
});
