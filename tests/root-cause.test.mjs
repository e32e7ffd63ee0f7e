// The root cause is kept (DESIGN.md §3): a dead letter's code is the most
// recent failure that came from the destination (UPSTREAM_5XX, TIMEOUT, …),
// or, for an event that never reached it, the failure that opened its
// breaker; CIRCUIT_OPEN only when neither is known. The attempt history
// keeps every attempt, the CIRCUIT_OPEN ones included, and the stats and
// the list filter group by the root cause.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";
import { deadline, deadLetterScheduleMs } from "./support/schedule.mjs";

const DOWN_SECRET = "root-cause-down-secret";
const TIMEOUT_MS = 200;
const secrets = {};
for (const name of ["rc-500", "rc-slow", "dl-500", "dl-400"]) secrets[secretNameFor(name)] = `${name}-webhook-secret`;

let downstream, retryRelay, dlRelay, retryAdmin, dlAdmin;

const sourcesFor = (map) => JSON.stringify(Object.fromEntries(Object.entries(map).map(([name, path]) => [name, { scheme: "hmac-sha256", downstream: downstream.url(path) }])));

before(async () => {
  downstream = await startDownstream({
    "/rc-500": () => ({ status: 500 }),
    // Always slower than DELIVERY_TIMEOUT_MS.
    "/rc-slow": () => ({ status: 200, delayMs: TIMEOUT_MS * 5 }),
    "/dl-500": () => ({ status: 500 }),
    "/dl-400": () => ({ status: 400 }),
  });
  const common = {
    ...secrets,
    DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET,
    RETRY_DELAYS_S: "1,1,1,1,1",
    DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
    // Long enough that no breaker half-opens during a test.
    BREAKER_COOLDOWN_S: "600",
    BREAKER_SUCCESS_THRESHOLD: "1",
  };
  // Only the relay holds SOURCES and the delivery and breaker settings.
  [retryRelay, dlRelay] = await Promise.all([
    startRelay({
      relayVars: { ...common, SOURCES: sourcesFor({ "rc-500": "/rc-500", "rc-slow": "/rc-slow" }), BREAKER_OPEN_ACTION: "retry", BREAKER_FAILURE_THRESHOLD: "5" },
    }),
    startRelay({
      relayVars: { ...common, SOURCES: sourcesFor({ "dl-500": "/dl-500", "dl-400": "/dl-400" }), BREAKER_OPEN_ACTION: "dead-letter", BREAKER_FAILURE_THRESHOLD: "2" },
    }),
  ]);
  const extra = [...Object.values(secrets), DOWN_SECRET];
  retryAdmin = adminClient(retryRelay, extra);
  dlAdmin = adminClient(dlRelay, extra);
});
after(async () => {
  await Promise.all([retryRelay?.dispose(), dlRelay?.dispose()]);
  await downstream?.close();
});

async function send(relay, source, payload) {
  const body = JSON.stringify(payload);
  const operationId = `${source}-${payload.n}-${Math.random().toString(36).slice(2)}`;
  const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret: secrets[secretNameFor(source)], operationId }) });
  assert.equal(res.status, 202, await res.clone().text());
  return { event_id: (await res.json()).event_id, acceptedAt: Date.now() };
}

// By default the deadline is the relay's schedule for a whole retry budget
// (six attempts, each as long as DELIVERY_TIMEOUT_MS at most, the 1 s
// delays between them, and the queues' hops), past the margin.
const deadLetter = (relay, eventId, timeoutMs = deadline(deadLetterScheduleMs(relay, { callMs: TIMEOUT_MS }))) =>
  waitFor(async () => (await rows(relay.db, "SELECT * FROM dead_letters WHERE event_id = ?", eventId))[0], { what: `the dead letter of ${eventId}`, timeoutMs });
// Breakers are keyed by destination name: a `downstream` source's is the source's name (the path here).
const breakerOf = async (relay, path) => (await rows(relay.db, "SELECT * FROM breakers WHERE destination = ?", path.slice(1)))[0];
/** Downstream requests that carried this event (the relay sends the event id as X-Operation-Id). */
const callsFor = (path, eventId) => downstream.hits(path).filter((r) => r.headers["x-operation-id"] === eventId);
const codes = (history) => history.map((a) => [a.attempt, a.code]);

/** The retry-path story: five real failures open the breaker, the sixth attempt is refused by it, and the code stays the real one. */
async function exhaustsBehindTheBreaker(source, path, realCode) {
  const { event_id } = await send(retryRelay, source, { n: 1 });
  const row = await deadLetter(retryRelay, event_id);
  assert.equal(row.kind, "retries_exhausted");
  assert.equal(row.attempts, 6);

  const { status, data } = await retryAdmin.get(`webhook-dlq/${row.id}`);
  assert.equal(status, 200);
  const history = data.envelope.delivery.history;
  assert.deepEqual(
    codes(history),
    [[1, realCode], [2, realCode], [3, realCode], [4, realCode], [5, realCode], [6, "CIRCUIT_OPEN"]],
    "every attempt is kept, the one the open breaker refused included",
  );
  assert.equal(data.envelope.delivery.attempts, 6);
  assert.equal(callsFor(path, event_id).length, 5, "the CIRCUIT_OPEN attempt made no call");
  assert.equal((await breakerOf(retryRelay, path)).state_name, "OPEN");

  assert.equal(row.error_code, realCode, `dead_letters.error_code is the root cause, not ${row.error_code}`);
  assert.equal(data.error_code, realCode);
  assert.equal(data.envelope.failure.code, realCode);
  assert.equal(data.envelope.failure.class, "transient");
  const recorded = await rows(retryRelay.db, "SELECT attempt, code FROM attempts WHERE event_id = ? ORDER BY attempt", event_id);
  assert.deepEqual(recorded.map((a) => [a.attempt, a.code]), codes(history), "the envelope's history is the consumer's record");
}

