// DESTINATIONS and a source's routes at startup (DESIGN §1, §3): a good
// configuration passed as --var JSON strings is accepted and /healthz lists
// the destinations (the declared ones, and one per downstream, named after
// its source); a bad one answers every request with the startup error,
// naming the full path of what is wrong.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startRelay } from "./support/harness.mjs";

const DESTINATIONS = {
  billing: { url: "https://billing.example.com/hooks", rate_per_s: 5, timeout_ms: 2000 },
  analytics: { url: "https://analytics.example.com/in?token=SECRET-IN-URL" },
};
const ROUTED = {
  shop: {
    scheme: "hmac-sha256",
    routes: [{ to: "billing", filter: { body: { total: { $gte: 100 } }, headers: { "X-Env": "prod" } } }, { to: "analytics" }],
  },
  legacy: { scheme: "hmac-sha256", downstream: "http://127.0.0.1:9/legacy" },
};
const SECRETS = { WEBHOOK_SECRET_SHOP: "shop-secret", WEBHOOK_SECRET_LEGACY: "legacy-secret", DOWNSTREAM_SIGNING_SECRET: "down-secret" };

async function withRelay(vars, run) {
  const relay = await startRelay({ vars: { ...SECRETS, ...vars } });
  try {
    await run(relay);
  } finally {
    await relay.dispose();
  }
}

test("DESTINATIONS and routes given as JSON strings are accepted, and /healthz lists the destinations but no URL", async () => {
  await withRelay({ DESTINATIONS: JSON.stringify(DESTINATIONS), SOURCES: JSON.stringify(ROUTED) }, async (relay) => {
    const res = await relay.fetch("/healthz");
    assert.equal(res.status, 200);
    const json = await res.json();
    assert.deepEqual(json.sources, ["legacy", "shop"]);
    assert.deepEqual(json.destinations, ["analytics", "billing", "legacy"]);
    assert.ok(!JSON.stringify(json).includes("SECRET-IN-URL"), "a destination's URL is not shown");
  });
});

test("a bad route or destination fails the startup check, naming its full path", async () => {
  const badFilter = structuredClone(ROUTED);
  badFilter.shop.routes[0].filter.body.total = { $gte: "100", $regex: "^1" };
  const cases = [
    [{ SOURCES: JSON.stringify(badFilter), DESTINATIONS: JSON.stringify(DESTINATIONS) }, /SOURCES\.shop\.routes\[0\]\.filter\.body\.total\.\$regex: unknown operator/],
    [{ SOURCES: JSON.stringify(ROUTED), DESTINATIONS: JSON.stringify({ ...DESTINATIONS, legacy: { url: "https://x.example.com/" } }) }, /DESTINATIONS\.legacy: is named like source 'legacy'/],
    [{ SOURCES: JSON.stringify(ROUTED), DESTINATIONS: JSON.stringify({ billing: DESTINATIONS.billing }) }, /SOURCES\.shop\.routes\[1\]\.to: names no destination 'analytics'/],
    [{ SOURCES: JSON.stringify(ROUTED), DESTINATIONS: JSON.stringify({ ...DESTINATIONS, jobs: { queue: "JOBS" } }) }, /DESTINATIONS\.jobs\.queue: names the queue binding `JOBS`, which the relay does not declare/],
  ];
  for (const [vars, message] of cases) {
    await withRelay(vars, async (relay) => {
      for (const path of ["/healthz", "/webhooks/shop"]) {
        const res = await relay.fetch(path, { method: path === "/healthz" ? "GET" : "POST", body: path === "/healthz" ? undefined : "{}" });
        assert.equal(res.status, 500, path);
        const json = await res.json();
        assert.equal(json.error.code, "CONFIG_INVALID", path);
        assert.match(json.error.message, message, path);
      }
    });
  }
});

test("a destination on one of the relay's own bindings and a recipe whose timestamp is unsigned are refused at startup, naming their paths", async () => {
  const recipe = { hmac: "sha256", header: "X-Sig", encoding: "hex", signed: "{body}", timestamp: { header: "X-Time", unit: "s" } };
  const cases = [
    [{ SOURCES: JSON.stringify(ROUTED), DESTINATIONS: JSON.stringify({ ...DESTINATIONS, loop: { queue: "WEBHOOKS" } }) }, /DESTINATIONS\.loop\.queue: names `WEBHOOKS`, one of the relay's own bindings/],
    [{ SOURCES: JSON.stringify(ROUTED), DESTINATIONS: JSON.stringify({ ...DESTINATIONS, dlq: { service: "DLQ" } }) }, /DESTINATIONS\.dlq\.service: names `DLQ`, one of the relay's own bindings/],
    [{ SOURCES: JSON.stringify({ ...ROUTED, acme: { scheme: recipe } }), DESTINATIONS: JSON.stringify(DESTINATIONS), WEBHOOK_SECRET_ACME: "acme-secret" }, /SOURCES\.acme\.scheme\.signed: does not sign \{timestamp\}/],
  ];
  for (const [vars, message] of cases) {
    await withRelay(vars, async (relay) => {
      const res = await relay.fetch("/healthz");
      assert.equal(res.status, 500);
      const json = await res.json();
      assert.equal(json.error.code, "CONFIG_INVALID");
      assert.match(json.error.message, message);
    });
  }
});
