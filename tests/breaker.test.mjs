// The per-destination circuit breaker, shared through D1: it opens after
// five consecutive failures, makes no network call while open, lets one
// probe out after the cooldown, and closes when the probe succeeds.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { hmacHeaders } from "./support/signers.mjs";

let downstream;
let healthy = false;
const secret = "flaky-secret";

before(async () => {
  downstream = await startDownstream({ "/flaky": () => ({ status: healthy ? 200 : 500 }) });
});
after(() => downstream?.close());

function relayWith(extra) {
  return startRelay({
    vars: {
      SOURCES: JSON.stringify({ flaky: { scheme: "hmac-sha256", downstream: downstream.url("/flaky") } }),
      WEBHOOK_SECRET_FLAKY: secret,
      DOWNSTREAM_SIGNING_SECRET: "breaker-down-secret",
      // Failed events wait an hour, so only new events reach the breaker here.
      RETRY_DELAYS_S: "3600",
      BREAKER_COOLDOWN_S: "1",
      ...extra,
    },
  });
}

async function send(relay, n) {
  const body = JSON.stringify({ n });
  const res = await relay.fetch("/webhooks/flaky", { method: "POST", body, headers: hmacHeaders(body, { secret, operationId: `op-${n}-${Math.random()}` }) });
  assert.equal(res.status, 202);
  return (await res.json()).event_id;
}

const breaker = async (relay) => (await rows(relay.db, "SELECT * FROM breakers"))[0];
const lastAttempt = (relay, id) => waitFor(async () => (await rows(relay.db, "SELECT * FROM attempts WHERE event_id = ? ORDER BY id DESC", id))[0], { what: `an attempt of ${id}` });
const waitCooldown = (relay) =>
  waitFor(async () => {
    const b = await breaker(relay);
    return Date.now() > JSON.parse(b.state).opened_at_ms + 1000;
  }, { what: "the cooldown to pass" });

test("five failures open the breaker; while open no call is made; one probe after the cooldown closes it", async () => {
  healthy = false;
  const relay = await relayWith({ BREAKER_OPEN_ACTION: "retry" });
  try {
    for (let n = 1; n <= 5; n++) {
      const id = await send(relay, n);
      assert.equal((await lastAttempt(relay, id)).code, "UPSTREAM_5XX");
    }
    assert.equal(downstream.hits("/flaky").length, 5);
    assert.equal((await breaker(relay)).state_name, "OPEN");

    for (let n = 6; n <= 8; n++) {
      const id = await send(relay, n);
      const attempt = await lastAttempt(relay, id);
      assert.equal(attempt.code, "CIRCUIT_OPEN");
      assert.equal(attempt.class, "transient");
    }
    assert.equal(downstream.hits("/flaky").length, 5, "no network call while open");

    await waitCooldown(relay);
    const probeFails = await send(relay, 9);
    assert.equal((await lastAttempt(relay, probeFails)).code, "UPSTREAM_5XX", "the probe went out and failed");
    assert.equal(downstream.hits("/flaky").length, 6, "exactly one probe");
    assert.equal((await breaker(relay)).state_name, "OPEN", "a failed probe reopens");
    assert.equal((await lastAttempt(relay, await send(relay, 10))).code, "CIRCUIT_OPEN");
    assert.equal(downstream.hits("/flaky").length, 6);

    healthy = true;
    await waitCooldown(relay);
    const probe = await send(relay, 11);
    await waitFor(async () => (await rows(relay.db, "SELECT delivery_status FROM events WHERE event_id = ?", probe))[0]?.delivery_status === "delivered", { what: "the probe to deliver" });
    assert.equal((await breaker(relay)).state_name, "CLOSED");
    assert.equal(downstream.hits("/flaky").length, 7);

    const after = await send(relay, 12);
    await waitFor(async () => (await rows(relay.db, "SELECT delivery_status FROM events WHERE event_id = ?", after))[0]?.delivery_status === "delivered", { what: "normal delivery" });
    const transitions = relay.logs.filter((l) => l.includes('"event":"breaker_transition"')).map((l) => JSON.parse(l.slice(l.indexOf("{"))));
    assert.deepEqual(
      transitions.map((t) => `${t.from}>${t.to}`),
      ["CLOSED>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>CLOSED"],
    );
    // Breakers are keyed by destination name: a `downstream` source's is the source's.
    assert.ok(transitions.every((t) => t.destination === "flaky"));
  } finally {
    await relay.dispose();
  }
});

test("with BREAKER_OPEN_ACTION=dead-letter an open circuit sends the event straight to the DLQ", async () => {
  healthy = false;
  const relay = await relayWith({ BREAKER_FAILURE_THRESHOLD: "1", BREAKER_COOLDOWN_S: "3600", BREAKER_OPEN_ACTION: "dead-letter" });
  try {
    const before = downstream.hits("/flaky").length;
    const first = await send(relay, 1);
    assert.equal((await lastAttempt(relay, first)).code, "UPSTREAM_5XX");
    const second = await send(relay, 2);
    const dl = await waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", second))[0], { what: "the dead letter" });
    // The root cause: the second event never reached the destination, so
    // its code is the failure that opened the breaker, not CIRCUIT_OPEN.
    assert.equal(dl.error_code, "UPSTREAM_5XX");
    const history = JSON.parse(dl.envelope).delivery.history.map((a) => a.code);
    assert.deepEqual(history, ["CIRCUIT_OPEN"], "the refused attempt is kept in the history");
    assert.equal(dl.kind, "poison_handoff");
    assert.equal(dl.attempts, 1);
    assert.equal(downstream.hits("/flaky").length, before + 1, "the second event made no call");
  } finally {
    await relay.dispose();
  }
});
