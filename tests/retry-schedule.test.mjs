// The production retry schedule (30/60/120/240/480 s) proven on the queue
// broker's fake clock: each redelivery happens exactly when its delay has
// passed and not a second before, and after the sixth attempt Cloudflare's
// dead-lettering moves the message to webhooks-dlq.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { standardHeaders } from "./support/signers.mjs";

let relay;
before(async () => {
  // Production delays: no RETRY_DELAYS_S override.
  relay = await startRelay();
});
after(() => relay?.dispose());

test("a transiently failing event is retried after 30, 60, 120, 240 and 480 s, then dead-lettered", async () => {
  const broker = await relay.broker("webhooks");
  await broker.enableFakeTimers();
  await relay.db.prepare("ALTER TABLE events RENAME TO events_away").run();

  const body = JSON.stringify({ type: "schedule" });
  const res = await relay.fetch("/webhooks/demo-standard", { method: "POST", body, headers: standardHeaders(body, { id: "msg_schedule" }) });
  assert.equal(res.status, 202);
  const { event_id } = await res.json();
  const attemptCount = async () => (await rows(relay.db, "SELECT count(*) AS n FROM attempts WHERE event_id = ?", event_id))[0].n;
  await broker.settle();
  await waitFor(async () => (await attemptCount()) === 1, { what: "the first attempt" });

  for (const [attempt, delay] of [[2, 30], [3, 60], [4, 120], [5, 240], [6, 480]]) {
    await broker.advance((delay - 1) * 1000);
    assert.equal(await attemptCount(), attempt - 1, `no redelivery 1 s before the ${delay} s delay`);
    await broker.advance(1000);
    await waitFor(async () => (await attemptCount()) === attempt, { what: `attempt ${attempt} after ${delay} s` });
  }

  const dl = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", event_id))[0], { what: "the dead letter" });
  assert.equal(dl.kind, "retries_exhausted");
  assert.equal(dl.attempts, 6);
  assert.equal(dl.error_code, "D1_UNAVAILABLE");
  assert.equal(dl.error_class, "transient");
  const envelope = JSON.parse(dl.envelope);
  assert.deepEqual(envelope.delivery.history.map((a) => a.attempt), [1, 2, 3, 4, 5, 6]);
  assert.equal(envelope.identity.idempotency_key, "demo-standard:msg_schedule");

  await relay.db.prepare("ALTER TABLE events_away RENAME TO events").run();
  await broker.advance(10_000_000);
  assert.equal(await attemptCount(), 6, "nothing more after dead-lettering");
});
