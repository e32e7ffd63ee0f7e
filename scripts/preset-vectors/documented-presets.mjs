// The HMAC and token presets whose providers publish no library that checks
// signatures (or none usable offline): each vector is signed here exactly as
// the provider's documentation says, with the documentation's own example
// values where it gives them, and `checked_by` cites the page.
import { RELAY, T0, hmacBase64, hmacHex, proven, stale, tampered, vector } from "./vector.mjs";
import { checkHmacSha256, timestampedSignature } from "../webhook-signatures.mjs";

export function hmacSha256() {
  const secret = "generic-preset-vector-secret";
  const body = '{"op":"sync","items":[1,2,3]}';
  const checked_by = "hookrelay's own scheme (DESIGN §2, no provider): scripts/webhook-signatures.mjs timestampedSignature, accepted by checkHmacSha256";
  const valid = vector({
    preset: "hmac-sha256", checked_by, secret, url: `${RELAY}/internal`,
    headers: { "X-Signature": timestampedSignature(secret, String(T0), body), "X-Timestamp": String(T0), "X-Operation-Id": "op-20231114-0001" },
    body, now_s: T0 + 1, valid: true, delivery_id: "op-20231114-0001",
  });
  const out = [valid, tampered(valid, body.replace("3]", "4]")), stale(valid, T0 + 301, "300 s")];
  for (const v of out) {
    const lower = Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.toLowerCase(), x]));
    proven(checkHmacSha256(lower, v.body, secret, { now: v.now_s * 1000 }).ok, v.valid, `hmac-sha256 ${v.note ?? "valid"}`);
  }
  return out;
}

const ZOOM_DOC = "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events";
export function zoom() {
  const secret = "zoom-preset-vector-secret-token";
  const sign = (ts, body) => `v0=${hmacHex("sha256", secret, `v0:${ts}:${body}`)}`;
  const event = '{"event":"meeting.started","payload":{"account_id":"D8cJuqWVQ623CI4Q8yQK0Q","object":{"id":"89414531427","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"Standup"}},"event_ts":1700000000123}';
  const valid = vector({
    preset: "zoom", checked_by: `${ZOOM_DOC} (no Zoom library checks signatures offline; signed as documented)`, secret, url: `${RELAY}/zoom`,
    headers: { "x-zm-signature": sign(T0, event), "x-zm-request-timestamp": String(T0) }, body: event, now_s: T0 + 3, valid: true,
  });
  // Zoom's documented validation request, with its plainToken.
  const plainToken = "qgg8vlvZRS6UYooatFL8Aw";
  const validation = `{"payload":{"plainToken":"${plainToken}"},"event_ts":1700000000456,"event":"endpoint.url_validation"}`;
  const handshake = vector({
    ...valid, checked_by: "https://developers.zoom.us/docs/api/webhooks/#validate-your-webhook-endpoint (plainToken from its example; encryptedToken = hex HMAC-SHA256 of plainToken under the secret token)",
    headers: { "x-zm-signature": sign(T0, validation), "x-zm-request-timestamp": String(T0) }, body: validation,
    handshake: { status: 200, content_type: "application/json", body: JSON.stringify({ plainToken, encryptedToken: hmacHex("sha256", secret, plainToken) }) },
  });
  return [valid, handshake, tampered(valid, event.replace("Standup", "Retro")), stale(valid, T0 + 301, "300 s (DESIGN §2's figure)")];
}

export function intercom() {
  const secret = "intercom-preset-vector-client-secret";
  const body = '{"type":"notification_event","app_id":"abc123","data":{"type":"notification_event_data","item":{"type":"conversation","id":"147"}},"id":"notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3","topic":"conversation.user.created","delivery_status":"pending","delivery_attempts":1,"delivered_at":0,"first_sent_at":1700000000,"created_at":1699999999}';
  const valid = vector({
    preset: "intercom", checked_by: "https://developers.intercom.com/docs/references/webhooks/webhook-models (signed notifications: X-Hub-Signature, sha1= hex HMAC-SHA1 of the body under the client secret)",
    secret, url: `${RELAY}/intercom`, headers: { "X-Hub-Signature": `sha1=${hmacHex("sha1", secret, body)}` }, body, now_s: T0, valid: true,
    delivery_id: "notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3",
  });
  return [valid, tampered(valid, body.replace('"147"', '"148"'))];
}

