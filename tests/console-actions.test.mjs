// The console offers only what the API says can be done (DESIGN §4, §6), in
// Chromium against the real workers in Miniflare, at 1280 and 390 px: an
// entry in each status and a job in each status it holds long enough to be
// seen show exactly the buttons of their answer's "actions"; the Archive
// view pages through the answer's cursor (more objects than one page, made
// by real capacity evictions); a hash the router does not know, or cannot
// decode, shows "Page not found" with a link to the Overview; and steering a
// job while its poll is in flight leaves one poll loop, which leaving the
// view stops.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startJobsRelay, waitFor, rows } from "./support/jobs.mjs";
import { openConsole, click, until, signIn, screenshot, answerTo, assertTokenKept } from "./support/console.mjs";

/** Pending entries the store keeps while the archive is filled; past it the oldest are evicted. */
const CAPACITY = 3;
/** Dead letters sent at capacity: all but CAPACITY are evicted, each archived as one object (page size 100). */
const FLOOD = 105;
/** What the `act` destination answers (a test switches it to fail a replay). */
const answers = { act: 200 };
const WIDTHS = [[1280, 800], [390, 844]];

let t, c, page;
/** One entry id per status, and the jobs' ids. */
const entries = {};
let slowJob, doneJob, badJob;

before(async () => {
  t = await startJobsRelay(["act", "slow", "done", "bad"], { act: () => ({ status: answers.act }), bad: () => ({ status: 500 }) },
    { vars: { DLQ_CAPACITY: String(CAPACITY), MAX_REPLAY_ATTEMPTS: "1" } });
  c = await openConsole(t.relay);
  page = c.page;
  await signIn(c);
  await page.waitForSelector("[data-stat=depth]");
});

after(async () => {
  await c?.close();
  await t?.dispose();
});

/** "unarchive" → "Unarchive", as the page labels the action the API names. */
const button = (action) => action.charAt(0).toUpperCase() + action.slice(1);

/** The visible buttons inside `within`, at each width, each list answered. */
async function offeredAtEachWidth(within) {
  const seen = [];
  for (const [width, height] of WIDTHS) {
    await page.setViewport({ width, height });
    seen.push(await page.$$eval(`${within} button`, (bs) => bs.filter((b) => b.offsetParent !== null && !b.disabled).map((b) => b.textContent)));
  }
  await page.setViewport({ width: 1280, height: 800 });
  return seen;
}

test("the fixtures: more archived objects than one page holds, and an entry in each status", async () => {
  const messages = Array.from({ length: FLOOD }, () => t.handoff("act"));
  const dlq = await t.relay.producer("WEBHOOKS_DLQ");
  for (let i = 0; i < FLOOD; i += 50) await dlq.sendBatch(messages.slice(i, i + 50).map((body) => ({ body })));
  const count = async (sql) => (await rows(t.relay.db, sql))[0].n;
  await waitFor(async () => (await count("SELECT count(*) AS n FROM dead_letter_tombstones WHERE cause = 'evicted'")) === FLOOD - CAPACITY
    && (await count("SELECT count(*) AS n FROM dead_letters WHERE status = 'pending'")) === CAPACITY, { timeoutMs: 60_000, what: `${FLOOD - CAPACITY} evictions` });
  entries.evicted = (await rows(t.relay.db, "SELECT id FROM dead_letter_tombstones ORDER BY evicted_at DESC, id LIMIT 1"))[0].id;
  const [replayed, poisoned, archived] = (await rows(t.relay.db, "SELECT id FROM dead_letters WHERE status = 'pending' ORDER BY id")).map((r) => r.id);
  const decide = async (id, action, want) => {
    const res = await t.admin.post(`webhook-dlq/${id}/${action}`, { reason: `fixture: ${want}` });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.data.status, want);
    entries[want] = id;
  };
  await decide(replayed, "replay", "replayed");
  answers.act = 500;
  await decide(poisoned, "replay", "poisoned");
  answers.act = 200;
  await decide(archived, "archive", "archived");
  // Room for the entries the jobs need; D1 and R2 are kept.
  await t.relay.reconfigure({ DLQ_CAPACITY: "10000" });
  const [discarded, pending] = await t.makeEntries([{ source: "act" }, { source: "act" }]);
  entries.pending = pending.id;
  await decide(discarded.id, "discard", "discarded");
});

