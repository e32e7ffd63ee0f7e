// A/B of relay builds on the ingest path (target 4), for development:
// which candidate build costs less CPU per accepted webhook.
//
//   node bench/ab-relay.mjs <build dir A> [<build dir B> …] [js:<name> …] [rounds] [requests]
//
// A build dir holds a worker-build output (index.js + index_bg.wasm), e.g.
// a copy of build/ taken before a change; `<dir>#noae` runs it without its
// Analytics Engine binding (what the per-request data point costs).
// `js:<name>` adds another hand-written worker, bench/.build/<name>.js, run
// like the JS anchor (bench/.build/js-ingest.js, built by
// `node bench/run.mjs`), which always runs. Each in its own workerd.
//
// Every round loads all of them at once (bench/cpu-pairing.mjs says why);
// AB_SEQUENTIAL=1 runs them one after the other instead. Ratios are paired
// per round against A and against the JS anchor: read the geometric mean
// and its standard error, and take a difference under about two standard
// errors for noise.
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { JS_INGEST_VARS, startJsConsumer, startRelayBuild } from "./lib.mjs";
import { cpuRounds, formatSummary, pairedRatios, ratioSummary } from "./cpu-pairing.mjs";
import { median, table } from "./report.mjs";

const args = process.argv.slice(2);
const dirOf = (a) => a.replace(/#noae$/, "");
const dirs = args.filter((a) => existsSync(dirOf(a)) && statSync(dirOf(a)).isDirectory());
const jsNames = args.filter((a) => a.startsWith("js:")).map((a) => a.slice(3));
const [roundsArg = "30", requestsArg = "500"] = args.filter((a) => !dirs.includes(a) && !a.startsWith("js:"));
if (dirs.length < 1) {
  console.error("usage: node bench/ab-relay.mjs <build dir A> [<build dir B> …] [js:<name> …] [rounds] [requests]");
  process.exit(2);
}

const labels = dirs.map((_, i) => String.fromCharCode(65 + i));
const envs = {};
for (const [i, dir] of dirs.entries()) {
  envs[labels[i]] = await startRelayBuild(dirOf(dir), {}, (w) => {
    if (dir.endsWith("#noae")) delete w.analyticsEngineDatasets;
  });
}
envs.JS = await startJsConsumer("js-ingest", "2026-04-01", { maxBatchSize: null, bindings: JS_INGEST_VARS });
for (const name of jsNames) envs[name] = await startJsConsumer(name, "2026-04-01", { maxBatchSize: null, bindings: JS_INGEST_VARS });
const targets = Object.fromEntries(Object.entries(envs).map(([k, env]) => [k, { env, url: new URL("/webhooks/demo-hmac", env.url) }]));
let runs;
try {
  runs = await cpuRounds(targets, { rounds: Number(roundsArg), requests: Number(requestsArg), concurrent: process.env.AB_SEQUENTIAL !== "1" });
} finally {
  for (const e of Object.values(envs)) await e.dispose();
}

dirs.forEach((d, i) => console.log(`${labels[i]} = ${path.resolve(dirOf(d))}${d.endsWith("#noae") ? " (no Analytics Engine)" : ""}`));
const keys = Object.keys(runs);
const rows = keys.map((k) => [k, median(runs[k].map((x) => x.rate)).toFixed(0), median(runs[k].map((x) => x.cpuUs)).toFixed(0), runs[k].map((x) => x.cpuUs.toFixed(0)).join(", ")]);
console.log(table(["build", "req/s (median)", "workerd CPU µs/req (median)", "rounds (CPU µs/req)"], rows));
for (const k of keys.slice(1)) console.log(`CPU ${k}/A   ${formatSummary(ratioSummary(pairedRatios(runs, k, "A")))}`);
for (const k of keys.filter((k) => k !== "JS")) console.log(`CPU ${k}/JS  ${formatSummary(ratioSummary(pairedRatios(runs, k, "JS")))}`);