export function pagerduty() {
  const secret = "pagerduty-preset-vector-secret";
  const body = '{"event":{"id":"5ac64822-4adc-4fda-ade0-410becf0de4f","event_type":"incident.priority_updated","resource_type":"incident","occurred_at":"2023-11-14T22:13:19.000Z","agent":null,"client":null,"data":{"id":"PGR0VU2","type":"incident","priority":{"id":"PSO75BM","summary":"P1"}}}}';
  const mine = `v1=${hmacHex("sha256", secret, body)}`;
  const theirs = `v1=${hmacHex("sha256", "pagerduty-second-subscription-secret", body)}`;
  const checked_by = "https://developer.pagerduty.com/docs/ZG9jOjExMDI5NTkz-verifying-signatures (v1= hex HMAC-SHA256 of the body; several comma-separated)";
  const valid = vector({
    preset: "pagerduty", checked_by, secret, url: `${RELAY}/pagerduty`, headers: { "X-PagerDuty-Signature": mine }, body, now_s: T0, valid: true,
    delivery_id: "5ac64822-4adc-4fda-ade0-410becf0de4f",
  });
  const several = vector({ ...valid, headers: { "X-PagerDuty-Signature": `${theirs},${mine}` }, note: "two signatures, the first made with another secret; any one may match" });
  return [valid, several, tampered(valid, body.replace("P1", "P5"))];
}

const TWITCH_DOC = "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message";
export function twitch() {
  const secret = "twitch-preset-vector-secret";
  // Twitch's timestamps are RFC 3339 with nanoseconds; 2023-11-14T22:13:20Z is T0.
  const ts = "2023-11-14T22:13:20.123456789Z";
  const sign = (id, body) => `sha256=${hmacHex("sha256", secret, id + ts + body)}`;
  const headersFor = (id, type, body) => ({
    "Twitch-Eventsub-Message-Id": id, "Twitch-Eventsub-Message-Timestamp": ts, "Twitch-Eventsub-Message-Signature": sign(id, body),
    "Twitch-Eventsub-Message-Type": type, "Twitch-Eventsub-Message-Retry": "0", "Twitch-Eventsub-Subscription-Type": "channel.follow", "Twitch-Eventsub-Subscription-Version": "2",
  });
  const subscription = `{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"enabled","type":"channel.follow","version":"2","cost":0,"condition":{"broadcaster_user_id":"1337","moderator_user_id":"1337"},"transport":{"method":"webhook","callback":"${RELAY}/twitch"},"created_at":"2023-11-14T22:10:00.000000000Z"}`;
  const event = `{"subscription":${subscription},"event":{"user_id":"1234","user_login":"cool_user","user_name":"Cool_User","broadcaster_user_id":"1337","broadcaster_user_login":"cooler_user","broadcaster_user_name":"Cooler_User","followed_at":"2023-11-14T22:13:19.000000000Z"}}`;
  const id = "befa7b53-d79d-478f-86b9-120f112b044e";
  const valid = vector({
    preset: "twitch", checked_by: `${TWITCH_DOC} (no Twitch library in the registries' list; signed as documented)`, secret, url: `${RELAY}/twitch`,
    headers: headersFor(id, "notification", event), body: event, now_s: T0 + 30, valid: true, delivery_id: id,
  });
  // The challenge of Twitch's documented example.
  const challenge = "pogchamp-kappa-360noscope-vohiyo";
  const verification = `{"challenge":"${challenge}","subscription":${subscription.replace('"status":"enabled"', '"status":"webhook_callback_verification_pending"')}}`;
  const cid = "e76c6bd4-55c9-4987-8304-da1588d8988b";
  const handshake = vector({
    ...valid, checked_by: "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#responding-to-a-challenge-request (its example challenge; answer 200, the raw challenge as text/plain)",
    headers: headersFor(cid, "webhook_callback_verification", verification), body: verification, delivery_id: cid,
    handshake: { status: 200, content_type: "text/plain", body: challenge },
  });
  return [valid, handshake, tampered(valid, event.replace("cool_user", "evil_user")), stale(valid, T0 + 601, "600 s (Twitch: reject messages older than 10 minutes)")];
}

