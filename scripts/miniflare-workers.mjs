// The relay and the DLQ worker as Miniflare worker options, built from the
// committed wrangler.toml files through wrangler's own mapping, and one
// Miniflare start: shared by tests/support/harness.mjs and bench/lib.mjs, so
// both run exactly what `npm start` runs. Nothing here enables the queue
// broker's control endpoints; only the test harness does.
import { Miniflare } from "miniflare";
import wrangler from "wrangler";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { readFileSync } from "node:fs";
import { applyMigrations } from "./local-d1.mjs";
import { d1ProbeClient, d1ProbeWorker } from "./d1-probe.mjs";
import { EXAMPLE_SECRETS } from "./dev-vars.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const EXAMPLE_VARS = path.join(ROOT, ".dev.vars.example");

/** The development secrets from .dev.vars.example. */
export const SECRETS = EXAMPLE_SECRETS;

/**
 * One worker's options from its wrangler file (`configPath` relative to the
 * repository). `vars` override vars and secrets. `consumers` overrides queue
 * consumer settings by queue name; `null` detaches that consumer (the broker
 * then accepts and drops its messages).
 */
export function workerOptions(configPath, name, { vars = {}, consumers = {}, env } = {}) {
  const config = path.join(ROOT, configPath);
  // envFiles keeps wrangler from reading a .dev.vars beside the config: a
  // developer's edits, or the dlq/.dev.vars that `npm start -- --var …`
  // writes, must not leak into tests and benchmarks.
  const { workerOptions: opts } = wrangler.unstable_getMiniflareWorkerOptions(config, env, { envFiles: [EXAMPLE_VARS] });
  const dir = path.dirname(config);
  const queueConsumers = {};
  for (const [queue, settings] of Object.entries(opts.queueConsumers ?? {})) {
    if (consumers[queue] === null) continue;
    // A batch that is not full would otherwise wait max_batch_timeout (5 s).
    queueConsumers[queue] = { ...settings, maxBatchTimeout: 0, ...(consumers[queue] ?? {}) };
  }
  return {
    ...opts,
    name,
    modules: true,
    scriptPath: path.join(dir, "build/index.js"),
    modulesRoot: path.join(dir, "build"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    bindings: { ...opts.bindings, ...SECRETS, ...vars },
    queueConsumers,
  };
}

/**
 * The settings both workers read, from their one home
 * (`hookrelay_core::config::SHARED_KEYS`, which build.rs enforces on the
 * committed configs): a test, like a deployment, gives them to both.
 */
export const SHARED_KEYS = [...readFileSync(path.join(ROOT, "core/src/config/shared.rs"), "utf8")
  .split("pub const SHARED_KEYS")[1]
  .split("];")[0]
  .matchAll(/^\s*\(?\s*"([A-Z0-9_]+)",$/gm)].map((m) => m[1]);

/**
 * Both hookrelay workers. `vars` apply to both, `relayVars` / `dlqVars` to
 * one (after `vars`); `consumers` as in workerOptions; `env` an
 * `[env.<name>]` of both configs (staging); `configs` other wrangler files
 * whose build/ beside them holds the workers (the previous release's, for
 * the rollback test). A setting both
 * workers read (SHARED_KEYS) goes in `vars`: given to one worker only, the
 * other would run on its default, which build.rs refuses for the real
 * configs.
 */
export const CONFIGS = { relay: "wrangler.toml", dlq: "dlq/wrangler.toml" };
export function hookrelayWorkers({ vars = {}, relayVars = {}, dlqVars = {}, consumers = {}, env, configs = CONFIGS } = {}) {
  for (const [which, given] of [["relayVars", relayVars], ["dlqVars", dlqVars]]) {
    const key = SHARED_KEYS.find((k) => k in given);
    if (key) throw new Error(`${which} sets ${key}, which both workers read; pass it in vars, so that both get it`);
  }
  const [relay, dlq] = workerNames(env);
  return [
    workerOptions(configs.relay, relay, { vars: { ...vars, ...relayVars }, consumers, env }),
    workerOptions(configs.dlq, dlq, { vars: { ...vars, ...dlqVars }, consumers, env }),
  ];
}

/** The two workers' names in an environment of the committed configs (each binds the other by it). */
export function workerNames(env) {
  return env ? [`hookrelay-${env}`, `hookrelay-dlq-${env}`] : ["hookrelay", "hookrelay-dlq"];
}

/** A handleRuntimeStdio that calls `onLine` for each whole line of the workers' stdout and stderr. */
export function lineStdio(onLine) {
  return (stdout, stderr) => {
    for (const stream of [stdout, stderr]) {
      stream.setEncoding("utf8");
      let carry = "";
      stream.on("data", (chunk) => {
        const lines = (carry + chunk).split("\n");
        carry = lines.pop();
        for (const line of lines) onLine(line);
      });
    }
  };
}

/** The database id behind binding `DB`, in any of Miniflare's three spellings. */
function d1DatabaseId(d1Databases) {
  if (Array.isArray(d1Databases)) return d1Databases.includes("DB") ? "DB" : undefined;
  const binding = d1Databases?.DB;
  return typeof binding === "string" ? binding : binding?.id;
}

/**
 * Starts `workers` in one Miniflare on a free loopback port (no cf.json
 * fetch) and applies the D1 migrations to the `DB` of worker `dbWorker`.
 * `db` reaches that database through a probe worker (scripts/d1-probe.mjs);
 * `setWorkers(workers)` restarts with other worker options, keeping the data.
 * `migrate(db)` replaces the migrations applied at start (the upgrade test
 * starts on an older schema). `options` are passed to Miniflare (log,
 * handleRuntimeStdio, …).
 */
export async function startMiniflare(workers, { dbWorker = workers[0].name, migrate = applyMigrations, ...options } = {}) {
  const databaseId = d1DatabaseId(workers.find((w) => w.name === dbWorker)?.d1Databases);
  if (!databaseId) throw new Error(`worker ${dbWorker} has no D1 binding DB`);
  const all = (ws) => ({ cf: false, host: "127.0.0.1", port: 0, ...options, workers: [...ws, d1ProbeWorker(databaseId)] });
  const mf = new Miniflare(all(workers));
  try {
    const url = await mf.ready;
    const db = d1ProbeClient(mf);
    await migrate(db);
    // Restarts the workers with new options on the same port, keeping D1
    // and R2 (Miniflare keeps unpersisted storage until dispose).
    const setWorkers = (ws) => mf.setOptions(all(ws));
    return { mf, url, db, setWorkers };
  } catch (e) {
    await mf.dispose();
    throw e;
  }
}
