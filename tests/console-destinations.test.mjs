// The console per destination (issue 33, DESIGN §6), in Chromium against
// the real workers: a delivery's dead letter (a `deliveries` message on the
// real `webhooks-dlq`, its event, deliveries and attempts seeded as the
// relay writes them) shows its kind and destination; the overview lists the
// destinations with their breaker, parked deliveries and last hour; the
// story shows the deliveries and the unmatched routes; the entry and job
// lists filter by destination through a labelled input. A webhook's markup
// stays text throughout.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { eventIdOf } from "./support/jobs.mjs";
import { openConsole, signIn, click, until, tableRows, answerTo, screenshot } from "./support/console.mjs";

const IMG = `<img src=x onerror="window.__pwned=1">`;
const NOW = Date.now();
const KEY = "shop:console-1";
const EVENT = eventIdOf(KEY);
const BODY = JSON.stringify({ note: IMG });

let relay, c, entryId;
before(async () => {
  relay = await startRelay();
  const run = (sql, ...p) => relay.db.prepare(sql).bind(...p).run();
  await run(`INSERT INTO events (idempotency_key, event_id, source, received_at, ingested_at, last_seen_at, headers, body, body_bytes, delivery_status, routed_at, routes_unmatched)
    VALUES (?1, ?2, 'shop', ?3, ?3, ?3, ?4, ?5, ?6, 'pending', ?3, '["audit"]')`, KEY, EVENT, NOW - 60_000, JSON.stringify({ "x-probe": IMG }), BODY, BODY.length);
  for (const [d, state] of [["billing", "pending"], ["crm", "delivered"]]) {
    await run(`INSERT INTO deliveries (event_id, destination, state, attempts, created_at, updated_at) VALUES (?1, ?2, ?3, 1, ?4, ?4)`, EVENT, d, state, NOW - 30_000);
  }
  await run(`INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at, destination) VALUES (?1, 'dm-1', 1, 'poison', 'UPSTREAM_4XX', ?2, ?3, 'billing')`,
    EVENT, `billing said ${IMG}`, NOW - 20_000);
  await run(`INSERT INTO breakers (destination, state_name, state, updated_at) VALUES ('billing', 'OPEN', '{}', ?1)`, NOW - 10_000);
  await (await relay.producer("WEBHOOKS_DLQ")).send({ v: 1, kind: "delivery", event_id: EVENT, idempotency_key: KEY, source: "shop", destination: "billing", received_at_ms: NOW - 60_000 });
  entryId = (await waitFor(() => rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ?", EVENT).then((r) => r[0]), { what: "the delivery's entry" })).id;
  c = await openConsole(relay);
  await signIn(c);
});
after(async () => {
  await c?.close();
  await relay?.dispose();
});

test("an entry shows its kind and destination, and the overview lists the destinations", async () => {
  const { page } = c;
  await page.goto(`${c.origin}/admin#/entry/${entryId}`);
  assert.equal(await until(page, () => document.querySelector("[data-kind]")?.dataset.kind), "delivery");
  assert.equal(await page.$eval("[data-destination]", (e) => e.textContent), "billing");
  assert.ok((await page.$eval("body", (b) => b.textContent)).includes(IMG), "the webhook's markup is shown as text");

  await click(page, "Overview");
  const shown = await until(page, () => {
    const t = [...document.querySelectorAll("table")].find((x) => x.caption?.textContent === "Destinations");
    return t && [...t.tBodies[0].rows].map((r) => [...r.cells].map((td) => td.textContent));
  });
  const billing = shown.find((r) => r[0] === "billing");
  assert.ok(billing, JSON.stringify(shown));
  assert.equal(billing[1], "OPEN");
  assert.equal(billing[5], "0 delivered, 1 dead-lettered of 1");
  assert.ok(shown.some((r) => r[0] === "crm" && r[5] === "1 delivered, 0 dead-lettered of 1"), JSON.stringify(shown));
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await screenshot(page, "overview-destinations");
});

test("the story shows the deliveries and the unmatched routes; entries and jobs filter by destination", async () => {
  const { page } = c;
  await page.goto(`${c.origin}/admin#/story?q=${EVENT}`);
  assert.equal(await until(page, () => document.querySelector("[data-deliveries]")?.dataset.deliveries), "billing:dead_lettered crm:delivered");
  assert.equal(await page.$eval("[data-unmatched]", (e) => e.dataset.unmatched), "audit");
  assert.deepEqual((await tableRows(page, "Attempts to billing")).map((r) => [r[0], r[2], r[3]]), [["1", "UPSTREAM_4XX", `billing said ${IMG}`]]);
  await screenshot(page, "story-deliveries");

  await click(page, "Entries");
  await page.waitForSelector("main input[name=destination]", { timeout: 15_000 });
  assert.equal(await page.$eval("main input[name=destination]", (e) => e.closest("label")?.textContent.trim().startsWith("Destination")), true, "a labelled input");
  await page.type("main input[name=destination]", "billing");
  const listed = answerTo(page, "webhook-dlq?destination=billing");
  await click(page, "Apply");
  assert.deepEqual((await listed).data.items.map((e) => e.id), [entryId]);
  const ids = await until(page, () => {
    const t = [...document.querySelectorAll("table")].find((x) => x.caption?.textContent === "Dead-letter entries");
    return t && [...t.tBodies[0].rows].map((r) => r.cells[0].textContent);
  });
  assert.deepEqual(ids, [entryId]);

  await click(page, "Create a job from this filter");
  assert.equal(await until(page, () => document.querySelector("main input[name=destination]")?.value), "billing", "the job form takes the destination");
});
