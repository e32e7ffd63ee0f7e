// What an operator sees of pull destinations (DESIGN §3 "Pull destinations",
// §5 counters and alarms; issue 43), end to end in Miniflare:
// - the stats (`GET /api/v1/admin/webhook-dlq/stats`, served by the DLQ
//   worker, which asks the relay which destinations pull) show per pull
//   destination its deliveries waiting, due and leased and its oldest due
//   age: one stored but never pulled, and one with nothing stored, too; a
//   URL destination is not among them;
// - when the relay cannot answer that (here the DLQ worker's internal secret
//   is not the relay's), the stats still answer the rest, with the pull
//   part an explicit error, never zeros;
// - the counters move: `pull` and `pull_leased` for a pull that leased (an
//   empty pull counts nothing), `pull_ack` by each state an ack answered,
//   and `pull_lease_expired` for a lease the periodic check settled;
// - the `parked_oldest:{pull destination}` alarm fires for a delivery due and
//   unpulled longer than ALERT_PARKED_OLDEST, counted from when it became
//   due (not while it waits out a retry's delay), and resolves once pulled.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient, token } from "./support/admin.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";
import { baseEnv, hookrelay } from "./support/cli.mjs";

const SECRET = "pull-figures-source-secret";
// Each test has destinations of its own, so no test reads another's rows.
const SOURCES = {
  figures: { scheme: "hmac-sha256", routes: [{ to: "tally" }, { to: "quiet" }, { to: "web" }] },
  counts: { scheme: "hmac-sha256", routes: [{ to: "counted" }] },
  alarm: { scheme: "hmac-sha256", routes: [{ to: "stale" }] },
};
const DESTINATIONS = {
  tally: { pull: { lease_s: 30 } },
  quiet: { pull: {} },
  empty: { pull: {} },
  counted: { pull: {} },
  stale: { pull: {} },
};

let relay, admin, downstream;
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

async function start() {
  if (relay) return;
  downstream = await startDownstream({ "/web": () => ({ status: 200 }) });
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify(SOURCES),
      DESTINATIONS: JSON.stringify({ ...DESTINATIONS, web: { url: downstream.url("/web") } }),
      ...Object.fromEntries(Object.keys(SOURCES).map((s) => [secretNameFor(s), SECRET])),
      RETRY_DELAYS_S: "30,60,120,240,480",
      ALERT_PARKED_OLDEST: "2s",
    },
  });
  admin = adminClient(relay);
}

async function send(source, tag) {
  const body = JSON.stringify({ tag });
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `pull-figures-${tag}-${Math.random()}` }) });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).event_id;
}

/** Sends one event per tag from `source` and waits until each of its deliveries to `destinations` is stored. */
async function stored(source, destinations, tags) {
  const ids = [];
  for (const tag of tags) ids.push(await send(source, tag));
  await waitFor(async () => {
    const [{ n }] = await rows(relay.db, "SELECT count(*) AS n FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?)) AND destination IN (SELECT value FROM json_each(?))", JSON.stringify(ids), JSON.stringify(destinations));
    return n === ids.length * destinations.length;
  }, { what: `the deliveries of ${source} stored` });
  return ids;
}

async function call(path, body) {
  const res = await relay.fetch(`/api/v1/pull/${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token()}` }, body: JSON.stringify(body) });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json.data;
}
const pull = (destination, max = 100) => call(destination, { max });
const ack = async (destination, results) => (await call(`${destination}/ack`, { results })).results;
const setDue = (id, destination, dueAt) => relay.db.prepare("UPDATE deliveries SET due_at = ? WHERE event_id = ? AND destination = ?").bind(dueAt, id, destination).run();

async function stats() {
  const res = await admin.get("webhook-dlq/stats");
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return res.data;
}
const pullLine = (s, destination) => s.pull.destinations.find((d) => d.destination === destination);

