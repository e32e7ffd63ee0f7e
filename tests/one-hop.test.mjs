// One hop for the common case (DESIGN §3; issue 41): each new delivery's
// first attempt is made in the `webhooks` consumer, behind the
// invocation's call scheduler, and the `deliveries` queue carries only
// what the first attempt did not settle.
// - a first attempt that succeeds sends no `deliveries` message (counted
//   at the producer, bench/queue-counter.mjs); a transient failure sends
//   exactly one, with its first delay;
// - one batch of 40 events to a destination answering in 1-3 s: the
//   destination never sees more than 5 requests open at once;
// - a hanging destination beside a fast one: the fast one's first attempts
//   all start within the budget, and the hanging one holds only its share;
// - a batch to a service destination wider than the platform's 32 Worker
//   invocations per request is delivered, with no breaker opened.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { deadline, deliveryScheduleMs } from "./support/schedule.mjs";
import { QueueTally, wrapQueues } from "../bench/queue-counter.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const relays = [];
const downstreams = [];
after(async () => {
  for (const r of relays) await r.dispose();
  for (const d of downstreams) await d.close();
});

/** A relay whose source `hop` routes to `destinations` ({name: spec}), its DELIVERIES sends counted. */
async function relayWith(destinations, { vars = {}, extraWorkers = [], relayOptions = (o) => o } = {}) {
  const counter = {};
  const relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ hop: { scheme: "hmac-sha256", routes: Object.keys(destinations).map((to) => ({ to })) } }),
      DESTINATIONS: JSON.stringify(destinations),
      [secretNameFor("hop")]: "hop-secret",
      RETRY_DELAYS_S: "3600",
      BREAKER_FAILURE_THRESHOLD: "100",
      ...vars,
    },
    consumers: { webhooks: { maxBatchSize: 50 } },
    relayOptions: (w) => {
      const [wrapped, queueCounter] = wrapQueues([relayOptions(w)], w.name, ["DELIVERIES"]);
      Object.assign(counter, queueCounter);
      return wrapped;
    },
    extraWorkers: [...extraWorkers, counter],
  });
  relays.push(relay);
  const tally = () => {
    const t = new QueueTally();
    for (const line of relay.logs) t.onLine(line);
    return t.of("hookrelay", "DELIVERIES");
  };
  return { relay, tally };
}

/** One batch of `n` events on `webhooks`, in one sendBatch. */
async function sendBatch(relay, tag, n) {
  const messages = Array.from({ length: n }, (_, i) => ({
    body: { v: 1, event_id: `evt_${tag}_${i}`, idempotency_key: `hop:${tag}-${i}`, source: "hop", received_at_ms: Date.now(), headers: {}, body: JSON.stringify({ tag, i }) },
  }));
  await (await relay.producer()).sendBatch(messages);
  return messages.map((m) => m.body.event_id);
}
const states = async (relay, tag) => rows(relay.db, "SELECT event_id, destination, state FROM deliveries WHERE event_id LIKE ?", `evt_${tag}_%`);

test("a first attempt that succeeds sends no deliveries message; a transient failure sends one, with its first delay", async () => {
  const downstream = await startDownstream({ "/ok": () => ({ status: 200 }), "/flaky": (_r, n) => ({ status: n === 1 ? 503 : 200 }) });
  downstreams.push(downstream);
  const { relay, tally } = await relayWith({ ok: { url: downstream.url("/ok") } });
  await sendBatch(relay, "ok", 5);
  await waitFor(async () => (await states(relay, "ok")).filter((d) => d.state === "delivered").length === 5, { what: "five first attempts", timeoutMs: deadline(deliveryScheduleMs(relay)) });
  assert.equal(downstream.hits("/ok").length, 5);
  assert.deepEqual(tally(), { calls: 0, messages: 0 }, "no deliveries message for a first attempt that succeeded");

  const second = await relayWith({ flaky: { url: downstream.url("/flaky") } }, { vars: { RETRY_DELAYS_S: "1" } });
  await sendBatch(second.relay, "flaky", 1);
  await waitFor(async () => (await states(second.relay, "flaky"))[0]?.state === "delivered", { what: "the retry", timeoutMs: deadline(deliveryScheduleMs(second.relay, { failures: 1 })) });
  assert.equal(downstream.hits("/flaky").length, 2);
  assert.deepEqual(second.tally(), { calls: 1, messages: 1 }, "one deliveries message: the retry");
});

