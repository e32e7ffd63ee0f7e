// A destination whose URL path holds its credential (a Slack or Discord
// webhook's token is its path): the downstream really answers 500, its
// breaker opens and events park, the watchdog fires breaker_open and
// parked_oldest to a real receiver; neither those alerts, their ids, the
// workers' log lines, the stats, the alerts listing nor the story carries
// the token (DESIGN §4: secrets never appear in logs, responses or alerts).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { hmacHeaders } from "./support/signers.mjs";

const TOKEN = "SECRET-TOKEN-c0ffee";
const HOOK = `/hook/${TOKEN}`;
const SECRET = "label-webhook-secret";
const DOWN_SECRET = "label-down-secret";
let receiver;

before(async () => {
  receiver = await startDownstream({ "/alerts": () => ({ status: 200 }), [HOOK]: () => ({ status: 500 }) });
});
after(() => receiver?.close());

const alerts = () => receiver.hits("/alerts").map((r) => ({ ...r, json: JSON.parse(r.body) }));

test("a token in a destination's path reaches no alert, alarm id, log line, stats, alerts listing or story", async () => {
  const relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ label: { scheme: "hmac-sha256", downstream: receiver.url(HOOK) } }),
      WEBHOOK_SECRET_LABEL: SECRET, DOWNSTREAM_SIGNING_SECRET: DOWN_SECRET, ALERT_WEBHOOK_URL: receiver.url("/alerts"),
      BREAKER_FAILURE_THRESHOLD: "1", BREAKER_COOLDOWN_S: "600", RETRY_DELAYS_S: "1,1,1,1,1",
      ALERT_BREAKER_OPEN: "1s", ALERT_PARKED_OLDEST: "1s",
    },
  });
  const admin = adminClient(relay, [SECRET, DOWN_SECRET, receiver.url("/alerts")]);
  try {
    const sent = [];
    for (const n of [1, 2]) {
      const body = JSON.stringify({ n });
      const res = await relay.fetch("/webhooks/label", { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `label-${n}` }) });
      assert.equal(res.status, 202, await res.clone().text());
      sent.push((await res.json()).event_id);
    }
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM events WHERE delivery_status = 'parked'"))[0].n === 2, { what: "both events parked behind the open breaker", timeoutMs: 30000 });
    assert.ok(receiver.hits(HOOK).length >= 1, "the destination was really called");

    // Breakers, parking and alarms are keyed by the destination's name (a
    // `downstream` source's is the source's): the URL is never the key.
    const label = "label";
    const ids = [`breaker_open:${label}`, `parked_oldest:${label}`];
    const worker = await relay.mf.getWorker("hookrelay");
    await waitFor(async () => {
      assert.equal((await worker.scheduled({ cron: "*/5 * * * *" })).outcome, "ok");
      return ids.every((id) => alerts().some((a) => a.json.alert.id === id && a.json.alert.state === "firing"));
    }, { what: "breaker_open and parked_oldest to fire under the destination's label", timeoutMs: 20000, intervalMs: 300 });

    const answers = {
      alerts: alerts().map((a) => a.body),
      stats: await admin.get("webhook-dlq/stats"),
      listing: await admin.get("alerts"),
      stories: await Promise.all(sent.map((id) => admin.get(`events/${id}`))),
    };
    const story = answers.stories[0].data;
    // (The story's per-delivery view, naming the destination, is the DLQ worker's side of issue 33.)
    assert.ok(story.event, "the story answers");
    assert.ok(answers.stats.data.parked.by_destination.some((d) => d.destination === "label"), JSON.stringify(answers.stats.data.parked));
    for (const [what, answer] of Object.entries(answers)) {
      const text = JSON.stringify(answer);
      assert.ok(!text.includes(TOKEN) && !text.includes("/hook"), `${what} holds the destination's path: ${text.slice(0, 2000)}`);
    }
    const leaking = relay.logs.filter((l) => l.includes(TOKEN) || l.includes("/hook/"));
    assert.deepEqual(leaking, [], "no log line holds the destination's path");
    assert.ok(relay.logs.some((l) => l.includes('"event":"breaker_transition"') && l.includes(label)), "the logs name the destination by its label");
  } finally {
    await relay.dispose();
  }
});
