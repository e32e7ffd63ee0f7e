// Target 4: relay ingest requests/s against a hand-written JS ingest worker
// (bench/js-ingest) that verifies the same generic HMAC with WebCrypto,
// applies the same size check and enqueues the same event. One load
// generator for all: node:http with a keep-alive agent (bench/http-post.mjs
// says why), 32 requests in flight, signed POSTs with unique
// X-Operation-Id. Rounds interleave every case, so drifting
// machine load hits all alike; the ratio is paired per round.
//
// Also: the relay's other cases (401, 404, 1 MB bodies, consumer attached),
// a trivial JS worker as the ceiling of this load generator + Miniflare,
// and paired sequential requests that isolate verification.
import { randomUUID } from "node:crypto";
import { JS_INGEST_VARS, eventBody, hmacHeaders, settleStdio, sleep, startJsConsumer, startRelay } from "./lib.mjs";
import { cpuMs, cpuNs, tailTimes } from "./cpu.mjs";
import { cpuRounds, formatSummary, pairedRatios, ratioSummary } from "./cpu-pairing.mjs";
import { fmt, median, quantile, say, table, targetTable } from "./report.mjs";
import { agent, post } from "./http-post.mjs";

const IN_FLIGHT = 32;

async function load(url, { total, body, headers, expect }) {
  const latencies = [];
  const statuses = {};
  let next = 0;
  const via = agent(IN_FLIGHT);
  const t0 = performance.now();
  const worker = async () => {
    while (next < total) {
      next++;
      const s = performance.now();
      const status = await post(url, { headers: headers(), body, agent: via });
      latencies.push(performance.now() - s);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const ms = performance.now() - t0;
  via.destroy();
  const unexpected = Object.entries(statuses).filter(([s]) => Number(s) !== expect);
  if (unexpected.length) throw new Error(`${url}: expected ${expect}, got ${JSON.stringify(statuses)}`);
  return { rate: (total / ms) * 1000, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

/**
 * Waits until every workerd process is idle (under one 10 ms CPU tick per
 * 250 ms), at most 30 s. Work one case leaves behind, such as the attached
 * consumer still ingesting the events its case sent, would otherwise be
 * charged to the next case, which until this check was always the Rust
 * relay's valid 202.
 */
async function quiesce(pids) {
  const total = () => pids.reduce((a, p) => a + cpuMs(p), 0);
  const deadline = performance.now() + 30_000;
  let last = total();
  while (performance.now() < deadline) {
    await sleep(250);
    const now = total();
    if (now - last <= 10) return;
    last = now;
  }
}

/** One timed case: load, plus the workerd process's CPU and the D1 round trips it took. */
async function measured(c) {
  const cpu0 = cpuNs(c.env.pid);
  const trips0 = c.env.d1.of(c.worker);
  const res = await load(c.url, c);
  const cpu = (cpuNs(c.env.pid) - cpu0) / 1e6;
  await settleStdio(c.env);
  const trips1 = c.env.d1.of(c.worker);
  return { ...res, cpuUsPerReq: (cpu / c.total) * 1000, tripsPerBatch: (trips1.trips - trips0.trips) / c.total, statementsPerBatch: (trips1.statements - trips0.statements) / c.total };
}

export async function runRelayIngest({ compatDate, rounds, requests, cpuRounds: concurrentRounds = 30 }) {
  say(`## Target 4. Relay ingest requests/s vs hand-written JS ingest: ${requests} signed POSTs per case and round, ${IN_FLIGHT} in flight, ${rounds} interleaved rounds`);
  say("   node:http (keep-alive) -> Miniflare; the webhooks consumer is detached (the broker accepts and drops messages), so each isolate only serves requests");
  const small = eventBody(1);
  const big = JSON.stringify({ data: "x".repeat(1_000_000 - 12) }); // 1,000,000 bytes, under MAX_BODY_BYTES
  const fewer = Math.max(50, Math.ceil(requests / 20));
  const half = Math.max(100, Math.ceil(requests / 2));
  const envs = {
    detached: await startRelay({ consumers: { webhooks: null }, countD1: true }),
    js: await startJsConsumer("js-ingest", compatDate, { maxBatchSize: null, bindings: JS_INGEST_VARS, countD1: true }),
    bare: await startJsConsumer("js-ingest-bare", compatDate, { maxBatchSize: null, bindings: JS_INGEST_VARS }),
    attached: await startRelay({ consumers: { webhooks: { maxBatchSize: 100, maxBatchTimeout: 0 } } }),
    trivial: await startJsConsumer("raw-d1", compatDate),
  };
  // [key, label, env, worker, path, body, valid signature, expected status, requests]
  const spec = [
    ["rust", "Rust relay: valid, 202", "detached", "hookrelay", "/webhooks/demo-hmac", small, true, 202, requests],
    ["js", "JS by hand: valid, 202", "js", "js-ingest", "/webhooks/demo-hmac", small, true, 202, requests],
    ["trivial", "ceiling: trivial JS worker, 404", "trivial", "raw-d1", "/", small, true, 404, requests],
    ["bare", "JS bare (HMAC, size, send; no JSON check, ids or headers): valid, 202", "bare", "js-ingest-bare", "/webhooks/demo-hmac", small, true, 202, requests],
    ["rust401", "Rust relay: invalid signature, 401", "detached", "hookrelay", "/webhooks/demo-hmac", small, false, 401, half],
    ["js401", "JS by hand: invalid signature, 401", "js", "js-ingest", "/webhooks/demo-hmac", small, false, 401, half],
    ["rust404", "Rust relay: unknown source, 404 (no verification)", "detached", "hookrelay", "/webhooks/nope", small, true, 404, half],
    ["rust401big", "Rust relay: invalid signature, 1 MB body, 401", "detached", "hookrelay", "/webhooks/demo-hmac", big, false, 401, fewer],
    ["js401big", "JS by hand: invalid signature, 1 MB body, 401", "js", "js-ingest", "/webhooks/demo-hmac", big, false, 401, fewer],
    ["rust404big", "Rust relay: unknown source, 1 MB body, 404 (drained, not hashed)", "detached", "hookrelay", "/webhooks/nope", big, true, 404, fewer],
    ["attached", "Rust relay: valid, 202, consumer attached (same isolate ingests)", "attached", "hookrelay", "/webhooks/demo-hmac", small, true, 202, half],
  ];
  const cases = spec.map(([key, label, envKey, worker, p, body, valid, expect, total]) => ({
    key,
    label,
    env: envs[envKey],
    worker,
    body,
    expect,
    total,
    url: new URL(p, envs[envKey].url),
    headers: () => hmacHeaders(body, { valid, opId: randomUUID() }),
  }));
  const out = Object.fromEntries(cases.map((c) => [c.key, []]));
  let pairs;
  let cpuPaired;
  let cpuPairedBig;
  const bigRounds = Number(process.env.BENCH_CPU_BIG_ROUNDS ?? 15);
  try {
    for (const c of cases) await load(c.url, { ...c, total: Math.min(200, c.total) }); // warm-up
    const pids = Object.values(envs).map((e) => e.pid);
    const headline = cases.slice(0, 4);
    const rest = cases.slice(4);
    for (let r = 0; r < rounds; r++) {
      // The four cases of the target's ratios run back to back, in
      // alternating order (Rust, JS, ceiling, bare, then the reverse), so
      // each paired ratio compares runs a few seconds apart and a drift in
      // machine speed within a round falls on both sides alike. Before,
      // every case rotated through the round, and in some rounds Rust and
      // JS ran half a minute apart, with the others between them. The
      // other cases follow, rotated, so none always runs first.
      const shift = r % rest.length;
      const order = [...(r % 2 === 0 ? headline : [...headline].reverse()), ...rest.slice(shift), ...rest.slice(0, shift)];
      for (const c of order) {
        await quiesce(pids);
        out[c.key].push(await measured(c));
      }
      say(`  round ${r + 1}: ${headline.map((c) => `${c.key} ${fmt(out[c.key][r].rate)} req/s`).join(", ")}`);
    }
    const byKey = Object.fromEntries(cases.map((c) => [c.key, c]));
    pairs = { small: await paired(byKey.rust401, byKey.rust404, 400), big: await paired(byKey.rust401big, byKey.rust404big, 60) };
    // The CPU ratio again, with Rust and JS loaded at once (cpu-pairing.mjs):
    // the figure that resolves a few percent on this VM.
    const both = await cpuRounds({ rust: { env: envs.detached, url: byKey.rust.url }, js: { env: envs.js, url: byKey.js.url } }, { rounds: concurrentRounds, requests: 500 });
    cpuPaired = ratioSummary(pairedRatios(both, "rust", "js"));
    // The same for the HMAC of a 1 MB body (DESIGN §2: at most 1.2x the JS
    // check): a wrong signature, so both sides hash the whole body, refuse
    // with 401, and neither keeps 1 MB anywhere.
    const bothBig = await cpuRounds(
      { rust: { env: envs.detached, url: byKey.rust401big.url }, js: { env: envs.js, url: byKey.js401big.url } },
      { rounds: bigRounds, requests: 40, load: { body: big, valid: false, expect: 401 } },
    );
    cpuPairedBig = ratioSummary(pairedRatios(bothBig, "rust", "js"));
  } finally {
    for (const env of Object.values(envs)) await env.dispose();
  }
  const tails = await tailTimes(compatDate);
  const pick = (rs, f, d = 1) => fmt(median(rs.map(f)), d);
  const latency = [
    { header: "p50 ms", cell: (rs) => pick(rs, (x) => x.p50) },
    { header: "p99 ms", cell: (rs) => pick(rs, (x) => x.p99) },
    { header: "workerd CPU µs/request", cell: (rs) => pick(rs, (x) => x.cpuUsPerReq, 0) },
  ];
  const { text, ratios } = targetTable({
    subjects: [
      { key: "rust", label: "Rust relay: valid, 202", short: "Rust" },
      { key: "js", label: "JS by hand: valid, 202", short: "JS" },
      { key: "trivial", label: "ceiling: trivial JS worker, 404", short: "ceiling" },
      { key: "bare", label: "JS bare: HMAC, size, send only", short: "JS bare" },
    ],
    runs: out,
    ratios: [
      ["rust", "js"],
      ["rust", "trivial"],
      ["rust", "bare"],
    ],
    unit: "req/s",
    per: "request",
    extra: latency,
  });
  say("");
  say(text);
  say("");
  say("  All cases (median of rounds):");
  say(
    table(
      ["case", "body bytes", "requests", "req/s", "p50 ms", "p99 ms", "workerd CPU µs/req", "D1 round trips/req", "rounds (req/s)"],
      cases.map((c) => {
        const rs = out[c.key];
        return [c.label, Buffer.byteLength(c.body), c.total, pick(rs, (x) => x.rate, 0), pick(rs, (x) => x.p50), pick(rs, (x) => x.p99), pick(rs, (x) => x.cpuUsPerReq, 0), c.env.d1 && c.key !== "attached" && c.key !== "trivial" && c.key !== "bare" ? pick(rs, (x) => x.tripsPerBatch, 2) : "not counted", rs.map((x) => fmt(x.rate)).join(", ")];
      }),
    ),
  );
  const allZero = tails.events > 0 && [...tails.cpuTimes, ...tails.wallTimes].every((x) => x === 0);
  say(
    `\n  CPU time: workerd's own per-request figure is not available locally: tail events of a busy worker gave cpuTime ${JSON.stringify(tails.cpuTimes)} and wallTime ${JSON.stringify(tails.wallTimes)} ms` +
      `${allZero ? " (all 0: workerd outside production does not measure them)" : ""}.\n  The CPU column is the scheduler's run time (schedstat, ns) of that Miniflare's whole workerd process during the case, per request:` +
      `\n  the worker's isolate plus Miniflare's entry worker and queue broker (and D1, unused here). Wall times are node-side, per request, under ${IN_FLIGHT} in flight.`,
  );
  const wasmMBs = pairs.big.diffUs > 0 ? 1_000_000 / pairs.big.diffUs : NaN;
  say(`  CPU per accepted webhook, Rust / JS, both loaded at once (${concurrentRounds} rounds of 500 each, 16 in flight each): ${formatSummary(cpuPaired)}`);
  say(`  CPU per 1 MB body refused with 401 (the whole HMAC, then the refusal), Rust / JS, both loaded at once (${bigRounds} rounds of 40 each): ${formatSummary(cpuPairedBig)}`);
  say(`  paired sequential requests (alternating, median latency):`);
  say(`    small body: 401 ${fmt(pairs.small.a * 1000)} µs vs 404 ${fmt(pairs.small.b * 1000)} µs -> reading headers + body into wasm, verifying, logging the rejection ≈ ${fmt(pairs.small.diffUs)} µs/request`);
  say(`    1 MB body:  401 ${fmt(pairs.big.a * 1000)} µs vs 404 ${fmt(pairs.big.b * 1000)} µs -> +${fmt(pairs.big.diffUs)} µs${Number.isFinite(wasmMBs) ? ` -> about ${fmt(wasmMBs)} MB/s for copying the body into wasm + HMAC-SHA256` : " (within noise)"}\n`);
  return { rounds: out, ratios, pairs, tails, cpuPaired, cpuPairedBig };
}

/** Requests one at a time, alternating a and b: the median latency difference isolates one step far better than throughput under noise. */
async function paired(a, b, k) {
  const la = [];
  const lb = [];
  for (let i = 0; i < k + 5; i++) {
    for (const [c, sink] of [
      [a, la],
      [b, lb],
    ]) {
      const t = performance.now();
      const res = await fetch(c.url, { method: "POST", headers: c.headers(), body: c.body });
      await res.arrayBuffer();
      if (res.status !== c.expect) throw new Error(`paired: expected ${c.expect}, got ${res.status}`);
      if (i >= 5) sink.push(performance.now() - t);
    }
  }
  return { a: median(la), b: median(lb), diffUs: (median(la) - median(lb)) * 1000 };
}
