// Presets, recipes, handshakes, answers, form bodies, public keys and
// rotation, through the compiled relay: each request is signed here with
// node:crypto the way its provider documents, at the real clock.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startRelay, waitFor, rows } from "./support/harness.mjs";
import { startDownstream } from "./support/downstream.mjs";

const hmac = (alg, key, text) => crypto.createHmac(alg, key).update(text).digest();
const now = () => String(Math.floor(Date.now() / 1000));
const FORM = "application/x-www-form-urlencoded";
const TWILIO_URL = "https://hooks.example.com/twilio/voice?foo=1";

// Discord's application key (Ed25519) and SendGrid's verification key (P-256).
const ed = crypto.generateKeyPairSync("ed25519");
const edPublicHex = ed.publicKey.export({ format: "der", type: "spki" }).subarray(12).toString("hex");
const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const ecPublicB64 = ec.publicKey.export({ format: "der", type: "spki" }).toString("base64");

const SECRETS = {
  WEBHOOK_SECRET_SLACK: "slack-signing-secret",
  WEBHOOK_SECRET_TWILIO: "twilio-auth-token",
  WEBHOOK_SECRET_ZOOM: "zoom-secret-token",
  WEBHOOK_SECRET_ACME: "acme-recipe-secret",
  WEBHOOK_SECRET_ROTATING: "rotating-new-secret",
  WEBHOOK_SECRET_ROTATING_PREVIOUS: "rotating-old-secret",
};

let relay, downstream;
before(async () => {
  downstream = await startDownstream({ "/slack": () => ({ status: 200 }) });
  const sources = {
    slack: { scheme: "slack", downstream: downstream.url("/slack") },
    twilio: { scheme: "twilio", url: TWILIO_URL },
    zoom: { scheme: "zoom" },
    discord: { scheme: "discord", public_key: edPublicHex },
    sendgrid: { scheme: "sendgrid", public_key: ecPublicB64 },
    acme: {
      scheme: {
        hmac: "sha512", header: "X-Acme-Signature", prefix: "v2=", encoding: "base64url", signed: "{timestamp}:{body}",
        timestamp: { header: "X-Acme-Time", unit: "ms" }, id: { json: "/meta/delivery" }, answer: 204,
      },
    },
    rotating: { scheme: "github" },
  };
  relay = await startRelay({ vars: { SOURCES: JSON.stringify(sources), ...SECRETS } });
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

const post = (source, body, headers) => relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers });

function slackHeaders(body, { ts = now(), secret = SECRETS.WEBHOOK_SECRET_SLACK, contentType = "application/json" } = {}) {
  const sig = "v0=" + hmac("sha256", secret, `v0:${ts}:${body}`).toString("hex");
  return { "content-type": contentType, "x-slack-request-timestamp": ts, "x-slack-signature": sig };
}

const eventsOf = (source) => rows(relay.db, "SELECT * FROM events WHERE source = ?", source);

test("slack's url_verification is answered with its challenge at once, never enqueued, and an unsigned one is refused", async () => {
  const body = JSON.stringify({ token: "t", challenge: "c-3eZbrw1aBm2rZg", type: "url_verification" });
  const res = await post("slack", body, slackHeaders(body));
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /application\/json/);
  assert.deepEqual(await res.json(), { challenge: "c-3eZbrw1aBm2rZg" });

  const unsigned = await post("slack", body, { "content-type": "application/json" });
  assert.equal(unsigned.status, 401);
  assert.equal((await unsigned.json()).error.code, "SIGNATURE_MISSING");
  const forged = await post("slack", body, slackHeaders(body, { secret: "not-the-secret" }));
  assert.equal(forged.status, 401);
  // Nothing from the handshake reached the queue (the next test's event does).
  const stale = await post("slack", body, slackHeaders(body, { ts: String(Number(now()) - 600) }));
  assert.equal((await stale.json()).error.code, "SIGNATURE_STALE");
});

test("a slack form body is answered 200 empty, and reaches the downstream byte-exact with its Content-Type", async () => {
  const body = "token=xyz&team_id=T1DC2JH3J&command=%2Fweather&text=94070+now&payload=%7B%22a%22%3A1%7D";
  const contentType = `${FORM}; charset=utf-8`;
  const res = await post("slack", body, slackHeaders(body, { contentType }));
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(await res.text(), "", "Slack shows a command's answer to the user: it is empty");
  const [hit] = await waitFor(() => downstream.hits("/slack").length > 0 && downstream.hits("/slack"), { what: "the form delivered" });
  assert.equal(hit.body, body, "byte-exact");
  assert.equal(hit.headers["content-type"], contentType);
  const events = await eventsOf("slack");
  assert.equal(events.length, 1, "the handshakes were never enqueued; the form was");
  assert.equal(JSON.parse(events[0].headers)["x-slack-signature"], "[REDACTED]");
  assert.equal(JSON.parse(events[0].headers)["x-slack-request-timestamp"], "[REDACTED]");
});

