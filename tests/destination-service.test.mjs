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
import { hmacHeaders } from "./support/signers.mjs";
import { checkHmacSha256, secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "svc-source-secret";
const SHARED_KEY = "svc-shared-key";
const OWN_KEY = "svc-billing-own-key";
const TOKEN = "svc-billing-token-4e1f";

// The user's Worker: it answers as its recorder (a loopback server the
// test reads) answers, after handing it what it received.
const RECEIVER = `export default {
  async fetch(request, env) {
    const record = { url: request.url, method: request.method, headers: Object.fromEntries(request.headers), body: await request.text() };
    const answer = await fetch(env.RECORD, { method: "POST", body: JSON.stringify(record) });
    return new Response("seen", { status: answer.status });
  },
};`;

let recorder;
let answer = 200;
before(async () => {
  recorder = await startDownstream({ "/record": () => ({ status: answer }) });
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
    const { id, body } = await send(relay, { invoice: 1 }, "svc-1");
    await waitFor(async () => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = ?", id))[0]?.state === "delivered", { what: "delivered through the binding" });
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
    answer = 503;
    const second = await send(relay, { invoice: 2 }, "svc-2");
    await waitFor(() => received().filter((x) => x.headers["x-operation-id"] === second.id).length >= 2, { what: "two refused calls" });
    answer = 200;
    await waitFor(async () => (await rows(relay.db, "SELECT state FROM deliveries WHERE event_id = ?", second.id))[0]?.state === "delivered", { what: "delivered on a retry" });
    const [attempt] = await rows(relay.db, "SELECT code FROM attempts WHERE event_id = ? LIMIT 1", second.id);
    assert.equal(attempt.code, "UPSTREAM_5XX");
  } finally {
    answer = 200;
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
