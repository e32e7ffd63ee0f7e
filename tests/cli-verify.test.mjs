// The relay's rules in the CLI (DESIGN §8): `hookrelay verify` against
// requests signed by the providers' own libraries (stripe,
// @octokit/webhooks-methods, standardwebhooks) and tampered; every preset
// judged alike by the CLI's native crypto and by the relay's WebCrypto (the
// same requests to both: fresh ones of every preset, and the golden
// vectors the relay can judge at its own clock); `config check` naming a
// bad recipe field and printing the sources as a tree.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as octokitSign } from "@octokit/webhooks-methods";
import { startRelay } from "./support/harness.mjs";
import { SIGNERS, stamp, twilioJsonUrl } from "./support/preset-signers.mjs";
import { ROOT, baseEnv, capture, hookrelay, tempDir } from "./support/cli.mjs";

const VECTORS = JSON.parse(readFileSync(path.join(ROOT, "core/tests/preset_vectors.json"), "utf8")).vectors;
const stripe = new Stripe("sk_test_unused", { telemetry: false });
const dir = tempDir("verify");
const secretName = (s) => `WEBHOOK_SECRET_${s.toUpperCase().replaceAll("-", "_")}`;

/** Writes a capture to a file of its own; answers its path. */
let files = 0;
const file = (bytes) => {
  const p = path.join(dir, `request-${files++}.http`);
  writeFileSync(p, bytes);
  return p;
};
const verify = (source, bytes, env, extra = []) => hookrelay(["verify", "--source", source, ...extra, file(bytes)], { env });

