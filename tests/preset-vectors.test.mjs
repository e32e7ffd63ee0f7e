// The golden preset vectors (core/tests/preset_vectors.json, written by
// `npm run vectors` with the providers' own libraries) are well-formed and
// cover every preset of DESIGN §2; the vectors of the light libraries that
// npm test installs anyway (stripe, @octokit/webhooks-methods,
// standardwebhooks) are verified again here, live.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { verify as octokitVerify } from "@octokit/webhooks-methods";

const file = JSON.parse(readFileSync(new URL("../core/tests/preset_vectors.json", import.meta.url), "utf8"));
const vectors = file.vectors;

/** DESIGN §2's presets, in its table's order. */
const PRESETS = [
  "standard-webhooks", "stripe", "github", "hmac-sha256", "shopify", "slack", "twilio", "zoom", "linear", "paddle",
  "intercom", "square", "pagerduty", "twitch", "hubspot", "typeform", "woocommerce", "gitlab", "discord", "sendgrid",
];
const KEYS = ["preset", "checked_by", "secret", "public_key", "method", "url", "headers", "content_type", "body", "now_s", "valid", "delivery_id", "handshake", "note"];
const PUBLIC_KEY_PRESETS = new Set(["discord", "sendgrid"]);
const stringOrNull = (x) => x === null || typeof x === "string";

test("the vectors file has its two keys, and every vector has the fields in their order with their types", () => {
  assert.deepEqual(Object.keys(file), ["generated_by", "vectors"]);
  assert.equal(file.generated_by, "scripts/preset-vectors/generate.mjs");
  assert.ok(Array.isArray(vectors) && vectors.length > 0);
  for (const [i, v] of vectors.entries()) {
    const at = `vectors[${i}] (${v.preset})`;
    assert.deepEqual(Object.keys(v), KEYS, `${at}: keys`);
    assert.ok(PRESETS.includes(v.preset), `${at}: unknown preset`);
    assert.ok(typeof v.checked_by === "string" && v.checked_by.length > 10, `${at}: checked_by names a library or a doc`);
    assert.ok(stringOrNull(v.secret) && stringOrNull(v.public_key), `${at}: secret and public_key are strings or null`);
    assert.equal(v.public_key !== null, PUBLIC_KEY_PRESETS.has(v.preset), `${at}: a public key exactly for the public-key presets`);
    assert.equal(v.secret !== null, !PUBLIC_KEY_PRESETS.has(v.preset), `${at}: a secret exactly for the others`);
    assert.equal(v.method, "POST", `${at}: method`);
    assert.ok(new URL(v.url).protocol === "https:", `${at}: url`);
    assert.ok(v.headers && typeof v.headers === "object" && !Array.isArray(v.headers), `${at}: headers is an object`);
    for (const [name, value] of Object.entries(v.headers)) {
      assert.equal(typeof value, "string", `${at}: header ${name} is a string`);
      assert.notEqual(name.toLowerCase(), "content-type", `${at}: the Content-Type is content_type, not a header`);
    }
    assert.ok(["application/json", "application/x-www-form-urlencoded"].includes(v.content_type), `${at}: content_type`);
    assert.equal(typeof v.body, "string", `${at}: body`);
    assert.ok(Number.isSafeInteger(v.now_s) && v.now_s > 1e9, `${at}: now_s is unix seconds`);
    assert.equal(typeof v.valid, "boolean", `${at}: valid`);
    assert.ok(stringOrNull(v.delivery_id) && stringOrNull(v.note), `${at}: delivery_id and note are strings or null`);
    if (!v.valid) assert.ok(v.note && v.delivery_id === null && v.handshake === null, `${at}: an invalid vector says why, and has no id or answer`);
    if (v.handshake !== null) {
      assert.deepEqual(Object.keys(v.handshake), ["status", "content_type", "body"], `${at}: handshake keys`);
      assert.ok(Number.isInteger(v.handshake.status) && stringOrNull(v.handshake.content_type) && typeof v.handshake.body === "string", `${at}: handshake types`);
    }
  }
});

