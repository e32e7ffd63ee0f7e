// The HMAC presets whose providers publish a library that signs or verifies:
// each vector is signed with the library where it can sign, else by hand,
// and then the library itself is asked whether it accepts it.
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as octokitSign, verify as octokitVerify } from "@octokit/webhooks-methods";
import { shopifyApi, ApiVersion, LogSeverity } from "@shopify/shopify-api";
import "@shopify/shopify-api/adapters/web-api";
import { getHmac as shopifyGetHmac } from "@shopify/shopify-api/test-helpers";
import bolt from "@slack/bolt";
import twilio from "twilio";
import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { Paddle } from "@paddle/paddle-node-sdk";
import { WebhooksHelper } from "square";
import { Signature as HubSpotSignature } from "@hubspot/api-client";
import { RELAY, T0, atClock, hmacBase64, hmacHex, lib, proven, sha256Hex, stale, tampered, vector } from "./vector.mjs";

export async function standardWebhooks() {
  const L = lib("standardwebhooks");
  // The secret of the Standard Webhooks spec's own tests (libraries/php/tests/WebhookTest.php).
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const wh = new Webhook(secret);
  const id = "msg_2YvNPVd8Xc1jAjFM8iuXPp7pYtF";
  const body = '{"type":"invoice.paid","data":{"id":"inv_1","amount":4200}}';
  const signature = wh.sign(id, new Date(T0 * 1000), body);
  const headers = { "webhook-id": id, "webhook-timestamp": String(T0), "webhook-signature": signature };
  const verify = (v) => atClock(v.now_s * 1000, () => {
    try {
      const h = Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.replace(/^svix-/, "webhook-"), x]));
      wh.verify(v.body, h);
      return true;
    } catch {
      return false;
    }
  });
  const checked_by = `${L} Webhook.sign, accepted by Webhook.verify (its clock, Date, stubbed to now_s)`;
  const valid = vector({ preset: "standard-webhooks", checked_by, secret, url: `${RELAY}/acme`, headers, body, now_s: T0 + 30, valid: true, delivery_id: id });
  const other = new Webhook("whsec_" + Buffer.from("another secret, not this source's").toString("base64")).sign(id, new Date(T0 * 1000), body);
  const several = vector({
    ...valid, headers: { ...headers, "webhook-signature": `${other} ${signature}` },
    note: "several space-separated signatures: one made with another secret, then the right one; any one may match",
  });
  const svix = vector({
    ...valid, headers: { "svix-id": id, "svix-timestamp": String(T0), "svix-signature": signature },
    checked_by: `${checked_by}, read under the webhook-* names`,
    note: "the svix-* header names (DESIGN §2 accepts them too); standardwebhooks itself reads only webhook-*, so the library checked it under those names",
  });
  const out = [valid, several, svix, tampered(valid, body.replace("4200", "4201")), stale(valid, T0 + 301, "300 s")];
  for (const v of out) proven(await verify(v), v.valid, `standard-webhooks ${v.note ?? "valid"}`);
  return out;
}

export async function stripe() {
  const L = lib("stripe");
  const s = new Stripe("sk_test_unused_offline");
  const secret = "whsec_hookrelay_preset_vector_secret";
  const body = '{"id":"evt_1PresetVectorStripe","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":4200}}}';
  const header = s.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: T0 });
  const checked_by = `${L} webhooks.generateTestHeaderString, accepted by webhooks.constructEvent (tolerance 300, receivedAt = now_s)`;
  const valid = vector({ preset: "stripe", checked_by, secret, url: `${RELAY}/shop`, headers: { "Stripe-Signature": header }, body, now_s: T0 + 60, valid: true, delivery_id: "evt_1PresetVectorStripe" });
  const wrong = s.webhooks.generateTestHeaderString({ payload: body, secret: "whsec_some_other_secret", timestamp: T0 }).split(",")[1];
  const several = vector({ ...valid, headers: { "Stripe-Signature": `${header.split(",")[0]},${wrong},${header.split(",")[1]}` }, note: "two v1 signatures, the first made with another secret; any one may match" });
  const out = [valid, several, tampered(valid, body.replace("4200", "1")), stale(valid, T0 + 301, "300 s")];
  for (const v of out) {
    let ok;
    try {
      s.webhooks.constructEvent(v.body, v.headers["Stripe-Signature"], secret, 300, undefined, v.now_s * 1000);
      ok = true;
    } catch {
      ok = false;
    }
    proven(ok, v.valid, `stripe ${v.note ?? "valid"}`);
  }
  return out;
}