const ENTRY_OFFERS = {
  pending: ["Replay", "Archive", "Discard"],
  replayed: ["Discard"],
  poisoned: ["Archive", "Discard"],
  archived: ["Unarchive", "Discard"],
  discarded: [],
  evicted: ["Restore"],
};

test("each entry status offers exactly the actions of its answer, at both widths", async () => {
  for (const [status, want] of Object.entries(ENTRY_OFFERS)) {
    const id = entries[status];
    const answer = answerTo(page, `webhook-dlq/${id}`);
    await page.goto(`${c.origin}/admin#/entry/${id}`);
    const api = (await answer).data;
    assert.equal(api.status, status);
    assert.deepEqual(api.actions.map(button), want, `the API's actions for ${status}`);
    await page.waitForSelector(`[data-status=${status}]`);
    for (const offered of await offeredAtEachWidth("main")) assert.deepEqual(offered, want, `${status}: the page offers what the answer lists`);
    assert.equal(await page.$eval(".actions", (p) => p.dataset.actions), api.actions.join(" "));
    if (status === "evicted") await screenshot(page, "entry-evicted");
    // A list item answers the same actions as the entry.
    const listed = await t.admin.get(`webhook-dlq?status=${status}&limit=200`);
    assert.deepEqual(listed.data.items.find((e) => e.id === id)?.actions, api.actions, `${status} in the list`);
  }
});

