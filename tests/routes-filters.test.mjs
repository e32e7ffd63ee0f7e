// Route filters end to end (DESIGN §3): the routes are evaluated once, at
// ingest, against the event's JSON or form body and its headers; matching
// events reach their route's destination and the others do not; an event
// no route matched is `filtered`, its story says which routes it missed,
// and `?delivery_status=filtered` lists it. Real loopback destinations.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { deadline, deliveryScheduleMs } from "./support/schedule.mjs";
import { secretNameFor, slackHeaders } from "../scripts/webhook-signatures.mjs";

const SECRET = { shop: "filters-shop-secret", slash: "filters-slack-secret" };
let relay, downstream, admin;

before(async () => {
  downstream = await startDownstream({
    "/big": () => ({ status: 200 }),
    "/eu": () => ({ status: 200 }),
    "/deploy": () => ({ status: 200 }),
  });
  const destinations = {
    big: { url: downstream.url("/big") },
    eu: { url: downstream.url("/eu") },
    deploy: { url: downstream.url("/deploy") },
  };
  const sources = {
    shop: {
      scheme: "hmac-sha256",
      routes: [
        { to: "big", filter: { body: { total: { $gte: 100 }, status: { $in: ["paid", "settled"] } } } },
        // Header names match whatever their case; values keep their type.
        { to: "eu", filter: { headers: { "X-Region": "eu" }, body: { $or: [{ "customer.tier": "gold" }, { customer: { tier: "gold" } }] } } },
      ],
    },
    // A form body (a Slack slash command) is matched by its fields.
    slash: { scheme: "slack", routes: [{ to: "deploy", filter: { body: { command: "/deploy", text: { $startsWith: "prod" } } } }] },
  };
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify(sources),
      DESTINATIONS: JSON.stringify(destinations),
      [secretNameFor("shop")]: SECRET.shop,
      [secretNameFor("slash")]: SECRET.slash,
      DOWNSTREAM_SIGNING_SECRET: "filters-signing",
      RETRY_DELAYS_S: "0,0,0,0,0",
    },
  });
  admin = adminClient(relay, Object.values(SECRET));
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function sendShop(payload, { region } = {}) {
  const body = JSON.stringify(payload);
  const headers = { ...hmacHeaders(body, { secret: SECRET.shop, operationId: `op-${Math.random().toString(36).slice(2)}` }) };
  if (region) headers["x-region"] = region;
  const res = await relay.fetch("/webhooks/shop", { method: "POST", body, headers });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}

const callsFor = (path, id) => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === id);
const status = async (id) => (await rows(relay.db, "SELECT delivery_status FROM events WHERE event_id = ?", id))[0]?.delivery_status;

test("matching events reach their route's destination, the others do not, and a filtered event says so", async () => {
  const bigOnly = await sendShop({ total: 250, status: "paid", customer: { tier: "silver" } });
  const both = await sendShop({ total: 100, status: "settled", customer: { tier: "gold" } }, { region: "eu" });
  // "100" is a string: no type conversion, so $gte does not hold; region eu but tier silver.
  const none = await sendShop({ total: "100", status: "paid", customer: { tier: "silver" } }, { region: "eu" });

  await waitFor(async () => (await status(bigOnly)) === "delivered" && (await status(both)) === "delivered", { what: "the matching deliveries", timeoutMs: 30_000 });
  assert.equal(callsFor("/big", bigOnly).length, 1);
  assert.equal(callsFor("/eu", bigOnly).length, 0, "bigOnly has no x-region: eu");
  assert.equal(callsFor("/big", both).length, 1);
  assert.equal(callsFor("/eu", both).length, 1);
  assert.equal(await status(none), "filtered");
  assert.equal(callsFor("/big", none).length + callsFor("/eu", none).length, 0);
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE event_id = ?", none))[0].n, 0, "a filtered event has no delivery");

  const story = await admin.get(`events/${none}`);
  assert.equal(story.status, 200, JSON.stringify(story.json));
  assert.deepEqual([...story.data.routes_unmatched].sort(), ["big", "eu"], JSON.stringify(story.data));
  assert.equal(story.data.deliveries.length, 0);

  const partial = await admin.get(`events/${bigOnly}`);
  assert.deepEqual(partial.data.routes_unmatched, ["eu"]);
  assert.deepEqual(partial.data.deliveries.map((d) => [d.destination, d.state]), [["big", "delivered"]]);

  // A metric counts filtered events (DESIGN §3): one so far, this one.
  await waitFor(async () => (await admin.get("webhook-dlq/stats")).data.counters?.filtered === 1, { what: "the filtered counter at 1", timeoutMs: 10_000 });

  const listed = await admin.get("events?source=shop&delivery_status=filtered");
  assert.equal(listed.status, 200, JSON.stringify(listed.json));
  const ids = listed.data.items.map((e) => e.event_id);
  assert.ok(ids.includes(none) && !ids.includes(bigOnly) && !ids.includes(both), JSON.stringify(ids));
});