export async function github() {
  const L = lib("@octokit/webhooks-methods");
  const secret = "github preset vector secret";
  const body = '{"action":"opened","number":7,"repository":{"full_name":"acme/widgets"}}';
  const signature = await octokitSign(secret, body);
  const valid = vector({
    preset: "github", checked_by: `${L} sign, accepted by verify`, secret, url: `${RELAY}/gh`,
    headers: { "X-Hub-Signature-256": signature, "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" },
    body, now_s: T0, valid: true, delivery_id: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
  });
  const out = [valid, tampered(valid, body.replace("7", "8"))];
  for (const v of out) proven(await octokitVerify(secret, v.body, v.headers["X-Hub-Signature-256"]), v.valid, `github ${v.note ?? "valid"}`);
  return out;
}

export async function shopify() {
  const L = lib("@shopify/shopify-api");
  const secret = "shpss_hookrelay_preset_vector";
  const api = shopifyApi({
    apiKey: "preset-vectors", apiSecretKey: secret, scopes: [], hostName: "relay.example.com",
    apiVersion: ApiVersion.July26, isEmbeddedApp: false, logger: { level: LogSeverity.Error },
  });
  const body = '{"id":820982911946154500,"email":"jon@example.com","total_price":"42.00"}';
  const base = {
    "X-Shopify-Topic": "orders/create", "X-Shopify-Shop-Domain": "acme.myshopify.com", "X-Shopify-API-Version": "2026-07",
    "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "X-Shopify-Triggered-At": "2023-11-14T22:13:19.000Z",
  };
  const checked_by = `${L} test-helpers getHmac, accepted by shopifyApi().webhooks.validate (web-api adapter)`;
  const withEvent = vector({
    preset: "shopify", checked_by, secret, url: `${RELAY}/store`,
    headers: { "X-Shopify-Hmac-SHA256": shopifyGetHmac(body, secret), ...base, "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5" },
    body, now_s: T0, valid: true, delivery_id: "98880550-7158-44d4-b7cd-2c97c8a091b5",
    note: "@shopify/shopify-api also validates Shopify's newer 'events' webhooks, whose headers drop the X- (Shopify-Hmac-Sha256, Shopify-Event-Id); DESIGN §2 names only the X-Shopify-* headers",
  });
  const withoutEvent = vector({
    ...withEvent, headers: { "X-Shopify-Hmac-SHA256": shopifyGetHmac(body, secret), ...base }, delivery_id: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
    note: "no X-Shopify-Event-Id: the delivery id falls back to X-Shopify-Webhook-Id",
  });
  const out = [withEvent, withoutEvent, tampered(withEvent, body.replace("42.00", "0.01"))];
  for (const v of out) {
    const rawRequest = new Request(v.url, { method: v.method, headers: { ...v.headers, "Content-Type": v.content_type }, body: v.body });
    const result = await api.webhooks.validate({ rawBody: v.body, rawRequest, rawResponse: new Response() });
    proven(result.valid, v.valid, `shopify ${v.note ?? "valid"}`);
  }
  return out;
}

/** Slack's answer to url_verification, as Bolt's HTTP receiver writes it. */
function boltUrlVerificationAnswer(body) {
  const answer = { status: null, content_type: null, body: null };
  const res = {
    writeHead(status, headers) {
      answer.status = status;
      answer.content_type = headers["content-type"];
    },
    end(text) {
      answer.body = text;
    },
  };
  bolt.HTTPModuleFunctions.buildUrlVerificationResponse(res, JSON.parse(body));
  return answer;
}

