// Redirects are not followed (DESIGN §3, issue 40 item 4): a destination
// that answers 301, 302, 307 or 308 with a Location on another origin gets
// its failure UPSTREAM_REDIRECT naming the Location's host (never its path
// or query), nothing reaches the Location (no body, no signature, no
// credential, no bodiless GET whose 2xx would count as a delivery), the
// breaker opens at once and its deliveries park with cause redirect, the
// story and the stats say so, and once the destination's URL is fixed the
// backlog drains, each event once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { deadline, deliveryScheduleMs, probeMs } from "./support/schedule.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const SOURCE_SECRET = "redirect-source-secret";
const SIGNING_KEY = "redirect-signing-key";
const API_KEY = "redirect-api-key-3c9d";
const BEARER = "redirect-bearer-77e1";
const LOCATION_TOKEN = "loc-token-5a5a";
const STATUSES = [301, 302, 307, 308];
const SECRETS = [SOURCE_SECRET, SIGNING_KEY, API_KEY, BEARER, LOCATION_TOKEN];

let downstream, elsewhere, relay, admin;
const name = (status) => `moved${status}`;
const destinationsAt = (pathOf) =>
  Object.fromEntries(
    STATUSES.map((s) => {
      const auth = s === 302 ? { auth: "header:X-Api-Key" } : s === 307 ? { auth: "bearer" } : {};
      return [name(s), { url: downstream.url(pathOf(s)), ...auth }];
    }),
  );

before(async () => {
  // Another origin (its own port), answering 200 to anything: what the
  // relay used to follow to, and count as delivered.
  elsewhere = await startDownstream({});
  const moved = (status) => () => ({ status, headers: { location: elsewhere.url(`/landing/${status}?token=${LOCATION_TOKEN}`) } });
  downstream = await startDownstream(Object.fromEntries(STATUSES.map((s) => [`/old/${s}`, moved(s)])));
  const sources = { redir: { scheme: "hmac-sha256", routes: STATUSES.map((s) => ({ to: name(s) })) } };
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify(sources),
      DESTINATIONS: JSON.stringify(destinationsAt((s) => `/old/${s}`)),
      [secretNameFor("redir")]: SOURCE_SECRET,
      DOWNSTREAM_SIGNING_SECRET: SIGNING_KEY,
      DESTINATION_SECRET_MOVED302: API_KEY,
      DESTINATION_SECRET_MOVED307: BEARER,
      RETRY_DELAYS_S: "0,0,0,0,0",
      BREAKER_COOLDOWN_S: "1",
      DELIVERY_TIMEOUT_MS: "2000",
    },
  });
  admin = adminClient(relay, SECRETS);
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
  await elsewhere?.close();
});

