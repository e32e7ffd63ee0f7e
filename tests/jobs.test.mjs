// Jobs (DESIGN.md §4, "Jobs: bulk decisions that survive") in the real
// runtime: both workers in one Miniflare, the jobs queue driving each step,
// replays carried out by the relay against a real loopback downstream.
// Every route and its refusals; a replay job end to end with its canary,
// approval, pacing, counts and audit; a failing canary; the abort
// threshold; pause, resume and cancel.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startJobsRelay, assertCounts, receiptCounts, stepEntries, waitFor, rows } from "./support/jobs.mjs";

const REASON = "jobs test: downstream fixed";
const down = { canary: () => ({ status: 500 }) };
let abortAfter = Infinity;
let t;

before(async () => {
  t = await startJobsRelay(["e2e-a", "e2e-b", "canary", "abort", "steer", "canary-pause", "routes"], {
    canary: () => down.canary(),
    abort: (_req, count) => ({ status: count > abortAfter ? 500 : 200 }),
  });
});
after(async () => {
  await t?.dispose();
});

const FIELDS = ["id", "action", "status", "reason", "actor", "filter", "matched", "attempted", "succeeded", "failed", "deduped", "skipped", "remaining", "canary", "abort_reason", "created_at", "updated_at", "finished_at"];

test("the job routes: create, dry run, list, read, steer, and every refusal", async () => {
  const { admin } = t;
  const entries = await t.makeEntries([1, 2, 3, 4].map(() => ({ source: "routes" })));
  const jobsBefore = (await rows(t.relay.db, "SELECT count(*) AS n FROM jobs"))[0].n;

  // 400: an unknown field at any depth, an out-of-range rate; nothing is done.
  const base = { action: "archive", reason: REASON, filter: { source: "routes" } };
  const refusals = [
    [{ ...base, filtr: { source: "routes" } }, "filtr"],
    [{ ...base, filter: { source: "routes", sourc: "routes" } }, "filter.sourc"],
    [{ ...base, action: "replay", canary: { size: 1, sise: 2 } }, "canary.sise"],
    [{ ...base, abort: { min_attempts: 5, max_failure: 0.5 } }, "abort.max_failure"],
    [{ ...base, rate_per_s: 0 }, "rate_per_s"],
    [{ ...base, rate_per_s: 0.05 }, "rate_per_s"],
    [{ ...base, rate_per_s: 101 }, "rate_per_s"],
    [{ ...base, rate_per_s: "fast" }, "rate_per_s"],
    [{ ...base, action: "replay", canary: { size: 51 } }, "canary.size"],
    [{ ...base, canary: { size: 2 } }, "canary"],
    [{ ...base, action: "resend" }, "action"],
    [{ ...base, reason: "no" }, "reason"],
    [{ ...base, concurrency: 0 }, "concurrency"],
    [{ ...base, abort: { max_failure_ratio: 1.5 } }, "abort.max_failure_ratio"],
    [{ ...base, filter: { status: "replayed" } }, "filter.status"],
  ];
  for (const [body, field] of refusals) {
    const res = await admin.post("jobs", body);
    assert.equal(res.status, 400, `${JSON.stringify(body)} -> ${JSON.stringify(res.json)}`);
    assert.equal(res.error.code, "BAD_REQUEST");
    assert.ok(res.error.message.startsWith(`${field}:`), `the refusal names ${field}: ${res.error.message}`);
  }
  assert.equal((await rows(t.relay.db, "SELECT count(*) AS n FROM jobs"))[0].n, jobsBefore, "no job was created by a refused request");
  assert.deepEqual(Object.values(await t.entryStatus(entries.map((e) => e.id))), ["pending", "pending", "pending", "pending"]);

  // Dry run: 200 with the preview, nothing changes.
  const dry = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "routes" }, dry_run: true, canary: { size: 2 } });
  assert.equal(dry.status, 200, JSON.stringify(dry.json));
  assert.equal(dry.data.matched, 4);
  assert.deepEqual(dry.data.by_source, [{ source: "routes", count: 4 }]);
  assert.equal(dry.data.by_signature.length, 1);
  assert.deepEqual(Object.keys(dry.data.by_signature[0]).sort(), ["code", "count", "signature"]);
  assert.equal(dry.data.canary_ids.length, 2);
  assert.equal((await rows(t.relay.db, "SELECT count(*) AS n FROM jobs"))[0].n, jobsBefore, "a dry run creates no job");

  // Create: 202 {id, status, matched}; an archive job runs at once.
  const created = await admin.post("jobs", { action: "archive", reason: REASON, filter: { source: "routes" } });
  assert.equal(created.status, 202, JSON.stringify(created.json));
  assert.match(created.data.id, /^job_/);
  assert.equal(created.data.status, "queued");
  assert.equal(created.data.matched, 4);
  const done = await t.status(created.data.id, "completed");
  for (const f of FIELDS) assert.ok(f in done, `GET /jobs/:id has ${f}`);
  assert.equal(done.action, "archive");
  assert.equal(done.reason, REASON);
  assert.equal(done.actor, "test-admin");
  assert.equal(done.filter.source, "routes");
  assert.deepEqual(done.canary, { ids: [], passed: null });
  assert.equal(done.abort_reason, null);
  assert.ok(done.created_at <= done.updated_at && done.updated_at <= done.finished_at);
  assertCounts(done);

  // 409: resume a completed job; approve a job that is not awaiting approval.
  for (const command of ["resume", "approve", "pause", "cancel"]) {
    const res = await admin.post(`jobs/${created.data.id}/${command}`);
    assert.equal(res.status, 409, `${command} a completed job: ${JSON.stringify(res.json)}`);
    assert.equal(res.error.code, "CONFLICT");
    assert.match(res.error.message, /completed/);
  }
  // 404: an unknown job, an unknown command.
  assert.equal((await admin.get("jobs/job_doesnotexist")).status, 404);
  assert.equal((await admin.post("jobs/job_doesnotexist/approve")).status, 404);
  const unknown = await admin.post(`jobs/${created.data.id}/restart`);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.error.code, "NOT_FOUND");
  // A command takes no body.
  assert.equal((await admin.post(`jobs/${created.data.id}/cancel`, { force: true })).status, 400);

  // The list: newest first.
  const second = await admin.post("jobs", { action: "discard", reason: REASON, filter: { source: "routes", status: "archived" } });
  assert.equal(second.status, 202);
  await t.status(second.data.id, "completed");
  const list = await admin.get("jobs?limit=2");
  assert.equal(list.status, 200);
  assert.deepEqual(list.data.items.map((j) => j.id), [second.data.id, created.data.id]);
  for (const f of FIELDS) assert.ok(f in list.data.items[0], `a listed job has ${f}`);
  assert.equal((await admin.get("jobs?status=running")).status, 400, "an unknown query parameter");
});

