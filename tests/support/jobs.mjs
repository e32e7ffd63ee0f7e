// Helpers for the job tests: a relay whose sources each forward to their own
// path of one real loopback downstream, dead-letter entries made fast by
// putting crafted poison hand-offs (core/src/retry/poison_handoff.rs) on
// `webhooks-dlq`, and readers for jobs, receipts and log lines.
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { startRelay, waitFor, rows } from "./harness.mjs";
import { startDownstream } from "./downstream.mjs";
import { adminClient } from "./admin.mjs";

export { waitFor, rows };

/** `evt_` and 32 hex digits of the key's SHA-256 (core/src/receive/idempotency.rs). */
export const eventIdOf = (key) => `evt_${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;

/** The class of a stable error code (core/src/state/error_code.rs). */
const CLASS = { UPSTREAM_4XX: "poison", SCHEMA_MISMATCH: "poison", BAD_PAYLOAD: "poison", UPSTREAM_5XX: "transient", TIMEOUT: "transient" };

/**
 * Starts a relay with one hmac-sha256 source per name in `sources`, each
 * forwarding to `/<name>` on a loopback downstream. `behaviours` maps a
 * source name to the downstream behaviour of its path (200 by default);
 * `vars` are more vars of both workers (DLQ_CAPACITY, …).
 */
export async function startJobsRelay(sources, behaviours = {}, { vars = {} } = {}) {
  const downstream = await startDownstream(Object.fromEntries(Object.entries(behaviours).map(([name, b]) => [`/${name}`, b])));
  const SOURCES = {};
  const secrets = {};
  for (const name of sources) {
    SOURCES[name] = { scheme: "hmac-sha256", downstream: downstream.url(`/${name}`) };
    secrets[`WEBHOOK_SECRET_${name.toUpperCase().replaceAll("-", "_")}`] = `${name}-webhook-secret`;
  }
  const relay = await startRelay({
    vars,
    // Only the relay takes the delivery configuration; replays run there.
    // The breaker is kept out of the way: a job's failures are the downstream's answers.
    relayVars: { SOURCES: JSON.stringify(SOURCES), ...secrets, DOWNSTREAM_SIGNING_SECRET: "jobs-down-secret", BREAKER_FAILURE_THRESHOLD: "1000" },
  });
  const admin = adminClient(relay, [...Object.values(secrets), "jobs-down-secret"]);
  const run = randomUUID().slice(0, 8);
  let seq = 0;

  /** A poison hand-off of a real event of `source`, failed with `code` and `message`. */
  // `again`: the delivery id of an event handed off before; this is the
  // same event failing again, in a message of its own.
  const handoff = (source, { code = "UPSTREAM_4XX", message = "downstream refused the event", body, again } = {}) => {
    const n = seq++;
    const delivery = again ?? `op-${run}-${n}`;
    const key = `${source}:${delivery}`;
    const now = Date.now();
    const original = {
      v: 1, event_id: eventIdOf(key), idempotency_key: key, source, delivery_id: delivery,
      received_at_ms: now, headers: { "content-type": "application/json" }, body: body ?? JSON.stringify({ n, source, run }),
    };
    const qm = again ? `qm-${key}-${n}` : `qm-${key}`;
    return { kind: "poison_handoff", failure: { code, message }, class: CLASS[code] ?? "unknown", attempts: 1, queue_message_id: qm, enqueued_at_ms: now, failed_at_ms: now, original };
  };

  /**
   * Makes one pending entry per item of `specs` (`{source, code?, message?, body?, again?}`)
   * and waits until all are stored; answers them in order as
   * `{id, event_id, source, signature}`.
   */
  const makeEntries = async (specs) => {
    const messages = specs.map((s) => handoff(s.source, s));
    // A producer per call: one taken before a reconfigure() is stale after it.
    const dlq = await relay.producer("WEBHOOKS_DLQ");
    for (let i = 0; i < messages.length; i += 50) await dlq.sendBatch(messages.slice(i, i + 50).map((body) => ({ body })));
    const eventIds = messages.map((m) => m.original.event_id);
    const found = await waitFor(async () => {
      // An event failing `again` has an earlier entry too: only pending ones are new.
      const pending = specs.some((s) => s.again) ? " AND status = 'pending'" : "";
      const got = await rows(relay.db, `SELECT id, event_id, source, error_signature AS signature, status FROM dead_letters WHERE event_id IN (SELECT value FROM json_each(?))${pending}`, JSON.stringify(eventIds));
      return got.length === eventIds.length && got;
    }, { timeoutMs: 30_000, what: `${eventIds.length} dead-letter entries` });
    const byEvent = new Map(found.map((r) => [r.event_id, r]));
    return eventIds.map((e) => byEvent.get(e));
  };

  const job = async (id) => {
    const res = await admin.get(`jobs/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    return res.data;
  };
  const jobUntil = (id, pred, what, timeoutMs = 30_000) =>
    waitFor(async () => { const j = await job(id); return pred(j) && j; }, { timeoutMs, intervalMs: 100, what: `job ${id}: ${what}` });
  const status = (id, wanted, timeoutMs) => jobUntil(id, (j) => j.status === wanted, `status ${wanted}`, timeoutMs);

  /** Downstream receipts of `source`, optionally only of the given event ids. */
  const receipts = (source, eventIds) => {
    const all = downstream.hits(`/${source}`);
    if (!eventIds) return all;
    const want = new Set(eventIds);
    return all.filter((r) => want.has(r.headers["x-operation-id"]));
  };

  /** The log lines (parsed) with `event` for `jobId`, after index `from` of relay.logs. */
  const logEvents = (event, jobId, from = 0) =>
    relay.logs.slice(from).filter((l) => l.includes(`"event":"${event}"`) && l.includes(jobId)).map((l) => JSON.parse(l.slice(l.indexOf("{"))));

  /** Every audit record of a job (all pages). */
  const audit = async (jobId) => {
    const items = [];
    let cursor = null;
    do {
      const res = await admin.get(`audit?job_id=${jobId}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      items.push(...res.data.items);
      cursor = res.data.next_cursor;
    } while (cursor);
    return items;
  };

  const entryStatus = async (ids) =>
    Object.fromEntries((await rows(relay.db, "SELECT id, status FROM dead_letters WHERE id IN (SELECT value FROM json_each(?))", JSON.stringify(ids))).map((r) => [r.id, r.status]));

  return {
    relay, admin, downstream, handoff, makeEntries, job, jobUntil, status, receipts, logEvents, audit, entryStatus,
    async dispose() {
      await relay.dispose();
      await downstream.close();
    },
  };
}

/** The counts a job must always satisfy (DESIGN.md §4). */
export function assertCounts(j) {
  assert.equal(j.attempted, j.succeeded + j.failed + j.deduped, `attempted = succeeded + failed + deduped: ${JSON.stringify(j)}`);
  assert.equal(j.matched, j.attempted + j.skipped + j.remaining, `matched = attempted + skipped + remaining: ${JSON.stringify(j)}`);
}

/** How many downstream receipts each event id has. */
export function receiptCounts(receipts) {
  const counts = new Map();
  for (const r of receipts) counts.set(r.headers["x-operation-id"], (counts.get(r.headers["x-operation-id"]) ?? 0) + 1);
  return counts;
}

/** Entries per step, as core/src/jobs/step_schedule.rs computes it: about 5 s of starts at the rate. */
export const stepEntries = (rate) => Math.min(50, Math.max(1, Math.floor(rate * 5)));
