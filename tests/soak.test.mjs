// The reduced soak inside `npm test`; `npm run soak` runs 10,000 events.
// Same plan (scripts/soak.mjs): 10% duplicates, 5% poison, 30% to a
// destination that is down until its events are parked and three breaker
// cooldowns more, then recovers by itself; redeliveries of processed and
// of parked messages. Then the fan-out shape (scripts/soak-fan-out.mjs) at
// small N: three destinations, one in outage for 30% of the run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { soak, summary } from "../scripts/soak.mjs";
import { DESTINATIONS, fanOutFailures, fanOutSummary, soakFanOut } from "../scripts/soak-fan-out.mjs";

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

const FAN_N = 200;

test(`${FAN_N} events fanned out to three destinations, one in outage for 30% of the run: every (event, destination) delivered once, or dead-lettered for a reason the run caused`, async () => {
  const r = await soakFanOut({ n: FAN_N, drainRate: RATE });
  console.log(`# ${fanOutSummary(r).replaceAll("\n", "\n# ")}`);
  const why = `${fanOutSummary(r)}\n${r.problems.slice(0, 20).join("\n")}`;
  assert.deepEqual(fanOutFailures(r), [], why);
  const [a, b, c] = DESTINATIONS.map((d) => r.per_destination[d]);
  for (const f of [a, b, c]) {
    assert.equal(f.pairs, FAN_N, why);
    assert.equal(f.lost, 0, why);
    assert.equal(f.doubled, 0, why);
    assert.equal(f.wrong_dead, 0, why);
  }
  assert.equal(a.delivered, FAN_N, `a is never held back by c\n${why}`);
  // b refuses the poison events (400): those deliveries, and only those, are
  // dead-lettered at once, with one call each; a and c still deliver them.
  assert.equal(b.dead_lettered, FAN_N / 20, why);
  assert.equal(b.recalled, 0, why);
  assert.equal(b.delivered, FAN_N - FAN_N / 20, why);
  // c's outage parked its deliveries and the relay drained them by itself.
  assert.ok(c.parked_ever > 0 && r.c_parked_peak > 0, `c's outage parked deliveries\n${why}`);
  assert.equal(c.parked, 0, `nothing left parked after the drain\n${why}`);
  assert.equal(c.delivered + c.dead_lettered, FAN_N, why);
  assert.ok(r.a_delivered_during_outage > 0 && r.b_delivered_during_outage > 0, `a and b kept delivering while c was down\n${why}`);
  assert.ok(r.redelivered_a > 0 && r.redelivered_c > 0 && r.redelivered_ingest > 0, `redeliveries were sent\n${why}`);
  assert.equal(r.miscounted, 0, why);
  assert.equal(r.summary_wrong, 0, why);
});