test("a replay job end to end: dry run, canary over every signature, approval, paced run, counts, one delivery and one audit record per entry", async () => {
  const { admin } = t;
  const SIGS = [
    { code: "UPSTREAM_4XX", message: "downstream rejected the alpha payload" },
    { code: "UPSTREAM_4XX", message: "downstream rejected the beta payload" },
    { code: "SCHEMA_MISMATCH", message: "field gamma is missing" },
  ];
  // 60 entries: 30, 20 and 10 per signature, over two sources.
  const specs = Array.from({ length: 60 }, (_, i) => ({ source: i % 2 ? "e2e-b" : "e2e-a", ...SIGS[i % 6 < 3 ? 0 : i % 6 < 5 ? 1 : 2] }));
  const since = Date.now();
  const entries = await t.makeEntries(specs);
  const until = Date.now();
  const filter = { since, until };
  const ids = entries.map((e) => e.id);
  const eventIds = entries.map((e) => e.event_id);
  const sigCount = new Map();
  for (const e of entries) sigCount.set(e.signature, (sigCount.get(e.signature) ?? 0) + 1);
  assert.deepEqual([...sigCount.values()].sort((a, b) => b - a), [30, 20, 10]);

  const dry = await admin.post("jobs", { action: "replay", reason: REASON, filter, dry_run: true, canary: { size: 3 } });
  assert.equal(dry.status, 200, JSON.stringify(dry.json));
  assert.equal(dry.data.matched, 60);
  assert.deepEqual(dry.data.by_signature.map((s) => s.count), [30, 20, 10], "largest groups first");
  assert.deepEqual(dry.data.by_source.map((s) => s.count), [30, 30]);
  assert.equal(dry.data.canary_ids.length, 3);
  const bySig = new Map(entries.map((e) => [e.id, e.signature]));
  assert.deepEqual(dry.data.canary_ids.map((id) => bySig.get(id)), dry.data.by_signature.map((s) => s.signature), "one entry of each signature, largest group first");
  assert.equal((await rows(t.relay.db, "SELECT count(*) AS n FROM jobs WHERE spec LIKE ?", `%${since}%`))[0].n, 0, "no job row");
  assert.ok(Object.values(await t.entryStatus(ids)).every((s) => s === "pending"), "entries still pending");
  assert.equal(t.receipts("e2e-a").length + t.receipts("e2e-b").length, 0);

  const RATE = 10;
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter, canary: { size: 3 }, rate_per_s: RATE });
  assert.equal(created.status, 202, JSON.stringify(created.json));
  assert.equal(created.data.matched, 60);
  const id = created.data.id;
  const waiting = await t.status(id, "awaiting_approval");
  assert.deepEqual(waiting.canary.ids, dry.data.canary_ids, "the job's canary is the dry run's");
  assert.equal(waiting.canary.passed, true);
  assert.equal(waiting.attempted, 3);
  assert.equal(waiting.succeeded, 3);
  assert.equal(waiting.remaining, 57);
  assertCounts(waiting);
  // The SCHEMA_MISMATCH entry is an `ingest` entry: its replay ingests
  // again and its delivery goes its own way, on the deliveries queue (issue 33).
  const canaryReceipts = await waitFor(() => {
    const got = [...t.receipts("e2e-a", eventIds), ...t.receipts("e2e-b", eventIds)];
    return got.length >= 3 && got;
  }, { what: "the canary's three deliveries" });
  assert.equal(canaryReceipts.length, 3, "only the canary reached the downstream");
  const canaryEvents = new Set(waiting.canary.ids.map((cid) => entries.find((e) => e.id === cid).event_id));
  assert.ok(canaryReceipts.every((r) => canaryEvents.has(r.headers["x-operation-id"])));

  const approvedAt = Date.now();
  const approved = await admin.post(`jobs/${id}/approve`);
  assert.equal(approved.status, 200, JSON.stringify(approved.json));
  assert.equal(approved.data.status, "running");
  const again = await admin.post(`jobs/${id}/approve`);
  assert.equal(again.status, 409, "approve a running job");
  assert.match(again.error.message, /running/);

  const done = await t.status(id, "completed", 30_000);
  assertCounts(done);
  assert.equal(done.matched, 60);
  assert.equal(done.attempted, 60);
  assert.equal(done.succeeded, 60);
  assert.equal(done.failed + done.deduped + done.skipped + done.remaining, 0);
  assert.ok(done.finished_at >= done.created_at);

  const all = await waitFor(() => {
    const got = [...t.receipts("e2e-a", eventIds), ...t.receipts("e2e-b", eventIds)];
    return receiptCounts(got).size >= 60 && got;
  }, { what: "every entry's delivery" });
  const counts = receiptCounts(all);
  assert.equal(counts.size, 60, "every entry reached the downstream");
  assert.ok([...counts.values()].every((n) => n === 1), "none twice");
  assert.ok(Object.values(await t.entryStatus(ids)).every((s) => s === "replayed"));

  // Pacing: after approval, receipts follow rate_per_s.
  const after = all.filter((r) => r.at >= approvedAt).map((r) => r.at).sort((a, b) => a - b);
  assert.equal(after.length, 57);
  const span = after.at(-1) - after[0];
  const want = ((after.length - 1) / RATE) * 1000;
  // Never faster than the rate; a little slower is each step's hand-over
  // (a D1 write and a queue message), which a start never catches up on.
  assert.ok(span >= want * 0.95 && span <= want * 1.25, `57 receipts at ${RATE}/s span ${span} ms; want ${want} ms, -5% to +25%`);

  // One audit record per entry, carrying the job id.
  const audit = await t.audit(id);
  assert.equal(audit.length, 60);
  assert.deepEqual(new Set(audit.map((a) => a.entry_id)), new Set(ids));
  assert.ok(audit.every((a) => a.job_id === id && a.action === "replay" && a.outcome === "succeeded" && a.reason === REASON && a.actor === "test-admin"));
});

