// `npm run deploy` refuses, before building or uploading anything, a
// placeholder database id, a demo source and HOOKRELAY_TEST_FAULTS, and
// says which. The real script runs on a temporary copy of the checkout's
// configs and scripts, with no Cloudflare credentials.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runOffline } from "./support/offline-env.mjs";
import { checkout } from "./support/checkout-copy.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REAL_ID = "4f5e6d7c-1111-4222-8333-944455556666";
const PLACEHOLDER = "00000000-0000-4000-8000-000000000001";

const withId = (text) => text.replaceAll(PLACEHOLDER, REAL_ID);
// The user's own sources in the top-level [vars] (the first `SOURCES = {}`; [env.staging]'s comes later).
const ownSources = (text, extra = "") => {
  assert.match(text, /^SOURCES = \{\}$/m, "wrangler.toml ships SOURCES = {}");
  return text.replace(/^SOURCES = \{\}$/m, `SOURCES = { ${extra}billing = { scheme = "stripe" } }`);
};

async function deploy(dir, args = []) {
  try {
    return await runOffline(path.join(dir, "scripts/deploy.mjs"), args, { cwd: dir });
  } finally {
    // Nothing was built: the copy has no build output, and no bootstrap config was left.
    assert.equal(existsSync(path.join(dir, "build")), false);
    assert.equal(existsSync(path.join(dir, "dlq/wrangler.bootstrap.toml")), false);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A refusal: exit 1, nothing on stdout (no plan, no build, no wrangler call), one line on stderr. */
function assertRefused({ code, stdout, stderr }) {
  assert.equal(code, 1, stderr);
  assert.equal(stdout, "", "nothing was started before the refusal");
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0], /^deploy: refusing to deploy: /);
  assert.doesNotMatch(stderr, /\n\s+at /, "no stack trace");
  return lines[0];
}

test("the committed configs are refused for the placeholder id in both configs, each named (they declare no source: the demo's are in .dev.vars.example)", async () => {
  const line = assertRefused(await deploy(checkout()));
  assert.match(line, /^deploy: refusing to deploy: wrangler\.toml \[\[d1_databases\]\] DB has the placeholder database_id 00000000-0000-4000-8000-000000000001: run npm run provision, [^;]*; dlq\/wrangler\.toml \[\[d1_databases\]\] DB has the placeholder database_id 00000000-0000-4000-8000-000000000001: [^;]*$/);
  assert.doesNotMatch(line, /demo source/);
  // --env staging: the env's own placeholder, and its command.
  const staged = assertRefused(await deploy(checkout(), ["--env", "staging"]));
  assert.match(staged, /^deploy: refusing to deploy: wrangler\.toml \[env\.staging\] \[\[d1_databases\]\] DB has the placeholder database_id 00000000-0000-4000-8000-000000000002: run npm run provision -- --env staging, [^;]*; dlq\/wrangler\.toml \[env\.staging\] \[\[d1_databases\]\] DB has the placeholder database_id 00000000-0000-4000-8000-000000000002: [^;]*$/);
});

test("a placeholder id in one config only is refused, naming that config", async () => {
  const line = assertRefused(await deploy(checkout((r, d) => [ownSources(withId(r)), d])));
  assert.match(line, /^deploy: refusing to deploy: dlq\/wrangler\.toml \[\[d1_databases\]\] DB has the placeholder database_id [^;]*$/);
});

test("HOOKRELAY_TEST_FAULTS in either config's vars is refused", async () => {
  const faults = (text) => text.replace("[vars]\n", '[vars]\nHOOKRELAY_TEST_FAULTS = "panic"\n');
  const line = assertRefused(await deploy(checkout((r, d) => [ownSources(withId(r)), faults(withId(d))])));
  assert.match(line, /^deploy: refusing to deploy: dlq\/wrangler\.toml \[vars\] sets HOOKRELAY_TEST_FAULTS, a test-only fault switch: remove it$/);
});

