// GET /api/v1/admin/webhook-dlq/stats reads every part through a typed
// reader: a part that cannot be read is a 5xx naming it, never a zero or an
// empty list in its place (an on-call page would show "0" when the truth is
// "unknown"). Real faults: a table that is really missing, and a stored row
// this version cannot read.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay } from "./support/harness.mjs";
import { adminClient } from "./support/admin.mjs";

let relay, admin;
before(async () => {
  relay = await startRelay();
  admin = adminClient(relay);
});
after(() => relay?.dispose());

const sql = (text) => relay.db.prepare(text).run();

test("with the replay_audit table missing, stats answer 503 naming the stats and the table, not zeros", async () => {
  assert.equal((await admin.get("webhook-dlq/stats")).status, 200);
  await sql("ALTER TABLE replay_audit RENAME TO replay_audit_away");
  try {
    const res = await admin.get("webhook-dlq/stats");
    assert.equal(res.status, 503, JSON.stringify(res.json));
    assert.equal(res.data, undefined, "no numbers in place of the truth");
    assert.equal(res.error.code, "UNAVAILABLE");
    assert.match(res.error.message, /D1 failed while reading or writing the stats/);
    assert.match(res.error.message, /replay_audit/, "names the table D1 could not read");
  } finally {
    await sql("ALTER TABLE replay_audit_away RENAME TO replay_audit");
  }
  assert.equal((await admin.get("webhook-dlq/stats")).status, 200, "answers again once the table is back");
});

test("a breaker row this version cannot read is a 500 naming the breakers, not an empty list", async () => {
  await sql("INSERT INTO breakers (destination, state_name, state, version, updated_at) VALUES ('https://down.example/x', 'OPEN', '{}', 0, 'yesterday')");
  try {
    const res = await admin.get("webhook-dlq/stats");
    assert.equal(res.status, 500, JSON.stringify(res.json));
    assert.equal(res.data, undefined);
    assert.equal(res.error.code, "DECODE_FAILED");
    assert.match(res.error.message, /the breakers/);
    assert.match(res.error.message, /apply the migrations/);
  } finally {
    await sql("DELETE FROM breakers WHERE destination = 'https://down.example/x'");
  }
  const ok = await admin.get("webhook-dlq/stats");
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.data.breakers, []);
});
