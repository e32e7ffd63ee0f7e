// The front door with routes (issue 33): `npm start -- --var DESTINATIONS:…
// --var SOURCES:…`, driven over HTTP only, as a user does. Signed webhooks
// fan out to the loopback destinations their routes match, each call signed
// with the --var DOWNSTREAM_SIGNING_SECRET; an event no route matches
// reaches none and the admin API (a token signed with the --var
// ADMIN_JWT_SECRET, so the DLQ worker got the --vars too) lists it with
// `?delivery_status=filtered`, and its story names the routes it missed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { startFrontDoor } from "./support/front-door.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { waitFor } from "./support/wait-for.mjs";
import { hmacSha256Headers } from "../scripts/webhook-signatures.mjs";
import { mintToken } from "../scripts/admin-jwt.mjs";

const SECRET = { shop: "fd-routes-shop-secret", alerts: "fd-routes-alerts-secret" };
const SIGNING = "fd-routes-signing-secret";
const ADMIN_JWT_SECRET = "fd-routes-admin-jwt-secret";

test("npm start with --var DESTINATIONS and SOURCES: two routes fan out, one filtered; a filtered event reaches none and is listed as filtered", async (t) => {
  const downstream = await startDownstream({ "/billing": () => ({ status: 200 }), "/analytics": () => ({ status: 200 }) });
  t.after(() => downstream.close());
  const destinations = { "fd-billing": { url: downstream.url("/billing") }, "fd-analytics": { url: downstream.url("/analytics") } };
  const sources = {
    // Two routes: billing gets every event, analytics only totals of 100 or more.
    "fd-shop": { scheme: "hmac-sha256", routes: [{ to: "fd-billing" }, { to: "fd-analytics", filter: { body: { total: { $gte: 100 } } } }] },
    // One filtered route: only high-severity alerts go anywhere.
    "fd-alerts": { scheme: "hmac-sha256", routes: [{ to: "fd-analytics", filter: { body: { severity: "high" } } }] },
  };
  const door = await startFrontDoor({
    vars: {
      DESTINATIONS: JSON.stringify(destinations),
      SOURCES: JSON.stringify(sources),
      WEBHOOK_SECRET_FD_SHOP: SECRET.shop,
      WEBHOOK_SECRET_FD_ALERTS: SECRET.alerts,
      DOWNSTREAM_SIGNING_SECRET: SIGNING,
      ADMIN_JWT_SECRET,
      RETRY_DELAYS_S: "1,1,1,1,1",
    },
  });
  t.after(() => door.dispose());

  const health = await (await door.fetch("/healthz")).json();
  assert.deepEqual([...health.sources].sort(), ["fd-alerts", "fd-shop"], JSON.stringify(health));
  assert.deepEqual([...health.destinations].sort(), ["fd-analytics", "fd-billing"], "the relay took DESTINATIONS from --var");

  const send = async (source, payload, operationId) => {
    const body = JSON.stringify(payload);
    const res = await door.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacSha256Headers(body, { secret: SECRET[source.slice(3)], operationId }) });
    const answer = await res.text();
    assert.equal(res.status, 202, answer);
    return { id: JSON.parse(answer).event_id, body };
  };
  const big = await send("fd-shop", { order: 1, total: 250 }, "fd-order-1");
  const small = await send("fd-shop", { order: 2, total: 40 }, "fd-order-2");
  const high = await send("fd-alerts", { alert: 1, severity: "high" }, "fd-alert-1");
  const low = await send("fd-alerts", { alert: 2, severity: "low" }, "fd-alert-2");

  const headers = { authorization: `Bearer ${mintToken(ADMIN_JWT_SECRET, { sub: "front-door-routes-test", ttlS: 300 })}` };
  const admin = async (p, { missing = false } = {}) => {
    const res = await door.fetch(`/api/v1/admin/${p}`, { headers });
    const body = await res.json();
    // Before the consumer ingests it, an event's story is 404.
    if (missing && res.status === 404) return null;
    // A 401 (the wrong ADMIN_JWT_SECRET) or a 500 (a DLQ worker without the
    // --var SOURCES' secrets) will not go away by waiting.
    if (res.status !== 200) throw new Error(`GET ${p} answered ${res.status}: ${JSON.stringify(body)}`);
    return body.data;
  };
  const statusOf = async (id) => (await admin(`events/${id}`, { missing: true }))?.event?.delivery_status;
  let last;
  await waitFor(
    async () => {
      last = { big: await statusOf(big.id), small: await statusOf(small.id), high: await statusOf(high.id), low: await statusOf(low.id) };
      return last.big === "delivered" && last.small === "delivered" && last.high === "delivered" && last.low === "filtered";
    },
    { timeoutMs: 60_000, intervalMs: 250, what: "three events delivered and one filtered" },
  ).catch((e) => {
    throw new Error(`${e.message}\nlast statuses: ${JSON.stringify(last)}\nnpm start's output:\n${door.output.slice(-30).join("\n")}`);
  });

  // Each destination got exactly the events its routes match, once, signed.
  const callsOf = (path) => downstream.hits(path).map((r) => r.headers["x-operation-id"]).sort();
  assert.deepEqual(callsOf("/billing"), [big.id, small.id].sort(), "billing: every shop event, once");
  assert.deepEqual(callsOf("/analytics"), [big.id, high.id].sort(), "analytics: the big order and the high alert, once each");
  for (const hit of downstream.requests) {
    const sent = [big, small, high].find((e) => e.id === hit.headers["x-operation-id"]);
    assert.equal(hit.body, sent.body, "forwarded byte-exact");
    const expected = createHmac("sha256", SIGNING).update(`${hit.headers["x-timestamp"]}.${hit.body}`).digest("hex");
    assert.equal(hit.headers["x-signature"], expected, "signed with the --var DOWNSTREAM_SIGNING_SECRET");
  }

  // The listing per delivery status, and each event's deliveries.
  const filtered = await admin("events?delivery_status=filtered");
  assert.deepEqual(filtered.items.map((e) => e.event_id), [low.id], JSON.stringify(filtered));
  assert.deepEqual(filtered.items[0].deliveries, [], "a filtered event has no delivery");
  const delivered = await admin("events?source=fd-shop&delivery_status=delivered");
  const bigListed = delivered.items.find((e) => e.event_id === big.id);
  assert.ok(bigListed, JSON.stringify(delivered));
  assert.deepEqual(bigListed.deliveries.map((d) => [d.destination, d.state]).sort(), [["fd-analytics", "delivered"], ["fd-billing", "delivered"]]);
  assert.deepEqual(delivered.items.find((e) => e.event_id === small.id)?.deliveries.map((d) => [d.destination, d.state]), [["fd-billing", "delivered"]]);

  // The stories name the routes each event did not match.
  assert.deepEqual((await admin(`events/${low.id}`)).routes_unmatched, ["fd-analytics"]);
  assert.deepEqual((await admin(`events/${small.id}`)).routes_unmatched, ["fd-analytics"]);
  assert.deepEqual((await admin(`events/${big.id}`)).routes_unmatched ?? [], []);
});