async function send(n) {
  const body = JSON.stringify({ n });
  const res = await relay.fetch("/webhooks/redir", { method: "POST", body, headers: hmacHeaders(body, { secret: SOURCE_SECRET, operationId: `redir-${n}` }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}
const deliveries = (id) => rows(relay.db, "SELECT * FROM deliveries WHERE event_id = ?", id);
const ids = [];

test("a 301, 302, 307 or 308 is not followed: nothing reaches the Location, each delivery parks with cause redirect behind an open breaker", async () => {
  ids.push(await send(1), await send(2));
  // Each delivery's first attempt decides it: parked, or (a followed
  // redirect) delivered.
  const settled = await waitFor(
    async () => {
      const all = (await Promise.all(ids.map(deliveries))).flat();
      return all.length === ids.length * STATUSES.length && all.every((d) => !["pending", "delivering"].includes(d.state)) && all;
    },
    { what: "every delivery's first attempt", timeoutMs: deadline(deliveryScheduleMs(relay)) },
  );
  assert.deepEqual(elsewhere.requests.map((r) => [r.method, r.path]), [], "nothing reached the Location");
  for (const d of settled) {
    assert.deepEqual([d.destination, d.state, d.park_cause, d.last_error], [d.destination, "parked", "redirect", "UPSTREAM_REDIRECT"]);
  }
  for (const s of STATUSES) {
    const [b] = await rows(relay.db, "SELECT state_name, state FROM breakers WHERE destination = ?", name(s));
    assert.notEqual(b?.state_name ?? "CLOSED", "CLOSED", `${name(s)}'s first redirect opened its breaker`);
    assert.match(b.state, /UPSTREAM_REDIRECT/);
    assert.ok(downstream.hits(`/old/${s}`).every((r) => r.method === "POST"), "only POSTs reached the destination");
  }
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letters"))[0].n, 0, "nothing dead-lettered");
});

test("the story names the Location's host and no more, and the stats show the open breakers and the parked deliveries", async () => {
  const stories = await Promise.all(ids.map(async (id) => (await admin.get(`events/${id}`)).data));
  const host = new URL(elsewhere.url("/")).origin;
  const told = new Set();
  for (const { steps, deliveries: listed, attempts } of stories) {
    assert.deepEqual(listed.map((d) => [d.destination, d.state, d.park_cause]).sort(), STATUSES.map((s) => [name(s), "parked", "redirect"]));
    const parks = steps.filter((s) => s.step === "parked");
    assert.equal(parks.length, STATUSES.length, JSON.stringify(steps));
    for (const p of parks) {
      assert.equal(p.code, "UPSTREAM_REDIRECT");
      assert.match(p.detail, /answered a redirect \(3xx\), which is not followed; set its url/);
      assert.ok(!p.detail.includes("/landing") && !p.detail.includes(LOCATION_TOKEN), p.detail);
      // The park of a call that met the redirect tells where it pointed
      // (a later one, parked behind the open breaker, made no call).
      if (p.detail.includes("downstream answered")) {
        assert.ok(p.detail.includes(`a redirect to ${host})`), p.detail);
        told.add(p.detail.match(/moved\d+/)[0]);
      }
    }
    for (const a of attempts) assert.ok(!a.message.includes(LOCATION_TOKEN), a.message);
  }
  assert.deepEqual([...told].sort(), STATUSES.map(name), "each destination's first redirect is told with its Location's host");
  const stats = (await admin.get("webhook-dlq/stats")).data;
  const by = Object.fromEntries(stats.destinations.map((d) => [d.destination, d]));
  for (const s of STATUSES) {
    assert.notEqual(by[name(s)].breaker?.state ?? "CLOSED", "CLOSED", JSON.stringify(by[name(s)]));
    assert.equal(by[name(s)].parked.count, ids.length, JSON.stringify(by[name(s)]));
  }
});

test("once each destination's URL is fixed, the backlog drains, each event once, and no secret or Location token was written anywhere", async () => {
  // The drain keeps probing the old URL meanwhile: still a redirect, still parked.
  await waitFor(() => STATUSES.every((s) => downstream.hits(`/old/${s}`).length >= ids.length + 1), { what: "a drain probe per destination", timeoutMs: deadline(probeMs(relay)) });
  assert.equal(elsewhere.requests.length, 0, "no probe followed the redirect either");
  await relay.reconfigure({ DESTINATIONS: JSON.stringify(destinationsAt((s) => `/new/${s}`)) });
  // A restart drops local queues (production's are durable): the drains'
  // chains are taken for lost and resumed from D1 by the periodic check.
  await relay.db.prepare("UPDATE drains SET next_step_at = 0").run();
  const worker = await relay.mf.getWorker("hookrelay");
  await worker.scheduled({ cron: "*/1 * * * *" });
  await waitFor(
    async () => (await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'"))[0].n === ids.length * STATUSES.length,
    { what: "the backlog drained to the fixed URLs", timeoutMs: deadline(probeMs(relay), probeMs(relay)) },
  );
  for (const s of STATUSES) {
    for (const id of ids) {
      const calls = downstream.hits(`/new/${s}`).filter((r) => r.headers["x-operation-id"] === id);
      assert.equal(calls.length, 1, `${id} delivered once to ${name(s)}`);
      assert.equal(calls[0].method, "POST");
    }
  }
  assert.equal(elsewhere.requests.length, 0);
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letters"))[0].n, 0, "nothing dead-lettered");
  const steps = await rows(relay.db, "SELECT detail FROM event_steps");
  const attempts = await rows(relay.db, "SELECT message FROM attempts");
  const everything = [...relay.logs, ...steps.map((r) => r.detail), ...attempts.map((r) => r.message)].join("\n");
  for (const secret of SECRETS) assert.ok(!everything.includes(secret), `a secret (${secret.slice(0, 4)}…) appeared in the output`);
});