export function typeform() {
  const secret = "typeform-preset-vector-secret";
  const body = '{"event_id":"01HF5ZQ4M1K9Y8X7W6V5U4T3S2","event_type":"form_response","form_response":{"form_id":"lT4Z3j","token":"a3a12ec67a1365927098a606107fac15","submitted_at":"2023-11-14T22:13:19Z","answers":[{"type":"text","text":"It is great","field":{"id":"SMEUb7VJz92Q","type":"long_text"}}]}}';
  const valid = vector({
    preset: "typeform", checked_by: "https://www.typeform.com/developers/webhooks/secure-your-webhooks/ (Typeform-Signature: sha256= base64 HMAC-SHA256 of the body)",
    secret, url: `${RELAY}/typeform`, headers: { "Typeform-Signature": `sha256=${hmacBase64("sha256", secret, body)}` }, body, now_s: T0, valid: true,
    delivery_id: "01HF5ZQ4M1K9Y8X7W6V5U4T3S2",
  });
  return [valid, tampered(valid, body.replace("great", "awful"))];
}

export function woocommerce() {
  const secret = "woocommerce-preset-vector-secret";
  const body = '{"id":727,"parent_id":0,"status":"processing","currency":"USD","total":"42.00","date_created":"2023-11-14T22:13:19"}';
  const valid = vector({
    preset: "woocommerce",
    checked_by: "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks and WooCommerce's WC_Webhook::generate_signature (base64 of the raw HMAC-SHA256 of the body under the secret)",
    secret, url: `${RELAY}/woo`,
    headers: {
      "X-WC-Webhook-Source": "https://shop.example.com/", "X-WC-Webhook-Topic": "order.created", "X-WC-Webhook-Resource": "order", "X-WC-Webhook-Event": "created",
      "X-WC-Webhook-Signature": hmacBase64("sha256", secret, body), "X-WC-Webhook-ID": "12", "X-WC-Webhook-Delivery-ID": "3c2f5b1e8a9d4f6b7c0e1a2b3c4d5e6f",
    },
    body, now_s: T0, valid: true,
  });
  return [valid, tampered(valid, body.replace("42.00", "0.42"))];
}

export function gitlab() {
  const secret = "gitlab-preset-vector-token";
  const body = '{"object_kind":"push","event_name":"push","ref":"refs/heads/main","checkout_sha":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","project":{"id":15,"path_with_namespace":"acme/widgets"}}';
  const checked_by = "https://docs.gitlab.com/user/project/integrations/webhooks/ (X-Gitlab-Token carries the secret token as is; Idempotency-Key and X-Gitlab-Event-UUID name the delivery)";
  const headers = { "X-Gitlab-Token": secret, "X-Gitlab-Event": "Push Hook", "X-Gitlab-Event-UUID": "9b4e5f3c-0f1a-4c8e-9d2b-7a6c5e4d3f21", "X-Gitlab-Webhook-UUID": "26d0b5e8-e2b6-4b0f-9b5c-8b1e6c7d8f90" };
  const valid = vector({
    preset: "gitlab", checked_by, secret, url: `${RELAY}/gitlab`, headers: { ...headers, "Idempotency-Key": "f0b4c2a1-7d3e-4e59-8c6a-1b2d3e4f5a6b" }, body, now_s: T0, valid: true,
    delivery_id: "f0b4c2a1-7d3e-4e59-8c6a-1b2d3e4f5a6b",
  });
  const noKey = vector({ ...valid, headers, delivery_id: "9b4e5f3c-0f1a-4c8e-9d2b-7a6c5e4d3f21", note: "no Idempotency-Key: the delivery id falls back to X-Gitlab-Event-UUID" });
  const wrong = vector({ ...valid, headers: { ...headers, "X-Gitlab-Token": "gitlab-preset-vector-tokeN" }, valid: false, delivery_id: null, note: "wrong token: one character differs" });
  return [valid, noKey, wrong];
}
