// A job's archive or discard goes through the same path as the single-entry
// routes (dlq/src/entries/apply_action.rs): audited, counted and logged the
// same way, with the job id. An entry that another writer changed between
// the job's read and its write is skipped, and no success is recorded for it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startJobsRelay, assertCounts, waitFor } from "./support/jobs.mjs";

const REASON = "job entry actions test";
let t;

before(async () => {
  t = await startJobsRelay(["race", "tidy"]);
});
after(async () => {
  await t?.dispose();
});

const counters = async () => (await t.admin.get("webhook-dlq/stats")).data.counters;

test("an archive job whose second entry changed meanwhile archives one, skips the other, and audits, counts and logs only the one it archived", async () => {
  const [a, b] = await t.makeEntries([{ source: "race" }, { source: "race" }]);
  // Another writer: the moment the job archives either entry, an operator
  // discards the other one. Both entries are read in the same batch
  // (concurrency 2) before either write, so the job's write on the other
  // one finds it changed.
  await t.relay.db.prepare(
    `CREATE TRIGGER race_operator AFTER UPDATE OF status ON dead_letters
     WHEN OLD.status = 'pending' AND NEW.status = 'archived' AND NEW.id IN ('${a.id}', '${b.id}')
     BEGIN UPDATE dead_letters SET status = 'discarded' WHERE id IN ('${a.id}', '${b.id}') AND id != NEW.id AND status = 'pending'; END`,
  ).run();
  const before = await counters();
  const logFrom = t.relay.logs.length;
  try {
    const created = await t.admin.post("jobs", { action: "archive", reason: REASON, filter: { source: "race" }, concurrency: 2, rate_per_s: 10 });
    assert.equal(created.status, 202, JSON.stringify(created.json));
    const job = await t.status(created.data.id, "completed");
    assertCounts(job);
    assert.deepEqual([job.matched, job.attempted, job.succeeded, job.skipped], [2, 1, 1, 1], JSON.stringify(job));

    const statuses = await t.entryStatus([a.id, b.id]);
    const archived = Object.keys(statuses).filter((id) => statuses[id] === "archived");
    assert.equal(archived.length, 1, JSON.stringify(statuses));
    assert.deepEqual(Object.values(statuses).sort(), ["archived", "discarded"]);

    const audit = await t.audit(job.id);
    assert.deepEqual(audit.map((r) => [r.entry_id, r.action, r.outcome, r.job_id]), [[archived[0], "archive", "succeeded", job.id]],
      "one audit record, for the entry the job archived; none for the one it skipped");

    const after = await waitFor(async () => {
      const c = await counters();
      return (c.archived ?? 0) > (before.archived ?? 0) && c;
    }, { what: "the archive counted" });
    assert.equal((after.archived ?? 0) - (before.archived ?? 0), 1, "counted once, like the single-entry route");
    const lines = t.logEvents("entry_decision", job.id, logFrom);
    assert.deepEqual(lines.map((l) => [l.id, l.action, l.from, l.to, l.job_id]), [[archived[0], "archive", "pending", "archived", job.id]]);
  } finally {
    await t.relay.db.prepare("DROP TRIGGER race_operator").run();
  }
});

test("a discard job discards through the same path: the entry's payload is erased, and it is audited, counted and logged", async () => {
  const [e] = await t.makeEntries([{ source: "tidy" }]);
  const before = await counters();
  const logFrom = t.relay.logs.length;
  const created = await t.admin.post("jobs", { action: "discard", reason: REASON, filter: { source: "tidy" } });
  assert.equal(created.status, 202, JSON.stringify(created.json));
  const job = await t.status(created.data.id, "completed");
  assert.deepEqual([job.matched, job.succeeded, job.skipped], [1, 1, 0]);
  const entry = (await t.admin.get(`webhook-dlq/${e.id}`)).data;
  assert.equal(entry.status, "discarded");
  assert.equal(entry.envelope.input.erased, true);
  assert.deepEqual((await t.audit(job.id)).map((r) => [r.entry_id, r.action, r.outcome]), [[e.id, "discard", "succeeded"]]);
  const after = await waitFor(async () => {
    const c = await counters();
    return (c.discarded ?? 0) > (before.discarded ?? 0) && c;
  }, { what: "the discard counted" });
  assert.equal(after.discarded - (before.discarded ?? 0), 1);
  assert.deepEqual(t.logEvents("entry_decision", job.id, logFrom).map((l) => [l.id, l.action, l.to]), [[e.id, "discard", "discarded"]]);
});
