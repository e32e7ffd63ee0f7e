// A paced replay-all (DESIGN.md §3, §4): each replayed request carries an
// X-Timestamp of the moment *that* request is sent, never the moment the
// run began, so a downstream with a tight tolerance accepts every one; the
// requests are spaced by `rate_per_s`; and the counts add up.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { checkHmacSha256 } from "../scripts/webhook-signatures.mjs";

const N = 12;
const RATE = 2;
const DOWN_SECRET = "paced-down-secret";
const WEBHOOK_SECRET = "paced-webhook-secret";
let relay, admin, downstream;
let poisoned = true;

before(async () => {
  downstream = await startDownstream({ "/paced": () => ({ status: poisoned ? 400 : 200 }) });
  relay = await startRelay({
    relayVars: {
      SOURCES: JSON.stringify({ paced: { scheme: "hmac-sha256", downstream: downstream.url("/paced") } }),
      WEBHOOK_SECRET_PACED: WEBHOOK_SECRET,
      DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET,
      RETRY_DELAYS_S: "1,1,1,1,1",
      BREAKER_OPEN_ACTION: "retry",
      // 4xx answers do not count against the breaker; keep it out of the way anyway.
      BREAKER_FAILURE_THRESHOLD: "1000",
    },
  });
  admin = adminClient(relay, [WEBHOOK_SECRET, DOWN_SECRET]);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

test("a paced replay-all sends fresh X-Timestamps, valid signatures, spaced by rate_per_s, with counts that add up", async (t) => {
  poisoned = true;
  const events = [];
  for (let n = 1; n <= N; n++) {
    // Distinct payloads: no entry dedupes another.
    const body = JSON.stringify({ n, note: `paced event ${n}` });
    const res = await relay.fetch("/webhooks/paced", { method: "POST", body, headers: hmacHeaders(body, { secret: WEBHOOK_SECRET, operationId: `paced-${n}` }) });
    assert.equal(res.status, 202);
    events.push({ event_id: (await res.json()).event_id, body });
  }
  const entries = await waitFor(async () => {
    const found = await rows(relay.db, "SELECT * FROM dead_letters WHERE source = 'paced'");
    return found.length === N && found;
  }, { what: `${N} dead letters`, timeoutMs: 20000 });
  for (const e of entries) {
    assert.equal(e.kind, "poison_handoff", "a 400 dead-letters at once");
    assert.equal(e.error_code, "UPSTREAM_4XX");
    assert.equal(e.attempts, 1);
  }
  assert.equal(downstream.hits("/paced").length, N);

  poisoned = false;
  const mark = downstream.requests.length;
  const started = Date.now();
  const res = await admin.post("webhooks/dlq/replay-all", { reason: "downstream fixed", rate_per_s: RATE, concurrency: 1, max_entries: 50 });
  const tookMs = Date.now() - started;
  assert.equal(res.status, 200, JSON.stringify(res.json));
  const d = res.data;
  assert.equal(d.attempted, d.succeeded + d.failed + d.deduped, `attempted ${d.attempted} = succeeded ${d.succeeded} + failed ${d.failed} + deduped ${d.deduped}`);
  assert.equal(d.succeeded, N);
  assert.equal(d.failed, 0);

  const replayed = downstream.requests.slice(mark).filter((r) => r.path === "/paced");
  assert.equal(replayed.length, N, "one downstream request per entry");
  assert.deepEqual(replayed.map((r) => r.headers["x-operation-id"]).sort(), events.map((e) => e.event_id).sort(), "each event once");
  const bodies = new Map(events.map((e) => [e.event_id, e.body]));
  for (const r of replayed) {
    const id = r.headers["x-operation-id"];
    assert.equal(r.body, bodies.get(id), `the replay of ${id} carries the original body`);
    const ts = Number(r.headers["x-timestamp"]);
    const skewMs = r.at - ts * 1000;
    assert.ok(Math.abs(skewMs) <= 2000, `the replay of ${id} was received at ${r.at} with X-Timestamp ${ts}: ${skewMs} ms apart (a stale timestamp)`);
    assert.deepEqual(checkHmacSha256(r.headers, r.body, DOWN_SECRET, { toleranceS: 2, now: r.at }), { ok: true }, `the signature of the replay of ${id}`);
  }

  const spanMs = replayed.at(-1).at - replayed[0].at;
  const minSpanMs = ((N - 1) / RATE) * 1000 * 0.9;
  assert.ok(spanMs >= minSpanMs, `first to last receipt took ${spanMs} ms; at ${RATE}/s it must take at least ${minSpanMs} ms`);
  const gaps = replayed.slice(1).map((r, i) => r.at - replayed[i].at);
  assert.ok(tookMs >= spanMs, `the call (${tookMs} ms) spans the run`);
  const skews = replayed.map((r) => r.at - Number(r.headers["x-timestamp"]) * 1000);
  t.diagnostic(`replay span ${spanMs} ms (min ${minSpanMs}); receipt minus X-Timestamp ${Math.min(...skews)}..${Math.max(...skews)} ms`);

  const statuses = await rows(relay.db, "SELECT status, count(*) AS n FROM dead_letters WHERE source = 'paced' GROUP BY status");
  assert.deepEqual(statuses, [{ status: "replayed", n: N }], `gaps between receipts: ${gaps.join(", ")} ms`);
  const delivered = await rows(relay.db, "SELECT count(*) AS n FROM events WHERE source = 'paced' AND delivery_status = 'delivered'");
  assert.equal(delivered[0].n, N);
});
