// Signing with the providers' own libraries where they exist, so the tests
// prove interoperability instead of assuming it.
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { createHmac, randomUUID } from "node:crypto";
import { SECRETS } from "./harness.mjs";

const stripe = new Stripe("sk_test_unused", { telemetry: false });

/** Headers for a Standard Webhooks delivery (standardwebhooks npm). */
export function standardHeaders(body, { id = `msg_${randomUUID()}`, at = new Date(), secret = SECRETS.WEBHOOK_SECRET_DEMO_STANDARD } = {}) {
  const wh = new Webhook(secret);
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": wh.sign(id, at, body),
  };
}

/** Headers for a Stripe delivery (stripe npm's test header generator). */
export function stripeHeaders(body, { at = Date.now(), secret = SECRETS.WEBHOOK_SECRET_DEMO_STRIPE } = {}) {
  return {
    "content-type": "application/json",
    "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Math.floor(at / 1000) }),
  };
}

/** Headers for a GitHub delivery (@octokit/webhooks-methods). */
export async function githubHeaders(body, { delivery = randomUUID(), secret = SECRETS.WEBHOOK_SECRET_DEMO_GITHUB } = {}) {
  return {
    "content-type": "application/json",
    "x-github-event": "push",
    "x-github-delivery": delivery,
    "x-hub-signature-256": await githubSign(secret, body),
  };
}

/** Headers for the generic scheme (no provider library exists: node crypto). */
export function hmacHeaders(body, { at = Date.now(), operationId, secret = SECRETS.WEBHOOK_SECRET_DEMO_HMAC } = {}) {
  const ts = String(Math.floor(at / 1000));
  const headers = {
    "content-type": "application/json",
    "x-timestamp": ts,
    "x-signature": createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex"),
  };
  if (operationId) headers["x-operation-id"] = operationId;
  return headers;
}
