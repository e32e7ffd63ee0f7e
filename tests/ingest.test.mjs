// Front door: every scheme accepted with its provider's own signer, and
// every refusal status of DESIGN §2.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows, SECRETS } from "./support/harness.mjs";
import { standardHeaders, stripeHeaders, githubHeaders, hmacHeaders } from "./support/signers.mjs";
import { randomUUID } from "node:crypto";

let relay;
before(async () => {
  relay = await startRelay({ relayVars: { RETRY_DELAYS_S: "1,1,1,1,1", MAX_BODY_BYTES: "400000" } });
});
after(() => relay?.dispose());

const post = (source, body, headers) => relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers });

async function expectIngested(eventId) {
  return waitFor(async () => (await rows(relay.db, "SELECT * FROM events WHERE event_id = ?", eventId))[0], { what: `event ${eventId} in D1` });
}

test("a Standard Webhooks delivery signed by the standardwebhooks library is queued and ingested", async () => {
  const body = JSON.stringify({ type: "invoice.paid", data: { n: 1 } });
  const res = await post("demo-standard", body, standardHeaders(body, { id: "msg_std_1" }));
  assert.equal(res.status, 202);
  const json = await res.json();
  assert.equal(json.status, "queued");
  assert.match(json.event_id, /^evt_[0-9a-f]{32}$/);
  const row = await expectIngested(json.event_id);
  assert.equal(row.idempotency_key, "demo-standard:msg_std_1");
  assert.equal(row.body, body, "the raw body is kept byte for byte");
  const headers = JSON.parse(row.headers);
  assert.equal(headers["webhook-signature"], "[REDACTED]");
  assert.equal(headers["webhook-id"], "msg_std_1");
});

test("a Stripe delivery signed by the stripe library is keyed by the event id in its body", async () => {
  const body = JSON.stringify({ id: "evt_stripe_1", object: "event", type: "charge.succeeded" });
  const res = await post("demo-stripe", body, stripeHeaders(body));
  assert.equal(res.status, 202);
  const row = await expectIngested((await res.json()).event_id);
  assert.equal(row.idempotency_key, "demo-stripe:evt_stripe_1");
  assert.equal(JSON.parse(row.headers)["stripe-signature"], "[REDACTED]");
});

test("a GitHub delivery signed by @octokit/webhooks-methods is keyed by X-GitHub-Delivery", async () => {
  const body = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
  const delivery = randomUUID();
  const res = await post("demo-github", body, await githubHeaders(body, { delivery }));
  assert.equal(res.status, 202);
  const row = await expectIngested((await res.json()).event_id);
  assert.equal(row.idempotency_key, `demo-github:${delivery}`);
});

test("a generic HMAC delivery uses X-Operation-Id, or a hash of the body without one", async () => {
  const body = JSON.stringify({ op: "create", n: Math.random() });
  const res = await post("demo-hmac", body, hmacHeaders(body, { operationId: "op-42" }));
  assert.equal(res.status, 202);
  assert.equal((await expectIngested((await res.json()).event_id)).idempotency_key, "demo-hmac:op-42");

  const res2 = await post("demo-hmac", body, hmacHeaders(body));
  assert.equal(res2.status, 202);
  assert.match((await expectIngested((await res2.json()).event_id)).idempotency_key, /^demo-hmac:sha256:[0-9a-f]{64}$/);
});

test("several signatures in one header are accepted when any one matches (secret rotation)", async () => {
  const body = JSON.stringify({ rotation: true });
  const good = standardHeaders(body, { id: "msg_rot" });
  const old = standardHeaders(body, { id: "msg_rot", secret: "whsec_" + Buffer.from("an old secret, rotated").toString("base64") });
  good["webhook-signature"] = `${old["webhook-signature"]} ${good["webhook-signature"]}`;
  assert.equal((await post("demo-standard", body, good)).status, 202);

  const sbody = JSON.stringify({ id: "evt_rot" });
  const t = Math.floor(Date.now() / 1000);
  const sig = (secret) => stripeHeaders(sbody, { secret })["stripe-signature"].split(",").find((p) => p.startsWith("v1="));
  const header = `t=${t},${sig("whsec_old")},${sig(SECRETS.WEBHOOK_SECRET_DEMO_STRIPE)}`;
  assert.equal((await post("demo-stripe", sbody, { "stripe-signature": header })).status, 202);
});

