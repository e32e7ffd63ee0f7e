// Every preset of DESIGN §2 through the compiled relay, in one Miniflare:
// a source per preset (plus a Slack form, a Twilio JSON body, and the
// recipes of docs/providers.md and the README), each request signed at the
// real clock by tests/support/preset-signers.mjs. A signed request gets the
// preset's answer and is keyed by its delivery id; a tampered one, a stale
// one (the timestamped presets) and an unsigned one are refused with 401.
// Every source's downstream answers 400, so each accepted event
// dead-letters at once and its envelope shows the scheme's headers
// redacted. The signers themselves are proven equal to the providers'
// libraries on the golden vectors.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { readFileSync } from "node:fs";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { adminClient } from "./support/admin.mjs";
import { eventIdOf } from "./support/jobs.mjs";
import { SIGNERS, secretHeadersOf, stamp, twilioJsonUrl } from "./support/preset-signers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../core/tests/preset_vectors.json", import.meta.url), "utf8")).vectors;
const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";
const run = crypto.randomUUID().slice(0, 8);
const SQUARE_URL = "https://hooks.example.com/square/notifications";
const HUBSPOT_QUERY = "?next=https%3A%2F%2Fapp.example.com%2Fdone%3Fok%3D1&who=ann%40example.com&plus=a%2Bb&say=hi%21%20%28twice%29";

const ed = crypto.generateKeyPairSync("ed25519");
/** Discord shows its application's key as the raw 32 bytes, in hex. */
const rawEd25519Hex = (publicKey) => Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("hex");
const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });

/** The scheme of the first ```json recipe after `heading` in a doc, so the doc's example cannot drift. */
const docRecipe = (file, heading) => {
  const text = readFileSync(new URL(`../${file}`, import.meta.url), "utf8").split(heading)[1].split("```json")[1].split("```")[0];
  return Object.values(JSON.parse(`{${text}}`))[0].scheme;
};
// docs/providers.md's recipe, whose headers no generic rule would redact: only its scheme does.
const ACME = docRecipe("docs/providers.md", "## A provider without a preset");
const acmeSigner = {
  signature: "x-acme-mac", timestamp: { header: "x-acme-time", unit: "s" }, idHeader: "x-acme-delivery",
  sign: ({ secret, body, ts, id }) => ({
    "x-acme-delivery": id, "x-acme-time": ts, "x-acme-mac": "v1=" + crypto.createHmac("sha256", secret).update(`${id}.${ts}.${body}`).digest("hex"),
  }),
};

const README_RECIPE = docRecipe("README.md", "### Presets and recipes");
const readmeSigner = {
  signature: "x-acme-signature", timestamp: { part: "t", unit: "s" },
  sign: ({ secret, body, ts }) => ({ "x-acme-signature": `t=${ts},v1=${crypto.createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex")}` }),
};

const queued = { status: 202 };
/**
 * One source per row: its `preset` (or `signer` for the recipe), extra
 * `config`, its `tolerance` for the stale check, its `answer`, and
 * `event(tag, atMs)`: the request's `body`, `contentType`, extra `headers`,
 * URL `query`, and `id`, the delivery id it must be keyed by (null: the
 * body's hash).
 */
