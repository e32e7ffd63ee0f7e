// A destination's rate_per_s holds across every isolate and path that
// calls it (DESIGN §3, "Rates"): the consumer, a replay job and the drain
// take their starts from one shared budget (the `rates` row in D1), so the
// destination never sees more than its rate, whatever the consumer's
// concurrency or the job's own rate. Events over the rate are parked
// (cause `rate`), spend no retry budget and are drained at the rate; a
// single replay over the rate waits its turn or answers 429 naming it,
// never counted as a failed replay. Arrival times are read at a real
// loopback destination.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { deadline, spacingMs } from "./support/schedule.mjs";

const SECRET = "rate-shared-source-secret";
const DOWN_SECRET = "rate-shared-down-secret";
const REASON = "rate test: the destination is fixed";
// Until a test fixes a path, an event whose tag starts "bad" is refused
// with a 400 there (poison: its delivery is dead-lettered at once).
const fixed = { "/limited": false, "/slow": false, "/slower": false, "/slowest": false };
let downstream;
let relay;
let admin;

before(async () => {
  const refuseBad = (path) => (req) => ({ status: !fixed[path] && JSON.parse(req.body).tag.startsWith("bad") ? 400 : 200 });
  downstream = await startDownstream(Object.fromEntries(Object.keys(fixed).map((p) => [p, refuseBad(p)])));
  relay = await startRelay({
    relayVars: {
      DESTINATIONS: JSON.stringify({
        limited: { url: downstream.url("/limited"), rate_per_s: 2 },
        slow: { url: downstream.url("/slow"), rate_per_s: 0.1 },
        slower: { url: downstream.url("/slower"), rate_per_s: 0.2 },
        slowest: { url: downstream.url("/slowest"), rate_per_s: 0.1 },
      }),
      SOURCES: JSON.stringify({
        rl: { scheme: "hmac-sha256", routes: [{ to: "limited" }] },
        rs: { scheme: "hmac-sha256", routes: [{ to: "slow" }] },
        rj: { scheme: "hmac-sha256", routes: [{ to: "slower" }] },
        ra: { scheme: "hmac-sha256", routes: [{ to: "slowest" }] },
      }),
      WEBHOOK_SECRET_RL: SECRET,
      WEBHOOK_SECRET_RS: SECRET,
      WEBHOOK_SECRET_RJ: SECRET,
      WEBHOOK_SECRET_RA: SECRET,
      DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET,
      RETRY_DELAYS_S: "1,1,1,1,1",
      // The drain's own rate is above the destination's: the smaller holds.
      DRAIN_RATE_PER_S: "10",
    },
  });
  admin = adminClient(relay, [SECRET, DOWN_SECRET]);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function send(source, tag) {
  const body = JSON.stringify({ tag });
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `op-${tag}` }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}

const pendingEntries = (destination) =>
  rows(relay.db, "SELECT id, replay_attempts, status FROM dead_letters WHERE destination = ? AND status = 'pending'", destination);

/**
 * The property checked from outside (DESIGN §4): in any window of W
 * seconds (W ≥ 1), at most ceil(rate × W) + 1 starts arrive.
 */
function assertWithinRate(at, rate) {
  const sorted = [...at].sort((a, b) => a - b);
  const gaps = sorted.slice(1).map((x, i) => x - sorted[i]);
  for (const w of [1, 2, 3, 5, 10]) {
    const cap = Math.ceil(rate * w) + 1;
    const worst = Math.max(...sorted.map((s, i) => sorted.slice(i).filter((x) => x < s + w * 1000).length));
    assert.ok(worst <= cap, `${worst} starts within ${w} s at ${rate}/s (at most ${cap}); gaps ${gaps.join(", ")} ms`);
  }
  return gaps;
}

test("twenty events at once plus a replay job at 10/s: the destination at 2/s never sees more, every event arrives, none is dead-lettered", async (ctx) => {
  // Four deliveries refused for good: the job's entries.
  const bad = [];
  for (let i = 0; i < 4; i++) bad.push(await send("rl", `bad-${i}`));
  await waitFor(async () => (await pendingEntries("limited")).length === 4, { what: "four dead-letter entries for 'limited'", timeoutMs: 30_000 });
  fixed["/limited"] = true;

  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { destination: "limited" }, canary: { size: 0 }, rate_per_s: 10, concurrency: 10 });
  assert.equal(created.status, 202, JSON.stringify(created.json));
  const events = await Promise.all(Array.from({ length: 20 }, (_, i) => send("rl", `burst-${i}`)));

  const wanted = new Set([...events, ...bad]);
  const delivered = () => new Set(downstream.hits("/limited").filter((r) => r.status === 200).map((r) => r.headers["x-operation-id"]));
  await waitFor(() => [...wanted].every((id) => delivered().has(id)), { what: "all 24 events delivered to 'limited'", timeoutMs: 90_000, intervalMs: 200 });
  const job = await waitFor(async () => {
    const j = (await admin.get(`jobs/${created.data.id}`)).data;
    return j.status === "completed" && j;
  }, { what: "the job to complete", timeoutMs: 30_000 });
  assert.equal(job.succeeded, 4, JSON.stringify(job));
  assert.equal(job.failed, 0, "a replay over the rate is never a failed one");

  const oks = downstream.hits("/limited").filter((r) => r.status === 200);
  const ids = oks.map((r) => r.headers["x-operation-id"]);
  assert.equal(new Set(ids).size, ids.length, "no event was delivered twice");
  const gaps = assertWithinRate(downstream.hits("/limited").map((r) => r.at), 2);
  ctx.diagnostic(`gaps between starts at 'limited' (ms): ${gaps.join(", ")}`);

  const dead = await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE destination = 'limited' AND status <> 'replayed'");
  assert.equal(dead[0].n, 0, "no event was dead-lettered");
  const byRate = await rows(relay.db, "SELECT count(*) AS n FROM event_steps WHERE step = 'parked' AND detail LIKE '%over its rate_per_s%'");
  assert.ok(byRate[0].n > 0, "some events were parked over the rate (cause rate) and drained");
  const attempts = await rows(relay.db, "SELECT max(attempts) AS n FROM deliveries WHERE destination = 'limited' AND event_id IN (SELECT value FROM json_each(?))", JSON.stringify(events));
  assert.ok(attempts[0].n <= 1, `a parked event spends no retry budget (max attempts ${attempts[0].n})`);
});

