// A redelivered or duplicate ingest message re-sends only the deliveries
// still to make (platform/src/pipeline/ingest.rs reads them in the
// ingest's own batch), and the deliveries consumer leases exactly what it
// calls (core/src/deliver/deliveries/mod.rs claimable): a duplicate of a
// delivered, dead-lettered or parked delivery, or of one whose lease
// another isolate holds, is never called; a lease that ran out is not
// taken over by a message but settled by the periodic check, counted as a
// TIMEOUT attempt and retried on the schedule (issue 40).
// (Issue 33 moved the lease from the event's row to its delivery's; the
// scenario is the same.) Both ingest shapes are covered: set-based
// (distinct keys) and one statement per event (a key twice in the batch).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";

let downstream;
let relay;

before(async () => {
  downstream = await startDownstream({ "/ok": () => ({ status: 200 }) });
  relay = await startRelay({
    relayVars: {
      SOURCES: JSON.stringify({ fwd: { scheme: "hmac-sha256", downstream: downstream.url("/ok") } }),
      WEBHOOK_SECRET_FWD: "fwd-secret",
      // An event not delivered waits an hour, so each test sees one batch.
      RETRY_DELAYS_S: "3600",
    },
    consumers: { webhooks: { maxBatchSize: 20 } },
  });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const message = (tag, name) => ({
  body: { v: 1, event_id: `evt_${tag}_${name}`, idempotency_key: `fwd:${tag}-${name}`, source: "fwd", received_at_ms: Date.now(), headers: {}, body: JSON.stringify({ tag, name }) },
});

const row = async (tag, name) =>
  (await rows(relay.db, "SELECT delivery_status, delivery_claimed_at, duplicate_count FROM events WHERE event_id = ?", `evt_${tag}_${name}`))[0];

const calls = (tag, name) => downstream.hits("/ok").filter((h) => h.headers["x-operation-id"] === `evt_${tag}_${name}`).length;

/** Rows in every state the claim must judge, then one batch that carries a copy of each plus new events. */
async function scenario(tag, { keyTwice }) {
  const old = ["delivered", "failed", "parked", "held", "stale"];
  await (await relay.producer()).sendBatch(old.map((n) => message(tag, n)));
  await waitFor(async () => (await Promise.all(old.map((n) => row(tag, n)))).every((r) => r?.delivery_status === "delivered"), { what: "the first deliveries" });
  // Each delivery's state lives on its row (one per event and destination;
  // a `downstream` source's destination is named after it).
  const set = (name, sql, ...params) => rows(relay.db, `UPDATE deliveries SET ${sql} WHERE event_id = ? AND destination = 'fwd'`, ...params, `evt_${tag}_${name}`);
  await set("failed", "state = 'dead_lettered'");
  await set("parked", "state = 'parked', parked_at = ?", Date.now());
  const heldAt = Date.now();
  await set("held", "state = 'delivering', claimed_at = ?", heldAt);
  await set("stale", "state = 'delivering', claimed_at = 1");
  const fresh = ["new1", "new2", "new3"];
  const batch = [...old, ...fresh].map((n) => message(tag, n));
  if (keyTwice) batch.push(message(tag, "new3"));
  await (await relay.producer()).sendBatch(batch);
  await waitFor(async () => {
    const done = await Promise.all(fresh.map((n) => row(tag, n)));
    const seen = await Promise.all(["delivered", "failed", "parked", "held", "stale"].map((n) => row(tag, n)));
    return done.every((r) => r?.delivery_status === "delivered") && seen.every((r) => r.duplicate_count === 1);
  }, { what: "the second batch" });
  return { heldAt };
}

async function check(tag, heldAt) {
  for (const name of ["delivered", "failed", "parked", "held", "stale"]) {
    assert.equal(calls(tag, name), 1, `${name}: only the first batch called it`);
  }
  for (const name of ["new1", "new2", "new3"]) {
    assert.equal(calls(tag, name), 1, `${name}: called once by the second batch`);
  }
  const delivery = async (name) => (await rows(relay.db, "SELECT state, claimed_at FROM deliveries WHERE event_id = ?", `evt_${tag}_${name}`))[0];
  assert.equal((await delivery("failed")).state, "dead_lettered");
  assert.equal((await delivery("parked")).state, "parked");
  const held = await delivery("held");
  assert.equal(held.state, "delivering", "another isolate's lease is left alone");
  assert.equal(held.claimed_at, heldAt);
  // The run-out lease is the periodic check's: counted, retried on the schedule.
  await (await relay.mf.getWorker("hookrelay")).scheduled({ cron: "*/1 * * * *" });
  const stale = await waitFor(async () => {
    const d = (await rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ?", `evt_${tag}_stale`))[0];
    return d.state === "pending" && d;
  }, { what: "the run-out lease settled" });
  assert.equal(stale.last_error, "TIMEOUT");
  assert.equal(stale.attempts, 2, "its first call and the run-out lease");
  assert.ok(stale.due_at > Date.now() + 3_000_000, "its retry waits the schedule's first delay");
  const leased = await rows(relay.db, "SELECT event_id FROM deliveries WHERE event_id LIKE ? AND claimed_at IS NOT NULL AND event_id != ?", `evt_${tag}_%`, `evt_${tag}_held`);
  assert.deepEqual(leased, [], "no lease is left behind");
}

test("set-based ingest: the claim in the ingest batch leases only what the consumer calls", async () => {
  const { heldAt } = await scenario("sets", { keyTwice: false });
  await check("sets", heldAt);
});

test("one statement per event (a key twice in the batch): the same, and the repeated key is called once", async () => {
  const { heldAt } = await scenario("twice", { keyTwice: true });
  await check("twice", heldAt);
  assert.equal((await row("twice", "new3")).duplicate_count, 1, "the second copy is a duplicate");
});