export async function slack() {
  const L = lib("@slack/bolt");
  const checked_by = `${L} verifySlackRequest (nowMilliseconds = now_s)`;
  const secret = "slack-preset-vector-signing-secret";
  const sign = (ts, body) => `v0=${hmacHex("sha256", secret, `v0:${ts}:${body}`)}`;
  const headersFor = (ts, body) => ({ "X-Slack-Signature": sign(ts, body), "X-Slack-Request-Timestamp": String(ts) });
  const event = '{"token":"z26uFbvR1xHJEdHE1OQiO6t8","team_id":"T061EG9RZ","api_app_id":"A0FFV41KK","event":{"type":"app_mention","text":"<@U0LAN0Z89> hi","ts":"1700000000.000100"},"type":"event_callback","event_id":"Ev9UQ52YNA","event_time":1700000000}';
  const valid = vector({ preset: "slack", checked_by, secret, url: `${RELAY}/slack`, headers: headersFor(T0, event), body: event, now_s: T0 + 5, valid: true, delivery_id: "Ev9UQ52YNA" });
  const challenge = '{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}';
  const handshake = vector({
    ...valid, checked_by: `${checked_by}; answer from HTTPModuleFunctions.buildUrlVerificationResponse`,
    headers: headersFor(T0, challenge), body: challenge, delivery_id: null, handshake: boltUrlVerificationAnswer(challenge),
    note: "Slack's docs also accept the bare challenge as text/plain; Bolt answers JSON, used here",
  });
  // Slack's own worked example (a slash command, a form body), from its docs.
  const docSecret = "8f742231b10e8888abcd99yyyzzz85a5";
  const docTs = 1531420618;
  const docBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
  const docExample = vector({
    preset: "slack", checked_by: `https://api.slack.com/authentication/verifying-requests-from-slack (its example); accepted by ${checked_by}`,
    secret: docSecret, url: `${RELAY}/slack`, content_type: "application/x-www-form-urlencoded",
    headers: { "X-Slack-Signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", "X-Slack-Request-Timestamp": String(docTs) },
    body: docBody, now_s: docTs + 10, valid: true,
    note: "a slash command: a form body without event_id, so no provider delivery id",
  });
  const out = [valid, handshake, docExample, tampered(valid, event.replace("hi", "bye")), stale(valid, T0 + 301, "300 s")];
  for (const v of out) {
    const ok = bolt.isValidSlackRequest({
      signingSecret: v.secret, body: v.body, nowMilliseconds: v.now_s * 1000,
      headers: { "x-slack-signature": v.headers["X-Slack-Signature"], "x-slack-request-timestamp": Number(v.headers["X-Slack-Request-Timestamp"]) },
    });
    proven(ok, v.valid, `slack ${v.note ?? "valid"}`);
  }
  return out;
}

