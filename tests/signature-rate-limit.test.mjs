// The limit on failing signature checks (DESIGN §7): an address whose
// checks keep failing for a source is answered 429 with Retry-After, and
// then refused before its body is read, until the period ends. The Workers
// rate-limiting binding (wrangler.toml [[ratelimits]] SIGNATURE_LIMITER,
// simulated by Miniflare) counts the failures per (source, address, an
// IPv6 one by its /64); requests that verify are never counted.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startRelay, waitFor } from "./support/harness.mjs";
import { hmacHeaders } from "./support/signers.mjs";

// The limit the committed wrangler.toml declares (build.rs checks the period).
const LIMIT = Number(/name = "SIGNATURE_LIMITER"[\s\S]*?simple = \{ limit = (\d+), period = 60 \}/.exec(readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8"))[1]);

let relay;
before(async () => {
  relay = await startRelay();
});
after(async () => {
  await relay?.dispose();
});

const body = JSON.stringify({ forged: true });
const post = (source, headers, ip, init = {}) =>
  relay.fetch(`/webhooks/${source}`, { method: "POST", body, ...init, headers: { ...headers, "cf-connecting-ip": ip } });
const forged = () => hmacHeaders(body, { secret: "not-the-secret" });

// Miniflare's limiter counts in fixed windows of the period (60 s, from the
// epoch); a test that crossed a window's end mid-count would see its count
// restart. Each test starts with 20 s or more left in its window.
const freshWindow = () => waitFor(() => Date.now() % 60_000 < 40_000, { timeoutMs: 25_000, intervalMs: 200, what: "a rate-limit window with 20 s left" });

/** A body that never ends: a relay that reads it never answers. */
function endlessBody() {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"forged":'));
    },
  });
}

test(`${LIMIT} forged requests from one address get 401, then 429 with Retry-After, and its next bodies are never read`, async () => {
  await freshWindow();
  const ip = "203.0.113.9";
  for (let n = 1; n <= LIMIT; n++) {
    const res = await post("demo-hmac", forged(), ip);
    assert.equal(res.status, 401, `forged request ${n}: ${await res.text()}`);
  }
  // The next failure is over the limit: 429, and the address is blocked.
  const over = await post("demo-hmac", forged(), ip);
  const overText = await over.text();
  assert.equal(over.status, 429, overText);
  const retryAfter = Number(over.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${over.headers.get("retry-after")}`);
  assert.equal(JSON.parse(overText).error.code, "SIGNATURE_RATE_LIMITED");

  // Refused before its body is read: a body that never ends still gets an answer.
  const endless = await post("demo-hmac", { "content-type": "application/json", ...forged() }, ip, {
    body: endlessBody(),
    duplex: "half",
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(endless.status, 429);
  assert.ok(Number(endless.headers.get("retry-after")) >= 1);
  await endless.body?.cancel();

  // A validly signed request from the blocked address is refused too: its
  // body is not read, so its signature is never checked (docs/ingest.md, "Signature
  // rate limit").
  const valid = await post("demo-hmac", hmacHeaders(body), ip);
  assert.equal(valid.status, 429);

  // Another address, and the same address for another source, are not blocked.
  assert.equal((await post("demo-hmac", forged(), "203.0.113.10")).status, 401);
  assert.equal((await post("demo-hmac", hmacHeaders(body), "198.51.100.1")).status, 202);
  assert.equal((await post("demo-standard", {}, ip)).status, 401);
});

test("requests that verify are never counted against their address", async () => {
  await freshWindow();
  const ip = "198.51.100.77";
  for (let n = 1; n <= LIMIT + 5; n++) {
    const res = await post("demo-hmac", hmacHeaders(JSON.stringify({ n })), ip, { body: JSON.stringify({ n }) });
    assert.equal(res.status, 202, `signed request ${n}`);
  }
  // Still a 401, not a 429, on its first failure.
  assert.equal((await post("demo-hmac", forged(), ip)).status, 401);
});

test("an IPv6 address is counted by its /64: a neighbour in the same /64 is blocked, another /64 is not", async () => {
  await freshWindow();
  for (let n = 1; n <= LIMIT; n++) {
    const res = await post("demo-hmac", forged(), `2001:db8:aa:bb::${n.toString(16)}`);
    assert.equal(res.status, 401, `forged request ${n}`);
  }
  assert.equal((await post("demo-hmac", forged(), "2001:db8:aa:bb:ffff::1")).status, 429);
  assert.equal((await post("demo-hmac", forged(), "2001:db8:aa:bb::1")).status, 429);
  assert.equal((await post("demo-hmac", forged(), "2001:db8:aa:bc::1")).status, 401);
});

test("an unsigned request with a non-ASCII delivery id is a 401 (DESIGN §2's order), counted like any failed signature", async () => {
  await freshWindow();
  const ip = "203.0.113.44";
  // undici sends each character as one byte: E9 FF 80, no printable ASCII.
  const nonAscii = "\u00e9\u00ff\u0080";
  const unsigned = () => hmacHeaders(body, { secret: "not-the-secret", operationId: nonAscii });
  for (let n = 1; n <= LIMIT; n++) {
    const res = await post("demo-hmac", unsigned(), ip);
    const text = await res.text();
    assert.equal(res.status, 401, `unsigned request ${n} with a bad X-Operation-Id: ${text}`);
    assert.equal(JSON.parse(text).error.code, "SIGNATURE_INVALID");
  }
  const over = await post("demo-hmac", unsigned(), ip);
  assert.equal(over.status, 429, "each of those 401s was counted on the limiter");
  // Signed, the same bad id is the body's check: 400 BAD_DELIVERY_ID.
  const signed = await post("demo-hmac", hmacHeaders(body, { operationId: nonAscii }), "198.51.100.44");
  assert.equal(signed.status, 400);
  assert.equal((await signed.json()).error.code, "BAD_DELIVERY_ID");
});
