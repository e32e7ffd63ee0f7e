#!/usr/bin/env node
// A one-minute tour against a running `npm start`: sends a good event, a
// duplicate, a poison event and a transient one (through a throwaway
// downstream on :8799 that fails twice, then recovers), and a Slack slash
// command (a signed form body, forwarded as it came), then prints the
// lifecycle of each from the admin API.
//
//   npm start -- --var RETRY_DELAYS_S:2,2,2,2,2     # in one terminal (short retries for the demo)
//   npm run demo                                    # in another
import http from "node:http";
import { createHash, randomUUID } from "node:crypto";
import { localDevVars } from "./dev-vars.mjs";
import { hmacSha256Headers, secretNameFor, slackHeaders, stripeSignatureHeader } from "./webhook-signatures.mjs";
import { mintToken } from "./admin-jwt.mjs";
import { fail, run } from "./lib/fail.mjs";

const BASE = process.env.HOOKRELAY_URL ?? "http://127.0.0.1:8787";
const { vars } = localDevVars();
const FORM = "application/x-www-form-urlencoded";

const adminToken = () => mintToken(vars.ADMIN_JWT_SECRET, { sub: "demo", ttlS: 600 });
const admin = async (path) => {
  const res = await fetch(`${BASE}/api/v1/admin/${path}`, { headers: { authorization: `Bearer ${adminToken()}` } });
  return (await res.json()).data;
};

function signed(source, body, operationId) {
  const secret = vars[secretNameFor(source)];
  if (source === "demo-stripe") return { "content-type": "application/json", "stripe-signature": stripeSignatureHeader(body, { secret }) };
  if (source === "demo-slack") return { "content-type": FORM, ...slackHeaders(body, { secret }) };
  return hmacSha256Headers(body, { secret, operationId });
}

// The throwaway downstream demo-forward points at.
const calls = new Map();
// What reached the downstream for demo-slack: its body and Content-Type.
let slackArrived = null;
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const id = req.headers["x-operation-id"];
    const n = (calls.get(id) ?? 0) + 1;
    calls.set(id, n);
    if (req.url === "/demo-slack") slackArrived = { body, contentType: req.headers["content-type"] };
    const kind = (() => { try { return JSON.parse(body).kind; } catch { return "?"; } })();
    const status = kind === "poison" ? 400 : kind === "transient" && n <= 2 ? 503 : 200;
    res.writeHead(status, { "content-type": "application/json" }).end("{}");
  });
});