export async function twilioPreset() {
  const L = lib("twilio");
  const token = "twilio-preset-vector-auth-token";
  // A form body as Twilio posts an SMS: the values need decoding ("+" is a space, %26 an "&").
  const fields = [
    ["ToCountry", "US"], ["SmsMessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"], ["NumMedia", "0"], ["From", "+14158675310"],
    ["Body", "Hi & bye: 1+1=2 ☃"], ["To", "+15017122661"], ["MessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"],
    ["AccountSid", "AC1234567890abcdef1234567890abcdef"], ["ApiVersion", "2010-04-01"],
  ];
  const form = new URLSearchParams(fields).toString();
  const formUrl = `${RELAY}/twilio?region=us1&tag=a%20b`;
  const params = Object.fromEntries(fields);
  const formVector = vector({
    preset: "twilio", checked_by: `${L} getExpectedTwilioSignature, accepted by validateRequest`, secret: token, url: formUrl,
    headers: { "X-Twilio-Signature": twilio.getExpectedTwilioSignature(token, formUrl, params), "I-Twilio-Idempotency-Token": "2f7bd2d4-4a0d-4b38-9b0e-8d1b9e0c6a11" },
    content_type: "application/x-www-form-urlencoded", body: form, now_s: T0, valid: true, delivery_id: "2f7bd2d4-4a0d-4b38-9b0e-8d1b9e0c6a11",
    note: "signed: the URL with its query as received, then each decoded field, sorted by name, as name then value. twilio's validateRequest also accepts the URL with the default port added or the port removed (checked by the port vectors that follow), sorts a repeated field's values and drops duplicates; Twilio's SharedKey webhooks (X-Twilio-Webhooks-Signature-Settings: algorithm=HMAC_SHA256) sign the same text with HMAC-SHA256, which DESIGN §2 does not cover",
  });
  const json = '{"sid":"KE1234567890abcdef1234567890abcdef","type":"com.twilio.messaging.message.delivered","data":{"to":"+15017122661"}}';
  const jsonUrl = `${RELAY}/twilio?bodySHA256=${sha256Hex(json)}`;
  const jsonVector = vector({
    preset: "twilio", checked_by: `${L} getExpectedTwilioSignature(url, {}), accepted by validateRequestWithBody`, secret: token, url: jsonUrl,
    headers: { "X-Twilio-Signature": twilio.getExpectedTwilioSignature(token, jsonUrl, {}), "I-Twilio-Idempotency-Token": "6a1c3f0e-1b2d-4e5f-8a9b-0c1d2e3f4a5b" },
    body: json, now_s: T0, valid: true, delivery_id: "6a1c3f0e-1b2d-4e5f-8a9b-0c1d2e3f4a5b",
    note: "a JSON body: only the URL is signed, and its bodySHA256 (hex SHA-256 of the body) must match the body",
  });
  // Twilio signs the URL as configured there, port or not; validateRequest
  // tries the URL with the port and without it. The URL a vector gives is
  // the one received (or set as the source's url); its signature is over
  // the other form.
  const withPort = (url) => url.replace("relay.example.com/", "relay.example.com:443/");
  const formOverPort = vector({
    ...formVector, checked_by: `${L} getExpectedTwilioSignature over the URL with :443, accepted by validateRequest at the URL without a port`,
    headers: { ...formVector.headers, "X-Twilio-Signature": twilio.getExpectedTwilioSignature(token, withPort(formUrl), params) },
    note: "another form of its URL: signed over the URL with the default port (:443) added, received at the URL without one",
  });
  const jsonAtPort = vector({
    ...jsonVector, url: withPort(jsonUrl), checked_by: `${L} getExpectedTwilioSignature over the URL without a port, accepted by validateRequestWithBody at the URL with :443`,
    note: "another form of its URL: signed over the URL without a port, received at the URL with :443; its bodySHA256 must still match",
  });
  const otherPort = vector({
    ...formVector, checked_by: `${L} getExpectedTwilioSignature over the URL with :8443, refused by validateRequest at the URL without a port`,
    headers: { ...formVector.headers, "X-Twilio-Signature": twilio.getExpectedTwilioSignature(token, formUrl.replace("relay.example.com/", "relay.example.com:8443/"), params) },
    valid: false, delivery_id: null,
    note: "signed over the URL with another port (:8443): only the default port may be added to a URL that has none",
  });
  const out = [
    formVector, jsonVector, formOverPort, jsonAtPort,
    tampered(formVector, form.replace("ToCountry=US", "ToCountry=CA")),
    { ...tampered(jsonVector, json.replace("delivered", "failed")), note: "tampered: the body no longer matches the signed URL's bodySHA256" },
    { ...tampered(jsonAtPort, json.replace("delivered", "failed")), note: "tampered: the body no longer matches the signed URL's bodySHA256, at the URL with :443" },
    otherPort,
  ];
  for (const v of out) {
    const sig = v.headers["X-Twilio-Signature"];
    const ok = v.content_type === "application/json"
      ? twilio.validateRequestWithBody(token, sig, v.url, v.body)
      : twilio.validateRequest(token, sig, v.url, Object.fromEntries(new URLSearchParams(v.body)));
    proven(ok, v.valid, `twilio ${v.note}`);
  }
  return out;
}