test("bad, missing and stale signatures are refused with 401 and say which, never the expected value", async () => {
  const body = JSON.stringify({ a: 1 });
  const cases = [
    ["missing", {}, "SIGNATURE_MISSING"],
    ["wrong secret", standardHeaders(body, { secret: "whsec_" + Buffer.from("wrong").toString("base64") }), "SIGNATURE_INVALID"],
    ["stale by 305 s", standardHeaders(body, { at: new Date(Date.now() - 305_000) }), "SIGNATURE_STALE"],
    ["future by 305 s (the exact edges are unit-tested)", standardHeaders(body, { at: new Date(Date.now() + 305_000) }), "SIGNATURE_STALE"],
  ];
  for (const [label, headers, code] of cases) {
    const res = await post("demo-standard", body, headers);
    assert.equal(res.status, 401, label);
    const json = await res.json();
    assert.equal(json.status, "error");
    assert.equal(json.error.code, code, label);
    const expected = standardHeaders(body)["webhook-signature"].slice(3);
    assert.ok(!JSON.stringify(json).includes(expected), `${label}: no expected signature in the answer`);
  }
  const tampered = stripeHeaders(body);
  assert.equal((await post("demo-stripe", JSON.stringify({ a: 2 }), tampered)).status, 401, "tampered Stripe body");
  const gh = await githubHeaders(body);
  assert.equal((await post("demo-github", body + " ", gh)).status, 401, "one extra byte breaks a GitHub signature");
});

test("unknown sources, wrong methods, oversized and unacceptable bodies get 404, 405, 413 and 400", async () => {
  const body = JSON.stringify({ a: 1 });
  assert.equal((await post("nope", body, standardHeaders(body))).status, 404);
  const get = await relay.fetch("/webhooks/demo-standard");
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  const big = JSON.stringify({ pad: "x".repeat(400_001) });
  assert.equal((await post("demo-standard", big, standardHeaders(big))).status, 413);
  const notJson = "definitely not json";
  const bad = await post("demo-standard", notJson, standardHeaders(notJson));
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, "BAD_PAYLOAD");
  const noId = JSON.stringify({ object: "event" });
  assert.equal((await post("demo-stripe", noId, stripeHeaders(noId))).status, 400, "a Stripe event needs an id");
  assert.equal((await relay.fetch("/elsewhere")).status, 404);
});

test("GET /healthz reports the version, source and destination names and no secret", async () => {
  const res = await relay.fetch("/healthz");
  assert.equal(res.status, 200);
  const json = await res.json();
  assert.equal(json.status, "ok");
  assert.match(json.version, /^\d+\.\d+\.\d+/);
  assert.deepEqual([...json.sources].sort(), ["demo-forward", "demo-github", "demo-hmac", "demo-listen", "demo-slack", "demo-standard", "demo-stripe"]);
  assert.deepEqual([...json.destinations].sort(), ["demo-forward", "demo-pull", "demo-slack"], "a downstream is a destination named after its source; demo-pull is the demo's pull destination");
  assert.deepEqual(json.retry_delays_s, [1, 1, 1, 1, 1]);
  const text = JSON.stringify(json);
  assert.ok(!text.includes("127.0.0.1:8799"), "no destination URL");
  for (const secret of Object.values(SECRETS)) assert.ok(!text.includes(secret));
});

test("a 300 KB body is claim-checked through D1 and ingested by reference", async () => {
  const body = JSON.stringify({ type: "bulk", pad: "y".repeat(300_000) });
  const res = await post("demo-standard", body, standardHeaders(body, { id: "msg_big" }));
  assert.equal(res.status, 202);
  const { event_id } = await res.json();
  const row = await expectIngested(event_id);
  assert.equal(row.body, null);
  assert.equal(row.body_ref, event_id);
  assert.equal(row.body_bytes, body.length);
  const [payload] = await rows(relay.db, "SELECT body FROM payloads WHERE event_id = ?", event_id);
  assert.equal(payload.body, body);
});

