// Target 10: a webhook's trip from POST to its destination, as a user sees
// it. hookrelay runs through the real `npm start` (both workers, the
// committed wrangler.toml: `webhooks` batches of 50 waiting up to 2 s);
// beside it the bench's own one-hop JS relay (bench/js-relay: the ingest
// anchor's front door and the forwarding anchor's consumer in one worker,
// its `webhooks` consumer set as the relay's is), through `wrangler dev`
// too, so both have the same local proxy in front. Same loopback downstream,
// same signed requests, rounds interleaved, ratios paired per round:
//   - latency: events sent at a steady rate, median and p95 from the send
//     of each POST to its arrival at the destination;
//   - burst: N events sent 16 at a time, events/s from the first send to the
//     last arrival;
//   - fan-out: the same burst to a source with three destinations (JS: three
//     calls per event), an event counted when all three have it.
import http from "node:http";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { BUILD, ROOT } from "./lib.mjs";
import { fmt, median, quantile, say, table } from "./report.mjs";
import { freePort, startFrontDoor } from "../tests/support/front-door.mjs";
import { waitFor } from "../tests/support/wait-for.mjs";
import { hmacSha256Headers } from "../scripts/webhook-signatures.mjs";

const SECRET = "bench-e2e-local-only";
const DOWN_SIGNING = "bench-e2e-downstream";
const FAN = ["fan-1", "fan-2", "fan-3"];

/** A downstream that notes when each event (by its body's `id`) reached each path. */
async function arrivals() {
  const seen = new Map(); // id -> Map(path -> ms)
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      try {
        const { id } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        if (!seen.has(id)) seen.set(id, new Map());
        if (!seen.get(id).has(req.url)) seen.get(id).set(req.url, at);
      } catch {}
      res.writeHead(200, { "content-type": "application/json", "content-length": "11" });
      res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: (p) => `${base}${p}`,
    /** When `id` had reached every one of `paths`, else undefined. */
    arrived(id, paths) {
      const at = seen.get(id);
      if (!at || !paths.every((p) => at.has(p))) return undefined;
      return Math.max(...paths.map((p) => at.get(p)));
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

const body = (id) => JSON.stringify({ id, type: "invoice.paid", data: { object: { id: `in_${id}`, amount_due: 4200, currency: "eur" } }, note: "hookrelay end-to-end bench event, about two hundred bytes" });

async function post(base, source, id) {
  const text = body(id);
  const res = await fetch(new URL(`/webhooks/${source}`, base), { method: "POST", body: text, headers: hmacSha256Headers(text, { secret: SECRET, operationId: id }) });
  await res.arrayBuffer();
  if (res.status !== 202) throw new Error(`${source} ${id}: ${res.status}`);
}

async function waitAll(down, ids, paths, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const at = ids.map((id) => down.arrived(id, paths));
    if (at.every((x) => x !== undefined)) return at;
    if (Date.now() > end) throw new Error(`${at.filter((x) => x === undefined).length} of ${ids.length} events never arrived`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `n` events at `rate`/s; each one's ms from its send to its arrival. */
async function latency(subject, down, tag, n, rate) {
  const sent = new Map();
  const ids = Array.from({ length: n }, (_, i) => `${tag}-${i}`);
  const posts = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sent.set(ids[i], performance.now());
    posts.push(post(subject.url, "e2e", ids[i]));
  }
  await Promise.all(posts);
  const at = await waitAll(down, ids, ["/one"], 60_000);
  return at.map((t, i) => t - sent.get(ids[i]));
}

/** `n` events, 16 POSTs at a time; events/s from the first send until the last reached every path. */
async function burst(subject, down, tag, n, source, paths) {
  const ids = Array.from({ length: n }, (_, i) => `${tag}-${i}`);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < n) await post(subject.url, source, ids[next++]);
  }));
  const at = await waitAll(down, ids, paths, 120_000);
  return n / ((Math.max(...at) - t0) / 1000);
}

/** The `webhooks` consumer settings of the committed wrangler.toml, for the JS relay. */
function webhooksConsumer() {
  const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const block = toml.split("[[queues.consumers]]").slice(1).find((b) => /^\s*queue = "webhooks"\s*$/m.test(b));
  const num = (key) => Number(new RegExp(`${key} = (\\d+)`).exec(block)[1]);
  return { maxBatchSize: num("max_batch_size"), maxBatchTimeout: num("max_batch_timeout") };
}

/**
 * The JS relay through `wrangler dev` as hookrelay runs through `npm start`
 * (the same local proxy in front, the same queue broker): its own config
 * in bench/.build, the relay's migrations applied to its local D1 first.
 */
