// Deliveries within one batch run concurrently, behind one read of each
// destination's breaker (DESIGN §3; core/src/deliver/breaker/waves.rs): a batch
// first tries a destination with a wave as wide as the failures left
// before its breaker opens, so a destination that fails everything gets
// exactly BREAKER_FAILURE_THRESHOLD calls, as it would one at a time, and
// the rest of the batch parks behind the open breaker. Once that wave came
// back healthy, the rest of the batch goes out as fast as the invocation's
// call scheduler lets it: never more than five calls open at once (DESIGN
// §3, "A slow destination holds nobody"; issue 41). Two destinations in
// one batch do not hold each other up.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";

let downstream;
let relay;

before(async () => {
  downstream = await startDownstream({
    // Slow enough that calls made together overlap at the server.
    "/slow-ok": () => ({ status: 200, delayMs: 150 }),
    "/down": () => ({ status: 500, delayMs: 50 }),
  });
  relay = await startRelay({
    relayVars: {
      SOURCES: JSON.stringify({
        fine: { scheme: "hmac-sha256", downstream: downstream.url("/slow-ok") },
        broken: { scheme: "hmac-sha256", downstream: downstream.url("/down") },
      }),
      WEBHOOK_SECRET_FINE: "fine-secret",
      WEBHOOK_SECRET_BROKEN: "broken-secret",
      // Failed events wait an hour, so each test sees one batch's calls only.
      RETRY_DELAYS_S: "3600",
    },
    // Room for 20 events in one batch (production uses max_batch_size).
    consumers: { webhooks: { maxBatchSize: 20 } },
  });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

/** One batch of `n` queued events per source, interleaved, sent in one sendBatch. */
async function sendBatch(tag, sources, n) {
  const messages = [];
  for (let i = 0; i < n; i++) {
    for (const source of sources) {
      const body = JSON.stringify({ tag, i });
      messages.push({
        body: { v: 1, event_id: `evt_${tag}_${source}_${i}`, idempotency_key: `${source}:${tag}-${i}`, source, received_at_ms: Date.now(), headers: {}, body },
      });
    }
  }
  await (await relay.producer()).sendBatch(messages);
  return messages.map((m) => m.body.event_id);
}

const statuses = async (tag) =>
  Object.fromEntries((await rows(relay.db, "SELECT event_id, delivery_status FROM events WHERE event_id LIKE ?", `evt_${tag}_%`)).map((r) => [r.event_id, r.delivery_status]));

test("a healthy destination is tried with a wave of the threshold, then gets the rest of the batch, five calls open at most; each event once; no breaker write", async () => {
  await sendBatch("healthy", ["fine"], 20);
  await waitFor(async () => Object.values(await statuses("healthy")).filter((s) => s === "delivered").length === 20, { what: "twenty deliveries" });
  const hits = downstream.hits("/slow-ok");
  assert.equal(hits.length, 20, "each event called once");
  assert.equal(new Set(hits.map((h) => h.headers["x-operation-id"])).size, 20);
  const arrivals = hits.map((h) => h.at).sort((a, b) => a - b);
  assert.ok(arrivals[4] - arrivals[0] < 100, `the first five went out together (${arrivals[4] - arrivals[0]} ms apart)`);
  assert.ok(arrivals[5] - arrivals[0] >= 100, `the sixth waited for the first wave's answers (${arrivals[5] - arrivals[0]} ms)`);
  assert.equal(downstream.peakInFlight("/slow-ok"), 5, "never more than five calls open at once");
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM breakers"))[0].n, 0, "a healthy batch writes no breaker row");
  assert.equal((await rows(relay.db, "SELECT value FROM counters WHERE name = 'delivered'"))[0]?.value, 20, "the delivered counter matches the rows");
});

test("a destination failing every call gets exactly the threshold from one batch; the rest park with the root cause; a healthy neighbour is delivered", async () => {
  const before = downstream.hits("/slow-ok").length;
  await sendBatch("mixed", ["broken", "fine"], 10);
  await waitFor(async () => {
    const s = Object.entries(await statuses("mixed"));
    const fine = s.filter(([id, st]) => id.includes("_fine_") && st === "delivered").length;
    const parked = s.filter(([id, st]) => id.includes("_broken_") && st === "parked").length;
    return fine === 10 && parked === 5;
  }, { what: "ten deliveries to the healthy destination and five parked for the broken one" });
  assert.equal(downstream.hits("/down").length, 5, "exactly BREAKER_FAILURE_THRESHOLD calls, as one at a time would make");
  assert.equal(downstream.hits("/slow-ok").length - before, 10);
  // Keyed by the destination name: the `downstream` source's own.
  const [breaker] = await rows(relay.db, "SELECT state_name, state FROM breakers WHERE destination = ?", "broken");
  assert.equal(breaker.state_name, "OPEN");
  assert.equal(JSON.parse(breaker.state).cause, "UPSTREAM_5XX", "the breaker keeps the failure that opened it");
  const failed = await rows(relay.db, "SELECT DISTINCT code FROM attempts WHERE event_id LIKE 'evt_mixed_broken_%'");
  assert.deepEqual(failed.map((r) => r.code), ["UPSTREAM_5XX"], "the five calls failed with their own code; the parked ones spent no attempt");
  const parked = await rows(relay.db, "SELECT count(*) AS n FROM events WHERE event_id LIKE 'evt_mixed_broken_%' AND delivery_status = 'parked'");
  assert.equal(parked[0].n, 5);
});
