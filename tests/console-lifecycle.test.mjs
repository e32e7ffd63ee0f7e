// The console over the DLQ's lifecycle (DESIGN §4-§6), in Chromium against
// the real workers in Miniflare: a firing alarm on the overview, as the
// alerts answer the page fetched gives it; the alarms read really failing
// (its table gone) shows the API's error in their place; an entry evicted
// at capacity (DLQ_CAPACITY 2, real webhooks refused by a real downstream)
// found with the evicted filter and restored with a typed reason.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { openConsole, click, until, signIn, reason, screenshot, answerTo, tableRows, assertTokenKept } from "./support/console.mjs";

const CAPACITY = 2;
const SECRET = "lifecycle-webhook-secret";
let relay, admin, downstream, c, page;
/** The dead-letter rows, oldest first; the first one is evicted. */
let entries;

before(async () => {
  downstream = await startDownstream({ "/d": () => ({ status: 400 }) });
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ evict: { scheme: "hmac-sha256", downstream: downstream.url("/d") } }),
      WEBHOOK_SECRET_EVICT: SECRET, DOWNSTREAM_SIGNING_SECRET: "lifecycle-down-secret", BREAKER_FAILURE_THRESHOLD: "1000",
      DLQ_CAPACITY: String(CAPACITY),
    },
  });
  admin = adminClient(relay, [SECRET, "lifecycle-down-secret"]);
  entries = [];
  for (let n = 0; n < CAPACITY + 1; n++) entries.push(await deadLettered(n));
  await waitFor(async () => (await rows(relay.db, "SELECT id FROM dead_letter_tombstones WHERE id = ?", entries[0].id)).length === 1, { what: "the oldest entry's tombstone" });
  c = await openConsole(relay);
  page = c.page;
  await signIn(c);
  await page.waitForSelector("[data-stat=depth]");
});

after(async () => {
  await c?.close();
  await relay?.dispose();
  await downstream?.close();
});

/** Ingests one event that the downstream refuses, and waits for its dead letter. */
async function deadLettered(n) {
  const body = JSON.stringify({ n, order: `lifecycle-${n}` });
  const res = await relay.fetch("/webhooks/evict", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `lifecycle-${n}` }) });
  assert.equal(res.status, 202, await res.clone().text());
  const { event_id } = await res.json();
  return waitFor(async () => (await rows(relay.db, "SELECT id, status FROM dead_letters WHERE event_id = ?", event_id))[0], { timeoutMs: 30_000, what: `dead letter ${n}` });
}

/** Presses Refresh on the overview and answers the alerts answer the page fetched. */
async function refreshOverview() {
  const alerts = answerTo(page, "alerts");
  const fetched = await page.$eval("[data-fetched]", (e) => e.dataset.fetched).catch(() => null);
  await click(page, "Refresh");
  const answer = await alerts;
  await until(page, (before) => !document.querySelector("[aria-busy]") && document.querySelector("[data-fetched]")?.dataset.fetched !== before, fetched);
  return answer;
}