test("twilio is answered with TwiML, signed over the source's url and its sorted form fields", async () => {
  const fields = { To: "+18005551212", CallSid: "CA1234567890ABCDE", From: "+12349013030", Digits: "1234" };
  const body = new URLSearchParams(fields).toString();
  const signed = TWILIO_URL + Object.keys(fields).sort().map((k) => k + fields[k]).join("");
  const sig = hmac("sha1", SECRETS.WEBHOOK_SECRET_TWILIO, signed).toString("base64");
  const headers = { "content-type": FORM, "x-twilio-signature": sig, "i-twilio-idempotency-token": "twilio-tok-1" };
  const res = await post("twilio", body, headers);
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(res.headers.get("content-type"), /text\/xml/);
  assert.equal(await res.text(), "<Response/>");
  const [event] = await waitFor(async () => (await eventsOf("twilio")).length && eventsOf("twilio"), { what: "twilio event ingested" });
  assert.equal(event.idempotency_key, "twilio:twilio-tok-1");
  const tampered = await post("twilio", body.replace("1234", "9999"), headers);
  assert.equal(tampered.status, 401);
});

test("twilio accepts a signature over its url with :443 when the source's url has none, for a form and a JSON body; no other port", async () => {
  const withPort = (port) => TWILIO_URL.replace("hooks.example.com/", `hooks.example.com:${port}/`);
  const fields = { To: "+18005551212", CallSid: "CA1234567890ABCDE", From: "+12349013030", Digits: "4321" };
  const body = new URLSearchParams(fields).toString();
  const sorted = Object.keys(fields).sort().map((k) => k + fields[k]).join("");
  const formHeaders = (port, token) => ({
    "content-type": FORM, "i-twilio-idempotency-token": token,
    "x-twilio-signature": hmac("sha1", SECRETS.WEBHOOK_SECRET_TWILIO, withPort(port) + sorted).toString("base64"),
  });
  const form = await post("twilio", body, formHeaders(443, "twilio-port-form"));
  assert.equal(form.status, 200, await form.clone().text());
  const otherPort = await post("twilio", body, formHeaders(8443, "twilio-port-8443"));
  assert.equal(otherPort.status, 401, "only the default port is added");

  // A JSON body: Twilio appends bodySHA256 to the url's query, and signs the url alone.
  const json = JSON.stringify({ type: "com.twilio.messaging.message.delivered", to: "+18005551212" });
  const sha = crypto.createHash("sha256").update(json).digest("hex");
  const sig = hmac("sha1", SECRETS.WEBHOOK_SECRET_TWILIO, `${withPort(443)}&bodySHA256=${sha}`).toString("base64");
  const jsonHeaders = { "content-type": "application/json", "x-twilio-signature": sig, "i-twilio-idempotency-token": "twilio-port-json" };
  const res = await relay.fetch(`/webhooks/twilio?foo=1&bodySHA256=${sha}`, { method: "POST", body: json, headers: jsonHeaders });
  assert.equal(res.status, 200, await res.clone().text());
  const tampered = await relay.fetch(`/webhooks/twilio?foo=1&bodySHA256=${sha}`, { method: "POST", body: json.replace("delivered", "failed"), headers: jsonHeaders });
  assert.equal(tampered.status, 401);
  const keys = await waitFor(async () => {
    const got = (await eventsOf("twilio")).map((e) => e.idempotency_key);
    return got.includes("twilio:twilio-port-form") && got.includes("twilio:twilio-port-json") && got;
  }, { what: "both twilio events signed over :443 ingested" });
  assert.ok(!keys.includes("twilio:twilio-port-8443"));
});