test("the stats show per pull destination its waiting, due and leased deliveries and its oldest due age, a never-pulled one included", async () => {
  await start();
  const [first] = await stored("figures", ["tally", "quiet"], ["one", "two"]);
  // quiet's first delivery has been due, unpulled, for two minutes.
  await setDue(first, "quiet", Date.now() - 120_000);

  const [leased] = (await pull("tally", 1)).items;
  assert.ok(leased, "tally's oldest due delivery is leased");
  let s = await stats();
  assert.deepEqual(s.pull.destinations.map((d) => d.destination), ["counted", "empty", "quiet", "stale", "tally"], "every pull destination by name, and no URL destination");
  assert.deepEqual(pullLine(s, "empty"), { destination: "empty", waiting: 0, due: 0, leased: 0, oldest_due_age_s: null }, "nothing stored: zeros, not an absence");
  const quiet = pullLine(s, "quiet");
  assert.deepEqual([quiet.waiting, quiet.due, quiet.leased], [2, 2, 0], "stored, never pulled");
  assert.ok(quiet.oldest_due_age_s >= 120 && quiet.oldest_due_age_s < 180, `due two minutes ago: ${quiet.oldest_due_age_s} s`);
  const tally = pullLine(s, "tally");
  assert.deepEqual([tally.waiting, tally.due, tally.leased], [1, 1, 1], JSON.stringify(tally));
  assert.ok(tally.oldest_due_age_s >= 0 && tally.oldest_due_age_s < 60, JSON.stringify(tally));
  // `hookrelay status` shows the same figures, a row per pull destination.
  const status = await hookrelay(["status"], { env: baseEnv({ HOOKRELAY_URL: String(relay.url).replace(/\/$/, ""), HOOKRELAY_TOKEN: token() }) });
  assert.equal(status.code, 0, status.stderr);
  const section = status.stdout.split("\npull destinations\n")[1] ?? "";
  assert.match(section, /DESTINATION\s+WAITING\s+DUE\s+LEASED\s+OLDEST DUE/, status.stdout);
  assert.match(section, /quiet\s+2\s+2\s+0\s+2m/, status.stdout);
  assert.match(section, /tally\s+1\s+1\s+1\s/, status.stdout);

  // A failed ack: waiting again, but not due until the first retry delay.
  const [failed] = await ack("tally", [{ delivery_id: leased.delivery_id, lease_id: leased.lease_id, status: 503 }]);
  assert.equal(failed.state, "pending");
  s = await stats();
  assert.deepEqual(pullLine(s, "tally"), { ...pullLine(s, "tally"), waiting: 2, due: 1, leased: 0 }, "one waits out its delay, one is due");

  // Everything pulled and delivered: zeros again, and no oldest due age.
  await setDue(leased.delivery_id, "tally", Date.now() - 1);
  for (const destination of ["tally", "quiet"]) {
    const { items } = await pull(destination);
    assert.equal(items.length, 2, destination);
    await ack(destination, items.map((i) => ({ delivery_id: i.delivery_id, lease_id: i.lease_id, status: 200 })));
  }
  s = await stats();
  for (const destination of ["tally", "quiet"]) {
    assert.deepEqual(pullLine(s, destination), { destination, waiting: 0, due: 0, leased: 0, oldest_due_age_s: null });
  }
});

test("when the relay cannot give the pull figures, the stats answer the rest and name the pull part's error, never zeros", async () => {
  // The demo's configuration (its pull destination demo-pull included).
  const other = await startRelay({
    // The DLQ worker signs its internal calls with a secret the relay does not hold.
    dlqVars: { RELAY_INTERNAL_SECRET: "not-the-relays-internal-secret" },
  });
  try {
    const res = await adminClient(other).get("webhook-dlq/stats");
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(typeof res.data.depth, "number", "the rest of the stats answer");
    assert.ok(Array.isArray(res.data.destinations));
    assert.equal(res.data.pull.destinations, undefined, "no figures in place of the truth");
    assert.equal(typeof res.data.pull.error.code, "string", JSON.stringify(res.data.pull));
    assert.match(res.data.pull.error.message, /the relay .* did not give their figures: .*DLQ worker/, JSON.stringify(res.data.pull));
  } finally {
    await other.dispose();
  }
});

test("a relay that does not answer the pull figures never hangs the stats: they answer without them, naming the wait", async () => {
  // The demo's configuration; the relay's figures route answers only after 30 s.
  const hung = await startRelay({ relayVars: { HOOKRELAY_TEST_FAULTS: "pull_figures_hang" } });
  try {
    const res = await adminClient(hung).get("webhook-dlq/stats");
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(typeof res.data.depth, "number", "the rest of the stats answer");
    assert.equal(res.data.pull.destinations, undefined, JSON.stringify(res.data.pull));
    assert.match(res.data.pull.error.message, /did not answer the pull figures call within 5000 ms/, JSON.stringify(res.data.pull));
  } finally {
    await hung.dispose();
  }
});

/** Counter totals: by metric (`counters`) and by metric and label (`counters_by_label`). */
async function counters() {
  const s = await stats();
  return { ...s.counters, ...s.counters_by_label };
}
const moved = (before, now) => Object.fromEntries(Object.keys(now).filter((k) => k.startsWith("pull")).map((k) => [k, now[k] - (before[k] ?? 0)]).filter(([, n]) => n !== 0));

