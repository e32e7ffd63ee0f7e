// Destination credentials (DESIGN §3, issue 34): `auth` sends the secret
// DESTINATION_SECRET_<NAME> as a bearer token, as basic credentials or in
// a header of its own, to a real loopback destination that checks it;
// DESTINATION_SIGNING_SECRET_<NAME> signs that destination's calls instead
// of DOWNSTREAM_SIGNING_SECRET; a 401 from a destination with auth opens
// its breaker and parks its events (cause auth), and they drain once the
// secret is fixed by a reconfiguration; no secret of this issue reaches a
// log line, an admin answer, a stored envelope or the stats.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { checkHmacSha256, secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "creds-source-secret";
const SHARED_KEY = "creds-shared-signing-key";
const OWN_KEY = "creds-own-signing-key-for-keyed";
const BEARER = "bearer-tok-7f3a9c";
const BASIC = "svc-user:pa55-w0rd-e1";
const API_KEY = "api-key-91b2c4d";
const REFUSER = "refuser-tok-5d6e";
const LOCK_GOOD = "lock-good-tok-22aa";
const LOCK_BAD = "lock-stale-tok-00ff";
const basicValue = `Basic ${Buffer.from(BASIC).toString("base64")}`;
const SECRETS = [SOURCE_SECRET, SHARED_KEY, OWN_KEY, BEARER, BASIC, API_KEY, REFUSER, LOCK_GOOD, LOCK_BAD, basicValue.slice(6)];

