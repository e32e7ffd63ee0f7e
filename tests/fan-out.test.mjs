// Fan-out (DESIGN §3): one event to several destinations, each delivery
// with its own attempts, retries, parking and dead letter, at real
// loopback destinations configured with DESTINATIONS and routes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";
import { adminClient } from "./support/admin.mjs";

let relay, downstream, env;
let cUp = false;
let bUp = false;
const SECRETS_BY_SOURCE = { "fan-ab": "fan-ab-secret", mixed: "mixed-secret", three: "three-secret", refused: "refused-secret" };

before(async () => {
  downstream = await startDownstream({
    "/a": () => ({ status: 200 }),
    "/b": () => ({ status: bUp ? 200 : 500 }),
    // Mixed: the first call for each event answers 503, the next 200.
    "/m-a": (req) => (downstream.hits("/m-a").filter((r) => r.headers["x-operation-id"] === req.headers["x-operation-id"]).length === 1 ? { status: 503 } : { status: 200 }),
    "/m-b": () => ({ status: 400 }),
    "/p-a": () => ({ status: 400 }),
    "/p-b": () => ({ status: 422 }),
    "/t-a": () => ({ status: 200 }),
    "/t-b": () => ({ status: 200 }),
    "/t-c": () => ({ status: cUp ? 200 : 500 }),
  });
  const destinations = {};
  for (const [name, path] of [["a", "/a"], ["b", "/b"], ["m-a", "/m-a"], ["m-b", "/m-b"], ["t-a", "/t-a"], ["t-b", "/t-b"], ["t-c", "/t-c"], ["p-a", "/p-a"], ["p-b", "/p-b"]]) {
    destinations[name] = { url: downstream.url(path) };
  }
  const sources = {
    "fan-ab": { scheme: "hmac-sha256", routes: [{ to: "a" }, { to: "b" }] },
    mixed: { scheme: "hmac-sha256", routes: [{ to: "m-a" }, { to: "m-b" }] },
    three: { scheme: "hmac-sha256", routes: [{ to: "t-a" }, { to: "t-b" }, { to: "t-c" }] },
    refused: { scheme: "hmac-sha256", routes: [{ to: "p-a" }, { to: "p-b" }] },
  };
  const secrets = Object.fromEntries(Object.entries(SECRETS_BY_SOURCE).map(([s, v]) => [secretNameFor(s), v]));
  env = {
    SOURCES: JSON.stringify(sources),
    DESTINATIONS: JSON.stringify(destinations),
    ...secrets,
    DOWNSTREAM_SIGNING_SECRET: "fan-out-signing",
    RETRY_DELAYS_S: "0,0,0,0,0",
    DELIVERY_TIMEOUT_MS: "2000",
    // The retry tests keep the breaker out of the way; the outage test
    // restarts the relay with one that opens.
    BREAKER_FAILURE_THRESHOLD: "1000",
  };
  relay = await startRelay({ vars: env });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function send(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRETS_BY_SOURCE[source], operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}

const deliveries = async (id) => Object.fromEntries((await rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ?", id)).map((d) => [d.destination, d]));
const callsFor = (path, id) => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === id);
/** The dead letters of an event, each with the destination its original (a delivery message) names. */
const deadLetters = async (id) =>
  (await rows(relay.db, "SELECT error_code, envelope FROM dead_letters WHERE event_id = ?", id)).map((r) => {
    const e = JSON.parse(r.envelope);
    return { code: r.error_code, destination: e.identity?.destination ?? e.input?.original?.destination };
  });

test("fan-out with one failure: A is called once per event while B spends its own whole budget and is dead-lettered alone", async () => {
  const ids = [];
  for (let n = 0; n < 3; n++) ids.push(await send("fan-ab", { n }, `fan-${n}`));
  for (const id of ids) {
    await waitFor(async () => (await deliveries(id)).b?.attempts === 6, { what: `B's six attempts for ${id}`, timeoutMs: 60_000 });
    await waitFor(async () => (await deadLetters(id)).length === 1, { what: `B's dead letter for ${id}`, timeoutMs: 30_000 });
  }
  for (const id of ids) {
    const d = await deliveries(id);
    assert.equal(d.a.state, "delivered");
    assert.equal(d.a.attempts, 1);
    assert.equal(callsFor("/a", id).length, 1, "A got exactly one call per event, whatever B did");
    assert.equal(callsFor("/b", id).length, 6, "B got its own full budget: attempts 1..6");
    assert.equal(d.b.last_error, "UPSTREAM_5XX");
    const dl = await deadLetters(id);
    assert.equal(dl.length, 1, "one dead letter, B's; none for A");
    assert.equal(dl[0].destination, "b");
    const attempts = await rows(relay.db, "SELECT destination, count(*) AS n FROM attempts WHERE event_id = ? GROUP BY destination", id);
    assert.deepEqual(attempts.map((r) => [r.destination, r.n]), [["b", 6]], "only B's failures are recorded, each with its destination");
  }
});

test("mixed failure: B's 400 is handed off at once while A still retries its 503 and is delivered once", async () => {
  const id = await send("mixed", { m: 1 }, "mixed-1");
  await waitFor(async () => (await deliveries(id))["m-a"]?.state === "delivered", { what: "A delivered", timeoutMs: 30_000 });
  await waitFor(async () => (await deliveries(id))["m-b"]?.state === "dead_lettered", { what: "B dead-lettered", timeoutMs: 30_000 });
  await waitFor(async () => (await deadLetters(id)).length === 1, { what: "B's dead letter", timeoutMs: 30_000 });
  const d = await deliveries(id);
  assert.equal(callsFor("/m-b", id).length, 1, "B: one call, then the DLQ at once");
  assert.equal(callsFor("/m-a", id).length, 2, "A: its 503, then its one success");
  assert.equal(callsFor("/m-a", id).filter((r) => r.status === 200).length, 1);
  assert.equal(d["m-a"].attempts, 2);
  assert.equal(d["m-b"].attempts, 1);
  const [dl] = await deadLetters(id);
  assert.equal(dl.destination, "m-b");
  const [event] = await rows(relay.db, "SELECT delivery_status FROM events WHERE event_id = ?", id);
  assert.equal(event.delivery_status, "failed", "the summary: one dead-lettered, none pending or parked");
});

test("after B is fixed, a replay of B's entry reaches B once and A gets no second call; an entry whose destination is gone is refused with 409 and nothing changes", async () => {
  const admin = adminClient(relay);
  const ids = [];
  for (let n = 0; n < 2; n++) ids.push(await send("fan-ab", { replay: n }, `fan-replay-${n}`));
  for (const id of ids) await waitFor(async () => (await deadLetters(id)).length === 1, { what: `B's dead letter for ${id}`, timeoutMs: 60_000 });
  const entryOf = async (id) => (await rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ?", id))[0].id;
  bUp = true;
  const replayed = await admin.post(`webhook-dlq/${await entryOf(ids[0])}/replay`, { reason: "B is fixed" });
  assert.equal(replayed.status, 200, JSON.stringify(replayed.json));
  assert.equal(callsFor("/b", ids[0]).filter((r) => r.status === 200).length, 1, "B: one successful call, the replay's");
  assert.equal(callsFor("/a", ids[0]).length, 1, "A: no second call");
  assert.equal((await deliveries(ids[0])).b.state, "delivered");
  assert.equal((await deliveries(ids[0])).a.state, "delivered");
  // B leaves the configuration: its entry is refused, and nothing changes.
  const sources = { "fan-ab": { scheme: "hmac-sha256", routes: [{ to: "a" }] }, mixed: { scheme: "hmac-sha256", routes: [{ to: "m-a" }] }, three: { scheme: "hmac-sha256", routes: [{ to: "t-a" }] } };
  const destinations = JSON.parse(env.DESTINATIONS);
  delete destinations.b;
  await relay.reconfigure({ SOURCES: JSON.stringify(sources), DESTINATIONS: JSON.stringify(destinations) });
  const before = { calls: callsFor("/b", ids[1]).length, row: (await deliveries(ids[1])).b };
  const refused = await admin.post(`webhook-dlq/${await entryOf(ids[1])}/replay`, { reason: "try the gone destination" });
  assert.equal(refused.status, 409, JSON.stringify(refused.json));
  assert.match(refused.error.message, /destination 'b' is not configured/);
  assert.equal(callsFor("/b", ids[1]).length, before.calls, "no call");
  assert.deepEqual((await deliveries(ids[1])).b, before.row, "the delivery is unchanged");
  await relay.reconfigure({});
  bUp = false;
});

test("an outage on one destination of three: the other two deliver on time, the third parks and drains on recovery", async () => {
  await relay.reconfigure({ BREAKER_FAILURE_THRESHOLD: "3", BREAKER_COOLDOWN_S: "1" });
  const ids = [];
  for (let n = 0; n < 8; n++) ids.push(await send("three", { n }, `three-${n}`));
  for (const id of ids) {
    await waitFor(async () => {
      const d = await deliveries(id);
      return d["t-a"]?.state === "delivered" && d["t-b"]?.state === "delivered";
    }, { what: `A and B delivered for ${id}`, timeoutMs: 20_000 });
  }
  await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE destination = 't-c' AND state = 'parked'"))[0].n >= 1, { what: "C parked", timeoutMs: 30_000 });
  const [breaker] = await rows(relay.db, "SELECT * FROM breakers WHERE destination = 't-c'");
  assert.ok(breaker, "C's breaker is keyed by its name");
  for (const id of ids) {
    assert.equal(callsFor("/t-a", id).length, 1);
    assert.equal(callsFor("/t-b", id).length, 1);
  }
  cUp = true;
  for (const id of ids) {
    await waitFor(async () => (await deliveries(id))["t-c"]?.state === "delivered", { what: `C drained for ${id}`, timeoutMs: 60_000 });
  }
  for (const id of ids) {
    assert.equal(callsFor("/t-c", id).filter((r) => r.status === 200).length, 1, "C: one success per event");
    assert.equal(callsFor("/t-a", id).length, 1, "the drain never calls A again");
    assert.equal(callsFor("/t-b", id).length, 1);
    const [event] = await rows(relay.db, "SELECT delivery_status FROM events WHERE event_id = ?", id);
    assert.equal(event.delivery_status, "delivered");
  }
});

test("both destinations refusing one event at the first attempt make two entries, each replaying its own destination", async () => {
  const id = await send("refused", { order: "refused-twice" }, "op-refused-1");
  const entries = await waitFor(async () => {
    const got = await rows(relay.db, "SELECT id, destination, error_code FROM dead_letters WHERE event_id = ? ORDER BY destination", id);
    return got.length === 2 && got;
  }, { what: "an entry per destination", timeoutMs: 20_000 });
  assert.deepEqual(entries.map((e) => [e.destination, e.error_code]), [["p-a", "UPSTREAM_4XX"], ["p-b", "UPSTREAM_4XX"]]);
  assert.notEqual(entries[0].id, entries[1].id);
  await waitFor(async () => Object.values(await deliveries(id)).map((d) => d.state).join() === "dead_lettered,dead_lettered", { what: "both rows closed", timeoutMs: 20_000 });
  const admin = adminClient(relay);
  for (const e of entries) {
    const before = callsFor(`/${e.destination}`, id).length;
    const replay = await admin.post(`webhook-dlq/${e.id}/replay`, { reason: "check each entry replays its own destination" });
    assert.equal(replay.status, 200, JSON.stringify(replay.json));
    assert.equal(callsFor(`/${e.destination}`, id).length, before + 1, `${e.destination} was called by its own entry's replay`);
  }
});