async function startJsRelay(compatibilityDate, downstreamUrls, name) {
  const { maxBatchSize, maxBatchTimeout } = webhooksConsumer();
  const config = path.join(BUILD, `${name}.toml`);
  writeFileSync(config, [
    `name = "${name}"`,
    `main = "js-relay.js"`,
    `compatibility_date = "${compatibilityDate}"`,
    `[[d1_databases]]`, `binding = "DB"`, `database_name = "${name}"`, `database_id = "00000000-0000-4000-8000-0000000000e2"`, `migrations_dir = "../../migrations"`,
    `[[queues.producers]]`, `binding = "WEBHOOKS"`, `queue = "${name}-webhooks"`,
    `[[queues.consumers]]`, `queue = "${name}-webhooks"`, `max_batch_size = ${maxBatchSize}`, `max_batch_timeout = ${maxBatchTimeout}`, `max_retries = 5`,
  ].join("\n") + "\n");
  const persistTo = mkdtempSync(path.join(tmpdir(), "hookrelay-js-relay-"));
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", FORCE_COLOR: "0" };
  const migrated = spawnSync("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "-c", config, "--persist-to", persistTo], { cwd: ROOT, env, encoding: "utf8" });
  if (migrated.status !== 0) throw new Error(`js relay migrations: ${migrated.stderr}`);
  const vars = {
    SOURCES: JSON.stringify({ e2e: { scheme: "hmac-sha256" }, fan: { scheme: "hmac-sha256" } }),
    WEBHOOK_SECRET_E2E: SECRET,
    WEBHOOK_SECRET_FAN: SECRET,
    DOWNSTREAM_URL: downstreamUrls[0],
    ...(downstreamUrls.length > 1 ? { DOWNSTREAM_URLS: downstreamUrls.join(",") } : {}),
    DOWNSTREAM_SIGNING_SECRET: DOWN_SIGNING,
    MAX_BODY_BYTES: "1048576",
  };
  const port = await freePort();
  let inspector;
  while ((inspector = await freePort()) === port);
  const args = ["wrangler", "dev", "-c", config, "--port", String(port), "--inspector-port", String(inspector), "--persist-to", persistTo, ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`])];
  const child = spawn("npx", args, { cwd: ROOT, env, detached: true, stdio: ["ignore", "ignore", "ignore"] });
  const url = `http://127.0.0.1:${port}`;
  const dispose = async () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
    rmSync(persistTo, { recursive: true, force: true });
  };
  await waitFor(async () => (await fetch(`${url}/nothing`).catch(() => null))?.status === 404, { timeoutMs: 90_000, intervalMs: 250, what: `wrangler dev of ${name}` }).catch(async (e) => {
    await dispose();
    throw e;
  });
  return { url, dispose };
}

export async function runEndToEnd({ compatDate, rounds = 3, n = 60, rate = 10, burstN = 400 }) {
  say(`\n## Target 10. End to end through \`npm start\` beside a one-hop JS relay: ${rounds} interleaved rounds; latency at ${rate}/s over ${n} events; bursts of ${burstN} (16 POSTs at a time), to one destination and to three`);
  const down = await arrivals();
  const relay = await startFrontDoor({
    vars: {
      SOURCES: JSON.stringify({ e2e: { scheme: "hmac-sha256", routes: [{ to: "one" }] }, fan: { scheme: "hmac-sha256", routes: FAN.map((to) => ({ to })) } }),
      DESTINATIONS: JSON.stringify({ one: { url: down.url("/one") }, ...Object.fromEntries(FAN.map((d) => [d, { url: down.url(`/${d}`) }])) }),
      WEBHOOK_SECRET_E2E: SECRET,
      WEBHOOK_SECRET_FAN: SECRET,
      DOWNSTREAM_SIGNING_SECRET: DOWN_SIGNING,
    },
  });
  // Two JS relays: the fan-out one calls three URLs per event.
  const js = await startJsRelay(compatDate, [down.url("/one")], "js-relay");
  const jsFan = await startJsRelay(compatDate, FAN.map((d) => down.url(`/${d}`)), "js-relay-fan");
  const subjects = { relay: { one: relay, fan: relay }, js: { one: js, fan: jsFan } };
  const runs = [];
  try {
    // One warm-up event each (isolates, D1 files, connections).
    for (const [name, s] of Object.entries(subjects)) {
      await latency(s.one, down, `warm-${name}`, 2, rate);
      await burst(s.fan, down, `warm-fan-${name}`, 4, "fan", FAN.map((d) => `/${d}`));
    }
    for (let r = 1; r <= rounds; r++) {
      const run = {};
      // Alternate which goes first, so a drift in the machine's load pairs out.
      const order = r % 2 ? ["relay", "js"] : ["js", "relay"];
      for (const name of order) {
        const s = subjects[name];
        const lat = await latency(s.one, down, `lat-${name}-${r}`, n, rate);
        const one = await burst(s.one, down, `burst-${name}-${r}`, burstN, "e2e", ["/one"]);
        const fan = await burst(s.fan, down, `fan-${name}-${r}`, burstN, "fan", FAN.map((d) => `/${d}`));
        run[name] = { p50: median(lat), p95: quantile(lat, 0.95), one, fan };
      }
      runs.push(run);
      say(`  round ${r}: relay p50 ${fmt(run.relay.p50)} ms p95 ${fmt(run.relay.p95)} ms, burst ${fmt(run.relay.one)}/s, fan-out ${fmt(run.relay.fan)}/s | js p50 ${fmt(run.js.p50)} ms p95 ${fmt(run.js.p95)} ms, burst ${fmt(run.js.one)}/s, fan-out ${fmt(run.js.fan)}/s`);
    }
  } finally {
    await relay.dispose();
    await js.dispose();
    await jsFan.dispose();
    await down.close();
  }
  const ratio = (key) => runs.map((r) => r.relay[key] / r.js[key]);
  const line = (label, key, target) => {
    const xs = ratio(key);
    return [label, `${fmt(median(xs), 2)}x`, `${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)}x`, xs.map((x) => fmt(x, 2)).join(", "), target];
  };
  say(table(["relay / JS relay (paired per round)", "median", "min–max", "rounds", "target"], [
    line("latency p50 (POST to arrival)", "p50", "<= 1.3x (goal 1.1x)"),
    line("latency p95", "p95", ""),
    line("burst throughput, one destination", "one", ">= 0.8x"),
    line("fan-out throughput, three destinations", "fan", ">= 0.8x"),
  ]));
  return runs;
}