const ROWS = [
  { source: "standard-webhooks", preset: "standard-webhooks", tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ type: "invoice.paid", tag }), id: `msg_${tag}` }) },
  { source: "stripe", preset: "stripe", tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ id: `evt_${tag}`, object: "event", type: "invoice.paid" }), id: `evt_${tag}` }) },
  { source: "github", preset: "github", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ zen: tag }), headers: { "x-github-delivery": `gh-${tag}`, "x-github-event": "push" }, id: `gh-${tag}` }) },
  { source: "hmac-sha256", preset: "hmac-sha256", tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ op: tag }), headers: { "x-operation-id": `op-${tag}` }, id: `op-${tag}` }) },
  { source: "shopify", preset: "shopify", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ id: 820982911946154500, note: tag }), headers: { "x-shopify-event-id": `shev-${tag}`, "x-shopify-webhook-id": `shwh-${tag}`, "x-shopify-topic": "orders/create" }, id: `shev-${tag}` }) },
  { source: "slack", preset: "slack", tolerance: 300, answer: { status: 200, body: "" },
    event: (tag) => ({ body: JSON.stringify({ token: "t", team_id: "T061EG9RZ", type: "event_callback", event: { type: "app_mention", text: tag }, event_id: `Ev${tag}` }), id: `Ev${tag}` }) },
  // A slash command: a form body, with no event_id, so keyed by its hash.
  { source: "slack-form", preset: "slack", tolerance: 300, answer: { status: 200, body: "" },
    event: (tag) => ({ body: `token=t&team_id=T1DC2JH3J&command=%2Fweather&text=${tag}+now&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1`, contentType: FORM, id: null }) },
  { source: "twilio", preset: "twilio", answer: { status: 200, contentType: /text\/xml/, body: "<Response/>" },
    event: (tag) => ({ body: new URLSearchParams({ To: "+18005551212", From: "+12349013030", Body: `hi & ${tag}`, CallSid: "CA1" }).toString(), contentType: FORM, headers: { "i-twilio-idempotency-token": `twtok-${tag}` }, id: `twtok-${tag}` }) },
  // A JSON body: only the URL is signed, and its bodySHA256 must match the body.
  // Behind a proxy: Twilio signs the URL configured there, with bodySHA256 appended.
  { source: "twilio-json-proxied", preset: "twilio", config: { url: "https://hooks.example.com/twilio" }, answer: { status: 200, contentType: /text\/xml/, body: "<Response/>" },
    event: (tag) => ({ body: JSON.stringify({ type: "com.twilio.messaging.message.delivered", tag }), headers: { "i-twilio-idempotency-token": `twpx-${tag}` }, bodySha256: true, id: `twpx-${tag}` }) },
  { source: "twilio-json", preset: "twilio", answer: { status: 200, contentType: /text\/xml/, body: "<Response/>" },
    event: (tag) => ({ body: JSON.stringify({ type: "com.twilio.messaging.message.delivered", tag }), headers: { "i-twilio-idempotency-token": `twjs-${tag}` }, bodySha256: true, id: `twjs-${tag}` }) },
  { source: "zoom", preset: "zoom", tolerance: 300, answer: { status: 200, body: "" },
    event: (tag) => ({ body: JSON.stringify({ event: "meeting.started", payload: { object: { id: tag } } }), id: null }) },
  { source: "linear", preset: "linear", tolerance: 60, answer: queued,
    event: (tag, at) => ({ body: JSON.stringify({ action: "create", type: "Issue", data: { id: tag }, webhookTimestamp: at }), headers: { "linear-delivery": `lin-${tag}` }, id: `lin-${tag}` }) },
  { source: "paddle", preset: "paddle", tolerance: 5, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ event_id: `evt_pdl_${tag}`, event_type: "transaction.completed" }), id: `evt_pdl_${tag}` }) },
  { source: "intercom", preset: "intercom", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ type: "notification_event", id: `notif_${tag}`, topic: "conversation.user.created" }), id: `notif_${tag}` }) },
  // Signed over the URL configured at Square (a relay behind a proxy), not the one received.
  { source: "square", preset: "square", config: { url: SQUARE_URL }, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ merchant_id: "6SSW7HV8K2ST5", type: "payment.updated", event_id: `sq-${tag}` }), id: `sq-${tag}` }) },
  { source: "pagerduty", preset: "pagerduty", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ event: { id: `pd-${tag}`, event_type: "incident.triggered" } }), id: `pd-${tag}` }) },
  { source: "twitch", preset: "twitch", tolerance: 600, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ subscription: { type: "channel.follow" }, event: { user_id: tag } }), headers: { "twitch-eventsub-message-type": "notification" }, id: `twmsg-${tag}` }) },
  // Signed over the URL as received, with the escapes HubSpot decodes and some it keeps.
  { source: "hubspot", preset: "hubspot", tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify([{ eventId: 1, subscriptionType: "contact.creation", tag }]), query: HUBSPOT_QUERY, id: null }) },
  { source: "typeform", preset: "typeform", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ event_id: `tf-${tag}`, event_type: "form_response" }), id: `tf-${tag}` }) },
  { source: "woocommerce", preset: "woocommerce", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ id: 727, status: "processing", note: tag }), headers: { "x-wc-webhook-delivery-id": "3c2f5b1e", "x-wc-webhook-topic": "order.created" }, id: null }) },
  { source: "gitlab", preset: "gitlab", answer: queued,
    event: (tag) => ({ body: JSON.stringify({ object_kind: "push", ref: tag }), headers: { "idempotency-key": `gl-${tag}`, "x-gitlab-event-uuid": `glu-${tag}`, "x-gitlab-event": "Push Hook" }, id: `gl-${tag}` }) },
  { source: "discord", preset: "discord", config: { public_key: rawEd25519Hex(ed.publicKey) },
    privateKey: ed.privateKey, tolerance: 300, answer: { status: 204, body: "" },
    event: (tag) => ({ body: JSON.stringify({ version: 1, application_id: "1234560123453231555", type: 1, event: { type: "APPLICATION_AUTHORIZED", tag } }), id: null }) },
  { source: "sendgrid", preset: "sendgrid", config: { public_key: ec.publicKey.export({ format: "der", type: "spki" }).toString("base64") },
    privateKey: ec.privateKey, tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify([{ email: "example@test.com", event: "processed", sg_event_id: tag }]), id: null }) },
  { source: "acme", scheme: ACME, signer: acmeSigner, tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ kind: "order.paid", tag }), id: `dlv-${tag}` }) },
  { source: "readme-recipe", scheme: README_RECIPE, signer: readmeSigner, tolerance: 300, answer: queued,
    event: (tag) => ({ body: JSON.stringify({ event: { id: `rd-${tag}`, type: "thing.done" } }), id: `rd-${tag}` }) },
];

