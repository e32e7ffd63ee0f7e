// Writes core/tests/preset_vectors.json: golden vectors for every preset of
// DESIGN §2, each signed or checked by the provider's own library (or, where
// there is none, by its documentation's rule and example values). Run it with
// `npm run vectors` from the repository root, which installs the pinned
// libraries here first; `npm test` never needs them, it reads the file.
// Every input is fixed, so two runs write the same bytes.
import { writeFileSync } from "node:fs";
import assert from "node:assert/strict";
import * as hmacLibrary from "./hmac-library-presets.mjs";
import * as documented from "./documented-presets.mjs";
import * as publicKey from "./public-key-presets.mjs";

/** DESIGN §2's presets, in its table's order. */
export const PRESETS = [
  "standard-webhooks", "stripe", "github", "hmac-sha256", "shopify", "slack", "twilio", "zoom", "linear", "paddle",
  "intercom", "square", "pagerduty", "twitch", "hubspot", "typeform", "woocommerce", "gitlab", "discord", "sendgrid",
];

const generators = {
  "standard-webhooks": hmacLibrary.standardWebhooks, stripe: hmacLibrary.stripe, github: hmacLibrary.github, "hmac-sha256": documented.hmacSha256,
  shopify: hmacLibrary.shopify, slack: hmacLibrary.slack, twilio: hmacLibrary.twilioPreset, zoom: documented.zoom, linear: hmacLibrary.linear,
  paddle: hmacLibrary.paddle, intercom: documented.intercom, square: hmacLibrary.square, pagerduty: documented.pagerduty, twitch: documented.twitch,
  hubspot: hmacLibrary.hubspot, typeform: documented.typeform, woocommerce: documented.woocommerce, gitlab: documented.gitlab,
  discord: publicKey.discord, sendgrid: publicKey.sendgridPreset,
};
assert.deepEqual(Object.keys(generators).sort(), [...PRESETS].sort(), "one generator per preset of DESIGN §2");

const vectors = [];
for (const preset of PRESETS) {
  const made = await generators[preset]();
  assert.ok(made.some((v) => v.valid), `${preset} has a valid vector`);
  for (const v of made) assert.equal(v.preset, preset);
  vectors.push(...made);
}

const out = new URL("../../core/tests/preset_vectors.json", import.meta.url);
writeFileSync(out, `${JSON.stringify({ generated_by: "scripts/preset-vectors/generate.mjs", vectors }, null, 2)}\n`);
const counts = PRESETS.map((p) => `${p} ${vectors.filter((v) => v.preset === p).length}`).join(", ");
console.log(`[vectors] wrote ${vectors.length} vectors to core/tests/preset_vectors.json (${counts})`);
