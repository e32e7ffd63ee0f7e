// The `signature_failures` alarm's figure (DESIGN §5): every 401 is
// counted per source, in D1, without a D1 write per failure: the relay
// isolate keeps a tally and writes it at most once per spell
// (core/src/receive/signature_tally.rs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { startDownstream } from "./support/downstream.mjs";

let relay, receiver;
before(async () => {
  receiver = await startDownstream({ "/alerts": () => 200 });
  relay = await startRelay({ vars: { ALERT_WEBHOOK_URL: receiver.url("/alerts") } });
});
after(async () => {
  await relay?.dispose();
  await receiver?.close();
});

test("25 bad signatures to a source are counted as 25 in D1 in a few writes, not 25", async (t) => {
  const body = JSON.stringify({ forged: true });
  for (let n = 0; n < 25; n++) {
    // Each from its own address: one address is answered 429 after 10
    // failures (tests/signature-rate-limit.test.mjs), and this counts 401s.
    const headers = { ...hmacHeaders(body, { secret: `not-the-secret-${n}` }), "cf-connecting-ip": `203.0.113.${n + 1}` };
    const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body, headers });
    assert.equal(res.status, 401, await res.text());
  }
  // A good request is not counted.
  const ok = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body, headers: hmacHeaders(body) });
  assert.equal(ok.status, 202);

  // The first failure is written at once, the other 24 together one spell
  // (20 s) later.
  const figure = await waitFor(
    async () => {
      const [r] = await rows(relay.db, "SELECT sum(count) AS n, sum(writes) AS writes, count(*) AS buckets FROM signature_failures WHERE source = ?", "demo-hmac");
      return r?.n === 25 && r;
    },
    { timeoutMs: 45_000, intervalMs: 250, what: "25 signature failures for demo-hmac in D1" },
  );
  t.diagnostic(`D1: ${JSON.stringify(figure)}`);
  // A spell may straddle a minute, so two buckets at most; each flush
  // writes a bucket once.
  assert.ok(figure.buckets <= 2, `${figure.buckets} minute buckets`);
  assert.ok(figure.writes <= 4, `${figure.writes} writes for 25 failures: one per spell and bucket, never one per failure`);
  const [others] = await rows(relay.db, "SELECT count(*) AS n FROM signature_failures WHERE source <> ?", "demo-hmac");
  assert.equal(others.n, 0, "only the source that was refused is counted");

  // The stats' counter per source is added by the same writes.
  const [counter] = await rows(relay.db, "SELECT value FROM counters WHERE name = ?", "signature_failures:demo-hmac");
  assert.equal(counter?.value, 25);
});

test("more than ALERT_SIGNATURE_FAILURES_PER_HOUR (20) failures at a source fire signature_failures for that source, once", async () => {
  // The first test left 25 failures for demo-hmac in D1.
  const admin = adminClient(relay, [receiver.url("/alerts")]);
  const firing = () => receiver.hits("/alerts").map((r) => JSON.parse(r.body).alert).filter((a) => a.id === "signature_failures:demo-hmac" && a.state === "firing");
  await waitFor(async () => {
    const run = await admin.post("maintenance/run", {});
    assert.equal(run.status, 200, JSON.stringify(run.json));
    return firing().length > 0;
  }, { timeoutMs: 20_000, intervalMs: 300, what: "the signature_failures alert at the receiver" });
  const [alert] = firing();
  assert.deepEqual(alert.detail, { source: "demo-hmac", last_hour: 25, threshold_per_hour: 20 });
  await admin.post("maintenance/run", {});
  assert.equal(firing().length, 1, "one alert while the condition holds");
  const listed = await admin.get("alerts");
  const item = JSON.stringify(listed.data);
  assert.ok(item.includes("signature_failures:demo-hmac"), item);
  assert.ok(!item.includes("signature_failures:demo-stripe"), "a source without failures has no alarm");
});
