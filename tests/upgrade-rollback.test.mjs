// The upgrade test's other way (issue 40's limit; DESIGN §7, expand then
// contract): today's release leaves deliveries pending, waiting out a
// backoff, handed off to webhooks-dlq and leased, with their messages on
// the queues; then the previous release is put back over the same database
// (its built workers, frozen in tests/fixtures/previous-workers, with its
// own wrangler files) and the queues hand it those messages. It neither
// loses nor doubles any of them: each destination answers one call with a
// 2xx, the lease is not called into while it holds (the previous release
// reads only `claimed_at`, which today's claim writes late enough), and the
// handed-off delivery's entry is stored by the previous DLQ worker and
// replays.
//
// The queues: Miniflare's broker is not kept across a restart of the
// workers, so today's relay sends `deliveries` and `webhooks-dlq` messages
// through a tap that holds them (tests/support/queue-tap.mjs); the test
// hands them on, to today's consumer while today's release runs and to the
// previous release's after the rollback, as the real queues would (a
// message retried with a delay comes back after what remains of it).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, rows, waitFor } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { adminClient } from "./support/admin.mjs";
import { SECRETS } from "../scripts/miniflare-workers.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";
import { held, queueTap, release } from "./support/queue-tap.mjs";

const PREVIOUS = { relay: "tests/fixtures/previous-workers/relay/wrangler.toml", dlq: "tests/fixtures/previous-workers/dlq/wrangler.toml" };
const DESTS = ["pend", "wait", "dead", "hang"];
const secretOf = (d) => `rollback-${d}-secret`;
// A call to `hang` outlives the restart: its timeout is longer than the
// rollback takes, so the row is still leased when the previous release runs.
const HANG_TIMEOUT_MS = 8_000;
// The previous release's bound on a lease, counted from `claimed_at`.
const PREVIOUS_LEASE_MS = (delivery_timeout_ms) => delivery_timeout_ms + 30_000;
const DELIVERY_TIMEOUT_MS = 1_000;

let relay, downstream;
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

