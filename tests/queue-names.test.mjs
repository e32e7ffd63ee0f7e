// Queue names are configuration (DESIGN §1): each worker dispatches a batch
// by equality with its QUEUE_* vars, so a batch from a queue no var names
// is logged and retried, never taken for an event (a staging control queue
// was once ingested as poison events by the `webhooks` consumer).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, rows, waitFor } from "./support/harness.mjs";
import { hmacHeaders } from "./support/signers.mjs";

let relay;
after(async () => {
  await relay?.dispose();
});

test("a batch from a queue the relay's vars do not name is logged and retried, never ingested", async () => {
  // The relay is told its main queue is another one; the committed
  // consumer still delivers `webhooks` batches to it.
  relay = await startRelay({ relayVars: { QUEUE_WEBHOOKS: "webhooks-elsewhere" } });
  const body = JSON.stringify({ n: 1 });
  const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body, headers: hmacHeaders(body) });
  assert.equal(res.status, 202, await res.text());
  const line = await waitFor(() => relay.logs.find((l) => l.includes('"unknown_queue"')), { what: "the unknown_queue log line" });
  assert.match(line, /"queue":"webhooks"/);
  assert.match(line, /webhooks-elsewhere, hookrelay-control/);
  assert.deepEqual(await rows(relay.db, "SELECT * FROM events"), [], "the batch was taken for events");
  assert.deepEqual(await rows(relay.db, "SELECT * FROM dead_letters"), [], "the batch was dead-lettered");
});

test("a queue var that is not a queue name fails the configuration, naming the var", async () => {
  await relay?.dispose();
  relay = await startRelay({ relayVars: { QUEUE_CONTROL: "Not A Queue" } });
  const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body: "{}", headers: hmacHeaders("{}") });
  assert.equal(res.status, 500);
  const { error } = await res.json();
  assert.equal(error.code, "CONFIG_INVALID");
  assert.match(error.message, /QUEUE_CONTROL/);
});

test("staging, with its own queue names: a webhook is ingested from webhooks-staging, and a message on hookrelay-control-staging goes to the drain consumer, not to the DLQ", async () => {
  await relay?.dispose();
  relay = await startRelay({ env: "staging" });
  const body = JSON.stringify({ n: 2 });
  const res = await relay.fetch("/webhooks/demo-hmac", { method: "POST", body, headers: hmacHeaders(body) });
  assert.equal(res.status, 202, await res.text());
  await waitFor(async () => (await rows(relay.db, "SELECT * FROM events WHERE source = 'demo-hmac'")).length === 1, { what: "the staging event ingested" });

  // Before the queue names were configuration, a batch from any queue not
  // named `hookrelay-control` went to the webhooks consumer: this message
  // was a poison event, dead-lettered.
  const control = await relay.producer("CONTROL");
  await control.send(JSON.stringify({ not: "a drain step" }), { contentType: "text" });
  await waitFor(() => relay.logs.some((l) => l.includes('"control_message_unknown"')), { what: "the drain consumer's control_message_unknown" });
  assert.deepEqual(await rows(relay.db, "SELECT id FROM dead_letters"), []);
  assert.ok(!relay.logs.some((l) => l.includes('"unknown_queue"')), relay.logs.filter((l) => l.includes("unknown_queue")).join("\n"));
});
