// One signer per preset of DESIGN §2, to sign test requests at the real
// clock. Where the provider's library is a root devDependency (stripe,
// @octokit/webhooks-methods, standardwebhooks) the signer is that library;
// the others are written here from DESIGN §2 with node:crypto, and
// tests/presets-all.test.mjs proves each equal to the provider's library by
// re-signing the golden vectors (core/tests/preset_vectors.json) exactly.
import { createHmac, createHash, sign as nodeSign } from "node:crypto";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as octokitSign } from "@octokit/webhooks-methods";
import { slackHeaders, timestampedSignature } from "../../scripts/webhook-signatures.mjs";

const stripe = new Stripe("sk_test_unused", { telemetry: false });
const mac = (alg, key, text, encoding) => createHmac(alg, key).update(text).digest(encoding);
const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** The text of a timestamp at `ms` in a preset's unit, as its provider sends it. */
export function stamp(unit, ms) {
  if (unit === "s") return String(Math.floor(ms / 1000));
  if (unit === "ms") return String(Math.floor(ms));
  if (unit === "rfc3339") return new Date(ms).toISOString();
  throw new Error(`unknown timestamp unit ${unit}`);
}

/** Twilio's URL for a JSON body: the URL with `bodySHA256`, the body's hex SHA-256, in its query. */
export function twilioJsonUrl(url, body) {
  const u = new URL(url);
  u.searchParams.set("bodySHA256", createHash("sha256").update(body).digest("hex"));
  return u.toString();
}

/**
 * Twilio's signed text: the URL, then for a form each field sorted by name
 * (then value) as name and value, a repeated equal pair once (twilio's
 * validateRequest); a JSON body is signed only through the URL's bodySHA256.
 */
function twilioSigned(url, body, contentType) {
  if (!FORM.test(contentType ?? "")) return url;
  const fields = [...new URLSearchParams(body)].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  const once = fields.filter(([n, v], i) => i === 0 || n !== fields[i - 1][0] || v !== fields[i - 1][1]);
  return url + once.map(([n, v]) => n + v).join("");
}

// HubSpot's v3 signature decodes these escapes in the URL, and no others
// (its docs' list; `%20`, `%2B`, `%26`, `%3D` and `%25` stay as they are).
const HUBSPOT_DECODED = { "%3A": ":", "%2F": "/", "%3F": "?", "%40": "@", "%21": "!", "%24": "$", "%27": "'", "%28": "(", "%29": ")", "%2A": "*", "%2C": ",", "%3B": ";" };
const hubspotUrl = (url) => url.replace(/%[0-9A-Fa-f]{2}/g, (e) => HUBSPOT_DECODED[e.toUpperCase()] ?? e);

/**
 * Each preset: `signature`, the header carrying the signature (or token);
 * `timestamp`, where its timestamp is (`header`, `part` of the signature
 * header, or `json` in the body) with its `unit`, or null; `idHeader` when
 * the id is signed; `library` when a provider's library signs; and
 * `sign({secret, privateKey, body, contentType, ts, id, url, method})`,
 * which answers the headers to send (`ts` is the timestamp's text).
 */
