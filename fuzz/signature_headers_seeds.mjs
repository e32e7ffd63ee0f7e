// Writes the signature_headers target's seeds (corpus/signature_headers/) in
// its input layout: one `\n`-terminated value per header name the presets
// read, in NAMES' order, then the raw body. NAMES must be the target's
// header_names(): each preset's signature, timestamp (and aliased) headers,
// then its delivery id headers, in DESIGN §2's order, without repeats, then
// content-type. Every request is signed as its provider signs, under the
// target's SECRET, for its URL and at its NOW_S (the public-key presets' keys
// are made afresh: the target never checks those signatures, only their
// form). Run: node fuzz/signature_headers_seeds.mjs
import { createHash, createHmac, generateKeyPairSync, sign } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";

const NAMES = [
  "webhook-signature", "webhook-timestamp", "svix-signature", "svix-timestamp", "webhook-id",
  "stripe-signature",
  "x-hub-signature-256", "X-GitHub-Delivery",
  "x-signature", "x-timestamp", "X-Operation-Id",
  "x-shopify-hmac-sha256", "shopify-hmac-sha256", "X-Shopify-Event-Id", "X-Shopify-Webhook-Id",
  "x-slack-signature", "x-slack-request-timestamp",
  "x-twilio-signature", "I-Twilio-Idempotency-Token",
  "x-zm-signature", "x-zm-request-timestamp",
  "linear-signature", "Linear-Delivery",
  "paddle-signature",
  "x-hub-signature",
  "x-square-hmacsha256-signature",
  "x-pagerduty-signature",
  "twitch-eventsub-message-signature", "twitch-eventsub-message-timestamp", "Twitch-Eventsub-Message-Id",
  "x-hubspot-signature-v3", "x-hubspot-request-timestamp",
  "typeform-signature",
  "x-wc-webhook-signature",
  "x-gitlab-token", "Idempotency-Key", "X-Gitlab-Event-UUID",
  "x-signature-ed25519", "x-signature-timestamp",
  "x-twilio-email-event-webhook-signature", "x-twilio-email-event-webhook-timestamp",
  "content-type",
];

/** The target's SECRET, URL and NOW_S. */
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const WHSEC_KEY = Buffer.from(SECRET.slice("whsec_".length), "base64");
const TARGET_URL = "https://r.example/webhooks/a?bodySHA256=00";
const NOW = 1700000000;
const TS = String(NOW);
const RFC3339 = new Date(NOW * 1000).toISOString().replace(".000", "");
const ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f1W";

const mac = (alg, data, enc, key = SECRET) => createHmac(alg, key).update(data).digest(enc);
const ed = generateKeyPairSync("ed25519");
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });

/** Twilio's signed text for a form: the URL, then each field sorted by name then value, as name and value. */
function twilioText(url, body) {
  const fields = [...new URLSearchParams(body)].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return url + fields.map(([n, v]) => n + v).join("");
}

/** Every preset's headers, each request signed as its provider would. */
function signedHeaders(body, contentType, twilioUrl) {
  const form = contentType === "application/x-www-form-urlencoded";
  return {
    "webhook-signature": `v1,${mac("sha256", `${ID}.${TS}.${body}`, "base64", WHSEC_KEY)}`,
    "webhook-timestamp": TS, "webhook-id": ID,
    "stripe-signature": `t=${TS},v1=${mac("sha256", `${TS}.${body}`, "hex")}`,
    "x-hub-signature-256": `sha256=${mac("sha256", body, "hex")}`, "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "x-signature": mac("sha256", `${TS}.${body}`, "hex"), "x-timestamp": TS, "X-Operation-Id": "op_123",
    "x-shopify-hmac-sha256": mac("sha256", body, "base64"), "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5",
    "x-slack-signature": `v0=${mac("sha256", `v0:${TS}:${body}`, "hex")}`, "x-slack-request-timestamp": TS,
    // A JSON body cannot match the target URL's bodySHA256=00; a form can.
    "x-twilio-signature": mac("sha1", form ? twilioText(twilioUrl, body) : twilioUrl, "base64"),
    "I-Twilio-Idempotency-Token": "2f7bd2d4-4a0d-4b38-9b0e-8d1b9e0c6a11",
    "x-zm-signature": `v0=${mac("sha256", `v0:${TS}:${body}`, "hex")}`, "x-zm-request-timestamp": TS,
    "linear-signature": mac("sha256", body, "hex"), "Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72",
    "paddle-signature": `ts=${TS};h1=${mac("sha256", `${TS}:${body}`, "hex")}`,
    "x-hub-signature": `sha1=${mac("sha1", body, "hex")}`,
    "x-square-hmacsha256-signature": mac("sha256", TARGET_URL + body, "base64"),
    "x-pagerduty-signature": `v1=${mac("sha256", body, "hex")}`,
    "twitch-eventsub-message-signature": `sha256=${mac("sha256", `${ID}${RFC3339}${body}`, "hex")}`,
    "twitch-eventsub-message-timestamp": RFC3339, "Twitch-Eventsub-Message-Id": ID,
    "x-hubspot-signature-v3": mac("sha256", `POST${TARGET_URL}${body}${TS}000`, "base64"), "x-hubspot-request-timestamp": `${TS}000`,
    "typeform-signature": `sha256=${mac("sha256", body, "base64")}`,
    "x-wc-webhook-signature": mac("sha256", body, "base64"),
    "x-gitlab-token": SECRET, "Idempotency-Key": "f4a4ef6e-2a71-4f4d-9c45-7a8b2c3d4e5f",
    "x-signature-ed25519": sign(null, Buffer.from(TS + body), ed.privateKey).toString("hex"), "x-signature-timestamp": TS,
    "x-twilio-email-event-webhook-signature": sign("sha256", Buffer.from(TS + body), ec.privateKey).toString("base64"),
    "x-twilio-email-event-webhook-timestamp": TS,
    "content-type": contentType,
  };
}

