// Queue destinations (DESIGN §3, issue 34): `{"queue": "<binding>"}` puts
// one message per delivery on the user's own Cloudflare Queue, which a
// real second Worker consumes here. A small body travels in the message;
// a body too large for a queue message goes to R2 first, and the consumer
// reads it back by the key the message names; the object stays for the
// hold after its last send (a retry or a replay long after the event
// arrived restarts it), then goes. A send that fails is retried like a 5xx:
// the failing producer is a real Worker entrypoint taking `send` over RPC,
// which refuses its first sends and then forwards to the real queue. Every
// binding and worker here is declared by the test only, never by the
// shipped wrangler.toml.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "queue-source-secret";

// The user's consumer: reads each message, and a large body from R2 by
// the key the message names, and hands both to the test's recorder.
const CONSUMER = `export default {
  async queue(batch, env) {
    for (const m of batch.messages) {
      const msg = m.body;
      let body = msg.body;
      if (body === null) body = await (await env.ARCHIVE.get(msg.body_r2_key))?.text() ?? null;
      await fetch(env.RECORD, { method: "POST", body: JSON.stringify({ msg, body }) });
      m.ack();
    }
  },
};`;

// A producer that refuses its first two sends, then forwards to the real
// queue: what a queue outage looks like to the relay.
const FLAKY = `import { WorkerEntrypoint } from "cloudflare:workers";
let sends = 0;
export class Producer extends WorkerEntrypoint {
  async send(body, options) {
    sends += 1;
    if (sends <= 2) throw new Error("queue temporarily unavailable (test fault " + sends + ")");
    await this.env.REAL.send(body, options);
  }
}
export default { fetch() { return new Response("producer"); } };`;

let recorder, relay, admin;
before(async () => {
  recorder = await startDownstream({ "/record": () => ({ status: 200 }) });
  const sources = {
    shop: { scheme: "hmac-sha256", routes: [{ to: "jobs" }] },
    flaky: { scheme: "hmac-sha256", routes: [{ to: "flaky-jobs" }] },
  };
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify(sources),
      DESTINATIONS: JSON.stringify({ jobs: { queue: "USER_EVENTS" }, "flaky-jobs": { queue: "FLAKY_EVENTS" } }),
      [secretNameFor("shop")]: SOURCE_SECRET,
      [secretNameFor("flaky")]: SOURCE_SECRET,
      DOWNSTREAM_SIGNING_SECRET: "queue-signing",
      RETRY_DELAYS_S: "0,0,0,0,0",
      BREAKER_FAILURE_THRESHOLD: "100",
    },
    relayOptions: (o) => ({
      ...o,
      queueProducers: { ...o.queueProducers, USER_EVENTS: { queueName: "user-events" } },
      serviceBindings: { ...o.serviceBindings, FLAKY_EVENTS: { name: "flaky-producer", entrypoint: "Producer" } },
    }),
    extraWorkers: [
      {
        name: "user-consumer",
        modules: true,
        compatibilityDate: "2026-04-01",
        script: CONSUMER,
        bindings: { RECORD: recorder.url("/record") },
        r2Buckets: { ARCHIVE: { id: "hookrelay-archive" } },
        queueConsumers: { "user-events": { maxBatchTimeout: 0, maxRetries: 2 } },
      },
      {
        name: "flaky-producer",
        modules: true,
        compatibilityDate: "2026-04-01",
        script: FLAKY,
        queueProducers: { REAL: { queueName: "user-events" } },
      },
    ],
  });
  admin = adminClient(relay, [SOURCE_SECRET]);
});
after(async () => {
  await relay?.dispose();
  await recorder?.close();
});

async function send(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SOURCE_SECRET, operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return { id: (await res.json()).event_id, body };
}
const received = (id) => recorder.hits("/record").map((r) => JSON.parse(r.body)).filter((r) => r.msg.event_id === id);
const deliveryState = async (id) => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = ?", id))[0]?.state;

