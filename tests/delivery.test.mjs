// Downstream delivery: signed, classified, recorded, and never repeated.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows, SECRETS } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { checkHmacSha256, secretNameFor } from "../scripts/webhook-signatures.mjs";

const SECRET = "down-test-secret";
let relay, downstream;
const sources = {};
const secrets = {};
for (const name of ["to-ok", "to-500", "to-400", "to-401", "to-slow", "to-429"]) {
  secrets[secretNameFor(name)] = `${name}-secret`;
}

before(async () => {
  downstream = await startDownstream({
    "/ok": () => ({ status: 200 }),
    "/500": () => ({ status: 500 }),
    "/400": () => ({ status: 400 }),
    "/401": () => ({ status: 401 }),
    "/slow": () => ({ status: 200, delayMs: 3000 }),
    "/429": (_req, n) => (n === 1 ? { status: 429, headers: { "retry-after": "2" } } : { status: 200 }),
  });
  for (const [name, path] of [["to-ok", "/ok"], ["to-500", "/500"], ["to-400", "/400"], ["to-401", "/401"], ["to-slow", "/slow"], ["to-429", "/429"]]) {
    sources[name] = { scheme: "hmac-sha256", downstream: downstream.url(path) };
  }
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify(sources),
      ...secrets,
      DOWNSTREAM_SIGNING_SECRET: SECRET,
      RETRY_DELAYS_S: "0,0,0,0,0",
      DELIVERY_TIMEOUT_MS: "300",
      // The breaker has its own suite; keep it out of the way here.
      BREAKER_FAILURE_THRESHOLD: "1000",
    },
  });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function send(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const secret = secrets[secretNameFor(source)];
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret, operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return { ...(await res.json()), body };
}

const event = async (id) => (await rows(relay.db, "SELECT * FROM events WHERE event_id = ?", id))[0];
const deadLetter = (id) => waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", id))[0], { what: `dead letter for ${id}` });

test("a delivered event reaches the downstream with a signature it can verify on its own", async () => {
  const { event_id, body } = await send("to-ok", { n: 1 }, "op-ok-1");
  await waitFor(async () => (await event(event_id))?.delivery_status === "delivered", { what: "delivered" });
  const [req] = downstream.hits("/ok").filter((r) => r.headers["x-operation-id"] === event_id);
  assert.ok(req, "the downstream got the event");
  assert.equal(req.body, body, "byte for byte");
  const ts = req.headers["x-timestamp"];
  assert.ok(Math.abs(Number(ts) - Date.now() / 1000) < 60);
  assert.deepEqual(checkHmacSha256(req.headers, req.body, SECRET, { toleranceS: 60 }), { ok: true });
  assert.equal(req.headers["x-idempotency-key"], "to-ok:op-ok-1");
  const row = await event(event_id);
  assert.equal(row.delivery_attempts, 1);
  assert.ok(row.delivered_at > 0);
});

test("the same event delivered twice makes one downstream call", async () => {
  const first = await send("to-ok", { n: 2 }, "op-ok-twice");
  await waitFor(async () => (await event(first.event_id))?.delivery_status === "delivered", { what: "first delivery" });
  const second = await send("to-ok", { n: 2 }, "op-ok-twice");
  assert.equal(second.event_id, first.event_id);
  await waitFor(async () => (await event(first.event_id))?.duplicate_count === 1, { what: "the duplicate to be ingested" });
  assert.equal(downstream.hits("/ok").filter((r) => r.headers["x-operation-id"] === first.event_id).length, 1);
});

test("a downstream that answers 400 dead-letters the event after exactly one call, as poison", async () => {
  const { event_id } = await send("to-400", { n: 3 });
  const dl = await deadLetter(event_id);
  assert.equal(dl.error_code, "UPSTREAM_4XX");
  assert.equal(dl.error_class, "poison");
  assert.equal(dl.kind, "poison_handoff");
  assert.equal(dl.attempts, 1);
  assert.equal(downstream.hits("/400").length, 1);
  assert.equal((await event(event_id)).delivery_status, "failed");
});

test("a downstream that answers 401 is AUTH_EXPIRED, poison", async () => {
  const { event_id } = await send("to-401", { n: 4 });
  const dl = await deadLetter(event_id);
  assert.deepEqual([dl.error_code, dl.error_class], ["AUTH_EXPIRED", "poison"]);
});

test("a downstream that answers 500 every time is retried on the schedule, then dead-lettered with the evidence", async () => {
  const { event_id } = await send("to-500", { n: 5 });
  const dl = await deadLetter(event_id);
  assert.equal(dl.kind, "retries_exhausted");
  assert.equal(dl.error_code, "UPSTREAM_5XX");
  assert.equal(dl.error_class, "transient");
  assert.equal(dl.attempts, 6);
  const envelope = JSON.parse(dl.envelope);
  assert.deepEqual(envelope.delivery.history.map((a) => [a.attempt, a.code]), [1, 2, 3, 4, 5, 6].map((n) => [n, "UPSTREAM_5XX"]));
  assert.equal(downstream.hits("/500").length, 6, "one call per attempt");
  const row = await event(event_id);
  assert.equal(row.delivery_attempts, 6);
  assert.equal(row.delivery_status, "failed");
});

test("a slow downstream times out with TIMEOUT", async () => {
  const { event_id } = await send("to-slow", { n: 6 });
  const attempt = await waitFor(async () => (await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ?", event_id))[0], { what: "a failed attempt" });
  assert.equal(attempt.code, "TIMEOUT");
  assert.equal(attempt.class, "transient");
  assert.match(attempt.message, /300 ms/);
});

test("a 429 is RATE_LIMITED and its Retry-After is honoured as the lower bound of the delay", async () => {
  const { event_id } = await send("to-429", { n: 7 });
  await waitFor(async () => (await event(event_id))?.delivery_status === "delivered", { what: "delivery after the 429", timeoutMs: 20000 });
  const [attempt] = await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ?", event_id);
  assert.equal(attempt.code, "RATE_LIMITED");
  const [first, second] = downstream.hits("/429");
  assert.ok(second.at - first.at >= 1900, `retried after ${second.at - first.at} ms, Retry-After was 2 s while RETRY_DELAYS_S is 0`);
  // The retry is the delivery message's own (the deliveries queue), logged as delivery_failed.
  assert.ok(relay.logs.some((l) => l.includes('"event":"delivery_failed"') && l.includes('"delay_s":2')));
});