test("one batch of 40 events to a destination answering in 1-3 s: never more than five requests open at once", async () => {
  const downstream = await startDownstream({ "/slow": (_r, n) => ({ status: 200, delayMs: 1000 + ((n * 797) % 2000) }) });
  downstreams.push(downstream);
  // A budget long enough for all forty in this one invocation: what is
  // measured is the scheduler's bound, not the hand-on.
  const { relay } = await relayWith({ slow: { url: downstream.url("/slow"), timeout_ms: 10_000 } }, { vars: { FIRST_ATTEMPT_BUDGET: "30s" } });
  await sendBatch(relay, "forty", 40);
  await waitFor(async () => (await states(relay, "forty")).filter((d) => d.state === "delivered").length === 40, {
    what: "forty deliveries",
    timeoutMs: deadline((40 / 5) * 3000, deliveryScheduleMs(relay)),
  });
  assert.equal(downstream.hits("/slow").length, 40, "each once");
  assert.equal(downstream.peakInFlight("/slow"), 5, "five calls open at most, one connection kept free");
});

test("a hanging destination beside a fast one: the fast one's first attempts all start within the budget", async () => {
  const downstream = await startDownstream({ "/hang": () => ({ status: 200, delayMs: 60_000 }), "/fast": () => ({ status: 200 }) });
  downstreams.push(downstream);
  const timeoutMs = 4_000;
  const { relay } = await relayWith({ hang: { url: downstream.url("/hang"), timeout_ms: timeoutMs }, fast: { url: downstream.url("/fast") } });
  await sendBatch(relay, "pair", 10);
  await waitFor(async () => (await states(relay, "pair")).filter((d) => d.destination === "fast" && d.state === "delivered").length === 10, {
    what: "the fast destination's ten",
    timeoutMs: deadline(deliveryScheduleMs(relay)),
  });
  const first = Math.min(...downstream.requests.map((r) => r.at));
  const fast = downstream.hits("/fast").map((r) => r.at - first);
  assert.equal(fast.length, 10);
  assert.ok(Math.max(...fast) < 2_000, `every fast first attempt started within FIRST_ATTEMPT_BUDGET (2 s): the last after ${Math.max(...fast)} ms`);
  // While the fast one had calls waiting, the hanging one held at most its
  // share of the five (three): its fourth call started only once every
  // fast call had.
  const hangs = downstream.hits("/hang").map((r) => r.at - first).sort((a, b) => a - b);
  assert.ok(hangs.length < 4 || hangs[3] >= Math.max(...fast), `the hanging destination took a fourth call (${hangs}) while fast calls waited (${fast})`);
  // What did not start within the budget went to the deliveries queue at
  // its end, not once the started calls timed out: the next of the
  // hanging destination's first attempts started before the first timeout.
  await waitFor(() => downstream.hits("/hang").length > 3, { what: "a handed-on first attempt", timeoutMs: deadline(timeoutMs) });
  const later = downstream.hits("/hang").map((r) => r.at - first).sort((a, b) => a - b)[3];
  assert.ok(later < timeoutMs, `a handed-on first attempt started ${later} ms after the batch's first call, after the ${timeoutMs} ms timeout of the calls that started`);
});

test("a batch to a service destination wider than 32 is delivered, with no exception and no breaker opened", async () => {
  const worker = {
    name: "wide-receiver",
    modules: true,
    compatibilityDate: "2026-04-01",
    script: "export default { async fetch(request) { await request.text(); return new Response('ok'); } };",
  };
  const withBinding = (o) => ({ ...o, serviceBindings: { ...o.serviceBindings, WIDE_WORKER: "wide-receiver" } });
  const { relay } = await relayWith({ wide: { service: "WIDE_WORKER" } }, { extraWorkers: [worker], relayOptions: withBinding });
  await sendBatch(relay, "wide", 45);
  await waitFor(async () => (await states(relay, "wide")).filter((d) => d.state === "delivered").length === 45, {
    what: "forty-five deliveries through the binding",
    timeoutMs: deadline(deliveryScheduleMs(relay), deliveryScheduleMs(relay)),
  });
  const attempts = await rows(relay.db, "SELECT count(*) AS n FROM attempts WHERE event_id LIKE 'evt_wide_%'");
  assert.equal(attempts[0].n, 0, "no call failed");
  const open = await rows(relay.db, "SELECT count(*) AS n FROM breakers WHERE state <> 'closed'");
  assert.equal(open[0].n, 0, "no breaker opened");
  assert.ok(!relay.logs.some((l) => /Too many subrequests|exceededSubrequests/i.test(l)), "no subrequest limit met");
});