test("a small body travels in the message, which the user's consumer receives once with everything the design lists", async () => {
  const { id, body } = await send("shop", { order: 1 }, "q-small-1");
  await waitFor(async () => (await deliveryState(id)) === "delivered" && received(id).length === 1, { what: "delivered and consumed" });
  const [{ msg, body: got }] = received(id);
  assert.equal(got, body, "byte for byte");
  assert.equal(msg.v, 1);
  assert.equal(msg.idempotency_key, "shop:q-small-1");
  assert.equal(msg.source, "shop");
  assert.equal(msg.destination, "jobs");
  assert.equal(msg.content_type, "application/json");
  assert.ok(Math.abs(msg.received_at_ms - Date.now()) < 60_000);
  assert.equal(msg.headers["x-signature"], "[REDACTED]", "the headers are the redacted ones");
  assert.equal(msg.body_r2_key, undefined);
});

test("a body too large for a queue message is read back from R2 by the key the message names, and leaves with the event's retention once no message can name it", async () => {
  const payload = { order: 2, blob: "z".repeat(200_000) };
  const { id, body } = await send("shop", payload, "q-large-1");
  const older = await send("shop", { order: 4, blob: "y".repeat(200_000) }, "q-large-2");
  const consumed = (x) => async () => (await deliveryState(x)) === "delivered" && received(x).length === 1;
  await waitFor(consumed(id), { what: "the large event delivered and consumed", timeoutMs: 30_000 });
  await waitFor(consumed(older.id), { what: "the second large event delivered and consumed", timeoutMs: 30_000 });
  const [{ msg, body: got }] = received(id);
  assert.equal(msg.body, null);
  assert.equal(msg.body_r2_key, `destination-bodies/${id}`);
  assert.equal(msg.body_bytes, body.length);
  assert.equal(got, body, "the consumer read the whole body back from R2");
  const bucket = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay");
  assert.ok(await bucket.head(msg.body_r2_key), "the object is there while the event is");
  const olderKey = received(older.id)[0].msg.body_r2_key;
  assert.ok(await bucket.head(olderKey));

  // The second event as if ingested and sent 29 days ago: past the 28
  // days a message can live on two queues (CLAIM_HOLD_MS), so no message
  // can still name its body. Retention (shortened by configuration only)
  // then sweeps both events: the old one's body goes, the young one's
  // stays, since its message might still wait on the user's queue.
  const monthAgo = Date.now() - 29 * 86_400_000;
  await relay.db.prepare("UPDATE events SET ingested_at = ?2, received_at = ?2 WHERE event_id = ?1").bind(older.id, monthAgo).run();
  await relay.db.prepare("UPDATE destination_bodies SET sent_at = ?2 WHERE event_id = ?1").bind(older.id, monthAgo).run();
  await relay.reconfigure({ EVENT_RETENTION: "1s" });
  await waitFor(async () => {
    const run = await admin.post("maintenance/run", {});
    assert.equal(run.status, 200, JSON.stringify(run.json));
    return (await rows(relay.db, "SELECT count(*) AS n FROM events WHERE event_id IN (?1, ?2)", id, older.id))[0].n === 0;
  }, { what: "the sweep to take both events", timeoutMs: 30_000, intervalMs: 1000 });
  // A restart (reconfigure) leaves stubs to runtime objects stale: fetch it again.
  const after = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay");
  assert.equal(await after.head(olderKey), null, "the body last sent a month ago is gone");
  assert.ok(await after.head(msg.body_r2_key), "the young event's body stays while its message may still be queued");
});