test("zoom's endpoint.url_validation is answered with the token and its HMAC; a zoom event is answered 200", async () => {
  const zoomHeaders = (body, ts = now()) => ({
    "content-type": "application/json", "x-zm-request-timestamp": ts,
    "x-zm-signature": "v0=" + hmac("sha256", SECRETS.WEBHOOK_SECRET_ZOOM, `v0:${ts}:${body}`).toString("hex"),
  });
  const body = JSON.stringify({ event: "endpoint.url_validation", payload: { plainToken: "qgg8vlvZRS6UYooatFL8Aw" }, event_ts: 1 });
  const res = await post("zoom", body, zoomHeaders(body));
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {
    plainToken: "qgg8vlvZRS6UYooatFL8Aw",
    encryptedToken: hmac("sha256", SECRETS.WEBHOOK_SECRET_ZOOM, "qgg8vlvZRS6UYooatFL8Aw").toString("hex"),
  });
  assert.equal((await post("zoom", body, { "content-type": "application/json" })).status, 401);
  const event = JSON.stringify({ event: "meeting.started", payload: { object: { id: "1" } } });
  const ok = await post("zoom", event, zoomHeaders(event));
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), "");
  await waitFor(async () => (await eventsOf("zoom")).length === 1, { what: "one zoom event, the handshake not among them" });
});

test("discord's Ed25519 signature is checked in WebCrypto: a PING is answered 204, an event 204 and kept, a forgery 401", async () => {
  const discordHeaders = (body, key = ed.privateKey, ts = now()) => ({
    "content-type": "application/json", "x-signature-timestamp": ts,
    "x-signature-ed25519": crypto.sign(null, Buffer.from(ts + body), key).toString("hex"),
  });
  const ping = JSON.stringify({ type: 0, version: 1 });
  const res = await post("discord", ping, discordHeaders(ping));
  assert.equal(res.status, 204, await res.clone().text());
  const event = JSON.stringify({ type: 1, version: 1, event: { type: "APPLICATION_AUTHORIZED" } });
  assert.equal((await post("discord", event, discordHeaders(event))).status, 204);
  const other = crypto.generateKeyPairSync("ed25519").privateKey;
  const forged = await post("discord", event, discordHeaders(event, other));
  assert.equal(forged.status, 401);
  assert.equal((await forged.json()).error.code, "SIGNATURE_INVALID");
  await waitFor(async () => (await eventsOf("discord")).length === 1, { what: "one discord event" });
});

test("sendgrid's ECDSA P-256 DER signature is checked in WebCrypto: signed 202, tampered 401", async () => {
  const body = '[{"email":"example@test.com","event":"processed","sg_event_id":"sg-1"}]\r\n';
  const ts = now();
  const sig = crypto.sign("sha256", Buffer.from(ts + body), ec.privateKey).toString("base64");
  const headers = { "content-type": "application/json", "x-twilio-email-event-webhook-timestamp": ts, "x-twilio-email-event-webhook-signature": sig };
  const res = await post("sendgrid", body, headers);
  assert.equal(res.status, 202, await res.clone().text());
  assert.equal((await res.json()).status, "queued");
  assert.equal((await post("sendgrid", body.replace("sg-1", "sg-2"), headers)).status, 401);

  // Too large for a queue message: kept in D1 first, after WebCrypto's check.
  const big = JSON.stringify([{ email: "big@test.com", event: "processed", pad: "z".repeat(200_000) }]);
  const bigSig = crypto.sign("sha256", Buffer.from(ts + big), ec.privateKey).toString("base64");
  const stored = await post("sendgrid", big, { ...headers, "x-twilio-email-event-webhook-signature": bigSig });
  assert.equal(stored.status, 202, await stored.clone().text());
  const { event_id } = await stored.json();
  const [row] = await waitFor(async () => (await rows(relay.db, "SELECT body, body_ref FROM events WHERE event_id = ?", event_id)).length && rows(relay.db, "SELECT body, body_ref FROM events WHERE event_id = ?", event_id), { what: "the claim-checked sendgrid event" });
  assert.equal(row.body_ref, event_id, "kept in the payload store");
});

test("a recipe source verifies as written: HMAC-SHA512, base64url after v2=, a millisecond timestamp, its id from the body, answer 204", async () => {
  const body = JSON.stringify({ meta: { delivery: "dlv-42" }, kind: "order.paid" });
  const ms = String(Date.now());
  const sig = "v2=" + hmac("sha512", SECRETS.WEBHOOK_SECRET_ACME, `${ms}:${body}`).toString("base64url");
  const res = await post("acme", body, { "content-type": "application/json", "x-acme-time": ms, "x-acme-signature": sig });
  assert.equal(res.status, 204, await res.clone().text());
  const [event] = await waitFor(async () => (await eventsOf("acme")).length && eventsOf("acme"), { what: "acme event" });
  assert.equal(event.idempotency_key, "acme:dlv-42");
  const wrong = await post("acme", body, { "content-type": "application/json", "x-acme-time": ms, "x-acme-signature": sig.replace("v2=", "v1=") });
  assert.equal(wrong.status, 401);
});