export async function linear() {
  const L = lib("@linear/sdk");
  const secret = "lin_wh_presetvectorsecret0123456789";
  const client = new LinearWebhookClient(secret);
  const tsMs = T0 * 1000 + 123;
  const body = `{"action":"create","type":"Issue","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","title":"Fix the relay"},"url":"https://linear.app/acme/issue/ENG-1","createdAt":"2023-11-14T22:13:19.000Z","organizationId":"d7e1f2a3-b4c5-4d6e-8f90-a1b2c3d4e5f6","webhookTimestamp":${tsMs},"webhookId":"000042e3-d123-4980-b49f-8e140eef9329"}`;
  const valid = vector({
    preset: "linear", checked_by: `${L} LinearWebhookClient.verify (its clock, Date.now, stubbed to now_s)`, secret, url: `${RELAY}/linear`,
    headers: { "Linear-Signature": hmacHex("sha256", secret, body), "Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72", "Linear-Event": "Issue" },
    body, now_s: T0 + 10, valid: true, delivery_id: "234d1a4e-b617-4388-90fe-adc3633d6b72",
  });
  const out = [valid, tampered(valid, body.replace("Fix the relay", "Break the relay")), stale(valid, T0 + 61, "60 s (webhookTimestamp is in ms)")];
  for (const v of out) {
    const ok = await atClock(v.now_s * 1000, () => {
      try {
        return client.verify(Buffer.from(v.body), v.headers["Linear-Signature"]);
      } catch {
        return false;
      }
    });
    proven(ok, v.valid, `linear ${v.note ?? "valid"}`);
  }
  return out;
}

export async function paddle() {
  const L = lib("@paddle/paddle-node-sdk");
  const secret = "pdl_ntfset_01hsdn5m4k1r3n8v6t0x9e2q7w_presetvectorsecretkey0";
  const body = '{"event_id":"evt_01hv8wt8nffez4p2t6typn4a5j","event_type":"transaction.completed","occurred_at":"2023-11-14T22:13:19.000000Z","notification_id":"ntf_01hv8wt8p3y1bqyrb7yt0q1p4v","data":{"id":"txn_01hv8wptq8987qeep44cyrewp9"}}';
  const header = `ts=${T0};h1=${hmacHex("sha256", secret, `${T0}:${body}`)}`;
  const valid = vector({
    preset: "paddle", checked_by: `${L} Paddle.webhooks.isSignatureValid (its clock, Date, stubbed to now_s)`, secret, url: `${RELAY}/paddle`,
    headers: { "Paddle-Signature": header }, body, now_s: T0 + 2, valid: true, delivery_id: "evt_01hv8wt8nffez4p2t6typn4a5j",
  });
  const api = new Paddle("pdl_sdbx_apikey_01hsdn5m4k1r3n8v6t0x9e2q7w_offline0000000000000000_unused");
  const out = [valid, tampered(valid, body.replace("completed", "canceled")), stale(valid, T0 + 6, "5 s")];
  for (const v of out) {
    const ok = await atClock(v.now_s * 1000, () => api.webhooks.isSignatureValid(v.body, secret, v.headers["Paddle-Signature"]));
    proven(ok, v.valid, `paddle ${v.note ?? "valid"}`);
  }
  return out;
}