test("a demo source by name (demo-*) or listed in the demo configuration is refused", async () => {
  const oneDemo = (text) => ownSources(text, 'demo-extra = { scheme = "github" }, ');
  assert.match(assertRefused(await deploy(checkout((r, d) => [oneDemo(withId(r)), withId(d)]))), /^deploy: refusing to deploy: wrangler\.toml \[vars\] SOURCES declares the demo source\(s\) demo-extra, whose secrets are public/);
  // A source .dev.vars.example's SOURCES (single-quoted JSON) lists, whatever its name.
  const demoConfig = `SOURCES='{"billing":{"scheme":"stripe"}}'\n`;
  assert.match(assertRefused(await deploy(checkout((r, d) => [ownSources(withId(r)), withId(d)], demoConfig))), /declares the demo source\(s\) billing,/);
  // One in [env.staging]'s SOURCES, with --env staging.
  const stagingDemo = (text) => text.replaceAll("00000000-0000-4000-8000-000000000002", REAL_ID).replace(/(\[env\.staging\.vars\][\s\S]*)^SOURCES = \{\}$/m, '$1SOURCES = { demo-extra = { scheme = "github" } }');
  assert.match(assertRefused(await deploy(checkout((r, d) => [stagingDemo(r), stagingDemo(d)]), ["--env", "staging"])), /^deploy: refusing to deploy: wrangler\.toml \[env\.staging\] \[vars\] SOURCES declares the demo source\(s\) demo-extra,[^;]*$/);
});

