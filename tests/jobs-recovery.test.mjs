// Jobs that archive and discard, the fixed set, and a fault in the middle
// of a job (DESIGN.md §4): the real runtime, the jobs queue driving each
// step, D1 made to fail for one step by renaming the table a step needs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startJobsRelay, assertCounts, receiptCounts, waitFor, rows } from "./support/jobs.mjs";

const REASON = "jobs test: recovery";
let t;

before(async () => {
  t = await startJobsRelay(["arch", "disc", "late", "fault", "dup", "same"]);
});
after(async () => {
  await t?.dispose();
});

const depth = async () => (await t.admin.get("webhook-dlq/stats")).data.depth;

test("archive and discard jobs run at once; archived entries leave the depth, a discarded entry's payload is erased", async () => {
  const { admin } = t;
  const archived = await t.makeEntries(Array.from({ length: 6 }, () => ({ source: "arch" })));
  const discarded = await t.makeEntries(Array.from({ length: 4 }, () => ({ source: "disc" })));
  const d0 = await depth();

  const a = await admin.post("jobs", { action: "archive", reason: REASON, filter: { source: "arch" }, rate_per_s: 20 });
  assert.equal(a.status, 202, JSON.stringify(a.json));
  assert.equal(a.data.matched, 6);
  const aDone = await t.status(a.data.id, "completed");
  assertCounts(aDone);
  assert.equal(aDone.succeeded, 6);
  assert.deepEqual(aDone.canary, { ids: [], passed: null }, "no canary, no approval");
  assert.ok(Object.values(await t.entryStatus(archived.map((e) => e.id))).every((s) => s === "archived"));
  assert.equal(await depth(), d0 - 6, "archived entries leave the depth");
  const aAudit = await t.audit(a.data.id);
  assert.equal(aAudit.length, 6);
  assert.ok(aAudit.every((r) => r.action === "archive" && r.job_id === a.data.id));

  const d = await admin.post("jobs", { action: "discard", reason: REASON, filter: { source: "disc" }, rate_per_s: 20 });
  assert.equal(d.status, 202);
  const dDone = await t.status(d.data.id, "completed");
  assertCounts(dDone);
  assert.equal(dDone.succeeded, 4);
  for (const e of discarded) {
    const got = await admin.get(`webhook-dlq/${e.id}`);
    assert.equal(got.data.status, "discarded");
    assert.equal(got.data.envelope.input.original, null, "the original event is erased");
    assert.equal(got.data.envelope.input.excerpt, "");
    assert.equal(got.data.envelope.identity.event_id, e.event_id, "identity stays");
  }
  const dAudit = await t.audit(d.data.id);
  assert.equal(dAudit.length, 4);
  assert.ok(dAudit.every((r) => r.action === "discard" && r.job_id === d.data.id));
  assert.equal(t.receipts("arch").length + t.receipts("disc").length, 0, "neither calls the downstream");

  // A discard job may take archived entries when its filter names them.
  const dryArchived = await admin.post("jobs", { action: "discard", reason: REASON, filter: { source: "arch", status: "archived" }, dry_run: true });
  assert.equal(dryArchived.data.matched, 6);
  assert.deepEqual(dryArchived.data.canary_ids, []);
});

test("entries that arrive after a job was created are not in its set", async () => {
  const { admin } = t;
  const first = await t.makeEntries(Array.from({ length: 6 }, () => ({ source: "late" })));
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "late" }, canary: { size: 0 }, rate_per_s: 2, concurrency: 1 });
  assert.equal(created.status, 202);
  assert.equal(created.data.matched, 6);
  const late = await t.makeEntries(Array.from({ length: 3 }, () => ({ source: "late" })));
  assert.equal((await t.job(created.data.id)).status !== "completed", true, "the late entries arrived while the job ran");
  const done = await t.status(created.data.id, "completed");
  assertCounts(done);
  assert.equal(done.matched, 6);
  assert.equal(done.succeeded, 6);
  assert.ok(Object.values(await t.entryStatus(first.map((e) => e.id))).every((s) => s === "replayed"));
  assert.ok(Object.values(await t.entryStatus(late.map((e) => e.id))).every((s) => s === "pending"), "the late entries are untouched");
  assert.equal(t.receipts("late", late.map((e) => e.event_id)).length, 0);
  assert.equal(t.receipts("late").length, 6);
});

