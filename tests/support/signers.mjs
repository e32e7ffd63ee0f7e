// Signing with the providers' own libraries where they exist, so the tests
// prove interoperability instead of assuming it. The generic scheme has no
// provider library: it uses the one hand-rolled copy in scripts/.
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { randomUUID } from "node:crypto";
import { EXAMPLE_SECRETS as SECRETS } from "../../scripts/dev-vars.mjs";
import { hmacSha256Headers } from "../../scripts/webhook-signatures.mjs";

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

/** Headers for the generic scheme (scripts/webhook-signatures.mjs). */
export function hmacHeaders(body, { at = Date.now(), operationId, secret = SECRETS.WEBHOOK_SECRET_DEMO_HMAC } = {}) {
  return hmacSha256Headers(body, { secret, at, operationId });
}