test("a firing alarm shows on the overview, as the alerts answer the page fetched gives it", async () => {
  // The eviction (and a full store) is the dlq_capacity condition; the watchdog runs now.
  const run = await admin.post("maintenance/run", {});
  assert.equal(run.status, 200, JSON.stringify(run.json));
  assert.ok(run.data.alarms.fired.includes("dlq_capacity:dlq"), JSON.stringify(run.data.alarms));

  const answer = await refreshOverview();
  assert.equal(answer.status, 200);
  const firing = answer.data.items.filter((a) => a.state === "firing");
  assert.ok(firing.some((a) => a.id === "dlq_capacity:dlq" && a.kind === "dlq_capacity" && a.subject === "dlq"), JSON.stringify(firing));
  const shown = await tableRows(page, "Firing alarms");
  assert.deepEqual(shown.map((r) => r.slice(0, 3)), firing.map((a) => [a.id, a.kind, a.subject]), "each firing alarm with its kind and subject");
  // Its detail, field by field as the answer gives it (none of its fields is a time).
  const detail = await page.$$eval("table", (tables) => {
    const row = [...tables.find((t) => t.caption?.textContent === "Firing alarms").tBodies[0].rows].find((r) => r.cells[0].textContent === "dlq_capacity:dlq");
    return [...row.cells[4].querySelectorAll("dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]);
  });
  assert.deepEqual(detail, Object.entries(firing.find((a) => a.id === "dlq_capacity:dlq").detail).map(([k, v]) => [k, v !== null && typeof v === "object" ? JSON.stringify(v) : String(v)]));
  await screenshot(page, "overview-alarms");
});

test("the alarms read failing (their table gone) shows the API's error in their place, never 'no alarm'", async () => {
  await relay.db.prepare("ALTER TABLE alarms RENAME TO alarms_away").run();
  try {
    const answer = await refreshOverview();
    assert.ok(answer.status >= 500, `the API fails the read: ${answer.status} ${JSON.stringify(answer.error)}`);
    const section = await page.$eval("[aria-labelledby=alarms-h]", (s) => s.textContent);
    assert.ok(section.includes(`HTTP ${answer.status}`) && section.includes(answer.error.message), `${section} shows ${JSON.stringify(answer.error)}`);
    assert.doesNotMatch(section, /No alarm is firing/);
    assert.equal(await tableRows(page, "Firing alarms"), null);
    assert.ok(await page.$("[data-stat=depth]"), "the stats, read fine, are still shown");
  } finally {
    await relay.db.prepare("ALTER TABLE alarms_away RENAME TO alarms").run();
  }
  await refreshOverview();
  assert.ok((await tableRows(page, "Firing alarms")).length > 0, "back once the table is");
});

test("an evicted entry: found with the evicted filter, Restore refused at capacity with the API's message, then back as pending", async () => {
  const evicted = entries[0].id;
  await click(page, "Entries", "#nav");
  await page.waitForSelector("main form.filters");
  await page.select("main select[name=status]", "evicted");
  await click(page, "Apply");
  const listed = await until(page, () => {
    const t = [...document.querySelectorAll("#entries table")].find((x) => x.caption?.textContent === "Evicted entries (tombstones)");
    return t && [...t.tBodies[0].rows].map((r) => r.cells[0].textContent);
  });
  assert.deepEqual(listed, [evicted]);
  await click(page, evicted);
  await page.waitForSelector("[data-status=evicted]");
  assert.match(await page.$eval("main", (m) => m.innerText), /dead_letters\/\d{4}-\d{2}-\d{2}\//, "the tombstone names its archive key");

  // Two entries are pending, the capacity: the API refuses, and the page says why.
  await reason(page, "the customer asked for it back");
  const full = answerTo(page, `webhook-dlq/${evicted}/restore`, "POST");
  await click(page, "Restore");
  const refused = await full;
  assert.equal(refused.status, 409);
  const said = await until(page, () => document.querySelector(".actions [role=alert]")?.textContent);
  assert.ok(said.includes("HTTP 409") && said.includes(refused.error.message), said);
  assert.match(said, /DLQ_CAPACITY 2/);
  assert.ok(await page.$("[data-status=evicted]"), "still evicted");

  // Room is made (one pending entry archived); the same reason, Restore again.
  assert.equal((await admin.post(`webhook-dlq/${entries[1].id}/archive`, { reason: "make room for the restore" })).status, 200);
  const again = answerTo(page, `webhook-dlq/${evicted}/restore`, "POST");
  await click(page, "Restore");
  const restored = await again;
  assert.equal(restored.status, 200);
  assert.equal(restored.data.status, "pending");
  await page.waitForSelector("[data-status=pending]");
  const kept = await until(page, () => document.querySelector(".actions .ok")?.textContent);
  assert.match(kept, /Restore: HTTP 200/);
  assert.match(kept, /Status\s*pending/);
  assert.equal((await rows(relay.db, "SELECT status FROM dead_letters WHERE id = ?", evicted))[0]?.status, "pending");
  assert.equal((await rows(relay.db, "SELECT count(*) AS n FROM dead_letter_tombstones WHERE id = ?", evicted))[0].n, 0);
  const trail = await until(page, () => [...document.querySelectorAll("[aria-labelledby=trail-h] tbody tr")].map((tr) => tr.textContent).join("\n"));
  assert.match(trail, /restore/);
  assert.match(trail, /the customer asked for it back/);
});

test("the story of an event whose row retention swept shows the archive key in place of the event, and its entries", async () => {
  // As the sweep leaves it (tests/event-story.test.mjs drives the real sweep): the
  // event's row, attempts and steps gone, its entries naming the object that holds it.
  const [{ event_id: eventId }] = await rows(relay.db, "SELECT event_id FROM dead_letters WHERE id = ?", entries[2].id);
  const key = `events/2026-12-04/${eventId}~${eventId}.ndjson`;
  await relay.db.prepare("UPDATE dead_letters SET event_archive_key = ? WHERE event_id = ?").bind(key, eventId).run();
  for (const table of ["events", "attempts", "event_steps"]) await relay.db.prepare(`DELETE FROM ${table} WHERE event_id = ?`).bind(eventId).run();
  const story = answerTo(page, `events/${eventId}`);
  await page.goto(`${page.url().split("#")[0]}#/story?q=${eventId}`);
  const answer = await story;
  assert.equal(answer.status, 200, JSON.stringify(answer.error));
  assert.equal(answer.data.event, null);
  const shown = await until(page, () => document.querySelector("[data-swept]")?.textContent);
  assert.equal(shown, `Swept to the archive: ${key}`);
  const listed = await until(page, () => {
    const t = [...document.querySelectorAll("table")].find((x) => x.caption?.textContent === "Dead-letter entries");
    return t && [...t.tBodies[0].rows].map((r) => r.cells[0].textContent);
  });
  assert.deepEqual(listed, [entries[2].id]);
});

test("after these views the token is in no URL, not in localStorage, not in the log", async () => {
  await assertTokenKept(c, relay);
});
