#!/usr/bin/env node
// `npm run provision [-- --env <name>] [-- --dry-run]`: prepares a Cloudflare
// account for both workers (DESIGN §7). It reads what exists, then creates
// only what is missing: the D1 database (its id written into both configs),
// every queue the configs name (a dead-letter queue keeps 14 days), the R2
// bucket, the relay's own secrets (random, never printed); it applies the
// D1 migrations remotely and lists the providers' secrets still to set.
// Running it twice changes nothing the second time.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readAccount, lastError, whoami } from "./lib/account.mjs";
import { demoConfigSources, demoSourcesIn } from "./lib/demo-sources.mjs";
import { envArgs } from "./lib/env-args.mjs";
import { fail, run } from "./lib/fail.mjs";
import { describePlan, jsonVar, neededResources, parseD1List, provisionPlan, setDatabaseId } from "./lib/provision-plan.mjs";
import { readWorkerConfigs } from "./lib/worker-configs.mjs";
import { ROOT, WRITE_TIMEOUT_MS, shown, wrangler } from "./lib/wrangler.mjs";

const USAGE = "usage: npm run provision -- [--env <name>] [--dry-run]";

/** `{env, dryRun}` from the command line; anything else is refused. */
export const provisionArgs = (argv) => envArgs(argv, USAGE);

const say = (line) => console.log(`[provision] ${line}`);

/** Runs one write; a failure stops provisioning with wrangler's error (shown above it). */
async function write(args, { input, what } = {}) {
  const res = await wrangler(args, { input, timeoutMs: WRITE_TIMEOUT_MS });
  if (res.code !== 0) {
    // The output never holds a secret: it came on stdin, and wrangler does not echo it.
    process.stderr.write(`${res.stdout}${res.stderr}`);
    fail(res.timedOut ? `\`${shown(args)}\` did not finish in time; check the network and run npm run provision again (it resumes where it stopped)` : `${what ?? `\`${shown(args)}\``} failed: ${lastError(res)}; fix that and run npm run provision again (it resumes where it stopped)`);
  }
  return res.stdout;
}

async function apply(step, { env }) {
  switch (step.kind) {
    case "create-database":
    case "create-queue":
    case "set-retention":
    case "create-bucket":
      await write(step.args);
      return;
    case "write-database-id": {
      const db = parseD1List((await wrangler(["d1", "list", "--json"])).stdout).find((d) => d.name === step.name);
      if (!db) fail(`the D1 database ${step.name} is not in \`wrangler d1 list\` after its creation; check the dashboard and run again`);
      for (const file of step.files) {
        const full = path.join(ROOT, file);
        const { text, changed } = setDatabaseId(readFileSync(full, "utf8"), { databaseName: step.name, id: db.uuid, env, file });
        if (changed) writeFileSync(full, text);
      }
      say(`  ${step.name} is ${db.uuid}: commit ${step.files.join(" and ")}`);
      return;
    }
    case "put-secret": {
      // One value for every worker that needs this secret; it goes to wrangler on stdin only.
      const value = randomBytes(32).toString("base64url");
      for (const w of step.workers) {
        await write(["secret", "put", step.name, "-c", w.config, ...(env ? ["--env", env] : [])], { input: `${value}\n`, what: `setting ${step.name} on ${w.script}` });
      }
      return;
    }
    case "migrate":
      process.stdout.write(await write(step.args));
      return;
    default:
      fail(`unknown step ${step.kind} (a bug in scripts/lib/provision-plan.mjs)`);
  }
}

async function main() {
  const { env, dryRun } = provisionArgs(process.argv.slice(2));
  const configs = readWorkerConfigs(ROOT, env);
  const demo = demoSourcesIn(jsonVar(configs.relay.vars, "SOURCES", configs.relay.file), demoConfigSources(ROOT));
  if (demo.length) say(`note: ${configs.relay.file} declares the demo source(s) ${demo.join(", ")}; npm run deploy refuses them: declare your own sources instead`);
  const who = await whoami();
  let account = null;
  if (who.loggedIn) {
    say(`reading the account${who.email ? ` of ${who.email}` : ""}${env ? ` for [env.${env}]` : ""}`);
    account = await readAccount(configs, env, neededResources(configs.relay, configs.dlq).queues.map((q) => q.name));
  } else if (!dryRun) {
    fail(`${who.timedOut ? "`wrangler whoami` did not answer in time" : "not logged in to Cloudflare"}; run \`npx wrangler login\` (or set CLOUDFLARE_API_TOKEN), or see the plan with: npm run provision -- --dry-run`);
  }
  const plan = provisionPlan({ ...configs, env, account });
  for (const line of describePlan(plan, { dryRun })) say(line);
  if (dryRun) return;
  for (const [i, step] of plan.steps.entries()) {
    say(`${i + 1}/${plan.steps.length} ${step.say}`);
    await apply(step, { env });
  }
  say(plan.toSet.length ? "done; set the secrets listed above, then: npm run deploy" : "done; next: npm run deploy");
}

await run("provision", main);
