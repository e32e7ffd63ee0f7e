// A/B of two relay builds on the ingest path (target 4), for development:
// which of two candidate builds costs less CPU per accepted webhook.
//
//   node bench/ab-relay.mjs <build dir A> <build dir B> [rounds] [requests]
//
// A build dir holds a worker-build output (index.js + index_bg.wasm), e.g.
// a copy of build/ taken before a change. Both relays and the hand-written
// JS anchor (bench/.build/js-ingest.js, built by `node bench/run.mjs`) run
// side by side, each in its own workerd; rounds interleave A, B, JS, so
// drifting machine load hits all alike, and ratios are paired per round.
// The figure to read is the workerd process's CPU per request (the same
// /proc measure as target 4's table); req/s saturates at the load
// generator on a fast machine.
import { randomUUID } from "node:crypto";
import { JS_INGEST_VARS, eventBody, hmacHeaders, startJsConsumer, startRelayBuild } from "./lib.mjs";
import { cpuMs } from "./cpu.mjs";
import { median, table } from "./report.mjs";

const [dirA, dirB, roundsArg = "7", requestsArg = "2000"] = process.argv.slice(2);
if (!dirA || !dirB) {
  console.error("usage: node bench/ab-relay.mjs <build dir A> <build dir B> [rounds] [requests]");
  process.exit(2);
}
const ROUNDS = Number(roundsArg);
const REQUESTS = Number(requestsArg);
const IN_FLIGHT = 32;

// AB_B_NO_METRICS=1 leaves B's Analytics Engine binding out: what the
// per-request data point costs.
function relayFrom(dir, { noMetrics = false } = {}) {
  if (!noMetrics) return startRelayBuild(dir);
  return startRelayBuild(dir, {}, (w) => {
    delete w.analyticsEngineDatasets;
  });
}

async function load(env, url) {
  const body = eventBody(1);
  let next = 0;
  const cpu0 = cpuMs(env.pid);
  const t0 = performance.now();
  const one = async () => {
    while (next++ < REQUESTS) {
      const res = await fetch(url, { method: "POST", headers: hmacHeaders(body, { opId: randomUUID() }), body });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`${url}: ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, one));
  const ms = performance.now() - t0;
  return { rate: (REQUESTS / ms) * 1000, cpuUs: ((cpuMs(env.pid) - cpu0) / REQUESTS) * 1000 };
}

const envs = {
  A: await relayFrom(dirA),
  B: await relayFrom(dirB, { noMetrics: process.env.AB_B_NO_METRICS === "1" }),
  JS: await startJsConsumer("js-ingest", "2026-04-01", { maxBatchSize: null, bindings: JS_INGEST_VARS }),
};
const runs = { A: [], B: [], JS: [] };
try {
  for (const k of Object.keys(envs)) await load(envs[k], new URL("/webhooks/demo-hmac", envs[k].url)); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of Object.keys(envs)) runs[k].push(await load(envs[k], new URL("/webhooks/demo-hmac", envs[k].url)));
  }
} finally {
  for (const e of Object.values(envs)) await e.dispose();
}
const paired = (a, b, f) => runs[a].map((x, i) => f(x) / f(runs[b][i]));
const fmt = (xs) => `${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)})`;
const rows = Object.keys(runs).map((k) => [k, median(runs[k].map((x) => x.rate)).toFixed(0), median(runs[k].map((x) => x.cpuUs)).toFixed(0), runs[k].map((x) => x.cpuUs.toFixed(0)).join(", ")]);
console.log(table(["build", "req/s (median)", "workerd CPU µs/req (median)", "rounds (CPU µs/req)"], rows));
console.log(`CPU B/A ${fmt(paired("B", "A", (x) => x.cpuUs))}   CPU A/JS ${fmt(paired("A", "JS", (x) => x.cpuUs))}   CPU B/JS ${fmt(paired("B", "JS", (x) => x.cpuUs))}`);
console.log(`req/s B/A ${fmt(paired("B", "A", (x) => x.rate))}   A/JS ${fmt(paired("A", "JS", (x) => x.rate))}   B/JS ${fmt(paired("B", "JS", (x) => x.rate))}`);