test("when D1 cannot keep a claim-checked body the relay answers 503 with Retry-After and keeps nothing", async () => {
  await relay.db.prepare("ALTER TABLE payloads RENAME TO payloads_away").run();
  try {
    const body = JSON.stringify({ pad: "z".repeat(200_000) });
    const res = await post("demo-standard", body, standardHeaders(body, { id: "msg_503" }));
    assert.equal(res.status, 503);
    assert.ok(Number(res.headers.get("retry-after")) > 0);
    assert.equal((await res.json()).error.code, "UNAVAILABLE");
  } finally {
    await relay.db.prepare("ALTER TABLE payloads_away RENAME TO payloads").run();
  }
  const body = JSON.stringify({ pad: "z".repeat(200_000) });
  assert.equal((await post("demo-standard", body, standardHeaders(body, { id: "msg_503" }))).status, 202, "the provider's retry is accepted");
});

test("no log line carries a payload or a secret", async () => {
  const marker = `payload-marker-${randomUUID()}`;
  const body = JSON.stringify({ marker });
  assert.equal((await post("demo-hmac", body, hmacHeaders(body, { operationId: marker.slice(0, 20) }))).status, 202);
  await waitFor(() => relay.logs.some((l) => l.includes('"event":"batch_done"')), { what: "a consumer batch" });
  const text = relay.logs.join("\n");
  assert.ok(!text.includes(marker), "payload marker in logs");
  for (const secret of Object.values(SECRETS)) assert.ok(!text.includes(secret), "secret in logs");
});

test("early refusals answer with their status instead of resetting the connection", async () => {
  // workerd resets a connection answered before its body was read; the relay reads it first.
  const big = "x".repeat(2 * 1024 * 1024);
  for (let i = 0; i < 20; i++) {
    assert.equal((await post("demo-standard", big, { "content-type": "application/json" })).status, 413);
    assert.equal((await post("nope", JSON.stringify({ i }), {})).status, 404);
    assert.equal((await relay.fetch("/healthz", { method: "POST", body: "{}" })).status, 405);
  }
  // Past 2 MiB declared, or with no length at all, the body is streamed to the end instead of read whole.
  const bigger = "x".repeat(3 * 1024 * 1024);
  const chunked = () =>
    new ReadableStream({
      start(c) {
        for (let i = 0; i < 48; i++) c.enqueue(new TextEncoder().encode("y".repeat(64 * 1024)));
        c.close();
      },
    });
  for (let i = 0; i < 5; i++) {
    assert.equal((await post("demo-standard", bigger, { "content-type": "application/json" })).status, 413);
    const res = await relay.fetch("/webhooks/nope", { method: "POST", body: chunked(), duplex: "half" });
    assert.equal(res.status, 404, "a chunked body with no content-length is drained too");
  }
});

test("a chunked body (no Content-Length) to a known source is read up to the limit: a small one is ingested, an oversized one refused with 413", async () => {
  const inChunks = (bytes, size) =>
    new ReadableStream({
      start(c) {
        for (let at = 0; at < bytes.length; at += size) c.enqueue(bytes.subarray(at, at + size));
        c.close();
      },
    });
  const body = JSON.stringify({ type: "chunked.small", pad: "z".repeat(5000) });
  const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body: inChunks(new TextEncoder().encode(body), 1000), duplex: "half", headers: hmacHeaders(body, { operationId: "op_chunked_small" }) });
  assert.equal(res.status, 202, "a signed body sent in chunks verifies like any other");
  const id = (await res.json()).event_id;
  await waitFor(async () => (await rows(relay.db, "SELECT body FROM events WHERE event_id = ?", id))[0], { what: "the chunked event ingested" });
  assert.equal((await rows(relay.db, "SELECT body FROM events WHERE event_id = ?", id))[0].body, body, "every chunk kept, in order");

  // 3 MiB in 64 KiB chunks against the 1 MiB limit: refused once the
  // limit is passed, drained so the client reads the answer, never held whole.
  const huge = new Uint8Array(3 * 1024 * 1024).fill(0x61);
  for (let i = 0; i < 3; i++) {
    const refused = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body: inChunks(huge, 64 * 1024), duplex: "half", headers: hmacHeaders("{}", { operationId: `op_chunked_huge_${i}` }) });
    assert.equal(refused.status, 413);
    assert.equal((await refused.json()).error.code, "PAYLOAD_TOO_LARGE");
  }
});