test("pulls, pulled deliveries, acks by state and pull leases expired are counted", async () => {
  await start();
  const before = await counters();
  const [a, b, c] = await stored("counts", ["counted"], ["a", "b", "c"]);
  const items = (await pull("counted")).items;
  assert.equal(items.length, 3);
  const lease = Object.fromEntries(items.map((i) => [i.delivery_id, i.lease_id]));
  assert.deepEqual((await pull("counted")).items, [], "an empty pull, counted nowhere");

  // c's lease ends with no ack; its late ack changes nothing (lease_expired).
  await relay.db.prepare("UPDATE deliveries SET lease_until = claimed_at + 1 WHERE event_id = ? AND destination = 'counted'").bind(c).run();
  const answered = await ack("counted", [
    { delivery_id: a, lease_id: lease[a], status: 200 },
    { delivery_id: b, lease_id: lease[b], status: 500 },
    { delivery_id: c, lease_id: lease[c], status: 500 },
    { delivery_id: "evt_not_counted_here", lease_id: "none", status: 200 },
  ]);
  assert.deepEqual(answered.map((r) => r.state), ["delivered", "pending", "lease_expired", "unknown"]);
  // b fails five more times: pending four times, then dead-lettered at its sixth.
  for (let attempt = 2; attempt <= 6; attempt += 1) {
    await setDue(b, "counted", Date.now() - 1);
    const item = (await pull("counted")).items.find((i) => i.delivery_id === b);
    assert.equal(item?.attempt, attempt);
    const [r] = await ack("counted", [{ delivery_id: b, lease_id: item.lease_id, status: 500 }]);
    assert.equal(r.state, attempt < 6 ? "pending" : "dead_lettered");
  }
  // The periodic check settles c's ended lease as a failed attempt.
  await (await relay.mf.getWorker("hookrelay")).scheduled({ cron: "*/1 * * * *" });
  await waitFor(async () => (await rows(relay.db, "SELECT attempts FROM deliveries WHERE event_id = ? AND destination = 'counted'", c))[0].attempts === 1, { what: "c's ended lease settled" });

  const want = {
    pull: 6, "pull:counted": 6,
    pull_leased: 8, "pull_leased:counted": 8,
    pull_ack: 9, "pull_ack:delivered": 1, "pull_ack:pending": 5, "pull_ack:lease_expired": 1, "pull_ack:unknown": 1, "pull_ack:dead_lettered": 1,
    pull_lease_expired: 1,
  };
  const got = await waitFor(async () => {
    const m = moved(before, await counters());
    return m.pull_lease_expired === 1 && m;
  }, { what: "the periodic check's count flushed" });
  assert.deepEqual(got, want);
});

test("parked_oldest fires for a pull destination's delivery due and unpulled past ALERT_PARKED_OLDEST, counted from when it became due", async () => {
  await start();
  const alarmRun = async () => {
    const res = await admin.post("maintenance/run", {});
    assert.equal(res.status, 200, JSON.stringify(res.json));
    return res.data.alarms;
  };
  const firing = async (id) => (await admin.get("alerts")).data.items.find((i) => i.id === id && i.state === "firing");
  const [id] = await stored("alarm", ["stale"], ["stale"]);
  // Stored an hour ago but failed since and waiting out its delay: not due, so no alarm.
  await relay.db.prepare("UPDATE deliveries SET created_at = created_at - 3600000, due_at = ? WHERE event_id = ? AND destination = 'stale'").bind(Date.now() + 60_000, id).run();
  await alarmRun();
  assert.equal(await firing("parked_oldest:stale"), undefined, "not due: nothing to pull yet");
  assert.equal(await firing("parked_oldest:empty"), undefined);

  // Due five seconds ago, unpulled: past the 2 s threshold.
  await setDue(id, "stale", Date.now() - 5_000);
  const fired = await alarmRun();
  assert.ok(fired.fired.includes("parked_oldest:stale"), JSON.stringify(fired));
  const alert = await firing("parked_oldest:stale");
  assert.equal(alert.kind, "parked_oldest");
  assert.equal(alert.detail.destination, "stale");
  assert.equal(alert.detail.pull, true);
  assert.equal(alert.detail.due_unpulled, 1);
  assert.equal(alert.detail.oldest_event_id, id);
  assert.equal(alert.detail.threshold_ms, 2000);
  assert.ok(alert.detail.oldest_age_ms >= 5_000 && alert.detail.oldest_age_ms < 60_000, `aged from when it became due, not from when it was stored: ${alert.detail.oldest_age_ms} ms`);
  assert.equal(await firing("parked_oldest:empty"), undefined, "a pull destination with nothing due never alarms");

  // Pulled and delivered: the alarm resolves (after two runs without it).
  const [item] = (await pull("stale")).items;
  await ack("stale", [{ delivery_id: item.delivery_id, lease_id: item.lease_id, status: 200 }]);
  const resolved = await waitFor(async () => (await alarmRun()).resolved.includes("parked_oldest:stale"), { what: "parked_oldest:stale to resolve", timeoutMs: 15_000, intervalMs: 100 });
  assert.ok(resolved);
});