test("the previous release, put back over today's rows and messages, neither loses nor doubles a delivery left pending, waiting, handed off or leased", async () => {
  let phase = "today";
  // Today every destination fails or hangs; after the rollback they all answer 200.
  const answer = (failure) => (req) => {
    req.phase = phase;
    return phase === "today" ? failure : { status: 200 };
  };
  downstream = await startDownstream({
    "/pend": answer({ status: 200 }),
    "/wait": answer({ status: 500 }),
    "/dead": answer({ status: 500 }),
    "/hang": answer({ status: 200, delayMs: 20_000 }),
  });
  const tap = queueTap(["DELIVERIES", "WEBHOOKS_DLQ"]);
  const vars = {
    SOURCES: JSON.stringify(Object.fromEntries(DESTS.map((d) => [`rb-${d}`, { scheme: "hmac-sha256", routes: [{ to: d }] }]))),
    DESTINATIONS: JSON.stringify(Object.fromEntries(DESTS.map((d) => [d, { url: downstream.url(`/${d}`), ...(d === "hang" ? { timeout_ms: HANG_TIMEOUT_MS } : {}) }]))),
    ...Object.fromEntries(DESTS.map((d) => [secretNameFor(`rb-${d}`), secretOf(d)])),
    // Every first attempt goes out as a message, so each row below is left
    // by one message at a time, as the test hands them on.
    FIRST_ATTEMPT_BUDGET: "0s",
    RETRY_DELAYS_S: "30,10,10,10,10",
    DELIVERY_TIMEOUT_MS: String(DELIVERY_TIMEOUT_MS),
    BREAKER_FAILURE_THRESHOLD: "10",
  };
  relay = await startRelay({ vars, relayOptions: tap.wrap, extraWorkers: [tap.worker] });
  const heldOn = (binding, destination) => held(relay.logs).filter((m) => m.binding === binding && (m.json.destination ?? m.json.original?.destination) === destination);
  const row = async (destination) => (await rows(relay.db, "SELECT * FROM deliveries WHERE destination = ?", destination))[0];

  // Today's release: one event per destination, each first attempt a held message.
  for (const d of DESTS) {
    const body = JSON.stringify({ to: d });
    const res = await relay.fetch(`/webhooks/rb-${d}`, { method: "POST", body, headers: hmacHeaders(body, { secret: secretOf(d), operationId: `rb-${d}` }) });
    assert.equal(res.status, 202, await res.text());
  }
  await waitFor(() => DESTS.every((d) => heldOn("DELIVERIES", d).length === 1), { what: "four first-attempt messages held" });

  // wait: its first attempt fails; its message goes back to the queue for 30 s.
  await release(relay.mf, heldOn("DELIVERIES", "wait"));
  await waitFor(async () => (await row("wait")).attempts === 1, { what: "wait's first attempt failed" });
  // dead: five failures counted on its row (as five calls would), then the
  // sixth call fails and today's relay hands it to webhooks-dlq itself.
  await relay.db.prepare("UPDATE deliveries SET attempts = 5, due_at = ?1 WHERE destination = 'dead'").bind(Date.now()).run();
  await release(relay.mf, heldOn("DELIVERIES", "dead"));
  await waitFor(() => heldOn("WEBHOOKS_DLQ", "dead").length === 1, { what: "dead's hand-off to webhooks-dlq held" });
  await waitFor(async () => (await row("dead")).handed_off_at !== null, { what: "dead's row marked handed off" });
  // hang: its call starts and hangs; the rollback comes while it is in flight.
  await release(relay.mf, heldOn("DELIVERIES", "hang"));
  await waitFor(async () => downstream.hits("/hang").length === 1 && (await row("hang")).state === "delivering", { what: "hang's call in flight" });

  const left = Object.fromEntries(await Promise.all(DESTS.map(async (d) => [d, await row(d)])));
  assert.equal(left.pend.state, "pending", "pend: pending, its message outstanding");
  assert.equal(left.wait.state, "pending");
  assert.ok(left.wait.due_at > Date.now() + 20_000, "wait: waiting out its backoff");
  assert.equal(left.dead.state, "pending", "dead: handed off, its entry not stored yet");
  assert.equal(left.hang.state, "delivering");
  assert.ok(left.hang.lease_until > Date.now(), "hang: leased");
  // The previous release honours the lease to its end from claimed_at alone.
  const previousLeaseEnd = left.hang.claimed_at + PREVIOUS_LEASE_MS(DELIVERY_TIMEOUT_MS);
  assert.ok(previousLeaseEnd >= left.hang.lease_until, `claimed_at ${left.hang.claimed_at} is late enough for lease_until ${left.hang.lease_until}`);
  // The previous release runs over today's schema: the columns this release
  // added for pull destinations (0026, 0027) are there, nullable, and it never names them.
  const columns = (await rows(relay.db, "PRAGMA table_info(deliveries)")).map((c) => c.name);
  for (const c of ["lease_id", "revived_at"]) assert.ok(columns.includes(c), `deliveries.${c} is in the schema: ${columns}`);
  const outstanding = { pend: heldOn("DELIVERIES", "pend"), wait: heldOn("DELIVERIES", "wait"), dead: heldOn("WEBHOOKS_DLQ", "dead"), hang: heldOn("DELIVERIES", "hang") };

  // The rollback: the previous release's workers over the same database,
  // with no tap; hang's holder dies with today's workers.
  await relay.reconfigure({}, { configs: PREVIOUS, relayOptions: (o) => o, extraWorkers: [] });
  phase = "previous";
  const deliveries = await relay.producer("DELIVERIES");
  const dlq = await relay.producer("WEBHOOKS_DLQ");
  await deliveries.send(outstanding.pend[0].body, { contentType: "text" });
  const waitDelay = Math.max(0, Math.ceil((left.wait.due_at - Date.now()) / 1000));
  await deliveries.send(outstanding.wait[0].body, { contentType: "text", delaySeconds: waitDelay });
  await dlq.send(outstanding.dead[0].body, { contentType: "text" });
  // hang's message comes back (its holder died before acking it) while the lease holds.
  await deliveries.send(outstanding.hang[0].body, { contentType: "text" });

  const settled = async (d) => (await row(d)).state;
  await waitFor(async () => (await settled("pend")) === "delivered", { what: "pend delivered by the previous release" });
  await waitFor(async () => (await settled("dead")) === "dead_lettered", { what: "dead's entry stored by the previous DLQ worker, its row closed" });
  const admin = adminClient(relay, Object.values(SECRETS));
  const entries = await admin.get("webhook-dlq?status=pending");
  assert.equal(entries.status, 200, JSON.stringify(entries.json));
  assert.equal(entries.data.items.length, 1, JSON.stringify(entries.data.items));
  const replay = await admin.post(`webhook-dlq/${entries.data.items[0].id}/replay`, { reason: "rollback test: dead answers now" });
  assert.equal(replay.status, 200, JSON.stringify(replay.json));
  await waitFor(async () => (await settled("wait")) === "delivered", { what: "wait delivered when its delay ran out", timeoutMs: (waitDelay + 30) * 1000 });
  assert.ok(downstream.hits("/wait").at(-1).at >= left.wait.due_at - 1_000, "wait's retry kept its delay");
  // hang: not called while its lease held; then taken over and delivered once.
  await waitFor(async () => (await settled("hang")) === "delivered", { what: "hang delivered after its lease", timeoutMs: previousLeaseEnd - Date.now() + 60_000 });
  const hangCalls = downstream.hits("/hang");
  assert.equal(hangCalls.length, 2, "the call cut off by the rollback, then one after the lease");
  assert.ok(hangCalls[1].at >= left.hang.lease_until, `no call into the lease: the second came ${left.hang.lease_until - hangCalls[1].at} ms before its end`);

  // Each destination was called once after the rollback, and answered it
  // with its only 2xx (today's calls failed or were cut off unanswered).
  for (const d of DESTS) {
    const calls = downstream.hits(`/${d}`);
    assert.equal(calls.filter((r) => r.phase === "previous").length, 1, `${d}: ${JSON.stringify(calls.map((r) => [r.phase, r.status]))}`);
  }
  const finalStates = Object.fromEntries(await Promise.all(DESTS.map(async (d) => [d, await settled(d)])));
  assert.deepEqual(finalStates, { pend: "delivered", wait: "delivered", dead: "delivered", hang: "delivered" });
});
