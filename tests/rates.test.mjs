// What a rate means (DESIGN.md §4, "Rates and concurrency mean the same
// everywhere"): a rate caps how many calls *start* in any one-second
// window, spaced about 1/rate apart; concurrency only caps how many are in
// flight. Driven from outside: a job and a replay-all at 4/s with a
// concurrency of 10 (more than twice the rate) over 13 entries, with the
// arrival times read at a real loopback downstream.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startJobsRelay, assertCounts } from "./support/jobs.mjs";

const REASON = "rates test: downstream fixed";
const RATE = 4;
const N = 13;
const CONCURRENCY = 10;
let t;

before(async () => {
  t = await startJobsRelay(["rate-job", "rate-all"]);
});
after(async () => {
  await t?.dispose();
});

/**
 * The two properties checked from outside: no half-open one-second window
 * holds more than ceil(rate) + 1 arrivals, and the run spans at least 80%
 * of (n - 1) / rate.
 */
function assertPaced(receipts, what) {
  const at = receipts.map((r) => r.at).sort((a, b) => a - b);
  assert.equal(at.length, N, `${what}: every entry reached the downstream once`);
  const cap = Math.ceil(RATE) + 1;
  const worst = Math.max(...at.map((start, i) => at.slice(i).filter((x) => x < start + 1000).length));
  const gaps = at.slice(1).map((x, i) => x - at[i]);
  assert.ok(worst <= cap, `${what}: ${worst} arrivals in one second at ${RATE}/s (at most ${cap}); gaps ${gaps.join(", ")} ms`);
  const span = at.at(-1) - at[0];
  const floor = 0.8 * ((N - 1) / RATE) * 1000;
  assert.ok(span >= floor, `${what}: ${N} arrivals spanned ${span} ms; at ${RATE}/s they must span at least ${floor} ms (gaps ${gaps.join(", ")} ms)`);
  return { worst, span, gaps };
}

test("a job at 4/s with concurrency 10 starts its calls spaced, never as a burst", async (ctx) => {
  await t.makeEntries(Array.from({ length: N }, () => ({ source: "rate-job" })));
  const created = await t.admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "rate-job" }, canary: { size: 0 }, rate_per_s: RATE, concurrency: CONCURRENCY });
  assert.equal(created.status, 202, JSON.stringify(created.json));
  const done = await t.status(created.data.id, "completed", 30_000);
  assertCounts(done);
  assert.equal(done.succeeded, N);
  const { worst, span } = assertPaced(t.receipts("rate-job"), "job");
  ctx.diagnostic(`job: at most ${worst} arrivals in a second; span ${span} ms`);
});

test("a replay-all at 4/s with concurrency 10 starts its calls spaced, and refuses a rate outside 0.1 to 100", async (ctx) => {
  await t.makeEntries(Array.from({ length: N }, () => ({ source: "rate-all" })));
  const res = await t.admin.post("webhooks/dlq/replay-all", { reason: REASON, filter: { source: "rate-all" }, rate_per_s: RATE, concurrency: CONCURRENCY });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(res.data.succeeded, N);
  assert.equal(res.data.attempted, res.data.succeeded + res.data.failed + res.data.deduped);
  const { worst, span } = assertPaced(t.receipts("rate-all"), "replay-all");
  ctx.diagnostic(`replay-all: at most ${worst} arrivals in a second; span ${span} ms`);

  // The rate's range is the same as a job's (core/src/deliver/pacing.rs).
  const range = await t.admin.post("webhooks/dlq/replay-all", { reason: REASON, rate_per_s: 1000 });
  assert.equal(range.status, 400);
  assert.match(range.error.message, /0\.1 to 100/);
});
