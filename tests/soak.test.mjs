// The reduced soak inside `npm test`; `npm run soak` runs 10,000 events.
// Same plan (scripts/soak.mjs): 10% duplicates, 5% poison, 30% to a
// destination that is down until its events are parked and three breaker
// cooldowns more, then recovers by itself; redeliveries of processed and
// of parked messages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { soak, summary } from "../scripts/soak.mjs";

const N = 500;
const RATE = 50;

test(`${N} events with duplicates, poison, an outage that parks 30% and a drain after it: nothing lost, nothing doubled`, async () => {
  const r = await soak({ n: N, drainRate: RATE });
  console.log(`# ${summary(r)}`);
  const why = `${summary(r)}\n${r.problems.slice(0, 20).join("\n")}`;
  assert.equal(r.refused, 0, why);
  assert.equal(r.lost, 0, why);
  assert.equal(r.double, 0, why);
  assert.equal(r.poison_recalled, 0, `a duplicate of a refused (poison) event causes no second downstream call\n${why}`);
  assert.equal(r.miscounted, 0, `each duplicate and redelivery counted once on its event\n${why}`);
  assert.equal(r.duplicates_counted, r.duplicates_sent + r.redeliveries, why);
  // The DLQ holds exactly the poison events, each with its root cause.
  assert.equal(r.wrong_dead, 0, `only poison events in the DLQ, each UPSTREAM_4XX\n${why}`);
  assert.equal(r.dead_lettered_poison, N / 20, why);
  assert.equal(r.dead_lettered, N / 20, why);
  assert.equal(r.delivered + r.dead_lettered_poison, N, why);
  // The outage: every event of the down destination parked, none delivered, then all drained.
  assert.equal(r.down_events, (N * 3) / 10, why);
  assert.equal(r.down_delivered_before_recovery, 0, why);
  // (A probe in flight holds one event as `delivering`.)
  assert.ok(r.stats_parked_before_recovery >= r.down_events - 1, `the admin stats show every down event parked\n${why}`);
  assert.ok(r.parked_peak >= r.down_events, why);
  assert.ok(r.probes_failed_last_3_cooldowns >= 2, `the relay kept probing while down\n${why}`);
  assert.equal(r.parked_ever, r.down_events, why);
  assert.equal(r.parked_delivered, r.parked_ever, `every parked event delivered\n${why}`);
  assert.equal(r.drained, r.down_events, why);
  // With no traffic and no operator: the first drained delivery comes within a couple of cooldowns.
  assert.ok(r.first_drained_ms !== null && r.first_drained_ms < 5000, why);
  assert.ok(r.drain_rate_achieved <= RATE * 1.1, `drained at ${r.drain_rate_achieved}/s, more than ${RATE}/s + 10%\n${why}`);
});
