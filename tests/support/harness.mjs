// One Miniflare running both compiled workers, configured from the committed
// wrangler.toml files (through wrangler's own mapping), with local D1 and
// local queues. Tests override vars and secrets, never code paths.
import path from "node:path";
import { _enableControlEndpoints } from "miniflare";
import { SECRETS, hookrelayWorkers, lineStdio, startMiniflare, workerNames } from "../../scripts/miniflare-workers.mjs";
import { applyMigrations, migrationFiles, rows } from "../../scripts/local-d1.mjs";
import { waitFor } from "./wait-for.mjs";

export { SECRETS, rows, waitFor };

// Fake timers on the queue broker are an internal Miniflare API; this is
// the only place that touches it. It must be enabled before construction.
_enableControlEndpoints();

/**
 * Starts the relay and the DLQ worker in one Miniflare, applies the D1
 * migrations, and returns helpers. `vars` override vars and secrets of both
 * workers, `relayVars` / `dlqVars` of one; `consumers` overrides queue
 * consumer settings by queue name (`null` detaches one). `relayOptions`
 * edits the relay's Miniflare options (a function of them), for faults such
 * as a missing binding; `dlqOptions` the DLQ worker's. `reconfigure(vars)`
 * restarts both with more vars, as a deploy of a changed setting would;
 * `reconfigure(vars, { configs, relayOptions, dlqOptions, extraWorkers })`
 * also swaps what runs (a rollback to the previous release's builds).
 * `migrate(db)` replaces the migrations applied at start; `env` runs an
 * `[env.<name>]` of the committed configs (staging) instead of the top level.
 * `migrateUpTo` stops the migrations at that number (a database an older
 * release left); `migrateRest()` then applies the others.
 */
export async function startRelay({ vars = {}, relayVars = {}, dlqVars = {}, consumers = {}, extraWorkers = [], relayOptions = (o) => o, dlqOptions = (o) => o, migrate, env, migrateUpTo = Infinity } = {}) {
  const numbered = (keep) => migrationFiles().filter((f) => keep(Number.parseInt(path.basename(f), 10)));
  if (!migrate && migrateUpTo !== Infinity) migrate = (db) => applyMigrations(db, numbered((n) => n <= migrateUpTo));
  const logs = [];
  let shape = { configs: undefined, relayOptions, dlqOptions, extraWorkers };
  const workers = (more) => {
    const [relayWorker, dlqWorker] = hookrelayWorkers({ vars: { ...vars, ...more }, relayVars, dlqVars, consumers, env, configs: shape.configs });
    return [shape.relayOptions(relayWorker), shape.dlqOptions(dlqWorker), ...shape.extraWorkers];
  };
  let running = workers({});
  const { mf, url, db, setWorkers } = await startMiniflare(running, {
    handleRuntimeStdio: lineStdio((line) => logs.push(line)),
    ...(migrate ? { migrate } : {}),
  });
  return {
    mf,
    url,
    db,
    logs,
    fetch: (p, init) => fetch(new URL(p, url), init),
    async producer(binding = "WEBHOOKS") {
      return mf.getQueueProducer(binding, workerNames(env)[0]);
    },
    async broker(queue) {
      return brokerControl(mf, queue);
    },
    /**
     * What the relay runs with now: its vars and secrets (wrangler.toml's
     * [vars] under the test's), and every queue consumer's settings by queue
     * name (the relay's and the DLQ worker's, as the harness set them). A
     * deadline is computed from these (tests/support/schedule.mjs).
     */
    settings() {
      const [relayWorker, dlqWorker] = running;
      return { vars: relayWorker.bindings, consumers: { ...relayWorker.queueConsumers, ...dlqWorker.queueConsumers } };
    },
    /** Applies the migrations after `migrateUpTo` (a database migrated part of the way, then upgraded). */
    async migrateRest() {
      await applyMigrations(db, numbered((n) => n > migrateUpTo));
    },
    /** Restarts both workers with `vars` over the first ones (a changed configuration), keeping D1 and R2. */
    async reconfigure(more, swap = {}) {
      shape = { ...shape, ...swap };
      running = workers(more);
      await setWorkers(running);
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