test("a large body sent again long after its event arrived stays for the hold after that send, not after the event's ingest, then goes", async () => {
  // Whatever the previous test left: a retention that sweeps a 29-day-old
  // event, and not a fresh one.
  await relay.reconfigure({ EVENT_RETENTION: "29d" });
  const { id, body } = await send("shop", { order: 5, blob: "r".repeat(200_000) }, "q-large-resent");
  await waitFor(async () => (await deliveryState(id)) === "delivered" && received(id).length === 1, { what: "the large event delivered and consumed", timeoutMs: 30_000 });
  const key = received(id)[0].msg.body_r2_key;

  // Its event as if it arrived a month ago, and its delivery sent again
  // now: a retry's message (a drain after days parked, or a replay weeks
  // later, sends the same way).
  const monthAgo = Date.now() - 29 * 86_400_000 - 3_600_000;
  await relay.db.prepare("UPDATE events SET ingested_at = ?2, received_at = ?2 WHERE event_id = ?1").bind(id, monthAgo).run();
  await relay.db.prepare("UPDATE deliveries SET state = 'pending', delivered_at = NULL WHERE event_id = ?1").bind(id).run();
  await (await relay.producer("DELIVERIES")).send({ v: 1, kind: "delivery", event_id: id, idempotency_key: "shop:q-large-resent", source: "shop", destination: "jobs", received_at_ms: monthAgo });
  await waitFor(async () => (await deliveryState(id)) === "delivered" && received(id).length === 2, { what: "the body sent again and consumed", timeoutMs: 30_000 });

  // The sweep takes the month-old event; the body its fresh message names stays.
  await waitFor(async () => {
    const run = await admin.post("maintenance/run", {});
    assert.equal(run.status, 200, JSON.stringify(run.json));
    return (await rows(relay.db, "SELECT count(*) AS n FROM events WHERE event_id = ?1", id))[0].n === 0;
  }, { what: "the sweep to take the month-old event", timeoutMs: 30_000, intervalMs: 1000 });
  const run = await admin.post("maintenance/run", {});
  assert.equal(run.status, 200, JSON.stringify(run.json));
  let bucket = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay");
  const kept = await bucket.get(key);
  assert.ok(kept, "the body stays while the message sent just now may still be queued");
  assert.equal(await kept.text(), body);

  // Once the hold after that last send has passed, the next run deletes it.
  await relay.db.prepare("UPDATE destination_bodies SET sent_at = ?2 WHERE event_id = ?1").bind(id, Date.now() - 28 * 86_400_000 - 60_000).run();
  await waitFor(async () => {
    const again = await admin.post("maintenance/run", {});
    assert.equal(again.status, 200, JSON.stringify(again.json));
    bucket = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay");
    return (await bucket.head(key)) === null;
  }, { what: "the body deleted once its hold passed", timeoutMs: 30_000, intervalMs: 1000 });
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM destination_bodies WHERE event_id = ?1", id))[0].n, 0, "its record goes with it");
});

test("a failed send is a transient failure, retried like a 5xx, and the event arrives once", async () => {
  const { id, body } = await send("flaky", { order: 3 }, "q-flaky-1");
  await waitFor(async () => (await deliveryState(id)) === "delivered" && received(id).length === 1, { what: "delivered after two refused sends", timeoutMs: 30_000 });
  const attempts = await rows(relay.db, "SELECT code, class, message FROM attempts WHERE event_id = ? ORDER BY id", id);
  assert.equal(attempts.length, 2, JSON.stringify(attempts));
  for (const a of attempts) {
    assert.equal(a.code, "UPSTREAM_5XX");
    assert.equal(a.class, "transient");
    assert.match(a.message, /the send to queue binding `FLAKY_EVENTS` failed/);
  }
  assert.equal(received(id)[0].body, body);
  assert.equal(received(id)[0].msg.destination, "flaky-jobs");
});

test("a queue destination whose binding the relay does not declare fails the startup check, naming the binding", async () => {
  const bare = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ shop: { scheme: "hmac-sha256", routes: [{ to: "jobs" }] } }),
      DESTINATIONS: JSON.stringify({ jobs: { queue: "USER_EVENTS" } }),
      [secretNameFor("shop")]: SOURCE_SECRET,
    },
  });
  try {
    const res = await bare.fetch("/healthz");
    assert.equal(res.status, 500);
    const { error } = await res.json();
    assert.equal(error.code, "CONFIG_INVALID");
    assert.match(error.message, /DESTINATIONS\.jobs\.queue: names the queue binding `USER_EVENTS`, which the relay does not declare; add \[\[queues\.producers\]\] binding = "USER_EVENTS"/);
  } finally {
    await bare.dispose();
  }
});