test("a single replay over the rate answers 429 naming the rate, is not a failed replay, and goes through once its turn is near", async () => {
  await send("rs", "bad-slow");
  const [entry] = await waitFor(async () => {
    const e = await pendingEntries("slow");
    return e.length === 1 && e;
  }, { what: "the dead-letter entry for 'slow'", timeoutMs: 30_000 });
  fixed["/slow"] = true;
  // The refused call took the one start of the next 10 s.
  const refused = await admin.post(`webhook-dlq/${entry.id}/replay`, { reason: REASON });
  assert.equal(refused.status, 429, JSON.stringify(refused.json));
  assert.equal(refused.error.code, "RATE_LIMITED");
  assert.match(refused.error.message, /'slow' is over its rate_per_s of 0\.1/);
  const [after429] = await rows(relay.db, "SELECT replay_attempts, status FROM dead_letters WHERE id = ?", entry.id);
  assert.deepEqual({ ...after429 }, { replay_attempts: 0, status: "pending" }, "a 429 changes nothing");
  // Within a few seconds of its turn the replay waits for it and succeeds.
  // Its turn is the next start at 'slow''s rate: one spacing after the
  // refused call's, at most.
  const slowRate = JSON.parse(relay.settings().vars.DESTINATIONS).slow.rate_per_s;
  const done = await waitFor(async () => {
    const r = await admin.post(`webhook-dlq/${entry.id}/replay`, { reason: REASON });
    if (r.status === 429) return false;
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.data;
  }, { what: "the replay to get its turn", timeoutMs: deadline(spacingMs(slowRate)), intervalMs: 1_000 });
  assert.equal(done.outcome, "succeeded", JSON.stringify(done));
  assert.equal(done.replay_attempts, 0);
  assertWithinRate(downstream.hits("/slow").map((r) => r.at), 0.1);
});