test("a failing canary aborts the job, and nothing past the canary is touched", async () => {
  const { admin } = t;
  const entries = await t.makeEntries(Array.from({ length: 12 }, (_, i) => ({ source: "canary", message: `refused kind ${["red", "green"][i % 2]}` })));
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "canary" }, canary: { size: 3 }, approve: "auto" });
  assert.equal(created.status, 202);
  const aborted = await t.status(created.data.id, "aborted");
  assert.match(aborted.abort_reason ?? "", /canary/);
  assert.equal(aborted.canary.passed, false);
  assert.ok(aborted.finished_at);
  assertCounts(aborted);
  assert.ok(aborted.failed >= 1);
  assert.ok(aborted.attempted <= 3);
  const canaryEvents = new Set(aborted.canary.ids.map((cid) => entries.find((e) => e.id === cid).event_id));
  const got = t.receipts("canary");
  assert.ok(got.length >= 1 && got.length <= 3);
  assert.ok(got.every((r) => canaryEvents.has(r.headers["x-operation-id"])), "only canary entries reached the downstream");
  const rest = entries.filter((e) => !aborted.canary.ids.includes(e.id)).map((e) => e.id);
  const after = await rows(t.relay.db, `SELECT status, replay_attempts FROM dead_letters WHERE id IN (${rest.map(() => "?").join(",")})`, ...rest);
  assert.equal(after.length, 9);
  assert.ok(after.every((r) => r.status === "pending" && r.replay_attempts === 0), "entries past the canary are untouched");
  assert.equal((await admin.post(`jobs/${created.data.id}/approve`)).status, 409);
});

