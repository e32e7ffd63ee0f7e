// The console never shows a webhook's signature, token or signed timestamp:
// for a sample of schemes with different header shapes (Slack's signature
// and timestamp over a form, Twilio's bare signature, GitLab's shared
// token, Discord's Ed25519 signature, and a recipe whose header names no
// generic rule would catch), a real dead letter's entry page in Chromium
// shows each of those headers as the envelope holds it, [REDACTED], and
// no signature or token anywhere, the whole-envelope JSON included.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { eventIdOf } from "./support/jobs.mjs";
import { SIGNERS, secretHeadersOf, stamp } from "./support/preset-signers.mjs";
import { openConsole, signIn, tableRows, until } from "./support/console.mjs";

const FORM = "application/x-www-form-urlencoded";
const ed = crypto.generateKeyPairSync("ed25519");
const edHex = Buffer.from(ed.publicKey.export({ format: "jwk" }).x, "base64url").toString("hex");
const RECIPE = { hmac: "sha512", header: "X-Acme-Mac", encoding: "base64", signed: "{timestamp}.{body}", timestamp: { header: "X-Acme-Time", unit: "s" }, id: { json: "/delivery" } };
const recipeSigner = {
  signature: "x-acme-mac", timestamp: { header: "x-acme-time", unit: "s" },
  sign: ({ secret, body, ts }) => ({ "x-acme-time": ts, "x-acme-mac": crypto.createHmac("sha512", secret).update(`${ts}.${body}`).digest("base64") }),
};

/** Each source: its scheme, signer, and one event (`id`: its delivery id, or null for the body's hash). */
const SAMPLE = [
  { source: "slack", scheme: "slack", body: "token=t&team_id=T1&command=%2Fdeploy&text=now", contentType: FORM, id: null },
  { source: "twilio", scheme: "twilio", body: "CallSid=CA1&From=%2B12349013030&To=%2B18005551212", contentType: FORM, headers: { "i-twilio-idempotency-token": "tw-redact-1" }, id: "tw-redact-1" },
  { source: "gitlab", scheme: "gitlab", body: '{"object_kind":"push"}', headers: { "x-gitlab-event-uuid": "gl-redact-1" }, id: "gl-redact-1" },
  { source: "discord", scheme: "discord", config: { public_key: edHex }, privateKey: ed.privateKey, body: '{"version":1,"type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}', id: null },
  { source: "acme", scheme: RECIPE, signer: recipeSigner, body: '{"delivery":"acme-redact-1"}', id: "acme-redact-1" },
];
const secretOf = (s) => `${s.source}-console-secret-value`;
const signerOf = (s) => s.signer ?? SIGNERS[s.scheme];
const headersOf = (s) => s.signer ? [s.signer.signature, s.signer.timestamp.header] : secretHeadersOf(s.scheme);
const keyOf = (s) => s.id ? `${s.source}:${s.id}` : `${s.source}:sha256:${crypto.createHash("sha256").update(s.source).update(Buffer.from([0])).update(s.body).digest("hex")}`;

let relay, downstream, c;
before(async () => {
  downstream = await startDownstream({ "/refuses": () => ({ status: 400 }) });
  const sources = Object.fromEntries(SAMPLE.map((s) => [s.source, { scheme: s.scheme, downstream: downstream.url("/refuses"), ...s.config }]));
  const secrets = Object.fromEntries(SAMPLE.filter((s) => !s.privateKey).map((s) => [`WEBHOOK_SECRET_${s.source.toUpperCase()}`, secretOf(s)]));
  relay = await startRelay({ vars: { SOURCES: JSON.stringify(sources), ...secrets } });
  c = await openConsole(relay);
});
after(async () => {
  await c?.close();
  await relay?.dispose();
  await downstream?.close();
});

test("a dead letter's entry page shows each scheme's signature, token and timestamp headers as [REDACTED], never their values", async () => {
  const sent = [];
  for (const s of SAMPLE) {
    const signer = signerOf(s);
    const url = new URL(`/webhooks/${s.source}`, relay.url).toString();
    const contentType = s.contentType ?? "application/json";
    const ts = signer.timestamp ? stamp(signer.timestamp.unit, Date.now()) : undefined;
    const signed = await signer.sign({ secret: secretOf(s), privateKey: s.privateKey, body: s.body, contentType, ts, url, method: "POST" });
    const res = await fetch(url, { method: "POST", body: s.body, headers: { "content-type": contentType, ...s.headers, ...signed } });
    assert.ok(res.status < 300, `${s.source}: ${res.status} ${await res.text()}`);
    sent.push({ s, signed });
  }
  await signIn(c);
  for (const { s, signed } of sent) {
    const eventId = eventIdOf(keyOf(s));
    const [entry] = await waitFor(() => rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ?", eventId).then((r) => r.length && r), { timeoutMs: 30_000, what: `${s.source}'s dead letter` });
    await c.page.goto(`${c.origin}/admin#/entry/${entry.id}`);
    await c.page.waitForSelector("[data-status]");
    const shown = Object.fromEntries(await until(c.page, () => {
      const t = [...document.querySelectorAll("table")].find((x) => x.caption?.textContent === "Request headers");
      return t && [...t.tBodies[0].rows].map((r) => [...r.cells].map((td) => td.textContent));
    }));
    assert.deepEqual(Object.fromEntries(Object.entries(shown).filter(([k]) => headersOf(s).includes(k))), Object.fromEntries(headersOf(s).map((h) => [h, "[REDACTED]"])), `${s.source}: ${JSON.stringify(shown)}`);
    assert.deepEqual(await tableRows(c.page, "Request headers"), Object.entries(shown));
    // The whole page, the collapsed envelope JSON included, holds no
    // signature or token (a timestamp's digits may recur in the receipt time).
    const text = await c.page.$eval("body", (b) => b.textContent);
    assert.ok(!text.includes(signed[signerOf(s).signature]), `${s.source}: the signature is on the page`);
    assert.ok(!text.includes(secretOf(s)), `${s.source}: the secret is on the page`);
  }
});