function seed(headers, body) {
  for (const name of Object.keys(headers)) if (!NAMES.includes(name)) throw new Error(`${name} is not a header the target reads`);
  for (const value of Object.values(headers)) if (value.includes("\n")) throw new Error("a value cannot hold a newline");
  return NAMES.map((n) => `${headers[n] ?? ""}\n`).join("") + body;
}

const JSON_BODY = `{"id":"evt_test_webhook","event_id":"evt_test_webhook","event":{"id":"evt_test_webhook"},"webhookTimestamp":${NOW}000,"type":"invoice.paid"}`;
const FORM_BODY = "ToCountry=US&From=%2B14158675310&Body=Hi+%26+bye&To=%2B15017122661&Body=again";
const valid = signedHeaders(JSON_BODY, "application/json", TARGET_URL);
const seeds = {
  all_presets_valid: seed(valid, JSON_BODY),
  // Twilio signed over the URL with :443, which the target's URL lacks.
  all_presets_valid_form: seed(signedHeaders(FORM_BODY, "application/x-www-form-urlencoded", TARGET_URL.replace("r.example/", "r.example:443/")), FORM_BODY),
  several_signatures: seed({
    "webhook-signature": `v1,${"A".repeat(43)}= ${valid["webhook-signature"]}`, "webhook-timestamp": TS, "webhook-id": ID,
    "stripe-signature": `t=${TS},v1=${"0".repeat(64)},${valid["stripe-signature"].split(",")[1]},v0=${"1".repeat(64)}`,
    "x-signature": `${"ab".repeat(32)},${valid["x-signature"]}`, "x-timestamp": TS,
    "x-pagerduty-signature": `v1=${"cd".repeat(32)},${valid["x-pagerduty-signature"]}`,
    "content-type": "application/json",
  }, JSON_BODY),
  stale_and_extreme_timestamps: seed({
    "webhook-signature": valid["webhook-signature"], "webhook-timestamp": "-9223372036854775808", "webhook-id": "msg_1",
    "svix-signature": valid["webhook-signature"], "svix-timestamp": String(NOW - 301),
    "stripe-signature": `t=9223372036854775807,v1=${"0".repeat(64)}`,
    "x-signature": valid["x-signature"], "x-timestamp": "99999999999999999999",
    "x-slack-signature": valid["x-slack-signature"], "x-slack-request-timestamp": `+${TS}`,
    "x-zm-signature": valid["x-zm-signature"], "x-zm-request-timestamp": ` ${TS} `,
    "paddle-signature": `ts=${NOW + 6};h1=${"0".repeat(64)}`,
    "twitch-eventsub-message-signature": valid["twitch-eventsub-message-signature"], "twitch-eventsub-message-timestamp": "9999-12-31T23:59:60.999999999+23:59",
    "x-hubspot-signature-v3": valid["x-hubspot-signature-v3"], "x-hubspot-request-timestamp": "-1",
    "x-signature-ed25519": valid["x-signature-ed25519"], "x-signature-timestamp": "1e9",
    "content-type": "application/json",
  }, "{}"),
};

const dir = new URL("./corpus/signature_headers/", import.meta.url);
mkdirSync(dir, { recursive: true });
for (const [name, text] of Object.entries(seeds)) writeFileSync(new URL(name, dir), text);
console.log(`[seeds] wrote ${Object.keys(seeds).length} signature_headers seeds (${NAMES.length} header lines each, then the body)`);