test("every preset of DESIGN §2 has a valid vector, and the list is DESIGN's", (t) => {
  for (const preset of PRESETS) assert.ok(vectors.some((v) => v.preset === preset && v.valid), `${preset} has no valid vector`);
  const design = new URL("../../shared/DESIGN.md", import.meta.url);
  if (!existsSync(design)) return t.skip("../shared/DESIGN.md is not beside this checkout");
  const section = readFileSync(design, "utf8").split("## 2. Ingest")[1].split("\n## ")[0];
  const inTable = [...section.matchAll(/^\s*\| `([a-z0-9-]+)`/gm)].map((m) => m[1]);
  assert.deepEqual(inTable, PRESETS);
});

test("the handshake presets, Twilio's two body forms and HubSpot's escaped URL each have their vector", () => {
  const handshake = (preset) => vectors.find((v) => v.preset === preset && v.valid && v.handshake);
  assert.equal(handshake("slack").handshake.body, JSON.stringify({ challenge: JSON.parse(handshake("slack").body).challenge }));
  const zoom = handshake("zoom");
  assert.equal(JSON.parse(zoom.handshake.body).plainToken, JSON.parse(zoom.body).payload.plainToken);
  assert.match(JSON.parse(zoom.handshake.body).encryptedToken, /^[0-9a-f]{64}$/);
  assert.deepEqual(handshake("twitch").handshake, { status: 200, content_type: "text/plain", body: JSON.parse(handshake("twitch").body).challenge });
  assert.deepEqual(handshake("discord").handshake, { status: 204, content_type: null, body: "" });
  assert.equal(JSON.parse(handshake("discord").body).type, 0);
  const twilio = vectors.filter((v) => v.preset === "twilio" && v.valid);
  assert.ok(twilio.some((v) => v.content_type === "application/x-www-form-urlencoded"), "a Twilio form body");
  assert.ok(twilio.some((v) => v.content_type === "application/json" && new URL(v.url).searchParams.has("bodySHA256")), "a Twilio JSON body with bodySHA256");
  assert.ok(vectors.some((v) => v.preset === "hubspot" && v.valid && /%[0-9A-F]{2}/.test(v.url)), "a HubSpot URL with escapes");
});

/** Runs `fn` while Date reads `nowMs`: standardwebhooks checks the age against the real clock. */
function atClock(nowMs, fn) {
  const RealDate = globalThis.Date;
  globalThis.Date = class extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(nowMs);
      else super(...args);
    }
    static now() {
      return nowMs;
    }
  };
  try {
    return fn();
  } finally {
    globalThis.Date = RealDate;
  }
}

const of = (preset) => vectors.filter((v) => v.preset === preset);

test("standardwebhooks accepts exactly the Standard Webhooks vectors marked valid", () => {
  for (const v of of("standard-webhooks")) {
    const headers = Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.replace(/^svix-/, "webhook-"), x]));
    const ok = atClock(v.now_s * 1000, () => {
      try {
        new Webhook(v.secret).verify(v.body, headers);
        return true;
      } catch {
        return false;
      }
    });
    assert.equal(ok, v.valid, `${v.note ?? "valid vector"}`);
  }
});

test("stripe accepts exactly the Stripe vectors marked valid", () => {
  const stripe = new Stripe("sk_test_unused");
  for (const v of of("stripe")) {
    let ok = true;
    try {
      stripe.webhooks.constructEvent(v.body, v.headers["Stripe-Signature"], v.secret, 300, undefined, v.now_s * 1000);
    } catch {
      ok = false;
    }
    assert.equal(ok, v.valid, `${v.note ?? "valid vector"}`);
    if (v.valid) assert.equal(v.delivery_id, JSON.parse(v.body).id);
  }
});

test("@octokit/webhooks-methods accepts exactly the GitHub vectors marked valid", async () => {
  for (const v of of("github")) {
    assert.equal(await octokitVerify(v.secret, v.body, v.headers["X-Hub-Signature-256"]), v.valid, `${v.note ?? "valid vector"}`);
  }
});