let downstream, relay;
const refuse = { status: 401 };
before(async () => {
  downstream = await startDownstream({
    "/bearer": (r) => (r.headers.authorization === `Bearer ${BEARER}` ? { status: 200 } : refuse),
    "/basic": (r) => (r.headers.authorization === basicValue ? { status: 200 } : refuse),
    "/header": (r) => (r.headers["x-api-key"] === API_KEY && !r.headers.authorization ? { status: 200 } : refuse),
    "/keyed": () => ({ status: 200 }),
    "/refuser": (r) => (r.headers.authorization === `Bearer ${REFUSER}` ? { status: 422 } : refuse),
    "/locked": (r) => (r.headers.authorization === `Bearer ${LOCK_GOOD}` ? { status: 200 } : refuse),
  });
  const url = (p) => downstream.url(p);
  const destinations = {
    bearer: { url: url("/bearer"), auth: "bearer" },
    basic: { url: url("/basic"), auth: "basic" },
    header: { url: url("/header"), auth: "header:X-Api-Key" },
    keyed: { url: url("/keyed") },
    refuser: { url: url("/refuser"), auth: "bearer" },
    locked: { url: url("/locked"), auth: "bearer" },
  };
  const sources = {
    creds: { scheme: "hmac-sha256", routes: ["bearer", "basic", "header", "keyed", "refuser"].map((to) => ({ to })) },
    lock: { scheme: "hmac-sha256", routes: [{ to: "locked" }] },
  };
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify(sources),
      DESTINATIONS: JSON.stringify(destinations),
      [secretNameFor("creds")]: SOURCE_SECRET,
      [secretNameFor("lock")]: SOURCE_SECRET,
      DOWNSTREAM_SIGNING_SECRET: SHARED_KEY,
      DESTINATION_SIGNING_SECRET_KEYED: OWN_KEY,
      DESTINATION_SECRET_BEARER: BEARER,
      DESTINATION_SECRET_BASIC: BASIC,
      DESTINATION_SECRET_HEADER: API_KEY,
      DESTINATION_SECRET_REFUSER: REFUSER,
      DESTINATION_SECRET_LOCKED: LOCK_BAD,
      RETRY_DELAYS_S: "0,0,0,0,0",
      BREAKER_COOLDOWN_S: "1",
      DELIVERY_TIMEOUT_MS: "2000",
    },
  });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function send(source, payload, operationId) {
  const body = JSON.stringify(payload);
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SOURCE_SECRET, operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}
const deliveries = async (id) => Object.fromEntries((await rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ?", id)).map((d) => [d.destination, d]));
const callsFor = (path, id) => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === id);

test("bearer, basic and header credentials reach their destinations, and a destination's own key signs its calls", async () => {
  const id = await send("creds", { n: 1 }, "creds-1");
  await waitFor(async () => {
    const d = await deliveries(id);
    return ["bearer", "basic", "header", "keyed"].every((n) => d[n]?.state === "delivered") && d.refuser?.state === "dead_lettered";
  }, { what: "four deliveries delivered, the refused one dead-lettered", timeoutMs: 30_000 });
  for (const path of ["/bearer", "/basic", "/header", "/keyed"]) {
    const calls = callsFor(path, id);
    assert.equal(calls.length, 1, `${path} called once`);
    assert.equal(calls[0].status, 200, `${path} accepted the credential`);
  }
  assert.equal(callsFor("/keyed", id)[0].headers.authorization, undefined, "no auth, no credential header");
  // The shared key signs the destinations without a key of their own ...
  const bearer = callsFor("/bearer", id)[0];
  assert.deepEqual(checkHmacSha256(bearer.headers, bearer.body, SHARED_KEY, { toleranceS: 60 }), { ok: true });
  // ... and only its own key verifies the keyed destination's call.
  const keyed = callsFor("/keyed", id)[0];
  assert.deepEqual(checkHmacSha256(keyed.headers, keyed.body, OWN_KEY, { toleranceS: 60 }), { ok: true });
  assert.equal(checkHmacSha256(keyed.headers, keyed.body, SHARED_KEY, { toleranceS: 60 }).ok, false, "the shared key does not verify it");
  // A 4xx other than 401/403 from a destination with auth is still poison.
  await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", id)).length === 1, { what: "the 422's dead letter" });
});

test("a 401 parks the destination's events (cause auth), none dead-lettered, and they drain once the secret is fixed", async () => {
  const ids = [];
  for (let n = 0; n < 3; n++) ids.push(await send("lock", { n }, `lock-${n}`));
  await waitFor(async () => {
    const parked = await rows(relay.db, "SELECT park_cause, last_error FROM deliveries WHERE destination = 'locked' AND state = 'parked'");
    return parked.length === 3 && parked.every((p) => p.park_cause === "auth" && p.last_error === "AUTH_EXPIRED");
  }, { what: "three deliveries parked with cause auth", timeoutMs: 30_000 });
  const [breaker] = await rows(relay.db, "SELECT state_name FROM breakers WHERE destination = 'locked'");
  assert.notEqual(breaker?.state_name, "CLOSED", "the 401 opened the breaker at once");
  // The drain keeps probing with the stale credential: still refused, still parked.
  await waitFor(() => downstream.hits("/locked").length >= 3, { what: "the drain's probes", timeoutMs: 20_000 });
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE destination = 'locked'"))[0].n, 0);
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE destination = 'locked' AND state = 'parked'"))[0].n, 3);

  // The fix is a reconfiguration: the relay restarts with the right secret over the same D1.
  await relay.reconfigure({ DESTINATION_SECRET_LOCKED: LOCK_GOOD });
  // A restart drops local queues (production's are durable): the drain's
  // chain is taken for lost and resumed from D1 by the periodic check.
  await relay.db.prepare("UPDATE drains SET next_step_at = 0 WHERE destination = 'locked'").run();
  const worker = await relay.mf.getWorker("hookrelay");
  await worker.scheduled({ cron: "*/1 * * * *" });
  await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE destination = 'locked' AND state = 'delivered'"))[0].n === 3, {
    what: "the backlog drained with the fixed credential",
    timeoutMs: 30_000,
  });
  for (const id of ids) {
    const ok = callsFor("/locked", id).filter((r) => r.status === 200);
    assert.equal(ok.length, 1, `${id} delivered once`);
  }
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letters WHERE destination = 'locked'"))[0].n, 0, "nothing dead-lettered");
});

test("no secret of a destination appears in a log line, an admin answer, a stored envelope or the stats", async () => {
  const admin = adminClient(relay, SECRETS);
  const [event] = await rows(relay.db, "SELECT event_id FROM events WHERE source = 'creds' LIMIT 1");
  const answers = [
    await admin.get(`events/${event.event_id}`),
    await admin.get("events?source=lock"),
    await admin.get("webhook-dlq"),
    await admin.get("webhook-dlq/stats"),
    await admin.get("audit"),
  ];
  for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.json));
  const [entry] = answers[2].data.items;
  assert.ok(entry, "the refused delivery's entry");
  assert.equal((await admin.get(`webhook-dlq/${entry.id}`)).status, 200);
  const health = await (await relay.fetch("/healthz")).text();
  const stored = await rows(relay.db, "SELECT envelope FROM dead_letters");
  const steps = await rows(relay.db, "SELECT detail FROM event_steps");
  const attempts = await rows(relay.db, "SELECT message FROM attempts");
  const everything = [health, ...relay.logs, ...stored.map((r) => r.envelope), ...steps.map((r) => r.detail), ...attempts.map((r) => r.message)].join("\n");
  assert.ok(relay.logs.length > 0 && stored.length > 0);
  for (const secret of SECRETS) assert.ok(!everything.includes(secret), `a secret (${secret.slice(0, 4)}…) appeared in the output`);
});