test("a downstream that starts failing mid-job stops it within abort.min_attempts and one step", async () => {
  const { admin } = t;
  const entries = await t.makeEntries(Array.from({ length: 60 }, () => ({ source: "abort" })));
  abortAfter = 8; // the first 8 deliveries succeed, then the downstream fails
  const RATE = 20;
  const CONCURRENCY = 5;
  const MIN = 10;
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "abort" }, canary: { size: 2 }, approve: "auto", rate_per_s: RATE, concurrency: CONCURRENCY, abort: { min_attempts: MIN, max_failure_ratio: 0.2 } });
  assert.equal(created.status, 202);
  const aborted = await t.status(created.data.id, "aborted", 30_000);
  assertCounts(aborted);
  assert.match(aborted.abort_reason ?? "", /max_failure_ratio/);
  assert.equal(aborted.canary.passed, true);
  assert.ok(aborted.attempted >= MIN);
  assert.ok(aborted.failed / aborted.attempted > 0.2);
  assert.ok(aborted.attempted <= MIN + stepEntries(RATE), `stopped after ${aborted.attempted} attempts`);
  assert.equal(t.receipts("abort").length, aborted.attempted, "nothing after the abort reached the downstream");
  assert.ok(aborted.remaining > 0);
  const pending = await rows(t.relay.db, "SELECT count(*) AS n FROM dead_letters WHERE source = 'abort' AND status = 'pending' AND replay_attempts = 0");
  assert.equal(pending[0].n, aborted.remaining, "the rest is untouched");
  assert.equal(entries.length, 60);
});

/** Waits until the step chain of `id` generation-fenced after log index `from` is over (a step found the job moved on). */
const chainStopped = (id, from) => waitFor(() => t.logEvents("job_step_superseded", id, from).length > 0, { timeoutMs: 15_000, what: `the step chain of ${id} to stop` });

