// A V8 CPU profile of the relay's ingest path (target 4), for development:
// where an accepted webhook's time goes inside the relay's isolate.
//
//   node bench/profile-ingest.mjs [build dir] [requests]
//
// Starts the relay (default build/; the consumer detached) with workerd's
// inspector, profiles `requests` signed POSTs at 32 in flight through the
// inspector's Profiler domain, and prints the functions with the most self
// time, in µs per request. Sampled and coarse: use it to rank costs, and
// bench/ab-relay.mjs to measure a change.
import path from "node:path";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { JS_INGEST_VARS, ROOT, eventBody, hmacHeaders, startJsConsumer, startRelayBuild } from "./lib.mjs";

const [dir = path.join(ROOT, "build"), requestsArg = "4000"] = process.argv.slice(2);
const REQUESTS = Number(requestsArg);
const PORT = 9239;

// "js" profiles the hand-written anchor (bench/.build/js-ingest.js) instead,
// and "js:<name>" another hand-written worker, bench/.build/<name>.js.
const js = dir === "js" || dir.startsWith("js:");
const name = dir === "js" ? "js-ingest" : js ? dir.slice(3) : "hookrelay";
const env = js ? await startJsConsumer(name, "2026-04-01", { maxBatchSize: null, bindings: JS_INGEST_VARS, inspectorPort: PORT }) : await startRelayBuild(dir, { inspectorPort: PORT });

async function load(n) {
  const body = eventBody(1);
  let next = 0;
  const one = async () => {
    while (next++ < n) {
      const res = await fetch(new URL("/webhooks/demo-hmac", env.url), { method: "POST", headers: hmacHeaders(body, { opId: randomUUID() }), body });
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 32 }, one));
}

try {
  await load(500);
  const targets = await (await fetch(`http://127.0.0.1:${PORT}/json`)).json();
  const target = targets.find((t) => (t.title ?? "").endsWith(`:${name}`));
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r) => ws.once("open", r));
  let id = 0;
  const pending = new Map();
  ws.on("message", (m) => {
    const msg = JSON.parse(m);
    if (msg.id && pending.has(msg.id)) pending.get(msg.id)(msg.result);
  });
  const call = (method, params = {}) => new Promise((r) => { pending.set(++id, r); ws.send(JSON.stringify({ id, method, params })); });
  await call("Profiler.enable");
  await call("Profiler.setSamplingInterval", { interval: 50 });
  await call("Profiler.start");
  await load(REQUESTS);
  const { profile } = await call("Profiler.stop");
  ws.close();
  const dt = new Map();
  for (let i = 0; i < profile.samples.length; i++) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + profile.timeDeltas[i]);
  const self = new Map();
  for (const node of profile.nodes) {
    const f = node.callFrame;
    const key = `${f.functionName || "(anonymous)"} ${path.basename(f.url || "")}:${f.lineNumber}:${f.columnNumber}`;
    self.set(key, (self.get(key) ?? 0) + (dt.get(node.id) ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  // Where the samples fall: the worker's wasm, its JS (glue or anchor),
  // the runtime's built-ins (no script URL), and V8's own categories.
  const kinds = new Map();
  for (const [k, us] of self) {
    const kind = /^\((idle|program|garbage collector)\)/.test(k) ? k.split(" ")[0] + ")" : /\.wasm|wasm-function|js-to-wasm|wasm-to-js/.test(k) ? "wasm and its transitions" : / [^ :]+\.js:/.test(k) ? "JS (glue or anchor)" : "runtime built-ins";
    kinds.set(kind, (kinds.get(kind) ?? 0) + us);
  }
  for (const [k, us] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`  ${k}: ${(us / REQUESTS).toFixed(0)} µs/request`);
  console.log(`${target.title}: ${REQUESTS} requests, ${(total / REQUESTS).toFixed(0)} µs of samples per request`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_TOP ?? 40))) console.log(`${(us / REQUESTS).toFixed(1).padStart(8)}  ${k}`);
} finally {
  await env.dispose();
}