test("a pending entry's page offers Replay, Archive and Discard, not Unarchive or Restore, and reads as labelled groups", async () => {
  await page.goto(`${c.origin}/admin#/entry/${entries.pending}`);
  await page.waitForSelector("[data-status=pending]");
  const offered = await page.$$eval("main button", (bs) => bs.map((b) => b.textContent));
  for (const name of ["Replay", "Archive", "Discard"]) assert.ok(offered.includes(name), `offers ${name}`);
  for (const name of ["Unarchive", "Restore"]) assert.ok(!offered.includes(name), `does not offer ${name}`);
  // Grouped as failure, timing, identity, the attempts, then the event.
  assert.deepEqual(await page.$$eval("main section > h2", (hs) => hs.map((x) => x.textContent)), ["Failure", "Timing", "Identity", "Attempts", "Event"]);
  // Each field once, under a label a person reads; no column name on the page as it reads.
  const labels = await page.$$eval("main dl.fields dt", (dts) => dts.map((d) => d.textContent));
  assert.equal(new Set(labels).size, labels.length, `each label once: ${labels}`);
  for (const name of ["Code", "Class", "Message", "Signature", "Dead-lettered", "First attempt", "Last attempt", "Enqueued", "Event", "Idempotency key", "Source", "Content hash"]) {
    assert.ok(labels.includes(name), `${name} is shown: ${labels}`);
  }
  const text = await page.$eval("main", (m) => m.innerText);
  assert.doesNotMatch(text, /_at_ms|dead_lettered|content_hash|error_signature|first_attempt|idempotency_key/);
  // A time is its age, with the exact instant beside it and on hover.
  const dead = await page.$$eval("main dl.fields dt", (dts) => {
    const dd = dts.find((d) => d.textContent === "Dead-lettered").nextElementSibling;
    return { age: dd.querySelector("time").textContent, title: dd.querySelector("time").title, exact: dd.querySelector(".exact").textContent };
  });
  assert.match(dead.age, /ago$/);
  assert.match(dead.exact, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  assert.equal(dead.title, dead.exact);
  await screenshot(page, "entry-pending");
});

/** Waits until the job page shows `status`; checks that its buttons, at both widths, are exactly the answer's actions and `want`. */
async function jobOffers(id, status, want) {
  await until(page, (s) => document.querySelector("[data-job-status]")?.dataset.jobStatus === s, status);
  const drawn = await page.$eval("section[aria-label=Job] [data-actions]", (e) => e.dataset.actions);
  assert.deepEqual(drawn ? drawn.split(" ").map(button) : [], want, `the answer the page drew lists the actions of ${status}`);
  for (const offered of await offeredAtEachWidth("section[aria-label=Job]")) assert.deepEqual(offered, want, `${status}: buttons only for the answer's actions`);
}

test("each job status offers exactly the commands of its answer: canary, awaiting approval, running", async () => {
  await t.makeEntries(Array.from({ length: 8 }, () => ({ source: "slow" })));
  // A canary of 3 entries at 0.2/s holds the job in `canary` for about 10 s.
  const made = await t.admin.post("jobs", { action: "replay", reason: "a slow canary, steered by hand", filter: { source: "slow" }, canary: { size: 3, per_signature: false }, rate_per_s: 0.2, concurrency: 1 });
  assert.equal(made.status, 202, JSON.stringify(made.json));
  slowJob = made.data.id;
  await page.goto(`${c.origin}/admin#/job/${slowJob}`);
  await jobOffers(slowJob, "canary", ["Pause", "Cancel"]);
  await jobOffers(slowJob, "awaiting_approval", ["Approve", "Cancel"]);
  await click(page, "Approve");
  await jobOffers(slowJob, "running", ["Pause", "Cancel"]);
});

/** Every GET of job `id`'s answer the page receives, by when its request started (the browser's own clock, in ms). */
function jobReads(id) {
  const path = `/api/v1/admin/jobs/${id}`;
  const isRead = (r) => r.method() === "GET" && new URL(r.url()).pathname === path;
  const reads = [];
  let hold = false;
  let held = null;
  const onRequest = (r) => {
    if (r.isInterceptResolutionHandled()) return;
    if (hold && isRead(r)) {
      hold = false;
      held = r;
      return;
    }
    r.continue();
  };
  const onResponse = (res) => {
    const r = res.request();
    if (isRead(r) && r !== held) reads.push(res.timing()?.requestTime * 1000);
  };
  return {
    reads,
    isRead,
    /** Holds the next read in flight until `release()`. */
    hold: () => { hold = true; },
    held: () => held,
    release: () => held.continue(),
    async start() {
      await page.setRequestInterception(true);
      page.on("request", onRequest);
      page.on("response", onResponse);
    },
    async stop() {
      page.off("request", onRequest);
      page.off("response", onResponse);
      await page.setRequestInterception(false);
    },
  };
}

/** The gaps between the starts of reads `from` on, once `n` more have started (one loop: each ≥ the 1 s poll period). */
async function gapsOf(reads, from, n) {
  await waitFor(() => reads.length >= from + n, { timeoutMs: 30_000, what: `${n} more polls of the job` });
  const starts = reads.slice(from, from + n).sort((a, b) => a - b);
  return starts.slice(1).map((s, i) => Math.round(s - starts[i]));
}

test("steering while a poll is in flight leaves one poll loop, and leaving the view stops it", async () => {
  const polls = jobReads(slowJob);
  await polls.start();
  try {
    // A poll of the running job stays in flight while Pause is pressed.
    polls.hold();
    await waitFor(() => polls.held(), { timeoutMs: 10_000, what: "a poll of the job in flight" });
    const paused = answerTo(page, `jobs/${slowJob}/pause`, "POST");
    const before = polls.reads.length;
    await click(page, "Pause");
    assert.equal((await paused).data.status, "paused");
    // The steer's own read has started its loop; now the held read answers.
    await waitFor(() => polls.reads.length > before, { timeoutMs: 10_000, what: "the read after Pause" });
    polls.release();
    const gaps = await gapsOf(polls.reads, before, 5);
    assert.ok(gaps.every((g) => g >= 900), `one loop: each poll starts a period after the last, gaps ${gaps} ms`);
    await jobOffers(slowJob, "paused", ["Resume", "Cancel"]);

    // Leaving the view stops its loop: back on the job, a new loop is the only one.
    await click(page, "Jobs", "#nav");
    await until(page, () => document.querySelector("h1")?.textContent === "Jobs");
    await click(page, slowJob);
    await until(page, () => document.querySelector("[data-job-status]"));
    const back = polls.reads.length;
    const again = await gapsOf(polls.reads, back, 4);
    assert.ok(again.every((g) => g >= 900), `the left view's loop stopped: gaps ${again} ms`);
  } finally {
    await polls.stop();
  }
});

test("each job status offers exactly the commands of its answer: paused, running, cancelled, completed, aborted", async () => {
  await page.goto(`${c.origin}/admin#/job/${slowJob}`);
  await jobOffers(slowJob, "paused", ["Resume", "Cancel"]);
  await click(page, "Resume");
  await jobOffers(slowJob, "running", ["Pause", "Cancel"]);
  await click(page, "Cancel");
  await jobOffers(slowJob, "cancelled", []);

  await t.makeEntries([{ source: "done" }, { source: "bad" }]);
  const done = await t.admin.post("jobs", { action: "archive", reason: "an archive job that completes", filter: { source: "done" } });
  const bad = await t.admin.post("jobs", { action: "replay", reason: "a canary that fails", filter: { source: "bad" }, canary: { size: 1 } });
  assert.equal(done.status, 202, JSON.stringify(done.json));
  assert.equal(bad.status, 202, JSON.stringify(bad.json));
  [doneJob, badJob] = [done.data.id, bad.data.id];
  await page.goto(`${c.origin}/admin#/job/${doneJob}`);
  await jobOffers(doneJob, "completed", []);
  await page.goto(`${c.origin}/admin#/job/${badJob}`);
  await jobOffers(badJob, "aborted", []);
  assert.match(await page.$eval("section[aria-label=Job] [data-actions]", (e) => e.textContent), /takes no command/);
  // Each item of the jobs list answers the same actions as the job.
  const listed = (await t.admin.get("jobs?limit=200")).data.items;
  assert.equal(listed.length, 3);
  for (const item of listed) assert.deepEqual(item.actions, (await t.job(item.id)).actions, item.id);
});

test("the Archive view pages through the answer's cursor: the second page holds the rest, and Previous page comes back", async () => {
  const archived = (await rows(t.relay.db, "SELECT archive_key AS k FROM dead_letter_tombstones WHERE cause = 'evicted'")).map((r) => r.k);
  assert.ok(archived.length > 100, `more objects than one page: ${archived.length}`);
  const shown = (firstKey) => until(page, (w) => {
    const table = [...document.querySelectorAll("main table")].find((x) => x.caption?.textContent === "Archive objects");
    const keys = table && [...table.tBodies[0].rows].map((r) => r.cells[0].textContent);
    return keys && keys[0] === w && keys;
  }, firstKey);
  const first = answerTo(page, "archive?table=dead_letters");
  await page.goto(`${c.origin}/admin#/archive?table=dead_letters`);
  const p1 = (await first).data;
  assert.equal(p1.items.length, 100);
  assert.ok(p1.cursor, "the answer says there is more");
  assert.deepEqual(await shown(p1.items[0].key), p1.items.map((o) => o.key));
  for (const [width, height] of WIDTHS) {
    await page.setViewport({ width, height });
    assert.ok(await page.$$eval("main nav.pager a", (as) => as.some((a) => a.textContent === "Next page" && a.offsetParent !== null)), `Next page at ${width} px`);
  }
  await page.setViewport({ width: 1280, height: 800 });

  const second = answerTo(page, `archive?table=dead_letters&cursor=${encodeURIComponent(p1.cursor)}`);
  await click(page, "Next page");
  const p2 = (await second).data;
  assert.deepEqual(await shown(p2.items[0].key), p2.items.map((o) => o.key));
  assert.equal(p2.cursor, null);
  assert.deepEqual([...p1.items, ...p2.items].map((o) => o.key).sort(), archived.sort(), "the two pages hold every evicted entry's object once");
  assert.equal(await page.$$eval("main nav.pager a", (as) => as.some((a) => a.textContent === "Next page")), false, "no page after the last");
  await click(page, "Previous page");
  assert.deepEqual(await shown(p1.items[0].key), p1.items.map((o) => o.key));
});

test("a hash the router does not know, or cannot decode, shows Page not found with a link to the Overview, never a blank page", async () => {
  for (const hash of ["#/constructor", "#/__proto__", "#/nope", "#/entries/%E0%A4%A", "#/entry/%E0%A4%A", "#/job/%"]) {
    await page.goto(`${c.origin}/admin${hash}`);
    await until(page, () => document.querySelector("main h1")?.textContent === "Page not found");
    assert.ok((await page.$eval("main", (m) => m.innerText)).includes(hash), `names what was asked: ${hash}`);
    for (const [width, height] of WIDTHS) {
      await page.setViewport({ width, height });
      const link = await page.$$eval("main a", (as) => as.filter((a) => a.offsetParent !== null).map((a) => [a.textContent, a.getAttribute("href")]));
      assert.deepEqual(link, [["Go to the Overview", "#/overview"]], `${hash} at ${width} px`);
    }
    await page.setViewport({ width: 1280, height: 800 });
  }
  await click(page, "Go to the Overview");
  await page.waitForSelector("[data-stat=depth]");
  assert.equal(await page.$eval("h1", (e) => e.textContent), "Overview");
});

test("after these views the token is in no URL, not in localStorage, not in the log", async () => {
  await assertTokenKept(c, t.relay);
});