const secretName = (source) => `WEBHOOK_SECRET_${source.toUpperCase().replaceAll("-", "_")}`;
const secretOf = (row) => (row.preset === "standard-webhooks" ? "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" : `${row.source}-preset-secret-${run}`);
const signerOf = (row) => row.signer ?? SIGNERS[row.preset];
const contentHash = (source, body) => crypto.createHash("sha256").update(source).update(Buffer.from([0])).update(body).digest("hex");
const keyOf = (row, e) => (e.id === null ? `${row.source}:sha256:${contentHash(row.source, e.body)}` : `${row.source}:${e.id}`);

let relay, downstream;
before(async () => {
  downstream = await startDownstream({ "/refuses": () => ({ status: 400 }) });
  const sources = Object.fromEntries(ROWS.map((r) => [r.source, { scheme: r.scheme ?? r.preset, downstream: downstream.url("/refuses"), ...r.config }]));
  const secrets = Object.fromEntries(ROWS.filter((r) => !r.privateKey).map((r) => [secretName(r.source), secretOf(r)]));
  relay = await startRelay({ vars: { SOURCES: JSON.stringify(sources), ...secrets } });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

/**
 * Builds `row`'s request for `tag` signed as at `atMs`, then applies
 * `change` ("tamper", "drop") and posts it. Answers `{res, event, headers}`.
 */
async function send(row, tag, { atMs = Date.now(), change } = {}) {
  const signer = signerOf(row);
  const event = row.event(tag, atMs);
  const contentType = event.contentType ?? JSON_TYPE;
  let url = new URL(`/webhooks/${row.source}${event.query ?? ""}`, relay.url).toString();
  if (event.bodySha256) url = twilioJsonUrl(url, event.body);
  const ts = signer.timestamp && !signer.timestamp.json ? stamp(signer.timestamp.unit, atMs) : undefined;
  const signed = await signer.sign({
    secret: secretOf(row), privateKey: row.privateKey, body: event.body, contentType, ts, id: event.id, url: signedUrlOf(row, event, url), method: "POST",
  });
  const headers = { "content-type": contentType, ...event.headers, ...signed };
  let body = event.body;
  if (change === "tamper" && row.preset === "gitlab") headers[signer.signature] = `${headers[signer.signature]}x`;
  else if (change === "tamper") body = body.replace(tag, `${tag}x`);
  if (change === "drop") delete headers[signer.signature];
  const res = await fetch(url, { method: "POST", body, headers });
  return { res, event, headers };
}

/** The URL the provider signs: the source's configured `url` (with Twilio's bodySHA256 appended) or the one posted to. */
function signedUrlOf(row, event, url) {
  if (!row.config?.url) return url;
  return event.bodySha256 ? twilioJsonUrl(row.config.url, event.body) : row.config.url;
}

const codeOf = async (res) => (await res.json()).error?.code;

/** The accepted event of each source, for the redaction test. */
const accepted = new Map();

for (const row of ROWS) {
  const name = row.preset ?? "a recipe";
  test(`${row.source} (${name}): signed is answered ${row.answer.status} and keyed by its delivery id; tampered, ${row.tolerance ? "stale, " : ""}unsigned are 401`, async () => {
    const tag = `${row.source.replace(/[^a-z]/g, "")}${run}`;
    const { res, event, headers } = await send(row, tag);
    const text = await res.text();
    assert.equal(res.status, row.answer.status, text);
    const key = keyOf(row, event);
    const eventId = eventIdOf(key);
    if (row.answer === queued) assert.deepEqual(JSON.parse(text), { event_id: eventId, status: "queued" });
    else assert.equal(text, row.answer.body);
    if (row.answer.contentType) assert.match(res.headers.get("content-type"), row.answer.contentType);
    const [stored] = await waitFor(() => rows(relay.db, "SELECT idempotency_key FROM events WHERE event_id = ?", eventId).then((r) => r.length && r), { what: `${row.source}'s event ${key}` });
    assert.equal(stored.idempotency_key, key);
    accepted.set(row.source, { eventId, headers });

    const tampered = await send(row, tag, { change: "tamper" });
    assert.equal(tampered.res.status, 401, "tampered");
    assert.equal(await codeOf(tampered.res), "SIGNATURE_INVALID");
    if (row.tolerance) {
      const stale = await send(row, `${tag}old`, { atMs: Date.now() - (row.tolerance + 60) * 1000 });
      assert.equal(stale.res.status, 401, "stale");
      assert.equal(await codeOf(stale.res), "SIGNATURE_STALE");
    }
    const unsigned = await send(row, `${tag}nosig`, { change: "drop" });
    assert.equal(unsigned.res.status, 401, "no signature");
    assert.equal(await codeOf(unsigned.res), "SIGNATURE_MISSING");
  });
}

test("twitch's webhook_callback_verification is answered with its challenge as text/plain, never enqueued; an unsigned one is refused", async () => {
  const row = ROWS.find((r) => r.source === "twitch");
  const body = JSON.stringify({ challenge: `pogchamp-${run}`, subscription: { type: "channel.follow", status: "webhook_callback_verification_pending" } });
  const id = `twverify-${run}`;
  const headers = { "content-type": JSON_TYPE, "twitch-eventsub-message-type": "webhook_callback_verification", ...SIGNERS.twitch.sign({ secret: secretOf(row), body, ts: new Date().toISOString(), id }) };
  const res = await relay.fetch("/webhooks/twitch", { method: "POST", body, headers });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /text\/plain/);
  assert.equal(await res.text(), `pogchamp-${run}`);
  const { "twitch-eventsub-message-signature": _, ...unsigned } = headers;
  const refused = await relay.fetch("/webhooks/twitch", { method: "POST", body, headers: unsigned });
  assert.equal(refused.status, 401);
  // An event sent after it is ingested; the handshake, before it, never was.
  const after = await send(row, `twafter${run}`);
  assert.equal(after.res.status, 202);
  const { event_id } = await after.res.json();
  await waitFor(() => rows(relay.db, "SELECT 1 FROM events WHERE event_id = ?", event_id).then((r) => r.length), { what: "the twitch event after the handshake" });
  assert.deepEqual(await rows(relay.db, "SELECT event_id FROM events WHERE idempotency_key = ?", `twitch:${id}`), [], "the handshake was never enqueued");
});

test("the admin API finds an event by its idempotency key (GET /api/v1/admin/events?key=)", async () => {
  const { eventId } = accepted.get("twilio");
  const got = await adminClient(relay).get(`events?key=${encodeURIComponent(`twilio:twtok-twilio${run}`)}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.data.items.map((e) => e.event_id), [eventId]);
});

test("every scheme's signature, token and timestamp headers are [REDACTED] in its dead letter's envelope", async () => {
  const api = adminClient(relay, ROWS.filter((r) => !r.privateKey).map(secretOf));
  for (const row of ROWS) {
    const { eventId, headers } = accepted.get(row.source) ?? assert.fail(`${row.source} has no accepted event (its test failed)`);
    const [entry] = await waitFor(() => rows(relay.db, "SELECT id FROM dead_letters WHERE event_id = ?", eventId).then((r) => r.length && r), { timeoutMs: 30_000, what: `${row.source}'s dead letter` });
    const { data, json } = await api.get(`webhook-dlq/${entry.id}`);
    const shown = data.envelope.transport.headers;
    const secretHeaders = [signerOf(row).signature, signerOf(row).timestamp?.header].filter(Boolean);
    if (row.preset) assert.deepEqual(secretHeaders, secretHeadersOf(row.preset));
    for (const h of secretHeaders) assert.equal(shown[h], "[REDACTED]", `${row.source}: ${h} in ${JSON.stringify(shown)}`);
    const text = JSON.stringify(json);
    assert.ok(!text.includes(headers[signerOf(row).signature]), `${row.source}: the signature appears in the entry`);
    assert.equal(data.envelope.failure.code, "UPSTREAM_4XX");
  }
});

// The signers written here, proven equal to the providers' libraries: each
// valid golden vector is re-signed from its inputs at its time, and the
// signature must be the vector's, exactly.
const header = (headers, name) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
/** A vector's header, read under standard-webhooks' svix-* names too. */
const headerOf = (v, name) => header(v.headers, name) ?? header(v.headers, name.replace(/^webhook-/, "svix-"));

function vectorTimestamp(signer, v) {
  const at = signer.timestamp;
  if (!at || at.json) return undefined;
  if (at.header) return headerOf(v, at.header);
  const parts = headerOf(v, signer.signature).split(/[,;]/).map((p) => p.split("="));
  return parts.find(([k]) => k === at.part)[1];
}

/** The Ed25519 key the vector generator derives from a fixed text (scripts/preset-vectors/public-key-presets.mjs). */
function discordVectorKey() {
  const seed = crypto.createHash("sha256").update("hookrelay discord preset vector key").digest();
  return crypto.createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]), format: "der", type: "pkcs8" });
}