test("retry mode: a 500 downstream behind an opened breaker dead-letters with UPSTREAM_5XX, history keeping the CIRCUIT_OPEN attempt", async () => {
  await exhaustsBehindTheBreaker("rc-500", "/rc-500", "UPSTREAM_5XX");
});

test("retry mode: a downstream slower than DELIVERY_TIMEOUT_MS dead-letters with TIMEOUT, not CIRCUIT_OPEN", async () => {
  await exhaustsBehindTheBreaker("rc-slow", "/rc-slow", "TIMEOUT");
});

// Test 3 and test 4 share one story on the dead-letter relay; it runs once.
let story;
const deadLetterStory = () =>
  (story ??= (async () => {
    // Two events fail against the 500 downstream: the breaker (threshold 2) opens.
    const first = await send(dlRelay, "dl-500", { n: 1 });
    const second = await send(dlRelay, "dl-500", { n: 2 });
    await waitFor(async () => (await breakerOf(dlRelay, "/dl-500"))?.state_name === "OPEN", { what: "the breaker of /dl-500 to open", timeoutMs: 15000 });
    const callsBefore = downstream.hits("/dl-500").length;
    // A fresh event for the same destination.
    const third = await send(dlRelay, "dl-500", { n: 3 });
    const thirdRow = await deadLetter(dlRelay, third.event_id, 10000);
    const thirdAt = Date.now();
    const firstRow = await deadLetter(dlRelay, first.event_id);
    const secondRow = await deadLetter(dlRelay, second.event_id);
    return { first, second, third, thirdRow, thirdAt, firstRow, secondRow, callsBefore };
  })());

test("dead-letter mode: a fresh event behind a breaker opened by 500s never reaches the destination and is dead-lettered at once with UPSTREAM_5XX", async () => {
  const { third, thirdRow, thirdAt, callsBefore } = await deadLetterStory();
  assert.equal(callsFor("/dl-500", third.event_id).length, 0, "the downstream saw no request for the third event");
  assert.equal(downstream.hits("/dl-500").length, callsBefore, "no call at all went out while the breaker was open");

  assert.equal(thirdRow.kind, "poison_handoff", "dead-lettered at once, not after its retries");
  assert.equal(thirdRow.attempts, 1);
  assert.ok(thirdAt - third.acceptedAt < 4000, `dead-lettered ${thirdAt - third.acceptedAt} ms after ingest; five 1 s retries would take 5 s or more`);

  const { data } = await dlAdmin.get(`webhook-dlq/${thirdRow.id}`);
  assert.equal(thirdRow.error_code, "UPSTREAM_5XX", `dead_letters.error_code is the failure that opened the breaker, not ${thirdRow.error_code}`);
  assert.equal(data.error_code, "UPSTREAM_5XX");
  assert.equal(data.envelope.failure.code, "UPSTREAM_5XX");
  assert.deepEqual(codes(data.envelope.delivery.history), [[1, "CIRCUIT_OPEN"]], "its history holds its own CIRCUIT_OPEN attempt");
  assert.equal(data.envelope.delivery.attempts, 1);
});

test("stats' dominant_failure_code and the list's ?code= filter use the root-cause code", async () => {
  const { first, second, third, firstRow, secondRow } = await deadLetterStory();
  // The two events that opened the breaker were refused by it on their retry: their code is the 500 too.
  for (const row of [firstRow, secondRow]) {
    assert.equal(row.error_code, "UPSTREAM_5XX");
    const { data } = await dlAdmin.get(`webhook-dlq/${row.id}`);
    assert.ok(data.envelope.delivery.history.some((a) => a.code === "UPSTREAM_5XX"), JSON.stringify(data.envelope.delivery.history));
  }
  // One poison entry of another code, so the dominant code is decided by count.
  const poison = await send(dlRelay, "dl-400", { n: 4 });
  const poisonRow = await deadLetter(dlRelay, poison.event_id);
  assert.equal(poisonRow.error_code, "UPSTREAM_4XX");

  const stats = (await dlAdmin.get("webhook-dlq/stats")).data;
  assert.equal(stats.depth, 4);
  assert.equal(stats.dominant_failure_code, "UPSTREAM_5XX", "three UPSTREAM_5XX entries against one UPSTREAM_4XX; none is CIRCUIT_OPEN");

  const listed = async (code) => {
    const { status, data } = await dlAdmin.get(`webhook-dlq?code=${code}`);
    assert.equal(status, 200);
    assert.ok(data.items.every((i) => i.error_code === code), JSON.stringify(data.items));
    return data.items.map((i) => i.event_id).sort();
  };
  assert.deepEqual(await listed("UPSTREAM_5XX"), [first.event_id, second.event_id, third.event_id].sort());
  assert.deepEqual(await listed("CIRCUIT_OPEN"), [], "no entry is filed under CIRCUIT_OPEN");
  assert.deepEqual(await listed("UPSTREAM_4XX"), [poison.event_id]);

  // The retry relay's entries are filed under their root causes as well.
  assert.equal((await retryAdmin.get("webhook-dlq?code=CIRCUIT_OPEN")).data.items.length, 0);
});
