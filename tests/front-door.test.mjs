// The front door: `npm start -- --var …` as a user types it. wrangler gives
// --var to the first config's worker only; these prove the values reach the
// DLQ worker too. DLQ_CAPACITY and ADMIN_JWT_SECRET are read by the DLQ
// worker alone, and it refuses a SOURCES whose secret it lacks, so a depth
// of 2 with one eviction, read with a token signed by the --var secret, can
// only come from a DLQ worker that got every --var.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startFrontDoor } from "./support/front-door.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { waitFor } from "./support/wait-for.mjs";
import { hmacSha256Headers } from "../scripts/webhook-signatures.mjs";
import { mintToken } from "../scripts/admin-jwt.mjs";

const WEBHOOK_SECRET = "front-door-webhook-secret";
const ADMIN_JWT_SECRET = "front-door-admin-jwt-secret";

/**
 * Starts `npm start` with one poison source (its downstream answers 400, so
 * each event goes straight to the DLQ) and DLQ_CAPACITY 2, sends three
 * events, and waits for the DLQ worker to keep two and evict one.
 */
async function threePoisonEventsKeepTwo(t, { sourcesJson, varSpelling }) {
  const downstream = await startDownstream({ "/poison": () => ({ status: 400 }) });
  t.after(() => downstream.close());
  const sources = { "fd-poison": { scheme: "hmac-sha256", downstream: downstream.url("/poison") } };
  const door = await startFrontDoor({
    varSpelling,
    vars: {
      DLQ_CAPACITY: "2",
      SOURCES: sourcesJson(sources),
      WEBHOOK_SECRET_FD_POISON: WEBHOOK_SECRET,
      ADMIN_JWT_SECRET,
      // Seconds, not 30 s, should an event ever take the retry path here.
      RETRY_DELAYS_S: "1,1,1,1,1",
    },
  });
  t.after(() => door.dispose());

  const health = await (await door.fetch("/healthz")).json();
  assert.deepEqual(health.sources, ["fd-poison"], "the relay took SOURCES from --var");

  for (let n = 1; n <= 3; n++) {
    // Distinct bodies: the DLQ dedupes identical payloads.
    const body = JSON.stringify({ n, run: door.port });
    const res = await door.fetch("/webhooks/fd-poison", { method: "POST", body, headers: hmacSha256Headers(body, { secret: WEBHOOK_SECRET, operationId: `fd-${n}` }) });
    assert.equal(res.status, 202, await res.text());
  }

  const authorization = `Bearer ${mintToken(ADMIN_JWT_SECRET, { sub: "front-door-test", ttlS: 300 })}`;
  let last;
  const stats = await waitFor(
    async () => {
      const res = await door.fetch("/api/v1/admin/webhook-dlq/stats", { headers: { authorization } });
      last = { status: res.status, body: await res.json() };
      // A refusal (401 for the wrong ADMIN_JWT_SECRET, 500 CONFIG_INVALID
      // for a SOURCES without its secret) will not go away by waiting.
      if (res.status !== 200) throw new Error(`the DLQ worker answered ${res.status}, so it lacks a --var`);
      const data = last.body.data;
      return data.depth === 2 && data.counters?.drop_overflow === 1 && data;
    },
    { timeoutMs: 30_000, intervalMs: 250, what: "DLQ depth 2 and drop_overflow 1" },
  ).catch((e) => {
    throw new Error(`${e.message}\nlast stats answer: ${JSON.stringify(last)}\nnpm start's output:\n${door.output.slice(-30).join("\n")}`);
  });
  assert.equal(stats.counters.dead_lettered, 3, "all three reached the DLQ worker");
  assert.equal(downstream.hits("/poison").length, 3, "one downstream call per event: poison is not retried");
}

// Two starts overlap (each waits mostly on the queues' 5 s batch timeout);
// startFrontDoor lets only one at a time prepare dlq/.dev.vars.
describe("npm start --var reaches both workers", { concurrency: 2 }, () => {
  test("--var NAME:value (capacity 2 keeps 2 of 3 poison events)", async (t) => {
    await threePoisonEventsKeepTwo(t, { varSpelling: "separate", sourcesJson: (s) => JSON.stringify(s) });
  });

  test("--var=NAME:value, with SOURCES as plain JSON text with spaces, quotes, ':' and ','", async (t) => {
    await threePoisonEventsKeepTwo(t, { varSpelling: "equals", sourcesJson: (s) => JSON.stringify(s, null, 1).replaceAll("\n", "") });
  });
});