export async function square() {
  const L = lib("square");
  const key = "square-preset-vector-signature-key";
  const url = `${RELAY}/square`;
  const body = '{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","created_at":"2023-11-14T22:13:19Z","data":{"type":"payment","id":"KkAkhdMsgzn59SM8A89WgKwekxLZY"}}';
  const signature = hmacBase64("sha256", key, url + body);
  const valid = vector({
    preset: "square", checked_by: `${L} WebhooksHelper.verifySignature (notificationUrl = url)`, secret: key, url,
    headers: { "x-square-hmacsha256-signature": signature }, body, now_s: T0, valid: true, delivery_id: "13b867cf-db3d-4b1c-90b6-2f32a9d78124",
  });
  const out = [valid, tampered(valid, body.replace("payment.updated", "payment.created"))];
  for (const v of out) {
    const ok = await WebhooksHelper.verifySignature({ requestBody: v.body, signatureHeader: v.headers["x-square-hmacsha256-signature"], signatureKey: key, notificationUrl: v.url });
    proven(ok, v.valid, `square ${v.note ?? "valid"}`);
  }
  return out;
}

/**
 * HubSpot's v3 rule for the URL: these escapes are decoded before signing,
 * and no others (https://developers.hubspot.com/docs/apps/legacy-apps/authentication/validating-requests#validate-the-v3-request-signature).
 */
const HUBSPOT_DECODED = { "%3A": ":", "%2F": "/", "%3F": "?", "%40": "@", "%21": "!", "%24": "$", "%27": "'", "%28": "(", "%29": ")", "%2A": "*", "%2C": ",", "%3B": ";" };
const hubspotSignedUrl = (url) => url.replace(/%(3A|2F|3F|40|21|24|27|28|29|2A|2C|3B)/gi, (m) => HUBSPOT_DECODED[m.toUpperCase()]);

export async function hubspot() {
  const L = lib("@hubspot/api-client");
  // The client secret of HubSpot's own examples.
  const secret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy";
  const tsMs = T0 * 1000 + 456;
  const body = '[{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1699999999000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","changeFlag":"NEW","appId":54321}]';
  const sign = (url) => HubSpotSignature.getSignature("POST", "v3", { clientSecret: secret, url: hubspotSignedUrl(url), requestBody: body, timestamp: tsMs });
  const checked_by = `${L} Signature.getSignature v3 over the URL decoded as HubSpot documents, accepted by Signature.isValid (its clock, Date.now, stubbed to now_s)`;
  const plainUrl = `${RELAY}/hubspot`;
  const plain = vector({
    preset: "hubspot", checked_by, secret, url: plainUrl, body, now_s: T0 + 10, valid: true,
    headers: { "X-HubSpot-Signature-v3": sign(plainUrl), "X-HubSpot-Request-Timestamp": String(tsMs) },
  });
  // Decoded: %3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B. Kept: %20 %26 %3D %2B %25 (and the query's own "?").
  const escapedUrl = `${RELAY}/hubspot?next=https%3A%2F%2Fapp.example.com%2Fdone%3Fok%3D1&who=ann%40example.com&say=hi%21%20%28twice%29%2C%20ok%3B%2A%24%27&plus=a%2Bb&amp=x%26y&pct=100%25`;
  const escaped = vector({
    ...plain, url: escapedUrl, headers: { "X-HubSpot-Signature-v3": sign(escapedUrl), "X-HubSpot-Request-Timestamp": String(tsMs) },
    note: `signed URL: ${hubspotSignedUrl(escapedUrl)}`,
  });
  const out = [plain, escaped, tampered(plain, body.replace("62515", "62516")), stale(plain, T0 + 301, "300 s (the timestamp is in ms)")];
  for (const v of out) {
    const ok = await atClock(v.now_s * 1000, () => {
      try {
        return HubSpotSignature.isValid({
          signatureVersion: "v3", signature: v.headers["X-HubSpot-Signature-v3"], clientSecret: secret, requestBody: v.body,
          url: hubspotSignedUrl(v.url), method: v.method, timestamp: Number(v.headers["X-HubSpot-Request-Timestamp"]),
        });
      } catch {
        return false;
      }
    });
    proven(ok, v.valid, `hubspot ${v.note ?? "valid"}`);
  }
  return out;
}