/** The P-256 key the vector generator derives from a fixed text. */
function sendgridVectorKey() {
  const d = crypto.createHash("sha256").update("hookrelay sendgrid preset vector key").digest();
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.setPrivateKey(d);
  const pub = ecdh.getPublicKey();
  const jwk = { kty: "EC", crv: "P-256", d: d.toString("base64url"), x: pub.subarray(1, 33).toString("base64url"), y: pub.subarray(33).toString("base64url") };
  return crypto.createPrivateKey({ key: jwk, format: "jwk" });
}

test("each JS signer re-signs its preset's golden vectors exactly as the provider's library did", async () => {
  const checked = new Set();
  const keys = { discord: discordVectorKey(), sendgrid: sendgridVectorKey() };
  for (const v of VECTORS.filter((x) => x.valid)) {
    const signer = SIGNERS[v.preset];
    const privateKey = keys[v.preset];
    if (privateKey) {
      const derived = v.preset === "discord"
        ? rawEd25519Hex(crypto.createPublicKey(privateKey))
        : crypto.createPublicKey(privateKey).export({ format: "der", type: "spki" }).toString("base64");
      // SendGrid's own test vector was made with SendGrid's key, not the generator's.
      if (derived !== v.public_key) {
        assert.equal(v.preset, "sendgrid", `${v.preset}: the generator's key`);
        const signed = Buffer.from(vectorTimestamp(signer, v) + v.body);
        const key = crypto.createPublicKey({ key: Buffer.from(v.public_key, "base64"), format: "der", type: "spki" });
        assert.ok(crypto.verify("sha256", signed, key, Buffer.from(headerOf(v, signer.signature), "base64")), "SendGrid's vector signs {timestamp}{body}");
        continue;
      }
    }
    // A Twilio vector noted "another form of its URL" was signed over its
    // URL with the default port added, or with it removed.
    const url = /another form of its URL/.test(v.note ?? "")
      ? (v.url.includes(":443/") ? v.url.replace(":443/", "/") : v.url.replace(/^(https:\/\/[^/]+)/, "$1:443"))
      : v.url;
    const ours = await signer.sign({
      secret: v.secret, privateKey, body: v.body, contentType: v.content_type, ts: vectorTimestamp(signer, v),
      id: signer.idHeader && headerOf(v, signer.idHeader), url, method: v.method,
    });
    const theirs = headerOf(v, signer.signature);
    const mine = ours[signer.signature];
    if (v.preset === "sendgrid") {
      // ECDSA in node:crypto takes a random k: the same key and text, proven by the vector's public key.
      const key = crypto.createPublicKey({ key: Buffer.from(v.public_key, "base64"), format: "der", type: "spki" });
      assert.ok(crypto.verify("sha256", Buffer.from(vectorTimestamp(signer, v) + v.body), key, Buffer.from(mine, "base64")), "sendgrid: ours verifies under the vector's key");
      assert.ok(crypto.verify("sha256", Buffer.from(vectorTimestamp(signer, v) + v.body), key, Buffer.from(theirs, "base64")), "sendgrid: the vector's too");
    } else if (/any one may match/.test(v.note ?? "")) {
      assert.ok(theirs.includes(mine.replace(/^(v1,|v1=|t=\d+,v1=)/, "")), `${v.preset}: ${mine} is one of ${theirs}`);
    } else {
      assert.equal(mine, theirs, `${v.preset} (${v.checked_by}): ${v.note ?? "valid vector"}`);
    }
    for (const [name, value] of Object.entries(ours)) {
      if (name !== signer.signature) assert.equal(value, headerOf(v, name), `${v.preset}: ${name}`);
    }
    checked.add(v.preset);
  }
  assert.deepEqual([...checked].sort(), Object.keys(SIGNERS).sort(), "every preset's signer met a vector");
});