// The path that broke: a source whose downstream exists only in the --var
// SOURCES. The event fails (400), the downstream is fixed, and a replay
// through the admin API must really reach it: the replay runs in the relay,
// with the relay's configuration.
test("a replay through the admin API delivers to a downstream named only in --var SOURCES", async (t) => {
  let fixed = false;
  const downstream = await startDownstream({ "/only-in-var": () => ({ status: fixed ? 200 : 400 }) });
  t.after(() => downstream.close());
  const door = await startFrontDoor({
    vars: {
      SOURCES: JSON.stringify({ "fd-replay": { scheme: "hmac-sha256", downstream: downstream.url("/only-in-var") } }),
      WEBHOOK_SECRET_FD_REPLAY: WEBHOOK_SECRET,
      ADMIN_JWT_SECRET,
      RETRY_DELAYS_S: "1,1,1,1,1",
    },
  });
  t.after(() => door.dispose());
  const body = JSON.stringify({ replay: door.port });
  const sent = await door.fetch("/webhooks/fd-replay", { method: "POST", body, headers: hmacSha256Headers(body, { secret: WEBHOOK_SECRET, operationId: "fd-replay-1" }) });
  assert.equal(sent.status, 202, await sent.text());
  const headers = { authorization: `Bearer ${mintToken(ADMIN_JWT_SECRET, { sub: "front-door-test", ttlS: 300 })}` };
  const entry = await waitFor(
    async () => {
      const res = await door.fetch("/api/v1/admin/webhook-dlq?status=pending", { headers });
      return res.status === 200 && (await res.json()).data.items[0];
    },
    { timeoutMs: 30_000, intervalMs: 250, what: "the dead letter of the 400" },
  );
  assert.equal(entry.error_code, "UPSTREAM_4XX");
  fixed = true;
  const res = await door.fetch(`/api/v1/admin/webhook-dlq/${entry.id}/replay`, { method: "POST", headers, body: JSON.stringify({ reason: "downstream fixed" }) });
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer));
  assert.equal(answer.data.outcome, "succeeded", JSON.stringify(answer));
  assert.equal(answer.data.delivery, "delivered");
  const hits = downstream.hits("/only-in-var");
  assert.equal(hits.length, 2, "the failed call, then the replay");
  assert.equal(hits[1].headers["x-idempotency-key"], "fd-replay:fd-replay-1");
});

// Retention through the front door: --var EVENT_RETENTION reaches both
// workers (the relay sweeps by it, the DLQ worker's stats show it), the
// sweep really writes R2 under `wrangler dev`, GET /archive reads it back,
// and --test-scheduled's /__scheduled runs maintenance on the relay's port.
test("maintenance/run archives to R2 under npm start, GET /archive lists it, and /__scheduled runs maintenance", async (t) => {
  const door = await startFrontDoor({
    vars: {
      SOURCES: JSON.stringify({ "fd-sweep": { scheme: "hmac-sha256" } }),
      WEBHOOK_SECRET_FD_SWEEP: WEBHOOK_SECRET,
      ADMIN_JWT_SECRET,
      EVENT_RETENTION: "2s",
    },
    args: ["--test-scheduled"],
  });
  t.after(() => door.dispose());
  const headers = { authorization: `Bearer ${mintToken(ADMIN_JWT_SECRET, { sub: "front-door-test", ttlS: 300 })}` };
  const admin = async (method, p) => {
    const res = await door.fetch(`/api/v1/admin/${p}`, { method, headers });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    return body.data;
  };
  const body = JSON.stringify({ sweep: door.port });
  const sent = await door.fetch("/webhooks/fd-sweep", { method: "POST", body, headers: hmacSha256Headers(body, { secret: WEBHOOK_SECRET, operationId: "fd-sweep-1" }) });
  assert.equal(sent.status, 202, await sent.text());
  await waitFor(async () => (await admin("GET", "events")).items.length === 1, { timeoutMs: 30_000, intervalMs: 250, what: "the event to be ingested" });
  const stats = await admin("GET", "webhook-dlq/stats");
  assert.equal(stats.storage.event_retention_ms, 2000, "the DLQ worker got --var EVENT_RETENTION");
  const run = await waitFor(
    async () => {
      const data = await admin("POST", "maintenance/run");
      return data.archived.events === 1 && data;
    },
    { timeoutMs: 30_000, intervalMs: 500, what: "maintenance/run to archive the event once it is 2 s old" },
  );
  assert.ok(run.objects_written >= 1);
  const listing = await admin("GET", "archive?table=events");
  assert.equal(listing.items.length, 1, JSON.stringify(listing));
  assert.equal(listing.items[0].rows, 1);
  assert.match(listing.items[0].key, /^events\/\d{4}-\d{2}-\d{2}\/evt_[^/]+\.ndjson$/);
  assert.equal((await admin("GET", "events")).items.length, 0, "gone from D1");

  const before = (await admin("GET", "webhook-dlq/stats")).last_sweep.at;
  const cron = await door.fetch("/__scheduled?cron=*%2F5+*+*+*+*");
  assert.equal(cron.status, 200, await cron.text());
  await waitFor(async () => (await admin("GET", "webhook-dlq/stats")).last_sweep.at > before, { timeoutMs: 15_000, intervalMs: 250, what: "the */5 cron to run a sweep step" });
});