test("pause, resume and cancel take effect within one step", async () => {
  const { admin } = t;
  const RATE = 5;
  const CONCURRENCY = 1;
  const step = stepEntries(RATE);
  const entries = await t.makeEntries(Array.from({ length: 30 }, () => ({ source: "steer" })));
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "steer" }, canary: { size: 0 }, rate_per_s: RATE, concurrency: CONCURRENCY });
  assert.equal(created.status, 202);
  const id = created.data.id;
  await t.jobUntil(id, (j) => j.status === "running" && j.succeeded >= 3, "three replayed");
  assert.equal((await admin.post(`jobs/${id}/approve`)).status, 409, "approve a running job");
  assert.equal((await admin.post(`jobs/${id}/resume`)).status, 409, "resume a running job");

  let from = t.relay.logs.length;
  let before = t.receipts("steer").length;
  const paused = await admin.post(`jobs/${id}/pause`);
  assert.equal(paused.status, 200, JSON.stringify(paused.json));
  assert.equal(paused.data.status, "paused");
  await chainStopped(id, from);
  const atPause = t.receipts("steer").length;
  assert.ok(atPause - before <= step, `at most one step after the pause (${atPause - before})`);
  const p = await t.job(id);
  assert.equal(p.status, "paused");
  assert.equal(p.attempted, atPause, "the counts match the downstream");
  assert.equal((await admin.post(`jobs/${id}/pause`)).status, 409, "pause a paused job");

  const resumed = await admin.post(`jobs/${id}/resume`);
  assert.equal(resumed.status, 200);
  assert.equal(resumed.data.status, "running");
  await t.jobUntil(id, (j) => j.attempted >= atPause + 2, "progress after the resume");

  from = t.relay.logs.length;
  before = t.receipts("steer").length;
  const cancelled = await admin.post(`jobs/${id}/cancel`);
  assert.equal(cancelled.status, 200);
  assert.equal(cancelled.data.status, "cancelled");
  await chainStopped(id, from);
  const atCancel = t.receipts("steer").length;
  assert.ok(atCancel - before <= step, `at most one step after the cancel (${atCancel - before})`);
  const c = await t.job(id);
  assert.equal(c.status, "cancelled");
  assert.ok(c.finished_at);
  assertCounts(c);
  assert.ok(c.remaining > 0, "the cancel left entries unreplayed");
  assert.equal(c.attempted, atCancel);
  assert.equal((await admin.post(`jobs/${id}/resume`)).status, 409, "a cancelled job cannot be resumed");
  const counts = receiptCounts(t.receipts("steer"));
  assert.ok([...counts.values()].every((n) => n === 1), "no entry twice across pause and resume");
  const st = Object.values(await t.entryStatus(entries.map((e) => e.id)));
  assert.equal(st.filter((s) => s === "replayed").length, c.succeeded);
  assert.equal(st.filter((s) => s === "pending").length, c.remaining);
});

test("a job paused during its canary still waits for approval after it", async () => {
  const { admin } = t;
  await t.makeEntries(Array.from({ length: 12 }, () => ({ source: "canary-pause" })));
  const created = await admin.post("jobs", { action: "replay", reason: REASON, filter: { source: "canary-pause" }, canary: { size: 3, per_signature: false }, rate_per_s: 2, concurrency: 1 });
  const id = created.data.id;
  await t.jobUntil(id, (j) => j.status === "canary" && j.attempted >= 1, "the canary under way");
  const from = t.relay.logs.length;
  assert.equal((await admin.post(`jobs/${id}/pause`)).status, 200);
  await chainStopped(id, from);
  const resumed = await admin.post(`jobs/${id}/resume`);
  assert.equal(resumed.status, 200);
  assert.equal(resumed.data.status, "canary", "back to its canary, not past the approval");
  const waiting = await t.status(id, "awaiting_approval");
  assert.equal(waiting.canary.passed, true);
  assert.equal(waiting.attempted, 3, "nothing past the canary before the approval");
  assert.equal(t.receipts("canary-pause").length, 3);
  const cancelled = await admin.post(`jobs/${id}/cancel`);
  assert.equal(cancelled.data.status, "cancelled");
  assertCounts(await t.job(id));
});
