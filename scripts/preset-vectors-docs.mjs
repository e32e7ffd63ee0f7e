// Golden vectors for the presets, from the providers' documented recipes
// and examples, computed with node:crypto alone (no provider library):
// `node scripts/preset-vectors-docs.mjs > core/tests/preset_vectors_docs.json`.
// Two rows are the providers' own published examples (Slack's and
// GitHub's); the rest follow each provider's written recipe. The vectors
// made with the providers' npm libraries are a separate generator.
import crypto from "node:crypto";

const URL_BASE = "https://relay.example.com/webhooks/acme";
const NOW = 1700000000;
const hmac = (alg, key, text) => crypto.createHmac(alg, key).update(text).digest();
const hex = (b) => b.toString("hex");
const b64 = (b) => b.toString("base64");
const vectors = [];

function add(v) {
  vectors.push({
    preset: v.preset, checked_by: v.checked_by, secret: v.secret ?? null, public_key: v.public_key ?? null,
    method: "POST", url: v.url ?? URL_BASE, headers: v.headers, content_type: v.content_type ?? "application/json",
    body: v.body, now_s: v.now_s ?? NOW, valid: v.valid ?? true, delivery_id: v.delivery_id ?? null,
    handshake: v.handshake ?? null,
  });
}

// Slack's "Verifying requests from Slack" worked example, a slash command form.
{
  const body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
  add({ preset: "slack", checked_by: "Slack docs worked example", secret: "8f742231b10e8888abcd99yyyzzz85a5",
    headers: { "X-Slack-Request-Timestamp": "1531420618", "X-Slack-Signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" },
    content_type: "application/x-www-form-urlencoded", body, now_s: 1531420618 });
  const hs = JSON.stringify({ token: "Jhj5dZrVaK7ZwHHjRyZWjbDl", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
  add({ preset: "slack", checked_by: "Slack docs recipe (url_verification)", secret: "8f742231b10e8888abcd99yyyzzz85a5",
    headers: { "X-Slack-Request-Timestamp": String(NOW), "X-Slack-Signature": "v0=" + hex(hmac("sha256", "8f742231b10e8888abcd99yyyzzz85a5", `v0:${NOW}:${hs}`)) },
    body: hs, handshake: { status: 200, content_type: "application/json", body: JSON.stringify({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" }) } });
  const ev = JSON.stringify({ type: "event_callback", event_id: "Ev08MFMKH6", event: { type: "app_mention" } });
  add({ preset: "slack", checked_by: "Slack docs recipe", secret: "8f742231b10e8888abcd99yyyzzz85a5",
    headers: { "X-Slack-Request-Timestamp": String(NOW), "X-Slack-Signature": "v0=" + hex(hmac("sha256", "8f742231b10e8888abcd99yyyzzz85a5", `v0:${NOW}:${ev}`)) },
    body: ev, delivery_id: "Ev08MFMKH6" });
}

// GitHub's "Validating webhook deliveries" example.
add({ preset: "github", checked_by: "GitHub docs example", secret: "It's a Secret to Everybody",
  headers: { "X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" },
  body: "Hello, World!", content_type: "text/plain", delivery_id: "72d3162e-cc78-11e3-81ab-4c9367dc0958" });

// Standard Webhooks' published test vector.
add({ preset: "standard-webhooks", checked_by: "standard-webhooks reference tests", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  headers: { "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" },
  body: '{"test": 2432232314}', now_s: 1614265330, delivery_id: "msg_p5jXN8AQM9LWM0D4loKWxJek" });

const doc = "provider docs recipe, node:crypto";
{
  const body = JSON.stringify({ id: "evt_1NG8Du2eZvKYlo2CUI79vXWy", object: "event" });
  add({ preset: "stripe", checked_by: doc, secret: "whsec_test_secret",
    headers: { "Stripe-Signature": `t=${NOW},v1=${hex(hmac("sha256", "whsec_test_secret", `${NOW}.${body}`))}` }, body, delivery_id: "evt_1NG8Du2eZvKYlo2CUI79vXWy" });
}
{
  const body = '{"op":"create"}';
  add({ preset: "hmac-sha256", checked_by: doc, secret: "generic-secret",
    headers: { "X-Timestamp": String(NOW), "X-Signature": hex(hmac("sha256", "generic-secret", `${NOW}.${body}`)), "X-Operation-Id": "op-1" }, body, delivery_id: "op-1" });
}
{
  const body = JSON.stringify({ id: 820982911946154500, email: "jon@example.com" });
  add({ preset: "shopify", checked_by: doc, secret: "shpss_secret",
    headers: { "X-Shopify-Hmac-SHA256": b64(hmac("sha256", "shpss_secret", body)), "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" }, body, delivery_id: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" });
}
{
  // Twilio: the URL, then each POST field sorted by name, as name and value.
  const url = "https://relay.example.com/webhooks/acme?foo=1&bar=2";
  const fields = { CallSid: "CA1234567890ABCDE", Caller: "+12349013030", Digits: "1234", From: "+12349013030", To: "+18005551212" };
  const body = new URLSearchParams(fields).toString();
  const signed = url + Object.keys(fields).sort().map((k) => k + fields[k]).join("");
  add({ preset: "twilio", checked_by: doc, secret: "12345", url,
    headers: { "X-Twilio-Signature": b64(hmac("sha1", "12345", signed)), "I-Twilio-Idempotency-Token": "tok-1" },
    content_type: "application/x-www-form-urlencoded", body, delivery_id: "tok-1" });
  const json = '{"status":"delivered"}';
  const jurl = `${URL_BASE}?bodySHA256=${hex(crypto.createHash("sha256").update(json).digest())}`;
  add({ preset: "twilio", checked_by: doc, secret: "12345", url: jurl,
    headers: { "X-Twilio-Signature": b64(hmac("sha1", "12345", jurl)) }, body: json });
}
{
  const body = JSON.stringify({ event: "meeting.started", payload: { object: { id: "1" } } });
  add({ preset: "zoom", checked_by: doc, secret: "zoom-secret",
    headers: { "x-zm-request-timestamp": String(NOW), "x-zm-signature": "v0=" + hex(hmac("sha256", "zoom-secret", `v0:${NOW}:${body}`)) }, body });
  const hs = JSON.stringify({ event: "endpoint.url_validation", payload: { plainToken: "qgg8vlvZRS6UYooatFL8Aw" } });
  add({ preset: "zoom", checked_by: doc, secret: "zoom-secret",
    headers: { "x-zm-request-timestamp": String(NOW), "x-zm-signature": "v0=" + hex(hmac("sha256", "zoom-secret", `v0:${NOW}:${hs}`)) }, body: hs,
    handshake: { status: 200, content_type: "application/json", body: JSON.stringify({ encryptedToken: hex(hmac("sha256", "zoom-secret", "qgg8vlvZRS6UYooatFL8Aw")), plainToken: "qgg8vlvZRS6UYooatFL8Aw" }) } });
}
{
  const body = JSON.stringify({ action: "create", type: "Issue", webhookTimestamp: NOW * 1000 + 250 });
  add({ preset: "linear", checked_by: doc, secret: "lin_wh_secret",
    headers: { "Linear-Signature": hex(hmac("sha256", "lin_wh_secret", body)), "Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72" }, body, delivery_id: "234d1a4e-b617-4388-90fe-adc3633d6b72" });
}
{
  const body = JSON.stringify({ event_id: "evt_01h8bzakzx3hm2fmen703n5q45", event_type: "transaction.completed" });
  add({ preset: "paddle", checked_by: doc, secret: "pdl_ntfset_secret",
    headers: { "Paddle-Signature": `ts=${NOW};h1=${hex(hmac("sha256", "pdl_ntfset_secret", `${NOW}:${body}`))}` }, body, delivery_id: "evt_01h8bzakzx3hm2fmen703n5q45" });
}
{
  const body = JSON.stringify({ type: "notification_event", id: "notif_ccd8a4d2", topic: "conversation.user.created" });
  add({ preset: "intercom", checked_by: doc, secret: "intercom-client-secret",
    headers: { "X-Hub-Signature": "sha1=" + hex(hmac("sha1", "intercom-client-secret", body)) }, body, delivery_id: "notif_ccd8a4d2" });
}
{
  const body = JSON.stringify({ merchant_id: "C337NFWQT2A6W", type: "payment.updated", event_id: "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc" });
  add({ preset: "square", checked_by: doc, secret: "sq-signature-key",
    headers: { "x-square-hmacsha256-signature": b64(hmac("sha256", "sq-signature-key", URL_BASE + body)) }, body, delivery_id: "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc" });
}
{
  const body = JSON.stringify({ event: { id: "5ac64822-4adc-4fda-ade0-410becf0de4f", event_type: "incident.triggered" } });
  add({ preset: "pagerduty", checked_by: doc, secret: "pd-secret",
    headers: { "X-PagerDuty-Signature": `v1=${"0".repeat(64)},v1=${hex(hmac("sha256", "pd-secret", body))}` }, body, delivery_id: "5ac64822-4adc-4fda-ade0-410becf0de4f" });
}
{
  const ts = "2023-11-14T22:13:20.634234626Z"; // NOW as RFC 3339
  const id = "befa7b53-d79d-478f-86b9-120f112b044e";
  const body = JSON.stringify({ subscription: { type: "channel.follow" }, event: { user_id: "1234" } });
  add({ preset: "twitch", checked_by: doc, secret: "twitch-secret",
    headers: { "Twitch-Eventsub-Message-Id": id, "Twitch-Eventsub-Message-Timestamp": ts, "Twitch-Eventsub-Message-Type": "notification",
      "Twitch-Eventsub-Message-Signature": "sha256=" + hex(hmac("sha256", "twitch-secret", id + ts + body)) }, body, delivery_id: id });
  const hs = JSON.stringify({ challenge: "pogchamp-kappa-360noscope-vohiyo", subscription: { type: "channel.follow" } });
  add({ preset: "twitch", checked_by: doc, secret: "twitch-secret",
    headers: { "Twitch-Eventsub-Message-Id": "hs-1", "Twitch-Eventsub-Message-Timestamp": ts, "Twitch-Eventsub-Message-Type": "webhook_callback_verification",
      "Twitch-Eventsub-Message-Signature": "sha256=" + hex(hmac("sha256", "twitch-secret", "hs-1" + ts + hs)) }, body: hs,
    delivery_id: "hs-1", handshake: { status: 200, content_type: "text/plain", body: "pogchamp-kappa-360noscope-vohiyo" } });
}
{
  // HubSpot v3: method, URL with its listed escapes decoded, body, timestamp (ms).
  const url = `${URL_BASE}?portal=a%3Ab%40c`;
  const ms = String(NOW * 1000);
  const body = JSON.stringify([{ eventId: 1, subscriptionType: "contact.creation" }]);
  const decoded = url.replace("%3A", ":").replace("%40", "@");
  add({ preset: "hubspot", checked_by: doc, secret: "hubspot-client-secret", url,
    headers: { "X-HubSpot-Signature-v3": b64(hmac("sha256", "hubspot-client-secret", "POST" + decoded + body + ms)), "X-HubSpot-Request-Timestamp": ms }, body });
}
{
  const body = JSON.stringify({ event_id: "01H8XYZ", event_type: "form_response" });
  add({ preset: "typeform", checked_by: doc, secret: "typeform-secret",
    headers: { "Typeform-Signature": "sha256=" + b64(hmac("sha256", "typeform-secret", body)) }, body, delivery_id: "01H8XYZ" });
}
{
  const body = JSON.stringify({ id: 727, status: "processing" });
  add({ preset: "woocommerce", checked_by: doc, secret: "wc-secret",
    headers: { "X-WC-Webhook-Signature": b64(hmac("sha256", "wc-secret", body)), "X-WC-Webhook-Delivery-ID": "9" }, body });
}
{
  const body = JSON.stringify({ object_kind: "push" });
  add({ preset: "gitlab", checked_by: "GitLab docs (shared token)", secret: "gl-token",
    headers: { "X-Gitlab-Token": "gl-token", "X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e" }, body, delivery_id: "13792a34-cac6-4fda-95a8-c58e00a3954e" });
}
{
  // Discord: Ed25519 over timestamp + body under the application's public key (hex).
  const seed = Buffer.alloc(32, 7);
  const priv = crypto.createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]), format: "der", type: "pkcs8" });
  const pub = hex(crypto.createPublicKey(priv).export({ format: "der", type: "spki" }).subarray(12));
  for (const [body, handshake] of [[JSON.stringify({ type: 1, event: { type: "APPLICATION_AUTHORIZED" } }), null], [JSON.stringify({ type: 0, version: 1 }), { status: 204, content_type: null, body: "" }]]) {
    add({ preset: "discord", checked_by: doc, public_key: pub,
      headers: { "X-Signature-Timestamp": String(NOW), "X-Signature-Ed25519": hex(crypto.sign(null, Buffer.from(String(NOW) + body), priv)) }, body, handshake });
  }
}
{
  // SendGrid: ECDSA P-256 with SHA-256 over timestamp + body, base64 DER, key as base64 SPKI.
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.setPrivateKey(Buffer.alloc(32, 9));
  const point = ecdh.getPublicKey();
  const jwk = { kty: "EC", crv: "P-256", d: Buffer.alloc(32, 9).toString("base64url"), x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") };
  const priv = crypto.createPrivateKey({ key: jwk, format: "jwk" });
  const pub = b64(crypto.createPublicKey(priv).export({ format: "der", type: "spki" }));
  const body = '[{"email":"example@test.com","event":"processed","sg_event_id":"rbtnWrG1DVDGGGFHFyun0A=="}]\r\n';
  add({ preset: "sendgrid", checked_by: doc, public_key: pub,
    headers: { "X-Twilio-Email-Event-Webhook-Timestamp": String(NOW), "X-Twilio-Email-Event-Webhook-Signature": b64(crypto.sign("sha256", Buffer.from(String(NOW) + body), priv)) }, body });
}

console.log(JSON.stringify({ vectors }, null, 1));