test("a delivery id that is not 1-256 printable ASCII characters is refused with 400 BAD_DELIVERY_ID naming its header, once the signature holds", async () => {
  // undici sends each character of this string as one byte: E9 FF 80.
  const nonAscii = "\u00e9\u00ff\u0080";
  const tooLong = "d".repeat(257);
  const body = JSON.stringify({ type: "id.check", n: 1 });
  const schemes = [
    ["demo-standard", "webhook-id", (id) => standardHeaders(body, { id })],
    ["demo-github", "X-GitHub-Delivery", (id) => githubHeaders(body, { delivery: id })],
    ["demo-hmac", "X-Operation-Id", (id) => hmacHeaders(body, { operationId: id })],
  ];
  for (const [source, header, headersFor] of schemes) {
    for (const [label, id] of [["non-ASCII bytes", nonAscii], ["257 characters", tooLong]]) {
      const res = await post(source, body, await headersFor(id));
      const json = await res.json();
      // standard-webhooks signs its id: bytes outside ASCII reach the worker
      // decoded, so that signature cannot hold, and the signature comes
      // first (DESIGN §2): 401, naming the id.
      const unsignable = source === "demo-standard" && id === nonAscii;
      assert.equal(res.status, unsignable ? 401 : 400, `${source} ${label}: ${JSON.stringify(json)}`);
      assert.equal(json.error.code, unsignable ? "SIGNATURE_INVALID" : "BAD_DELIVERY_ID", `${source} ${label}`);
      assert.ok(json.error.message.toLowerCase().includes(header.toLowerCase()), `${source} ${label}: ${json.error.message}`);
    }
    const ok = await post(source, body, await headersFor("d".repeat(256)));
    assert.equal(ok.status, 202, `${source}: 256 characters is the longest id accepted`);
  }
  const stripeBody = JSON.stringify({ id: "e".repeat(257), object: "event" });
  const res = await post("demo-stripe", stripeBody, stripeHeaders(stripeBody));
  const json = await res.json();
  assert.equal(res.status, 400);
  assert.equal(json.error.code, "BAD_DELIVERY_ID");
  assert.ok(json.error.message.includes('the Stripe event\'s "id"'), json.error.message);
});

test("when the queue cannot take the event the relay answers 503 with Retry-After, logs enqueue_failed and the provider's event is not lost", async () => {
  // A real fault: the relay runs without its `webhooks` producer binding,
  // so the send fails inside workerd.
  const broken = await startRelay({
    relayOptions: (o) => ({ ...o, queueProducers: Object.fromEntries(Object.entries(o.queueProducers).filter(([binding]) => binding !== "WEBHOOKS")) }),
  });
  try {
    const body = JSON.stringify({ type: "invoice.paid", n: 503 });
    const res = await broken.fetch("/webhooks/demo-hmac", { method: "POST", body, headers: hmacHeaders(body, { operationId: "op_queue_down" }) });
    assert.equal(res.status, 503);
    assert.ok(Number(res.headers.get("retry-after")) > 0, "Retry-After tells the provider when to come back");
    const json = await res.json();
    assert.equal(json.error.code, "UNAVAILABLE");
    assert.match(json.error.message, /queue did not accept the event/);
    const line = await waitFor(() => broken.logs.find((l) => l.includes('"event":"enqueue_failed"')), { what: "the enqueue_failed line" });
    assert.match(line, /WEBHOOKS/, "the log names the binding that failed");
  } finally {
    await broken.dispose();
  }
  // The provider retries against a relay whose queue works: accepted.
  const body = JSON.stringify({ type: "invoice.paid", n: 503 });
  const res = await post("demo-hmac", body, hmacHeaders(body, { operationId: "op_queue_down" }));
  assert.equal(res.status, 202);
  await expectIngested((await res.json()).event_id);
});
