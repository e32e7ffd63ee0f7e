// Migration 0017 backfills nothing in SQL: an event from before deliveries
// (routed_at NULL) is read as one delivery to the destination named after
// its source, and the relay copies it into its row the first time it
// touches it (a redelivered ingest message), or, for a parked one, the
// maintenance run's bounded backfill step, which also makes sure that
// destination drains. A database migrated up to 0016 and filled as today's
// schema leaves it, then upgraded: delivered events are never called
// again, parked ones drain to the destination named after their source,
// and pending ones are delivered once. A parked one that a redelivered
// message copies first (not the backfill) drains too: every copy starts
// the drain its parked row needs (issue 40, item 8).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";

let relay, downstream;

before(async () => {
  downstream = await startDownstream({ "/legacy": () => ({ status: 200 }), "/older": () => ({ status: 200 }) });
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({
        old: { scheme: "hmac-sha256", downstream: downstream.url("/legacy") },
        older: { scheme: "hmac-sha256", downstream: downstream.url("/older") },
      }),
      WEBHOOK_SECRET_OLD: "old-secret",
      WEBHOOK_SECRET_OLDER: "older-secret",
      RETRY_DELAYS_S: "0,0,0,0,0",
      BREAKER_COOLDOWN_S: "1",
    },
    migrateUpTo: 16,
  });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const message = (name, source = "old") => ({
  body: { v: 1, event_id: `evt_${source}_${name}`, idempotency_key: `${source}:${name}`, source, received_at_ms: 1, headers: {}, body: JSON.stringify({ name }) },
});
const callsFor = (name, path = "/legacy") => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === `evt_${path === "/legacy" ? "old" : "older"}_${name}`);

test("events delivered, parked and pending before migration 0017 are still right after it", async () => {
  const now = Date.now();
  // As today's code leaves them (0016's schema): the delivery state on the event's row.
  const seed = (name, status, extra = "", params = [], source = "old") =>
    relay.db
      .prepare(`INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, queue_message_id, last_message_id, headers, body, body_bytes, delivery_status, delivery_attempts${extra ? ", " + extra : ""}) VALUES (?, ?, ?, 1, ?, ?, ?, ?, '{}', ?, 20, ?, ?${params.map(() => ", ?").join("")})`)
      .bind(`${source}:${name}`, `evt_${source}_${name}`, source, now, now, `m-${source}-${name}`, `m-${source}-${name}`, JSON.stringify({ name }), status, status === "pending" ? 0 : 1, ...params)
      .run();
  await seed("delivered", "delivered", "delivered_at", [now]);
  await seed("parked", "parked", "parked_at, parked_destination, last_delivery_error", [now - 5000, downstream.url("/legacy"), "UPSTREAM_5XX"]);
  await seed("pending", "pending", "last_delivery_error", ["UPSTREAM_5XX"]);
  // Parked too, but its message comes again before any backfill runs.
  await seed("parked", "parked", "parked_at, parked_destination, last_delivery_error", [now - 4000, downstream.url("/older"), "UPSTREAM_5XX"], "older");
  await relay.migrateRest();
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM deliveries"))[0].n, 0, "the migration copies nothing itself");

  // The pending and the delivered events' messages come again (the
  // platform retries a pending event's message; a provider resends).
  await (await relay.producer()).sendBatch([message("pending"), message("delivered"), message("parked", "older")]);
  await waitFor(async () => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = 'evt_old_pending'"))[0]?.state === "delivered", { what: "the pending event delivered", timeoutMs: 20_000 });
  // The redelivered message copied the other source's parked event (so no
  // backfill will see it), and that copy started its destination's drain.
  await waitFor(async () => (await rows(relay.db, "SELECT routed_at FROM events WHERE event_id = 'evt_older_parked'"))[0]?.routed_at > 0, { what: "the parked event copied by its redelivered message" });

  // The parked one waits for maintenance's bounded backfill, which starts its drain.
  const admin = adminClient(relay);
  const run = await admin.post("maintenance/run", {});
  assert.equal(run.status, 200, JSON.stringify(run.json));
  await waitFor(async () => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = 'evt_old_parked'"))[0]?.state === "delivered", { what: "the parked event drained", timeoutMs: 30_000 });
  // Before the fix nothing drained it: the backfill finds only events not yet copied.
  await waitFor(async () => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = 'evt_older_parked'"))[0]?.state === "delivered", { what: "the parked event a redelivered message copied drained", timeoutMs: 30_000 });
  assert.equal(callsFor("parked", "/older").length, 1, "it drains once, by its source's name");
  assert.equal((await rows(relay.db, "SELECT destination FROM deliveries WHERE event_id = 'evt_older_parked'"))[0]?.destination, "older");

  const byEvent = Object.fromEntries((await rows(relay.db, "SELECT event_id, destination, state FROM deliveries")).map((d) => [d.event_id, d]));
  for (const name of ["delivered", "parked", "pending"]) {
    assert.equal(byEvent[`evt_old_${name}`]?.destination, "old", `${name}: one delivery, to the destination named after its source`);
    assert.equal(byEvent[`evt_old_${name}`]?.state, "delivered", name);
  }
  assert.equal(callsFor("delivered").length, 0, "a delivered event is never called again");
  assert.equal(callsFor("pending").length, 1, "a pending event is delivered once");
  assert.equal(callsFor("parked").length, 1, "a parked event drains once, by its source's name");
  const statuses = await rows(relay.db, "SELECT delivery_status AS s, routed_at FROM events ORDER BY event_id");
  assert.ok(statuses.every((r) => r.s === "delivered" && r.routed_at > 0), JSON.stringify(statuses));
});