export const SIGNERS = {
  "standard-webhooks": {
    library: "standardwebhooks", signature: "webhook-signature", timestamp: { header: "webhook-timestamp", unit: "s" }, idHeader: "webhook-id",
    sign: ({ secret, body, ts, id }) => ({
      "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": new Webhook(secret).sign(id, new Date(Number(ts) * 1000), body),
    }),
  },
  stripe: {
    library: "stripe", signature: "stripe-signature", timestamp: { part: "t", unit: "s" },
    sign: ({ secret, body, ts }) => ({ "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Number(ts) }) }),
  },
  github: {
    library: "@octokit/webhooks-methods", signature: "x-hub-signature-256", timestamp: null,
    sign: async ({ secret, body }) => ({ "x-hub-signature-256": await octokitSign(secret, body) }),
  },
  // hookrelay's own scheme: its one signer is scripts/webhook-signatures.mjs.
  "hmac-sha256": {
    signature: "x-signature", timestamp: { header: "x-timestamp", unit: "s" },
    sign: ({ secret, body, ts }) => ({ "x-timestamp": ts, "x-signature": timestampedSignature(secret, ts, body) }),
  },
  shopify: {
    signature: "x-shopify-hmac-sha256", timestamp: null,
    sign: ({ secret, body }) => ({ "x-shopify-hmac-sha256": mac("sha256", secret, body, "base64") }),
  },
  slack: {
    signature: "x-slack-signature", timestamp: { header: "x-slack-request-timestamp", unit: "s" },
    // The demo's and `npm run sign`'s signer (scripts/), proven here too.
    sign: ({ secret, body, ts }) => slackHeaders(body, { secret, timestamp: ts }),
  },
  twilio: {
    signature: "x-twilio-signature", timestamp: null,
    sign: ({ secret, body, url, contentType }) => ({ "x-twilio-signature": mac("sha1", secret, twilioSigned(url, body, contentType), "base64") }),
  },
  zoom: {
    signature: "x-zm-signature", timestamp: { header: "x-zm-request-timestamp", unit: "s" },
    sign: ({ secret, body, ts }) => ({ "x-zm-request-timestamp": ts, "x-zm-signature": "v0=" + mac("sha256", secret, `v0:${ts}:${body}`, "hex") }),
  },
  linear: {
    signature: "linear-signature", timestamp: { json: "webhookTimestamp", unit: "ms" },
    sign: ({ secret, body }) => ({ "linear-signature": mac("sha256", secret, body, "hex") }),
  },
  paddle: {
    signature: "paddle-signature", timestamp: { part: "ts", unit: "s" },
    sign: ({ secret, body, ts }) => ({ "paddle-signature": `ts=${ts};h1=${mac("sha256", secret, `${ts}:${body}`, "hex")}` }),
  },
  intercom: {
    signature: "x-hub-signature", timestamp: null,
    sign: ({ secret, body }) => ({ "x-hub-signature": "sha1=" + mac("sha1", secret, body, "hex") }),
  },
  square: {
    signature: "x-square-hmacsha256-signature", timestamp: null,
    sign: ({ secret, body, url }) => ({ "x-square-hmacsha256-signature": mac("sha256", secret, url + body, "base64") }),
  },
  pagerduty: {
    signature: "x-pagerduty-signature", timestamp: null,
    sign: ({ secret, body }) => ({ "x-pagerduty-signature": "v1=" + mac("sha256", secret, body, "hex") }),
  },
  twitch: {
    signature: "twitch-eventsub-message-signature", timestamp: { header: "twitch-eventsub-message-timestamp", unit: "rfc3339" }, idHeader: "twitch-eventsub-message-id",
    sign: ({ secret, body, ts, id }) => ({
      "twitch-eventsub-message-id": id, "twitch-eventsub-message-timestamp": ts,
      "twitch-eventsub-message-signature": "sha256=" + mac("sha256", secret, id + ts + body, "hex"),
    }),
  },
  hubspot: {
    signature: "x-hubspot-signature-v3", timestamp: { header: "x-hubspot-request-timestamp", unit: "ms" },
    sign: ({ secret, body, ts, url, method }) => ({
      "x-hubspot-request-timestamp": ts, "x-hubspot-signature-v3": mac("sha256", secret, method + hubspotUrl(url) + body + ts, "base64"),
    }),
  },
  typeform: {
    signature: "typeform-signature", timestamp: null,
    sign: ({ secret, body }) => ({ "typeform-signature": "sha256=" + mac("sha256", secret, body, "base64") }),
  },
  woocommerce: {
    signature: "x-wc-webhook-signature", timestamp: null,
    sign: ({ secret, body }) => ({ "x-wc-webhook-signature": mac("sha256", secret, body, "base64") }),
  },
  gitlab: {
    signature: "x-gitlab-token", timestamp: null,
    sign: ({ secret }) => ({ "x-gitlab-token": secret }),
  },
  discord: {
    signature: "x-signature-ed25519", timestamp: { header: "x-signature-timestamp", unit: "s" },
    sign: ({ privateKey, body, ts }) => ({ "x-signature-timestamp": ts, "x-signature-ed25519": nodeSign(null, Buffer.from(ts + body), privateKey).toString("hex") }),
  },
  sendgrid: {
    signature: "x-twilio-email-event-webhook-signature", timestamp: { header: "x-twilio-email-event-webhook-timestamp", unit: "s" },
    sign: ({ privateKey, body, ts }) => ({
      "x-twilio-email-event-webhook-timestamp": ts,
      "x-twilio-email-event-webhook-signature": nodeSign("sha256", Buffer.from(ts + body), privateKey).toString("base64"),
    }),
  },
};

/** The headers of `preset` that carry a signature, a token or a timestamp: what must be redacted. */
export const secretHeadersOf = (preset) => [SIGNERS[preset].signature, SIGNERS[preset].timestamp?.header].filter(Boolean);
