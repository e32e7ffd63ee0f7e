// Steering a job from the console, in Chromium against the real workers in
// Miniflare: a replay job slow enough to stay running is paused, resumed
// and cancelled with the job page's buttons, each step read from the API's
// answer the page shows; the jobs list pages with its cursor.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startJobsRelay } from "./support/jobs.mjs";
import { openConsole, click, until, signIn, reason, answerTo, tableRows, assertTokenKept } from "./support/console.mjs";

const ENTRIES = 8;
let jobs, c, page, jobId;

before(async () => {
  jobs = await startJobsRelay(["slow"]);
  await jobs.makeEntries(Array.from({ length: ENTRIES }, () => ({ source: "slow" })));
  c = await openConsole(jobs.relay);
  page = c.page;
  await signIn(c);
  await page.waitForSelector("[data-stat=depth]");
});

after(async () => {
  await c?.close();
  await jobs?.dispose();
});

/** Presses `button` on the job page; the page shows the API's answer, whose status is `want`, and so does the job. */
async function steer(button, want) {
  const answer = answerTo(page, `jobs/${jobId}/${button.toLowerCase()}`, "POST");
  await click(page, button);
  const res = await answer;
  assert.equal(res.status, 200, JSON.stringify(res.error));
  assert.equal(res.data.status, want);
  const said = await until(page, (b) => {
    const t = document.querySelector("main .answer .ok")?.textContent;
    return t?.startsWith(`${b}:`) && t;
  }, button);
  assert.equal(said, `${button}: HTTP 200, status ${want}`);
  await until(page, (w) => document.querySelector("[data-job-status]")?.dataset.jobStatus === w, want);
  assert.equal((await jobs.job(jobId)).status, want);
}

const enabled = () => page.$$eval("main section button", (bs) => bs.filter((b) => !b.disabled).map((b) => b.textContent));

test("a running job: Pause, Resume and Cancel, each as the API answered it", async () => {
  await page.goto(`${c.origin}/admin#/entries?source=slow&status=pending`);
  await click(page, "Create a job from this filter");
  await page.waitForSelector("main form.job-form");
  // No canary, so it runs at once; at 0.2/s its 8 entries take about 40 s.
  await page.type("main input[name=canary_size]", "0");
  await page.type("main input[name=rate_per_s]", "0.2");
  await page.type("main input[name=concurrency]", "1");
  await reason(page, "replay slowly, steered by hand");
  await click(page, "Preview (dry run)");
  assert.equal(Number(await until(page, () => document.querySelector("[data-matched]")?.dataset.matched)), ENTRIES);
  await click(page, "Start job");
  jobId = await until(page, () => location.hash.startsWith("#/job/") && decodeURIComponent(location.hash.slice("#/job/".length)));
  await until(page, () => document.querySelector("[data-job-status]")?.dataset.jobStatus === "running");
  assert.deepEqual(await enabled(), ["Pause", "Cancel"]);

  await steer("Pause", "paused");
  assert.deepEqual(await enabled(), ["Resume", "Cancel"]);
  await steer("Resume", "running");
  assert.deepEqual(await enabled(), ["Pause", "Cancel"]);
  await steer("Cancel", "cancelled");
  assert.deepEqual(await enabled(), [], "a cancelled job takes no command");

  const j = await jobs.job(jobId);
  assert.ok(j.remaining > 0, `cancelled before its end: ${JSON.stringify(j)}`);
  assert.ok(j.finished_at > 0);
  for (const k of ["matched", "attempted", "remaining"]) {
    assert.equal(await until(page, (key) => document.querySelector(`[data-count=${key}]`)?.textContent, k), String(j[k]), k);
  }
});

test("the jobs list pages: Jobs per page, Next page and Previous page show the API's pages", async () => {
  // Two more jobs, through the API: nothing matches them, so they complete at once.
  for (const n of [1, 2]) {
    const made = await jobs.admin.post("jobs", { action: "archive", reason: `an empty job ${n}`, filter: { source: "slow", code: "TIMEOUT" } });
    assert.equal(made.status, 202, JSON.stringify(made.json));
  }
  const all = (await jobs.admin.get("jobs?limit=200")).data.items.map((j) => j.id);
  assert.equal(all.length, 3);
  const shownIds = (want) => until(page, (w) => {
    const t = [...document.querySelectorAll("main table")].find((x) => x.caption?.textContent === "Jobs");
    const ids = t && [...t.tBodies[0].rows].map((r) => r.cells[0].textContent);
    return ids && ids[0] === w && ids;
  }, want);

  await click(page, "Jobs", "#nav");
  await (await page.waitForSelector("main input[name=limit]")).type("2");
  const first = answerTo(page, "jobs?limit=2");
  await click(page, "Show");
  const p1 = (await first).data;
  assert.equal(p1.items.length, 2);
  assert.ok(p1.next_cursor, "a second page");
  assert.deepEqual(await shownIds(p1.items[0].id), p1.items.map((j) => j.id));
  assert.deepEqual((await tableRows(page, "Jobs")).map((r) => r[2]), p1.items.map((j) => j.status), "each job's status as answered");

  const second = answerTo(page, `jobs?limit=2&cursor=${encodeURIComponent(p1.next_cursor)}`);
  await click(page, "Next page");
  const p2 = (await second).data;
  assert.deepEqual(await shownIds(p2.items[0].id), p2.items.map((j) => j.id));
  assert.deepEqual([...p1.items, ...p2.items].map((j) => j.id), all, "the pages hold every job once, newest first");
  assert.equal(p2.next_cursor, null);
  assert.equal(await page.$$eval("main nav.pager a", (as) => as.some((a) => a.textContent === "Next page")), false, "no page after the last");

  await click(page, "Previous page");
  assert.deepEqual(await shownIds(p1.items[0].id), p1.items.map((j) => j.id));
  assert.match(await page.evaluate(() => location.hash), /limit=2/);
});

test("after these views the token is in no URL, not in localStorage, not in the log", async () => {
  await assertTokenKept(c, jobs.relay);
});