test("a job whose replays meet the rate leaves those entries pending and takes them again: it completes with none failed", async () => {
  for (let i = 0; i < 3; i++) await send("rj", `bad-job-${i}`);
  await waitFor(async () => (await pendingEntries("slower")).length === 3, { what: "three dead-letter entries for 'slower'", timeoutMs: 40_000, intervalMs: 200 });
  fixed["/slower"] = true;
  // At 0.2/s the second replay's turn is about 5 s after the first's, the
  // third's 10 s: past a replay's wait, so the relay refuses it for now.
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { destination: "slower" }, canary: { size: 0 }, rate_per_s: 10, concurrency: 3 });
  assert.equal(created.status, 202, JSON.stringify(created.json));
  const job = await waitFor(async () => {
    const j = (await admin.get(`jobs/${created.data.id}`)).data;
    return ["completed", "aborted"].includes(j.status) && j;
  }, { what: "the job to end", timeoutMs: 60_000, intervalMs: 250 });
  assert.equal(job.status, "completed", JSON.stringify(job));
  assert.deepEqual([job.succeeded, job.failed], [3, 0], JSON.stringify(job));
  const steps = relay.logs.filter((l) => l.includes('"event":"job_step"') && l.includes(created.data.id));
  // One step could not take all three: the rate refused some, and a later
  // step came back for them.
  assert.ok(steps.length > 1, `the job ran in ${steps.length} step(s): ${steps.join(" | ")}`);
  const entries = await rows(relay.db, "SELECT status, replay_attempts FROM dead_letters WHERE destination = 'slower'");
  assert.deepEqual(entries.map((e) => [e.status, e.replay_attempts]), Array(3).fill(["replayed", 0]));
  assertWithinRate(downstream.hits("/slower").map((r) => r.at), 0.2);
});

test("replay-all over a destination's rate: a refused entry is not failed, does not stop the canary, stays pending, and the cursor does not pass it", async () => {
  for (let i = 0; i < 2; i++) await send("ra", `bad-all-${i}`);
  const rate = JSON.parse(relay.settings().vars.DESTINATIONS).slowest.rate_per_s;
  await waitFor(async () => (await pendingEntries("slowest")).length === 2, { what: "two dead-letter entries for 'slowest'", timeoutMs: deadline(2 * spacingMs(rate)), intervalMs: 200 });
  fixed["/slowest"] = true;
  // At 0.1/s the next start is 10 s off, past a replay's 5 s wait: the
  // relay refuses at least one of the two for now (the first too, when the
  // dead letters' own calls took the next start).
  const call = (cursor) => admin.post("webhooks/dlq/replay-all", { reason: REASON, filter: { destination: "slowest" }, canary: 1, concurrency: 1, ...(cursor ? { cursor } : {}) });
  const first = await call();
  assert.equal(first.status, 200, JSON.stringify(first.json));
  const d = first.data;
  assert.equal(d.failed, 0, `a rate refusal is never a failed replay: ${JSON.stringify(d)}`);
  assert.equal(d.attempted, d.succeeded + d.failed + d.deduped);
  assert.ok(d.over_rate?.count >= 1, JSON.stringify(d));
  assert.equal(d.stopped, undefined, "the canary was not stopped by the rate");
  assert.ok(d.next_cursor, "the cursor stops before the refused entry, so a next call takes it");
  for (const id of d.over_rate.ids) {
    const [e] = await rows(relay.db, "SELECT status, replay_attempts FROM dead_letters WHERE id = ?", id);
    assert.deepEqual({ ...e }, { status: "pending", replay_attempts: 0 }, "refused over the rate: untouched");
  }
  // Following the cursor replays the rest as the rate allows.
  let cursor = d.next_cursor;
  await waitFor(async () => {
    const next = await call(cursor);
    assert.equal(next.status, 200, JSON.stringify(next.json));
    assert.equal(next.data.failed, 0, JSON.stringify(next.data));
    cursor = next.data.next_cursor;
    return (await pendingEntries("slowest")).length === 0;
  }, { what: "every 'slowest' entry replayed by following the cursor", timeoutMs: deadline(3 * spacingMs(rate)), intervalMs: 1_000 });
  const entries = await rows(relay.db, "SELECT status, replay_attempts FROM dead_letters WHERE destination = 'slowest'");
  assert.deepEqual(entries.map((e) => [e.status, e.replay_attempts]), Array(2).fill(["replayed", 0]));
  assertWithinRate(downstream.hits("/slowest").map((r) => r.at), rate);
});

test("the stats show each rated destination's rate_per_s", async () => {
  const limited = JSON.parse(relay.settings().vars.DESTINATIONS).limited.rate_per_s;
  const eventId = await send("rl", "stats-rate");
  await waitFor(async () => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = ? AND destination = 'limited'", eventId))[0]?.state === "delivered",
    { what: "a delivery to 'limited'", timeoutMs: deadline(2 * spacingMs(limited)), intervalMs: 200 });
  const { data } = await admin.get("webhook-dlq/stats");
  const line = data.destinations.find((x) => x.destination === "limited");
  assert.ok(line, JSON.stringify(data.destinations));
  assert.equal(line.rate_per_s, limited);
});
