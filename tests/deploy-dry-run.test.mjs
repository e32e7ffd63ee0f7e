// `wrangler deploy --dry-run` of both workers, at the top level and with
// `--env staging` (DESIGN §7): it bundles the built worker and checks the
// config as a deploy would, without credentials and without an API call,
// so bundling and configuration errors surface here, not in a deploy (a
// missing resource is `npm run smoke`'s to find). Needs the built workers
// (scripts/build.sh, which `npm test` runs first).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WRANGLER = path.join(ROOT, "node_modules/wrangler/bin/wrangler.js");

/** The environment with every Cloudflare credential removed, and no telemetry. */
function offlineEnv() {
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", CI: "1" };
  for (const key of Object.keys(env)) if (/^(CLOUDFLARE_|CF_)(API|ACCOUNT)/.test(key)) delete env[key];
  // wrangler's API client honours a proxy: an API call would go to a closed
  // port and fail the run. (Its banner's npm update check, bounded by a
  // timeout and ignored when it fails, is the one request a dry run makes.)
  env.HTTPS_PROXY = env.HTTP_PROXY = "http://127.0.0.1:9";
  return env;
}

function dryRun(config, env) {
  const outdir = mkdtempSync(path.join(tmpdir(), "hookrelay-dry-run-"));
  try {
    const args = [WRANGLER, "deploy", "--dry-run", "--outdir", outdir, "-c", config, ...(env ? ["--env", env] : [])];
    const run = spawnSync(process.execPath, args, { cwd: ROOT, env: offlineEnv(), encoding: "utf8", timeout: 120_000 });
    return { ...run, output: `${run.stdout}\n${run.stderr}`, bundled: existsSync(path.join(outdir, "index.js")) };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

const cases = [
  { config: "wrangler.toml", env: undefined, queues: ["webhooks", "webhooks-dlq", "hookrelay-control"], service: "hookrelay-dlq", database: "hookrelay", bucket: "hookrelay-archive" },
  { config: "wrangler.toml", env: "staging", queues: ["webhooks-staging", "webhooks-dlq-staging", "hookrelay-control-staging"], service: "hookrelay-dlq-staging", database: "hookrelay-staging", bucket: "hookrelay-archive-staging" },
  { config: "dlq/wrangler.toml", env: undefined, queues: ["hookrelay-jobs"], service: "hookrelay", database: "hookrelay", bucket: "hookrelay-archive" },
  { config: "dlq/wrangler.toml", env: "staging", queues: ["hookrelay-jobs-staging"], service: "hookrelay-staging", database: "hookrelay-staging", bucket: "hookrelay-archive-staging" },
];

for (const c of cases) {
  test(`wrangler deploy --dry-run -c ${c.config}${c.env ? ` --env ${c.env}` : ""} passes offline, with its own names`, () => {
    const run = dryRun(c.config, c.env);
    assert.equal(run.error, undefined, `wrangler did not finish: ${run.error}`);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /--dry-run: exiting now/);
    assert.ok(run.bundled, "no bundle was written to --outdir");
    // The bindings wrangler printed are this environment's.
    const word = (name) => new RegExp(`(^|[\\s(])${name.replace(/[-]/g, "\\-")}([\\s)]|$)`, "m");
    for (const name of [...c.queues, c.service, c.database, c.bucket]) assert.match(run.output, word(name), `${name} not among the bindings:\n${run.output}`);
    if (c.env) assert.doesNotMatch(run.output, word(c.config === "wrangler.toml" ? "webhooks" : "hookrelay-jobs"), "a production queue in staging");
  });
}