async function main() {
  const health = await fetch(`${BASE}/healthz`).then((r) => r.json()).catch(() => null);
  if (!health) fail(`no relay answers at ${BASE}; start it with: npm start -- --var RETRY_DELAYS_S:2,2,2,2,2 (or point at another port with HOOKRELAY_URL=http://127.0.0.1:<port>)`);
  for (const source of ["demo-forward", "demo-slack"]) {
    if (!health.sources?.includes(source)) fail(`the running relay has no ${source} source; start it from this checkout (the demo sources are in .dev.vars, copied from .dev.vars.example)`);
  }
  const firstDelay = health.retry_delays_s?.[0] ?? 30;
  if (firstDelay > 5) console.log(`note: the retry delays are ${health.retry_delays_s.join(",")} s, so the transient event takes a few minutes.\n      For a one-minute demo, restart with: npm start -- --var RETRY_DELAYS_S:2,2,2,2,2\n`);
  await new Promise((resolve, reject) => server.once("error", reject).listen(8799, "127.0.0.1", resolve)).catch((e) =>
    fail(e.code === "EADDRINUSE" ? "port 8799 (the demo's downstream) is in use; stop what listens there (another npm run demo?) and run again" : `the demo's downstream cannot listen on 127.0.0.1:8799: ${e.message}`),
  );

  const run = randomUUID().slice(0, 8);
  const stripeBody = JSON.stringify({ id: `evt_demo_${run}`, object: "event", type: "invoice.paid" });
  const cases = [
    { name: "good (stripe, stored)", source: "demo-stripe", body: stripeBody },
    { name: "duplicate of the above", source: "demo-stripe", body: stripeBody },
    { name: "good (forwarded)", source: "demo-forward", body: JSON.stringify({ kind: "good", run }), op: `good-${run}` },
    { name: "poison (downstream 400)", source: "demo-forward", body: JSON.stringify({ kind: "poison", run }), op: `poison-${run}` },
    { name: "transient (503, 503, 200)", source: "demo-forward", body: JSON.stringify({ kind: "transient", run }), op: `transient-${run}` },
    { name: "slack slash command (form)", source: "demo-slack", body: `token=demo&team_id=T0DEMO&command=%2Fdeploy&text=api+${run}&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT0DEMO%2F1` },
  ];
  // Without a delivery id (a slash command carries none), an event is keyed by its body's hash (core/src/receive/idempotency.rs).
  const keyOf = (c) => {
    if (c.source === "demo-stripe") return `demo-stripe:evt_demo_${run}`;
    if (c.source === "demo-slack") return `demo-slack:sha256:${createHash("sha256").update(`demo-slack\0`).update(c.body).digest("hex")}`;
    return `demo-forward:${c.op}`;
  };
  const eventIdOf = (key) => `evt_${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;
  for (const c of cases) {
    const res = await fetch(`${BASE}/webhooks/${c.source}`, { method: "POST", body: c.body, headers: signed(c.source, c.body, c.op) });
    c.status = res.status;
    // Slack is answered 200 with an empty body (it shows a command's answer to the user).
    const text = await res.text();
    c.event_id = c.source === "demo-slack" ? eventIdOf(keyOf(c)) : JSON.parse(text).event_id;
  }
  console.log(`sent ${cases.length} webhooks; waiting for them to settle…`);
  const deadline = Date.now() + (firstDelay * 3 + 60) * 1000;
  const settled = (c, ev, dl) => {
    if (c.name.startsWith("poison")) return Boolean(dl);
    if (c.source === "demo-stripe") return Boolean(ev);
    return ev?.delivery_status === "delivered";
  };
  for (;;) {
    for (const c of cases) {
      c.ev = (await admin(`events?key=${encodeURIComponent(keyOf(c))}`)).items[0];
      c.dl = (await admin("webhook-dlq?source=demo-forward&limit=200")).items.find((e) => e.event_id === c.event_id);
    }
    if (cases.every((c) => settled(c, c.ev, c.dl)) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const rowsOut = cases.map((c) => ({
    case: c.name,
    http: c.status,
    event_id: c.event_id.slice(0, 16) + "…",
    ingested: c.ev ? "yes" : "no",
    duplicates: c.ev?.duplicate_count ?? "-",
    delivery: c.ev?.delivery_status ?? "-",
    downstream_calls: calls.get(c.event_id) ?? 0,
    dead_letter: c.dl ? `${c.dl.error_code} (${c.dl.error_class})` : "-",
  }));
  console.table(rowsOut);
  const slack = cases.find((c) => c.source === "demo-slack");
  console.log(slackArrived
    ? `demo-slack: answered ${slack.status} with an empty body; the downstream got the form byte-exact (${slackArrived.body === slack.body ? "same bytes" : "DIFFERENT bytes"}) as ${slackArrived.contentType}:\n  ${slackArrived.body}`
    : "demo-slack: the form has not reached the downstream yet");
  const stats = await admin("webhook-dlq/stats");
  console.log(`DLQ depth ${stats.depth}, dominant code ${stats.dominant_failure_code}, counters ${JSON.stringify(stats.counters)}`);
  console.log(`\nNext: open the poison entry with\n  curl -H "Authorization: Bearer $(npm run -s admin-token)" ${BASE}/api/v1/admin/webhook-dlq/${cases[3].dl?.id ?? "<id>"}`);
}

await run("demo", () => main().finally(() => server.close()));