test("the demo's sources are read from .dev.vars.example's SOURCES (single-quoted JSON)", async () => {
  const { demoConfigSources } = await import("../scripts/lib/demo-sources.mjs");
  assert.deepEqual([...demoConfigSources(ROOT)], ["demo-standard", "demo-stripe", "demo-github", "demo-hmac", "demo-forward", "demo-slack", "demo-listen"]);
  const dir = mkdtempSync(path.join(os.tmpdir(), "hookrelay-demo-"));
  try {
    writeFileSync(path.join(dir, ".dev.vars.example"), "SOURCES='not json'\n");
    assert.throws(() => demoConfigSources(dir), /\.dev\.vars\.example \[vars\] SOURCES is neither a table nor a JSON object/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a clean configuration passes the checks and stops only at the missing login, in one line, still before building", async () => {
  const { code, stdout, stderr } = await deploy(checkout((r, d) => [ownSources(withId(r)), withId(d)]));
  assert.equal(code, 1);
  assert.equal(stdout, "");
  assert.deepEqual(stderr.trim().split("\n"), ["deploy: not logged in to Cloudflare; run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN), then npm run deploy again"]);
});

test("--dry-run prints the plan (migrations before code, both bootstrap orders, auto-creation off), then the refusals", async () => {
  const { code, stdout, stderr } = await deploy(checkout(), ["--dry-run"]);
  assert.equal(code, 1);
  assert.match(stdout, /could not read the account/);
  const at = (s) => stdout.indexOf(s);
  assert.ok(at("npx wrangler d1 migrations apply DB --remote -c wrangler.toml") > 0, stdout);
  assert.ok(at("d1 migrations apply") < at("npx wrangler deploy"), "the schema goes out before the code");
  assert.match(stdout, /if hookrelay exists: deploy hookrelay-dlq: npx wrangler deploy -c dlq\/wrangler.toml --experimental-provision=false --experimental-auto-create=false; then deploy hookrelay/);
  assert.match(stdout, /if it does not \(the first deploy\): deploy hookrelay-dlq without its RELAY binding .*dlq\/wrangler.bootstrap.toml.*; then deploy hookrelay: .*; then deploy hookrelay-dlq again, now with its RELAY binding/);
  assert.match(stderr.trim(), /^deploy: refusing to deploy: .*placeholder database_id/);
});

test("an --env the configs do not declare is refused before anything else", async () => {
  const { code, stdout, stderr } = await deploy(checkout((r, d) => [ownSources(withId(r)), withId(d)]), ["--env", "nosuch"]);
  assert.equal(code, 1);
  assert.equal(stdout, "");
  assert.deepEqual(stderr.trim().split("\n"), ["deploy: wrangler.toml has no [env.nosuch]; declare it there, or drop --env nosuch"]);
});

test("the bootstrap is decided by the account: without a relay the DLQ worker goes out first without RELAY, then the relay, then it again", async () => {
  const { deploySequence, withoutServiceBindings } = await import("../scripts/lib/deploy-checks.mjs");
  const relay = { name: "hookrelay", file: "wrangler.toml" };
  const dlq = { name: "hookrelay-dlq", file: "dlq/wrangler.toml" };
  const order = (relayExists) => deploySequence({ relayExists, relay, dlq, bootstrapFile: "dlq/wrangler.bootstrap.toml" }).map((s) => s.config);
  assert.deepEqual(order(true), ["dlq/wrangler.toml", "wrangler.toml"]);
  assert.deepEqual(order(false), ["dlq/wrangler.bootstrap.toml", "wrangler.toml", "dlq/wrangler.toml"]);

  // The bootstrap config, read by wrangler itself: the same worker, minus its service binding.
  const { unstable_readConfig } = await import("wrangler");
  const dir = mkdtempSync(path.join(os.tmpdir(), "hookrelay-bootstrap-"));
  const text = readFileSync(path.join(ROOT, "dlq/wrangler.toml"), "utf8");
  writeFileSync(path.join(dir, "a.toml"), text);
  writeFileSync(path.join(dir, "b.toml"), withoutServiceBindings(text));
  const [full, boot] = ["a.toml", "b.toml"].map((f) => unstable_readConfig({ config: path.join(dir, f) }, { hideWarnings: true }));
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(full.services.map((s) => s.binding), ["RELAY"]);
  assert.deepEqual(boot.services, []);
  for (const key of ["name", "main", "d1_databases", "r2_buckets", "queues", "vars", "triggers"]) assert.deepEqual(boot[key], full[key], key);
  // The committed [env.staging]: the env's bootstrap loses the env's RELAY only; the top level's bootstrap keeps the env's.
  const dir2 = mkdtempSync(path.join(os.tmpdir(), "hookrelay-bootstrap-"));
  writeFileSync(path.join(dir2, "a.toml"), text);
  writeFileSync(path.join(dir2, "b.toml"), withoutServiceBindings(text, "staging"));
  writeFileSync(path.join(dir2, "c.toml"), withoutServiceBindings(text));
  const read = (f, env) => unstable_readConfig({ config: path.join(dir2, f), env }, { hideWarnings: true });
  const [sFull, sBoot, sTop] = [read("a.toml", "staging"), read("b.toml", "staging"), read("c.toml", "staging")];
  const [topOfEnvBoot] = [read("b.toml")];
  rmSync(dir2, { recursive: true, force: true });
  assert.deepEqual(sFull.services.map((s) => s.service), ["hookrelay-staging"]);
  assert.deepEqual(sBoot.services, []);
  for (const key of ["name", "main", "d1_databases", "r2_buckets", "queues", "vars", "triggers"]) assert.deepEqual(sBoot[key], sFull[key], key);
  assert.equal(sBoot.name, "hookrelay-dlq-staging");
  assert.deepEqual(topOfEnvBoot.services.map((s) => s.service), ["hookrelay"], "the top level's binding is kept in the env's bootstrap");
  assert.deepEqual(sTop.services.map((s) => s.service), ["hookrelay-staging"], "the env's binding is kept in the top level's bootstrap");
});

test("the flags deploy and provision pass are the installed wrangler's: strict parsing accepts them and refuses a made-up one", async () => {
  const { wrangler } = await import("../scripts/lib/wrangler.mjs");
  const { offlineEnv } = await import("./support/offline-env.mjs");
  const outdir = mkdtempSync(path.join(os.tmpdir(), "hookrelay-dry-"));
  const dry = (flags) => wrangler(["deploy", "--dry-run", "--outdir", outdir, "-c", "dlq/wrangler.toml", ...flags], { baseEnv: offlineEnv(), timeoutMs: 120_000 });
  try {
    const ok = await dry(["--experimental-provision=false", "--experimental-auto-create=false"]);
    assert.equal(ok.code, 0, `${ok.stdout}${ok.stderr}`);
    assert.match(ok.stdout, /--dry-run: exiting now/);
    const bogus = await dry(["--experimental-no-such-flag=false"]);
    assert.notEqual(bogus.code, 0, "wrangler refuses an unknown flag, so the accepted ones are real");
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  const help = await wrangler(["queues", "create", "--help"], { baseEnv: offlineEnv() });
  assert.match(help.stdout, /--message-retention-period-secs\s+How long to retain a message in the queue, in seconds\. .* between 60 and 1209600/);
});