test("a D1 fault in the middle of a job: the step is retried, and no entry is replayed twice or skipped", async () => {
  const { admin, relay } = t;
  const N = 40;
  const entries = await t.makeEntries(Array.from({ length: N }, () => ({ source: "fault" })));
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "fault" }, canary: { size: 0 }, rate_per_s: 10, concurrency: 5 });
  assert.equal(created.status, 202);
  const id = created.data.id;
  await t.jobUntil(id, (j) => j.status === "running" && j.succeeded >= 5, "the first batch done");

  const from = relay.logs.length;
  await relay.db.prepare("ALTER TABLE dead_letters RENAME TO dead_letters_away").run();
  let failedSteps;
  try {
    failedSteps = await waitFor(() => { const f = t.logEvents("job_step_failed", id, from); return f.length > 0 && f; }, { timeoutMs: 15_000, what: "a step that failed on the missing table" });
  } finally {
    await relay.db.prepare("ALTER TABLE dead_letters_away RENAME TO dead_letters").run();
  }
  assert.equal(failedSteps[0].next, "retry");

  const done = await t.status(id, "completed", 60_000);
  assertCounts(done);
  assert.equal(done.matched, N);
  assert.equal(done.succeeded, N, JSON.stringify(done));
  assert.equal(done.skipped, 0, "none skipped");
  assert.equal(done.failed, 0);
  const counts = receiptCounts(t.receipts("fault"));
  assert.equal(counts.size, N, "every entry reached the downstream");
  assert.ok([...counts.values()].every((n) => n === 1), `none twice: ${JSON.stringify([...counts].filter(([, n]) => n > 1))}`);
  assert.ok(Object.values(await t.entryStatus(entries.map((e) => e.id))).every((s) => s === "replayed"));
  const audit = await t.audit(id);
  assert.equal(new Set(audit.map((a) => a.entry_id)).size, N, "an audit record for every entry");
  assert.equal(audit.length, N, "and only one");
  const states = await rows(relay.db, "SELECT state, outcome, count(*) AS n FROM job_entries WHERE job_id = ? GROUP BY state, outcome", id);
  assert.deepEqual(states, [{ state: "done", outcome: "succeeded", n: N }]);
});

test("a step message delivered again after it ran does nothing: one chain, no entry twice, the pace kept", async () => {
  const { admin, relay } = t;
  // More than one step (50 entries at most): the first one hands the job on.
  const N = 60;
  const RATE = 20;
  const entries = await t.makeEntries(Array.from({ length: N }, () => ({ source: "dup" })));
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "dup" }, canary: { size: 0 }, rate_per_s: RATE, concurrency: 5 });
  const id = created.data.id;
  await t.jobUntil(id, (j) => j.status === "running" && j.succeeded >= 5, "the first batch done");
  // Queues deliver at least once: the first step's message comes again once
  // that step has handed the job on to the next one.
  const [{ generation }] = await rows(relay.db, "SELECT generation FROM jobs WHERE id = ?", id);
  await waitFor(async () => (await rows(relay.db, "SELECT generation FROM jobs WHERE id = ?", id))[0].generation > generation, { what: "the first step to hand the job on" });
  const from = relay.logs.length;
  const steps = await relay.mf.getQueueProducer("JOBS", "hookrelay-dlq");
  await steps.send({ kind: "job_step", job_id: id, generation, due_ms: Date.now() });
  await waitFor(() => t.logEvents("job_step_superseded", id, from).some((l) => l.step_generation === generation), { timeoutMs: 15_000, what: "the copy to find the job handed on" });

  const done = await t.status(id, "completed", 30_000);
  assertCounts(done);
  assert.equal(done.succeeded, N, JSON.stringify(done));
  assert.equal(done.skipped + done.failed + done.deduped, 0);
  const got = t.receipts("dup");
  const counts = receiptCounts(got);
  assert.equal(counts.size, N);
  assert.ok([...counts.values()].every((n) => n === 1), "no entry twice");
  assert.equal((await t.audit(id)).length, N, "one audit record per entry");
  assert.ok(Object.values(await t.entryStatus(entries.map((e) => e.id))).every((s) => s === "replayed"));
  // One chain, so the rate is not doubled: starts are 1/RATE apart.
  const at = got.map((r) => r.at).sort((a, b) => a - b);
  const span = at.at(-1) - at[0];
  const want = ((N - 1) / RATE) * 1000;
  assert.ok(span >= want * 0.9, `${N} receipts at ${RATE}/s took ${span} ms; one chain takes ${want} ms`);
});

test("a replay job over archived entries sends one event's identical payload once and counts the other as deduped", async () => {
  const { admin } = t;
  const body = JSON.stringify({ same: "payload" });
  // Dedupe at the door is against pending entries only: the same event
  // failing again after its first entry was archived is a new entry.
  const [first] = await t.makeEntries([{ source: "same", body }]);
  await t.status((await admin.post("jobs", { action: "archive", reason: REASON, filter: { source: "same" } })).data.id, "completed");
  const [{ idempotency_key }] = await rows(t.relay.db, "SELECT idempotency_key FROM dead_letters WHERE id = ?", first.id);
  const again = idempotency_key.split(":")[1];
  const [second, other] = await t.makeEntries([{ source: "same", body, again }, { source: "same" }]);
  await t.status((await admin.post("jobs", { action: "archive", reason: REASON, filter: { source: "same" } })).data.id, "completed");
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "same", status: "archived" }, canary: { size: 0 } });
  assert.equal(created.data.matched, 3);
  const done = await t.status(created.data.id, "completed");
  assertCounts(done);
  assert.equal(done.attempted, 3);
  assert.equal(done.succeeded, 2);
  assert.equal(done.deduped, 1);
  const got = t.receipts("same");
  assert.equal(got.length, 2, "the identical payload went downstream once");
  assert.ok(Object.values(await t.entryStatus([first.id, second.id, other.id])).every((s) => s === "replayed"));
  const audit = await t.audit(created.data.id);
  assert.deepEqual(audit.map((a) => a.outcome).sort(), ["deduped", "succeeded", "succeeded"]);
});
