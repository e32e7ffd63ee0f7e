// Reads the Cloudflare account's state with wrangler's own commands, for
// provision and deploy: who is logged in, the D1 databases, queues, R2
// buckets and each worker's secret names. Every read is bounded by a
// timeout and parsed by scripts/lib/provision-plan.mjs.
import { ScriptError } from "./fail.mjs";
import { parseD1List, parseQueuesList, parseR2List, parseSecretList, parseWhoami } from "./provision-plan.mjs";
import { shown, wrangler } from "./wrangler.mjs";

const envArgs = (env) => (env ? ["--env", env] : []);

/** Runs a read; a failure or a timeout is an error that shows wrangler's own message. */
async function read(args) {
  const res = await wrangler(args);
  if (res.timedOut) throw new ScriptError(`\`${shown(args)}\` did not finish in time; check the network and run again`);
  if (res.code !== 0) throw new ScriptError(`\`${shown(args)}\` failed: ${lastError(res)}; fix that and run again`);
  return res.stdout;
}

/** The last line of wrangler's error, which names the cause. */
export function lastError({ stdout, stderr }) {
  // eslint-disable-next-line no-control-regex
  const lines = `${stderr}\n${stdout}`.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter((l) => l && !/^(⛅️|─|🪵)/.test(l));
  const err = lines.find((l) => /\[ERROR\]/.test(l));
  return (err ?? lines.at(-1) ?? "no output").replace(/^✘\s*\[ERROR\]\s*/, "");
}

/** `{loggedIn}` from `wrangler whoami --json` (no API call without credentials). */
export async function whoami() {
  const res = await wrangler(["whoami", "--json"], { timeoutMs: 30_000 });
  if (res.timedOut) return { loggedIn: false, timedOut: true };
  return parseWhoami(res);
}

/** Every queue name, page by page, until a page adds nothing (or every wanted name is seen). */
async function queueNames(wanted) {
  const names = new Set();
  for (let page = 1; page <= 50; page++) {
    const onPage = parseQueuesList(await read(["queues", "list", "--page", String(page)]));
    const before = names.size;
    onPage.forEach((n) => names.add(n));
    if (names.size === before || wanted.every((w) => names.has(w))) break;
  }
  return [...names];
}

/** Whether the worker of `config` exists, and its secret names. */
export async function workerSecrets(config, env) {
  const args = ["secret", "list", "-c", config.file, ...envArgs(env)];
  const res = await wrangler(args);
  if (res.timedOut) throw new ScriptError(`\`${shown(args)}\` did not finish in time; check the network and run again`);
  return parseSecretList(res, config.name);
}

/** The account's state for the plan: databases, queues, buckets, both workers' secrets. */
export async function readAccount({ relay, dlq }, env, wantedQueues) {
  const databases = parseD1List(await read(["d1", "list", "--json"]));
  const queues = await queueNames(wantedQueues);
  const buckets = parseR2List(await read(["r2", "bucket", "list"]));
  const secrets = { relay: await workerSecrets(relay, env), dlq: await workerSecrets(dlq, env) };
  return { databases, queues, buckets, secrets };
}
