// Every script a user runs ends a failure with one line on stderr that
// says what went wrong and what to do, never a stack trace
// (scripts/lib/fail.mjs). Each case runs the real script.
import { test } from "node:test";
import assert from "node:assert/strict";
import { freePort } from "./support/front-door.mjs";
import { runOffline } from "./support/offline-env.mjs";

/** Exit non-zero, stderr one line starting `<name>: ` and matching `pattern`, no "at …" frames. */
function assertOneLine({ code, stderr }, name, pattern) {
  assert.notEqual(code, 0);
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, `one line, got:\n${stderr}`);
  assert.ok(lines[0].startsWith(`${name}: `), lines[0]);
  assert.doesNotMatch(stderr, /^\s+at /m, "no stack frame");
  assert.match(lines[0], pattern);
}

test("npm run sign against no relay says none answers at that URL and how to pass --url", async () => {
  const port = await freePort();
  const r = await runOffline("scripts/sign-webhook.mjs", ["demo-hmac", '{"op":"x"}', "--url", `http://127.0.0.1:${port}`]);
  assertOneLine(r, "sign", new RegExp(`^sign: no relay answers at http://127\\.0\\.0\\.1:${port} \\(connection refused\\); start one with npm start, or point at a running relay with --url`));
});

test("npm run sign for a source with no secret names the secret and where to put it", async () => {
  assertOneLine(await runOffline("scripts/sign-webhook.mjs", ["billing"]), "sign", /no WEBHOOK_SECRET_BILLING in the environment or in \.dev\.vars(\.example)?; export it, add it to \.dev\.vars/);
  // A secret given in the environment (as for a source of `npm start -- --var …`) is
  // taken: the failure is then the next one, the scheme to sign with.
  const fromEnv = await runOffline("scripts/sign-webhook.mjs", ["billing"], { env: { WEBHOOK_SECRET_BILLING: "whsec_from_env" } });
  assertOneLine(fromEnv, "sign", /which scheme does 'billing' use\? pass --scheme/);
});

test("npm run sign knows every demo source's scheme from the demo's SOURCES (the README's demo-listen line among them)", async () => {
  const { DEMO_SOURCES } = await import("../scripts/dev-vars.mjs");
  assert.ok(DEMO_SOURCES["demo-listen"], "the demo has demo-listen");
  for (const source of Object.keys(DEMO_SOURCES)) {
    const r = await runOffline("scripts/sign-webhook.mjs", [source, "{}", "--print"]);
    assert.equal(r.code, 0, `${source}: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^curl -i -X POST \\\\\n  'http://127\\.0\\.0\\.1:8787/webhooks/${source}'`), source);
  }
});

test("npm run demo against no relay says how to start one", async () => {
  const port = await freePort();
  const r = await runOffline("scripts/demo.mjs", [], { env: { HOOKRELAY_URL: `http://127.0.0.1:${port}` } });
  assertOneLine(r, "demo", /no relay answers at .*; start it with: npm start/);
});

test("npm run admin-token: a bad --ttl, a production secret without --sub, an unknown flag", async () => {
  assertOneLine(await runOffline("scripts/admin-token.mjs", ["--ttl", "2y"]), "admin-token", /--ttl "2y" is not a duration/);
  assertOneLine(await runOffline("scripts/admin-token.mjs", ["--ttl", "30d"]), "admin-token", /out of bounds; an admin token lives between 1m and 24h/);
  assertOneLine(await runOffline("scripts/admin-token.mjs", [], { env: { ADMIN_JWT_SECRET: "s3cret" } }), "admin-token", /--sub <your name> is required/);
  assertOneLine(await runOffline("scripts/admin-token.mjs", ["--stdin", "--sub", "alice"], { input: "" }), "admin-token", /standard input was empty/);
  assertOneLine(await runOffline("scripts/admin-token.mjs", ["--user", "x"]), "admin-token", /unknown argument "--user"; usage/);
});

test("npm run smoke: no --url, and no relay at the URL", async () => {
  assertOneLine(await runOffline("scripts/smoke.mjs", []), "smoke", /--url is required/);
  const port = await freePort();
  assertOneLine(await runOffline("scripts/smoke.mjs", ["--url", `http://127.0.0.1:${port}`]), "smoke", /no relay answers at .*; check --url/);
});

test("npm run provision and npm run deploy refuse an unknown argument with their usage", async () => {
  assertOneLine(await runOffline("scripts/provision.mjs", ["--yes"]), "provision", /unknown argument "--yes"; usage: npm run provision -- \[--env <name>\] \[--dry-run\]/);
  assertOneLine(await runOffline("scripts/deploy.mjs", ["--force"]), "deploy", /unknown argument "--force"; usage: npm run deploy/);
});

test("the soaks refuse a bad setting in one line", async () => {
  assertOneLine(await runOffline("scripts/soak.mjs", [], { env: { SOAK_N: "lots" } }), "soak", /SOAK_N=lots is not a whole number/);
  assertOneLine(await runOffline("scripts/soak-retention.mjs", [], { env: { SOAK_SECONDS: "-1" } }), "soak:retention", /SOAK_SECONDS=-1 is not a positive number/);
});