test("verify accepts requests signed by the providers' own libraries, and refuses them tampered or stale", async () => {
  const sources = { "lib-stripe": { scheme: "stripe" }, "lib-github": { scheme: "github" }, "lib-standard": { scheme: "standard-webhooks" } };
  const secrets = { "lib-stripe": "whsec_stripe_test_secret", "lib-github": "github-test-secret", "lib-standard": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" };
  const env = baseEnv({ SOURCES: JSON.stringify(sources), ...Object.fromEntries(Object.entries(secrets).map(([s, v]) => [secretName(s), v])) });
  const now = Date.now();
  const body = JSON.stringify({ id: "evt_cli_1", object: "event", type: "invoice.paid" });
  const signed = {
    "lib-stripe": { "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: body, secret: secrets["lib-stripe"], timestamp: Math.floor(now / 1000) }) },
    "lib-github": { "x-github-delivery": "gh-cli-1", "x-hub-signature-256": await octokitSign(secrets["lib-github"], body) },
    "lib-standard": { "webhook-id": "msg_cli_1", "webhook-timestamp": String(Math.floor(now / 1000)), "webhook-signature": new Webhook(secrets["lib-standard"]).sign("msg_cli_1", new Date(now), body) },
  };
  for (const [source, headers] of Object.entries(signed)) {
    const h = { "Content-Type": "application/json", ...headers };
    for (const eol of ["\r\n", "\n"]) {
      const run = await verify(source, capture({ target: `/webhooks/${source}`, headers: h, body }, eol), env);
      assert.equal(run.code, 0, `${source}: ${run.stdout}${run.stderr}`);
      assert.match(run.stdout, /^signature +valid: /m, source);
      assert.match(run.stdout, source === "lib-github" ? /^freshness +none: /m : /^freshness +fresh: /m, source);
      assert.match(run.stdout, /^relay +would answer 202 \{"event_id":"evt_/m, source);
    }
    const tampered = await verify(source, capture({ target: `/webhooks/${source}`, headers: h, body: body.replace("paid", "void") }), env);
    assert.equal(tampered.code, 1, `${source} tampered`);
    assert.match(tampered.stdout, /^signature +invalid: no signature matches/m);
    assert.match(tampered.stdout, /^relay +would refuse it: 401 SIGNATURE_INVALID/m);
    if (source !== "lib-github") {
      const late = await verify(source, capture({ target: `/webhooks/${source}`, headers: h, body }), env, ["--at", String(now + 3_600_000)]);
      assert.equal(late.code, 1, `${source} an hour later`);
      assert.match(late.stdout, /^signature +valid: /m);
      assert.match(late.stdout, /^freshness +stale: /m);
    }
  }
  const unsigned = await hookrelay(["verify", "--source", "lib-stripe", file(capture({ target: "/webhooks/lib-stripe", body }))], { env: baseEnv({ SOURCES: JSON.stringify(sources) }) });
  assert.equal(unsigned.code, 1);
  assert.match(unsigned.stderr, /WEBHOOK_SECRET_LIB_STRIPE: is not set/);
  assert.match(unsigned.stderr, /next: fix it in the environment \(export WEBHOOK_SECRET_LIB_STRIPE=…\)/);
  const broken = await hookrelay(["verify", "--source", "lib-stripe", file(Buffer.from("POST /x HTTP/1.1\nHost: h\n"))], { env });
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /no blank line/);
});

// One source per preset, in the relay and in the CLI's configuration alike.
const ed = crypto.generateKeyPairSync("ed25519");
const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const PUBLIC = {
  discord: { key: Buffer.from(ed.publicKey.export({ format: "jwk" }).x, "base64url").toString("hex"), privateKey: ed.privateKey },
  sendgrid: { key: ec.publicKey.export({ format: "der", type: "spki" }).toString("base64"), privateKey: ec.privateKey },
};
const BASE = "https://hooks.example.com";
const presets = Object.keys(SIGNERS);
const fresh = {
  SOURCES: Object.fromEntries(presets.map((p) => [`p-${p}`, { scheme: p, url: `${BASE}/webhooks/p-${p}`, ...(PUBLIC[p] ? { public_key: PUBLIC[p].key } : {}) }])),
  secrets: Object.fromEntries(presets.filter((p) => !PUBLIC[p]).map((p) => [secretName(`p-${p}`), p === "standard-webhooks" ? "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" : `${p}-cli-secret`])),
};
// The other steps the relay leaves to WebCrypto: HMAC-SHA256 over a large
// body (above the core's 16 KB) and HMAC-SHA512, from a recipe.
fresh.SOURCES["p-large"] = { scheme: "github" };
fresh.secrets[secretName("p-large")] = "large-cli-secret";
fresh.SOURCES["p-sha512"] = { scheme: { hmac: "sha512", header: "X-Sig", prefix: "sha512=", encoding: "base64url", signed: "{timestamp}.{body}", timestamp: { header: "X-Time", unit: "s" } } };
fresh.secrets[secretName("p-sha512")] = "sha512-cli-secret";
// And one per golden vector the relay can judge at its own clock (no timestamp).
const timeless = VECTORS.map((v, i) => ({ ...v, name: `v${i}` })).filter((v) => !SIGNERS[v.preset].timestamp);
for (const v of timeless) {
  const u = new URL(v.url);
  fresh.SOURCES[v.name] = { scheme: v.preset, url: `${u.origin}${u.pathname}`, ...(v.public_key ? { public_key: v.public_key } : {}) };
  if (v.secret) fresh.secrets[secretName(v.name)] = v.secret;
}

let relay;
before(async () => {
  relay = await startRelay({ vars: { SOURCES: JSON.stringify(fresh.SOURCES), ...fresh.secrets } });
});
after(() => relay?.dispose());

/** A body every preset reads its ids and times from. */
const bodyFor = (preset, n, atMs) => (preset === "slack" || preset === "linear" || preset === "intercom" || preset === "paddle" || preset === "square" || preset === "typeform" || preset === "pagerduty" || preset === "stripe"
  ? JSON.stringify({ id: `id-${n}`, event_id: `ev-${n}`, event: { id: `pd-${n}` }, webhookTimestamp: atMs, type: "thing.happened" })
  : JSON.stringify({ n, type: "thing.happened" }));

/** Judges the same request with the CLI (native) and the relay (WebCrypto): `[cli exit code, relay status]`. */
async function bothPaths(source, { target, headers, body }) {
  const env = baseEnv({ SOURCES: JSON.stringify(fresh.SOURCES), ...fresh.secrets });
  const run = await hookrelay(["verify", "--source", source, file(capture({ target, host: "hooks.example.com", headers, body }))], { env });
  const res = await relay.fetch(target, { method: "POST", headers, body });
  await res.arrayBuffer();
  return [run.code, res.status, run.stdout];
}

test("every preset's fresh signature is judged alike by the CLI's native crypto and the relay's WebCrypto, and so is its tampered twin", async () => {
  let n = 0;
  for (const preset of presets) {
    const source = `p-${preset}`;
    const at = Date.now();
    const body = bodyFor(preset, n++, at);
    let url = `${BASE}/webhooks/${source}`;
    if (preset === "twilio") url = twilioJsonUrl(url, body);
    const target = url.slice(BASE.length);
    const ts = SIGNERS[preset].timestamp ? stamp(SIGNERS[preset].timestamp.unit, at) : undefined;
    const signed = await SIGNERS[preset].sign({
      secret: fresh.secrets[secretName(source)], privateKey: PUBLIC[preset]?.privateKey, body, contentType: "application/json",
      ts, id: `id-${preset}-${n}`, url, method: "POST",
    });
    const headers = { "content-type": "application/json", "x-github-delivery": `gh-${n}`, "x-operation-id": `op-${n}`, "twitch-eventsub-message-type": "notification", ...signed };
    const [cli, status, out] = await bothPaths(source, { target, headers, body });
    assert.equal(cli, 0, `${preset}: ${out}`);
    assert.ok(status >= 200 && status < 300, `${preset}: the relay answered ${status}`);
    // A shared token signs no body: nothing to tamper with.
    if (preset === "gitlab") continue;
    const [cliT, statusT, outT] = await bothPaths(source, { target, headers, body: body.replace("thing", "thang") });
    assert.equal(cliT, 1, `${preset} tampered: ${outT}`);
    assert.equal(statusT, 401, `${preset} tampered: the relay answered ${statusT}`);
    assert.match(outT, /^signature +invalid/m, preset);
  }
});

test("a large body and an HMAC-SHA512 recipe are judged alike by both paths", async () => {
  const large = JSON.stringify({ pad: "x".repeat(40_000) });
  const mac = (alg, key, text, enc) => crypto.createHmac(alg, key).update(text).digest(enc);
  const cases = [
    ["p-large", large, { "x-hub-signature-256": `sha256=${mac("sha256", "large-cli-secret", large, "hex")}` }],
    ["p-sha512", "{\"a\":1}", (() => {
      const ts = String(Math.floor(Date.now() / 1000));
      return { "x-time": ts, "x-sig": `sha512=${mac("sha512", "sha512-cli-secret", `${ts}.{"a":1}`, "base64url")}` };
    })()],
  ];
  for (const [source, body, signed] of cases) {
    const headers = { "content-type": "application/json", ...signed };
    const [cli, status, out] = await bothPaths(source, { target: `/webhooks/${source}`, headers, body });
    assert.deepEqual([cli, status], [0, 202], `${source}: ${out}`);
    const [cliT, statusT] = await bothPaths(source, { target: `/webhooks/${source}`, headers, body: body.replace("x", "y").replace("1", "2") });
    assert.deepEqual([cliT, statusT], [1, 401], source);
  }
});

test("the golden vectors verify in the CLI as their providers' libraries say, and the relay agrees on those it can judge now", async () => {
  for (const [i, v] of VECTORS.entries()) {
    const u = new URL(v.url);
    const env = baseEnv({ SOURCES: JSON.stringify({ acme: { scheme: v.preset, ...(v.public_key ? { public_key: v.public_key } : {}) } }), ...(v.secret ? { WEBHOOK_SECRET_ACME: v.secret } : {}) });
    const headers = { "content-type": v.content_type, ...v.headers };
    const bytes = capture({ target: `${u.pathname}${u.search}`, host: u.host, headers, body: v.body });
    const run = await verify("acme", bytes, env, ["--json", "--at", String(v.now_s * 1000)]);
    const judged = JSON.parse(run.stdout);
    const verified = judged.signature.verdict === "valid" && judged.freshness.verdict !== "stale";
    assert.equal(verified, v.valid, `vector ${i} (${v.preset}, ${v.note}): ${run.stdout}`);
  }
  for (const v of timeless) {
    const u = new URL(v.url);
    const headers = { "content-type": v.content_type, ...v.headers };
    const [cli, status, out] = await bothPaths(v.name, { target: `/webhooks/${v.name}${u.search}`, headers, body: v.body });
    assert.equal(status === 401, !v.valid, `${v.name} (${v.preset}, ${v.note}): the relay answered ${status}`);
    assert.equal(/^signature +valid/m.test(out), v.valid, `${v.name} (${v.preset}): ${out}`);
    if (v.valid && status < 300) assert.equal(cli, 0, out);
  }
});

test("config check runs the build's checks, prints each source with its scheme and routes, and names a bad recipe field", async () => {
  const good = await hookrelay(["config", "check"], { env: baseEnv() });
  assert.equal(good.code, 0, good.stdout + good.stderr);
  assert.match(good.stdout, /^build checks +ok: wrangler\.toml and dlq\/wrangler\.toml, every \[env\.\*\], the demo \(\.dev\.vars\.example\), migrations\//m);
  assert.match(good.stdout, /^├─ demo-github +scheme github/m);
  const routed = {
    SOURCES: JSON.stringify({ shop: { scheme: "shopify", routes: [{ to: "billing" }, { to: "audit", filter: { body: { total: { $gte: 100 } } } }] } }),
    DESTINATIONS: JSON.stringify({ billing: { url: "https://billing.example.com/hooks?token=abc", rate_per_s: 5 }, audit: { url: "https://audit.example.com/in" } }),
  };
  const tree = await hookrelay(["config", "check"], { env: baseEnv(routed) });
  assert.equal(tree.code, 0, tree.stdout);
  assert.match(tree.stdout, /^└─ shop +scheme shopify +tolerance \d+s +WEBHOOK_SECRET_SHOP not set here$/m);
  assert.match(tree.stdout, /^ {3}├─ route → billing$/m);
  assert.match(tree.stdout, /^ {3}└─ route → audit \(filtered\)$/m);
  assert.match(tree.stdout, /billing +url https:\/\/billing\.example\.com\/\.\.\.#[0-9a-f]{8} +rate 5\/s/);
  assert.doesNotMatch(tree.stdout, /token=abc/, "a destination URL's credentials are never shown");
  const bad = { SOURCES: JSON.stringify({ acme: { scheme: { hmac: "sha256", header: "X-Sig", encoding: "hex2", signed: "{body}" } } }) };
  const refused = await hookrelay(["config", "check"], { env: baseEnv(bad) });
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /^configuration FAILED: SOURCES\.acme\.scheme\.encoding: /m);
  assert.match(refused.stdout, /next: fix it where SOURCES is declared \(the environment\)/);
  // A broken file, as the build would refuse it.
  const copy = tempDir("config");
  mkdirSync(path.join(copy, "dlq"));
  writeFileSync(path.join(copy, "wrangler.toml"), readFileSync(path.join(ROOT, "wrangler.toml"), "utf8").replace("max_retries = 5", "max_retries = 3"));
  copyFileSync(path.join(ROOT, "dlq/wrangler.toml"), path.join(copy, "dlq/wrangler.toml"));
  const file = await hookrelay(["config", "check", "-c", path.join(copy, "wrangler.toml")], { env: baseEnv() });
  assert.equal(file.code, 1);
  assert.match(file.stdout, /^build checks +FAILED: .*must set max_retries = 5/m);
  const missing = await hookrelay(["config", "check", "-c", path.join(copy, "nope.toml")], { env: baseEnv() });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read .*nope\.toml/);
});
