// Service destinations (DESIGN §3, issue 34): `{"service": "<binding>"}`
// sends the signed POST to a real second Worker through the relay's
// service binding, no public hop. The binding is the user's to declare:
// this test declares it (and the second Worker) in Miniflare only, never
// in the shipped wrangler.toml, and a destination whose binding is not
// declared fails the startup check, naming it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { deadline, deliveryScheduleMs } from "./support/schedule.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { checkHmacSha256, secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "svc-source-secret";
const SHARED_KEY = "svc-shared-key";
const OWN_KEY = "svc-billing-own-key";
const TOKEN = "svc-billing-token-4e1f";

// The user's Worker: it answers as its recorder (a loopback server the
// test reads) answers, after handing it what it received. The recorder
// refuses the first REFUSALS calls of the event keyed REFUSED_KEY with 503
// and accepts every other call.
const RECEIVER = `export default {
  async fetch(request, env) {
    const record = { url: request.url, method: request.method, headers: Object.fromEntries(request.headers), body: await request.text() };
    const answer = await fetch(env.RECORD, { method: "POST", body: JSON.stringify(record) });
    return new Response("seen", { status: answer.status });
  },
};`;

const REFUSED_KEY = "shop:svc-2";
// Fewer than BREAKER_FAILURE_THRESHOLD (5 by default): the breaker stays
// closed, so the third call is a plain retry.
const REFUSALS = 2;
let recorder;
before(async () => {
  // Counted here, where the calls arrive, not flipped by the test after
  // it has seen them: at RETRY_DELAYS_S 0 the relay retries every few tens
  // of ms, and a test that set the answer back to 200 only once it had
  // polled two refusals let three more in first now and then. Five 503s
  // open the breaker, which parks the delivery until its 60 s cooldown.
  const calls = (key) => recorder.hits("/record").filter((r) => JSON.parse(r.body).headers["x-idempotency-key"] === key).length;
  recorder = await startDownstream({ "/record": (req) => ({ status: JSON.parse(req.body).headers["x-idempotency-key"] === REFUSED_KEY && calls(REFUSED_KEY) <= REFUSALS ? 503 : 200 }) });
});
after(() => recorder?.close());

const received = () => recorder.hits("/record").map((r) => JSON.parse(r.body));
const vars = (destinations) => ({
  SOURCES: JSON.stringify({ shop: { scheme: "hmac-sha256", routes: [{ to: "billing" }] } }),
  DESTINATIONS: JSON.stringify(destinations),
  [secretNameFor("shop")]: SOURCE_SECRET,
  DOWNSTREAM_SIGNING_SECRET: SHARED_KEY,
  DESTINATION_SIGNING_SECRET_BILLING: OWN_KEY,
  DESTINATION_SECRET_BILLING: TOKEN,
  RETRY_DELAYS_S: "0,0,0,0,0",
});
const receiverWorker = () => ({
  name: "billing-receiver",
  modules: true,
  compatibilityDate: "2026-04-01",
  script: RECEIVER,
  bindings: { RECORD: recorder.url("/record") },
});
const withBinding = (o) => ({ ...o, serviceBindings: { ...o.serviceBindings, BILLING_WORKER: "billing-receiver" } });

async function send(relay, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch("/webhooks/shop", { method: "POST", body, headers: hmacHeaders(body, { secret: SOURCE_SECRET, operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return { id: (await res.json()).event_id, body };
}

test("a second Worker behind a service binding receives the signed POST once, with its credential, and a 5xx from it is retried", async () => {
  const relay = await startRelay({
    vars: vars({ billing: { service: "BILLING_WORKER", auth: "bearer" } }),
    extraWorkers: [receiverWorker()],
    relayOptions: withBinding,
  });
  try {
    const state = async (eventId) => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = ?", eventId))[0]?.state;
    const { id, body } = await send(relay, { invoice: 1 }, "svc-1");
    await waitFor(async () => (await state(id)) === "delivered", { what: "delivered through the binding", timeoutMs: deadline(deliveryScheduleMs(relay)) });
    const got = received().filter((r) => r.headers["x-operation-id"] === id);
    assert.equal(got.length, 1, "received once");
    const [r] = got;
    assert.equal(r.method, "POST");
    assert.equal(r.url, "https://hookrelay.internal/billing", "the URL names the destination");
    assert.equal(r.body, body, "byte for byte");
    assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
    assert.deepEqual(checkHmacSha256(r.headers, r.body, OWN_KEY, { toleranceS: 60 }), { ok: true });
    assert.equal(checkHmacSha256(r.headers, r.body, SHARED_KEY, { toleranceS: 60 }).ok, false);

    // The Worker answers 503 twice: the same transient path as a URL's 5xx.
    // The deadline is the relay's schedule for two failed attempts and the
    // retry that succeeds (the retry delays, the queues' batch timeouts,
    // and the breaker's cooldown had the refusals reached its threshold).
    const second = await send(relay, { invoice: 2 }, "svc-2");
    await waitFor(async () => (await state(second.id)) === "delivered", { what: "delivered on a retry", timeoutMs: deadline(deliveryScheduleMs(relay, { failures: REFUSALS })) });
    const calls = received().filter((x) => x.headers["x-operation-id"] === second.id);
    assert.equal(calls.length, REFUSALS + 1, "two refused calls, then the one that delivered");
    const attempts = await rows(relay.db, "SELECT code FROM attempts WHERE event_id = ? ORDER BY attempt", second.id);
    assert.deepEqual(attempts.map((a) => a.code), Array(REFUSALS).fill("UPSTREAM_5XX"));
    const [breaker] = await rows(relay.db, "SELECT state_name FROM breakers WHERE destination = 'billing'");
    assert.equal(breaker.state_name, "CLOSED", "retried, not parked behind an open breaker");
  } finally {
    await relay.dispose();
  }
});

test("a service destination whose binding the relay does not declare fails the startup check, naming the binding", async () => {
  const relay = await startRelay({ vars: vars({ billing: { service: "BILLING_WORKER" } }) });
  try {
    for (const path of ["/healthz", "/webhooks/shop"]) {
      const res = await relay.fetch(path, { method: path === "/healthz" ? "GET" : "POST", body: path === "/healthz" ? undefined : "{}" });
      assert.equal(res.status, 500, path);
      const { error } = await res.json();
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, /DESTINATIONS\.billing\.service: names the service binding `BILLING_WORKER`, which the relay does not declare; add \[\[services\]\] binding = "BILLING_WORKER"/);
    }
  } finally {
    await relay.dispose();
  }
});
