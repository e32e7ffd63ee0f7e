// The reduced soak (500 events) inside `npm test`; `npm run soak` runs 10,000.
import { test } from "node:test";
import assert from "node:assert/strict";
import { soak } from "../scripts/soak.mjs";

test("500 events with duplicates, poison, transient failures and redeliveries: nothing lost, nothing doubled", async () => {
  const r = await soak({ n: 500 });
  assert.equal(r.refused, 0);
  assert.equal(r.lost, 0, JSON.stringify(r));
  assert.equal(r.double, 0, JSON.stringify(r));
  assert.equal(r.wrong_class, 0, JSON.stringify(r));
  assert.equal(r.delivered + r.dead_lettered_poison + r.dead_lettered_transient, r.n);
  assert.equal(r.dead_lettered_poison, 25, "the 5% poison share");
  assert.equal(r.duplicates_counted, r.duplicates_sent + r.redeliveries, "each extra copy counted once on its event");
});
