// The HMAC-SHA256 signatures hookrelay speaks, computed with node:crypto
// only, independently of the Rust verifier. One copy for the demo, the
// signing script, the tests and the bench. Where a provider publishes a
// library (standardwebhooks, stripe, @octokit/webhooks-methods), the tests
// sign with that library instead, to prove interoperability.
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";

/** The secret that verifies `source`: the name upper-cased, `-` becoming `_`. */
export const secretNameFor = (source) => `WEBHOOK_SECRET_${source.toUpperCase().replaceAll("-", "_")}`;

/** Unix seconds of `at` (milliseconds or a Date), as the headers carry them. */
export const unixSeconds = (at = Date.now()) => String(Math.floor(Number(at) / 1000));

/**
 * hex(HMAC-SHA256(secret, "{timestamp}.{body}")): the generic scheme's
 * X-Signature, Stripe's v1, and what hookrelay signs downstream deliveries with.
 */
export function timestampedSignature(secret, timestamp, body) {
  // Two updates, so a 1 MB body is never copied into a second string.
  return createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
}

/** Headers of the generic `hmac-sha256` scheme; `operationId` becomes X-Operation-Id when given. */
export function hmacSha256Headers(body, { secret, at = Date.now(), operationId } = {}) {
  if (!secret) throw new Error("hmacSha256Headers: no secret given; pass { secret } (WEBHOOK_SECRET_<SOURCE> from .dev.vars)");
  const ts = unixSeconds(at);
  const headers = { "content-type": "application/json", "x-timestamp": ts, "x-signature": timestampedSignature(secret, ts, body) };
  if (operationId != null) headers["x-operation-id"] = operationId;
  return headers;
}

/**
 * Checks a request signed with the generic scheme, the way a downstream
 * would: `{ok: true}`, or `{ok: false, reason}` naming the check that failed.
 * `headers` uses lower-case names (node's IncomingMessage.headers).
 */
export function checkHmacSha256(headers, body, secret, { toleranceS = 300, now = Date.now() } = {}) {
  const ts = headers["x-timestamp"];
  const sig = headers["x-signature"];
  if (!ts || !sig) return { ok: false, reason: `missing ${!ts ? "x-timestamp" : "x-signature"}` };
  if (!/^\d+$/.test(ts)) return { ok: false, reason: `x-timestamp ${JSON.stringify(ts)} is not unix seconds` };
  const skew = Math.abs(Number(ts) - now / 1000);
  if (skew > toleranceS) return { ok: false, reason: `x-timestamp is ${Math.round(skew)} s away from now (tolerance ${toleranceS} s)` };
  const expected = Buffer.from(timestampedSignature(secret, ts, body), "hex");
  const given = /^[0-9a-f]{64}$/i.test(sig) ? Buffer.from(sig, "hex") : Buffer.alloc(0);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "x-signature does not match the body and x-timestamp" };
  return { ok: true };
}

/** `Stripe-Signature: t=<unix>,v1=<hex>`, keyed by the whole secret string. */
export function stripeSignatureHeader(body, { secret, at = Date.now() }) {
  const t = unixSeconds(at);
  return `t=${t},v1=${timestampedSignature(secret, t, body)}`;
}

/** `X-Hub-Signature-256: sha256=<hex>` over the raw body. */
export function githubSignatureHeader(body, { secret }) {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** Standard Webhooks headers: `v1,<base64>` over `{id}.{timestamp}.{body}`, keyed by the base64 after `whsec_`. */
export function standardWebhooksHeaders(body, { secret, id = `msg_${randomUUID()}`, at = Date.now() }) {
  const ts = unixSeconds(at);
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const sig = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` };
}

/** Slack's headers: `v0=<hex>` of HMAC-SHA256 over `v0:{timestamp}:{body}`, keyed by the signing secret. */
export function slackHeaders(body, { secret, timestamp = unixSeconds() }) {
  const sig = createHmac("sha256", secret).update(`v0:${timestamp}:`).update(body).digest("hex");
  return { "x-slack-request-timestamp": timestamp, "x-slack-signature": `v0=${sig}` };
}

/** The schemes `headersFor` signs (the presets keyed by an HMAC secret that the scripts know). */
export const SIGNABLE_SCHEMES = ["standard-webhooks", "stripe", "github", "hmac-sha256", "slack"];

/**
 * Every header of a request to a source of `scheme` carrying `body`, signed
 * with `secret`; `null` for a scheme the scripts cannot sign.
 */
export function headersFor(scheme, body, { secret, operationId = `op_${randomUUID()}` }) {
  switch (scheme) {
    case "standard-webhooks":
      return { "content-type": "application/json", ...standardWebhooksHeaders(body, { secret }) };
    case "stripe":
      return { "content-type": "application/json", "stripe-signature": stripeSignatureHeader(body, { secret }) };
    case "github":
      return { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": randomUUID(), "x-hub-signature-256": githubSignatureHeader(body, { secret }) };
    case "hmac-sha256":
      return hmacSha256Headers(body, { secret, operationId });
    case "slack":
      // Slack's commands and interactivity post forms; its Events API posts JSON.
      return { "content-type": body.trimStart().startsWith("{") ? "application/json" : "application/x-www-form-urlencoded", ...slackHeaders(body, { secret }) };
    default:
      return null;
  }
}
