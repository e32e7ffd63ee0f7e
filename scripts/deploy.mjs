#!/usr/bin/env node
// `npm run deploy [-- --env <name>] [-- --dry-run]`: deploys both workers
// (DESIGN §7). Before building anything it refuses a placeholder database
// id, a demo source or HOOKRELAY_TEST_FAULTS, naming which; then it builds,
// applies pending D1 migrations remotely (the schema first, so new code
// never meets a missing table), and deploys the workers in the order their
// service bindings allow, with wrangler's automatic resource creation off
// (a misspelt bucket is an error, not a new empty bucket). It stops at the
// first failure, with wrangler's own error above its last line.
import { spawn } from "node:child_process";
import { rmSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { lastError, whoami, workerSecrets } from "./lib/account.mjs";
import { demoConfigSources } from "./lib/demo-sources.mjs";
import { deployRefusals, deploySequence, withoutServiceBindings } from "./lib/deploy-checks.mjs";
import { envArgs } from "./lib/env-args.mjs";
import { fail, run } from "./lib/fail.mjs";
import { readWorkerConfigs } from "./lib/worker-configs.mjs";
import { ROOT, WRITE_TIMEOUT_MS, shown, wrangler } from "./lib/wrangler.mjs";

const USAGE = "usage: npm run deploy -- [--env <name>] [--dry-run]";
// wrangler 4.86's (hidden) switches for its automatic resource provisioning.
const NO_AUTO_CREATE = ["--experimental-provision=false", "--experimental-auto-create=false"];
const BOOTSTRAP = "dlq/wrangler.bootstrap.toml";

/** `{env, dryRun}` from the command line; anything else is refused. */
export const deployArgs = (argv) => envArgs(argv, USAGE);

const say = (line) => console.log(`[deploy] ${line}`);

/** `bash script`, its output streamed; a failure stops the deploy. */
function bash(script) {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [script], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
  }).catch(() => fail(`${script} failed (its error is above); nothing was deployed. Fix it and run npm run deploy again`));
}

/** One wrangler write with its output streamed to the terminal. */
async function step(args, what) {
  say(`$ ${shown(args)}`);
  const res = await wrangler(args, { inherit: true, timeoutMs: WRITE_TIMEOUT_MS });
  if (res.code !== 0) fail(`${what} ${res.timedOut ? "did not finish in time" : "failed (wrangler's error is above)"}; nothing after it was done. Fix it and run npm run deploy again`);
}

async function main() {
  const { env, dryRun } = deployArgs(process.argv.slice(2));
  const configs = readWorkerConfigs(ROOT, env);
  const refusals = deployRefusals(configs, demoConfigSources(ROOT), env);
  const refuse = () => fail(`refusing to deploy: ${refusals.join("; ")}`);
  // Before anything is read, built or uploaded; a dry run shows its plan first.
  if (refusals.length && !dryRun) refuse();
  const envArgs = env ? ["--env", env] : [];
  const { relay, dlq } = configs;

  const who = await whoami();
  if (!who.loggedIn && !dryRun) fail(`${who.timedOut ? "`wrangler whoami` did not answer in time" : "not logged in to Cloudflare"}; run \`npx wrangler login\` (or set CLOUDFLARE_API_TOKEN), then npm run deploy again`);
  // The bootstrap is decided by the account: does the relay exist yet?
  const relayExists = who.loggedIn ? (await workerSecrets(relay, env)).exists : undefined;
  const migrate = ["d1", "migrations", "apply", relay.d1_databases[0].binding, "--remote", "-c", relay.file, ...envArgs];
  const deploys = (exists) => deploySequence({ relayExists: exists, relay, dlq, bootstrapFile: BOOTSTRAP }).map((s) => `deploy ${s.say}: ${shown(["deploy", "-c", s.config, ...envArgs, ...NO_AUTO_CREATE])}`);
  const sequence = deploySequence({ relayExists: relayExists ?? true, relay, dlq, bootstrapFile: BOOTSTRAP });
  const plan = [
    "build both workers (scripts/setup.sh, scripts/build.sh)",
    `apply pending D1 migrations: ${shown(migrate)}`,
    ...(relayExists === undefined
      ? [`if ${relay.name} exists: ${deploys(true).join("; then ")}`, `if it does not (the first deploy): ${deploys(false).join("; then ")}`]
      : deploys(relayExists)),
  ];
  if (!who.loggedIn) say("could not read the account (no CLOUDFLARE_API_TOKEN and no `wrangler login`): whether the first deploy's bootstrap is needed is decided when it runs");
  say(dryRun ? "would do, in order (--dry-run: nothing is built or changed):" : "will do, in order:");
  plan.forEach((line, i) => say(`  ${i + 1}. ${line}`));
  if (dryRun) {
    if (who.loggedIn) {
      const pending = await wrangler(["d1", "migrations", "list", relay.d1_databases[0].binding, "--remote", "-c", relay.file, ...envArgs]);
      say(pending.code === 0 ? `pending migrations:\n${pending.stdout.trim()}` : `could not list the pending migrations: ${lastError(pending)}`);
    }
    if (refusals.length) refuse();
    return;
  }

  await bash("scripts/setup.sh");
  await bash("scripts/build.sh");
  // The moment to restore to with D1 Time Travel, should a migration leave the data wrong (README, "Deploying").
  const before = new Date().toISOString();
  say(`before migrating, at ${before}: to undo a migration that went wrong, npx wrangler d1 time-travel restore ${relay.d1_databases[0].binding} --timestamp ${before} -c ${relay.file}${env ? ` --env ${env}` : ""} (it throws away every write since)`);
  await step(migrate, "applying the D1 migrations");
  try {
    for (const s of sequence) {
      if (s.config === BOOTSTRAP) writeFileSync(path.join(ROOT, BOOTSTRAP), withoutServiceBindings(readFileSync(path.join(ROOT, dlq.file), "utf8"), env));
      await step(["deploy", "-c", s.config, ...envArgs, ...NO_AUTO_CREATE], `deploying ${s.say}`);
    }
  } finally {
    rmSync(path.join(ROOT, BOOTSTRAP), { force: true });
  }
  say(`deployed ${dlq.name} and ${relay.name}; check it end to end with: npm run smoke -- --url https://<${relay.name}'s workers.dev or route URL>`);
}

await run("deploy", main);
