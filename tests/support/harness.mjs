// One Miniflare running both compiled workers, configured from the committed
// wrangler.toml files (through wrangler's own mapping), with local D1 and
// local queues. Tests override vars and secrets, never code paths.
import { Miniflare, _enableControlEndpoints } from "miniflare";
import wrangler from "wrangler";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { applyMigrations } from "../../scripts/local-d1.mjs";
import { readDevVars } from "../../scripts/dev-vars.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The development secrets from .dev.vars.example. */
export const SECRETS = readDevVars(path.join(ROOT, ".dev.vars.example"));

// Fake timers on the queue broker are an internal Miniflare API; this is
// the only place that touches it. It must be enabled before construction.
_enableControlEndpoints();

function workerOptions(configPath, name, { vars = {}, consumers = {} } = {}) {
  const { workerOptions: opts } = wrangler.unstable_getMiniflareWorkerOptions(path.join(ROOT, configPath));
  const dir = path.dirname(path.join(ROOT, configPath));
  const queueConsumers = Object.fromEntries(
    Object.entries(opts.queueConsumers ?? {}).map(([q, c]) => [q, { ...c, maxBatchTimeout: 0, ...(consumers[q] ?? {}) }]),
  );
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
 * Starts the relay and the DLQ worker in one Miniflare, applies the D1
 * migrations, and returns helpers. `vars` override vars and secrets of both
 * workers, `relayVars` / `dlqVars` of one; `consumers` overrides queue
 * consumer settings by queue name.
 */
export async function startRelay({ vars = {}, relayVars = {}, dlqVars = {}, consumers = {}, extraWorkers = [] } = {}) {
  const logs = [];
  const mf = new Miniflare({
    cf: false,
    host: "127.0.0.1",
    port: 0,
    workers: [
      workerOptions("wrangler.toml", "hookrelay", { vars: { ...vars, ...relayVars }, consumers }),
      workerOptions("dlq/wrangler.toml", "hookrelay-dlq", { vars: { ...vars, ...dlqVars }, consumers }),
      ...extraWorkers,
    ],
    handleRuntimeStdio(stdout, stderr) {
      for (const stream of [stdout, stderr]) {
        stream.setEncoding("utf8");
        let carry = "";
        stream.on("data", (chunk) => {
          const lines = (carry + chunk).split("\n");
          carry = lines.pop();
          logs.push(...lines);
        });
      }
    },
  });
  const url = await mf.ready;
  const db = await mf.getD1Database("DB", "hookrelay");
  await applyMigrations(db);
  return {
    mf,
    url,
    db,
    logs,
    fetch: (p, init) => fetch(new URL(p, url), init),
    async producer(binding = "WEBHOOKS") {
      return mf.getQueueProducer(binding, "hookrelay");
    },
    async broker(queue) {
      return brokerControl(mf, queue);
    },
    async dispose() {
      await mf.dispose();
    },
  };
}

/** Fake-timer control of one queue's broker (Miniflare internals, wrapped here only). */
async function brokerControl(mf, queue) {
  const ns = await mf._getInternalDurableObjectNamespace("queues", "queues:queue", "QueueBrokerObject");
  const stub = ns.get(ns.idFromName(queue));
  const op = async (name, ...args) => {
    const res = await stub.fetch("http://placeholder/", { cf: { miniflare: { name: queue, controlOp: { name, args } } } });
    if (!res.ok) throw new Error(`broker control ${name} failed: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    enableFakeTimers: (now = Date.now()) => op("enableFakeTimers", now),
    advance: async (ms) => {
      await op("advanceFakeTime", ms);
      await op("waitForFakeTasks");
    },
    settle: () => op("waitForFakeTasks"),
    disableFakeTimers: () => op("disableFakeTimers"),
  };
}

/** Polls `probe` until it returns a truthy value or the deadline passes. */
export async function waitFor(probe, { timeoutMs = 15000, intervalMs = 50, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Rows of a query. */
export async function rows(db, sql, ...params) {
  const { results } = await db.prepare(sql).bind(...params).all();
  return results;
}
