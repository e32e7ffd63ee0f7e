// A panic in one request must not take the isolate's later requests with
// it: the wasm-bindgen glue marks the instance terminated, the worker
// crate's abort hook schedules a reinit, and the next call runs on a fresh
// instance. Driven through worker-build's own entry, as deployed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { hmacHeaders } from "./support/signers.mjs";

let relay;
before(async () => {
  relay = await startRelay({ relayVars: { HOOKRELAY_TEST_FAULTS: "panic" } });
});
after(() => relay?.dispose());

const ingest = async (n) => {
  const body = JSON.stringify({ panic_recovery: n });
  const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body, headers: hmacHeaders(body, { operationId: `panic-${n}` }) });
  assert.equal(res.status, 202, `ingest ${n} after the panic answers 202`);
  return (await res.json()).event_id;
};

test("after a request panics, the same isolate accepts and ingests webhooks again", async () => {
  const before = await ingest("before");
  const panicked = await relay.fetch("/__test/panic");
  assert.equal(panicked.status, 500, "the panicking request fails with a 500, not a hang");
  await panicked.arrayBuffer();

  const ids = [before];
  for (const n of [1, 2, 3]) ids.push(await ingest(n));
  const health = await relay.fetch("/healthz");
  assert.equal(health.status, 200);
  assert.equal((await health.json()).status, "ok");

  for (const id of ids) {
    await waitFor(async () => (await rows(relay.db, "SELECT 1 FROM events WHERE event_id = ?", id))[0], { what: `event ${id} ingested` });
  }
});

test("without the test-only switch the panic route is a plain 404", async () => {
  const plain = await startRelay();
  try {
    const res = await plain.fetch("/__test/panic");
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, "NOT_FOUND");
  } finally {
    await plain.dispose();
  }
});