test("rotation: a signature made with WEBHOOK_SECRET_<SOURCE>_PREVIOUS is accepted, a third secret is refused", async () => {
  const sign = (secret, body) => ({
    "content-type": "application/json", "x-github-delivery": crypto.randomUUID(),
    "x-hub-signature-256": "sha256=" + hmac("sha256", secret, body).toString("hex"),
  });
  const body = JSON.stringify({ zen: "rotate" });
  assert.equal((await post("rotating", body, sign(SECRETS.WEBHOOK_SECRET_ROTATING, body))).status, 202);
  assert.equal((await post("rotating", body, sign(SECRETS.WEBHOOK_SECRET_ROTATING_PREVIOUS, body))).status, 202);
  assert.equal((await post("rotating", body, sign("a-third-secret", body))).status, 401);
});

// Over core's NATIVE_SHA256_UP_TO (16 KiB) the HMAC-SHA256 runs in WebCrypto
// over the body the entry read: alone (GitHub), or after a prefix (Slack's
// v0:{timestamp}:). Accepted and claim-checked byte-exact; one byte changed
// is refused.
test("a 900 KB body signed with HMAC-SHA256 is checked in WebCrypto: accepted byte-exact, one changed byte refused 401", async () => {
  const pad = "q".repeat(900_000);
  // The claim-checked body of the source's one large event (Slack answers 200 with no event id).
  const stored = async (res, source, status = 202) => {
    assert.equal(res.status, status, await res.clone().text());
    const sql = "SELECT p.body FROM payloads p JOIN events e ON e.event_id = p.event_id WHERE e.source = ? AND length(p.body) > 900000";
    const [row] = await waitFor(async () => (await rows(relay.db, sql, source)).length && rows(relay.db, sql, source), { what: `the claim-checked ${source} body` });
    return row.body;
  };
  const github = JSON.stringify({ zen: "large", pad });
  const githubHeaders = (secret) => ({
    "content-type": "application/json", "x-github-delivery": crypto.randomUUID(),
    "x-hub-signature-256": "sha256=" + hmac("sha256", secret, github).toString("hex"),
  });
  assert.equal(await stored(await post("rotating", github, githubHeaders(SECRETS.WEBHOOK_SECRET_ROTATING_PREVIOUS)), "rotating"), github, "under the previous secret too");
  const tampered = github.replace("large", "LARGE");
  assert.equal((await post("rotating", tampered, githubHeaders(SECRETS.WEBHOOK_SECRET_ROTATING))).status, 401);
  assert.equal((await post("rotating", github, githubHeaders("a-third-secret"))).status, 401);

  const slack = JSON.stringify({ type: "event_callback", event_id: "Ev-large", pad });
  const headers = slackHeaders(slack);
  assert.equal(await stored(await post("slack", slack, headers), "slack", 200), slack);
  const refused = await post("slack", slack.replace("Ev-large", "Ev-forged"), headers);
  assert.equal(refused.status, 401);
  assert.equal((await refused.json()).error.code, "SIGNATURE_INVALID");
});

test("a body that is neither JSON nor a form is refused 400 BAD_PAYLOAD, after its signature", async () => {
  const body = "<xml>not json</xml>";
  const res = await post("slack", body, slackHeaders(body, { contentType: "text/xml" }));
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, "BAD_PAYLOAD");
  assert.equal((await post("slack", body, { "content-type": "text/xml" })).status, 401, "unsigned: 401 first, nothing about the body");
});

test("a bad recipe fails the configuration, naming the source and the field", async () => {
  const bad = await startRelay({
    vars: { SOURCES: JSON.stringify({ acme: { scheme: { hmac: "sha256", header: "x-sig", encoding: "base32", signed: "{body}" } } }), WEBHOOK_SECRET_ACME: "s" },
  });
  try {
    const res = await bad.fetch("/webhooks/acme", { method: "POST", body: "{}" });
    const json = await res.json();
    assert.equal(res.status, 500);
    assert.equal(json.error.code, "CONFIG_INVALID");
    assert.match(json.error.message, /SOURCES\.acme\.scheme\.encoding: unknown encoding 'base32'/);
  } finally {
    await bad.dispose();
  }
});