test("a form body is routed by its fields, and reaches its destination byte-exact with its Content-Type", async () => {
  const send = async (fields) => {
    const body = new URLSearchParams(fields).toString();
    const res = await relay.fetch("/webhooks/slash", {
      method: "POST",
      body,
      headers: { "content-type": "application/x-www-form-urlencoded", ...slackHeaders(body, { secret: SECRET.slash }) },
    });
    assert.ok(res.status === 200 || res.status === 202, `${res.status} ${await res.clone().text()}`);
    const [row] = await waitFor(async () => {
      const r = await rows(relay.db, "SELECT event_id, delivery_status FROM events WHERE source = 'slash' AND body = ?", body);
      return r.length ? r : null;
    }, { what: "the slash event's row", timeoutMs: 20_000 });
    return { id: row.event_id, body };
  };
  const prod = await send({ command: "/deploy", text: "prod api", user_name: "ana" });
  const staging = await send({ command: "/deploy", text: "staging api", user_name: "ana" });
  await waitFor(async () => (await status(prod.id)) === "delivered", { what: "the prod deploy delivered", timeoutMs: 30_000 });
  assert.equal(await status(staging.id), "filtered");
  const [hit] = callsFor("/deploy", prod.id);
  assert.ok(hit, "the deploy destination got the prod command");
  assert.equal(hit.body, prod.body, "byte-exact");
  assert.match(hit.headers["content-type"], /^application\/x-www-form-urlencoded/);
  assert.equal(callsFor("/deploy", staging.id).length, 0);
});

test("an event too large for a queue message is routed by its whole body, read back from D1; a small one still is too", async () => {
  // ~200 KB: past the queue message's limit, so the body is claim-checked
  // (core::receive::claim_check) and the message carries only its reference.
  const pad = "x".repeat(200_000);
  const large = { total: 250, status: "paid", customer: { tier: "silver" }, pad };
  const largeMiss = { total: 5, status: "paid", customer: { tier: "silver" }, pad };
  const matching = await sendShop(large);
  const missing = await sendShop(largeMiss);
  const small = await sendShop({ total: 300, status: "settled", customer: { tier: "silver" } });
  await waitFor(async () => (await status(matching)) === "delivered" && (await status(small)) === "delivered" && (await status(missing)) !== undefined, {
    what: "the large and the small matching events delivered, the other ingested",
    timeoutMs: deadline(deliveryScheduleMs(relay)),
  });
  const claimed = await rows(relay.db, "SELECT event_id FROM events WHERE event_id IN (?, ?) AND body_ref IS NOT NULL", matching, missing);
  assert.equal(claimed.length, 2, "both large bodies were claim-checked");
  const [hit, ...more] = callsFor("/big", matching);
  assert.equal(more.length, 0, "the large event arrived once");
  assert.equal(hit.body, JSON.stringify(large), "whole and byte-exact");
  assert.equal(callsFor("/eu", matching).length, 0);
  assert.equal(callsFor("/big", small).length, 1);
  assert.equal(await status(missing), "filtered", "the large body that matches no filter is filtered");
  assert.equal(callsFor("/big", missing).length + callsFor("/eu", missing).length, 0);
  const story = await admin.get(`events/${matching}`);
  assert.deepEqual(story.data.routes_unmatched, ["eu"], JSON.stringify(story.data.routes_unmatched));
});
