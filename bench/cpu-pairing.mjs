// CPU per accepted webhook, paired by loading the compared workers at the
// same time: the one measure on this VM that ranks differences of a few
// percent.
//
// This VM's speed moves by up to 2x from one second to the next (other
// tenants, steal time), so two cases run one after the other, even seconds
// apart, differ by ±20% for the same build (an A/A pair read 0.77-1.31x per
// round). Here every worker of a round is loaded at once, each with its
// share of 32 requests in flight, so each one's CPU figure covers the same
// seconds; the CPU is the scheduler's per-thread run time of each workerd
// (`cpuNs`, in ns, no 10 ms tick), so short rounds are exact. Over 30 such
// rounds an A/A pair reads 1.00 ± 1%, where sequential rounds read ± 2-3%.
//
// The figures are inflated against a lone run (several workerds contend for
// 2 cores, so each request pays more cache misses and switches), so only the
// ratios mean something.
import { randomUUID } from "node:crypto";
import { cpuNs } from "./cpu.mjs";
import { agent, post } from "./http-post.mjs";
import { eventBody, hmacHeaders } from "./lib.mjs";
import { median } from "./report.mjs";

export const IN_FLIGHT = 32;

/**
 * `requests` signed, valid POSTs to `url` with `inFlight` at a time: req/s
 * and the workerd process's CPU µs per request. Throws on any status but 202.
 * `load` may give another `body`, a wrong signature (`valid: false`) and
 * the status to `expect` instead.
 */
export async function loadCpu(env, url, requests, inFlight = IN_FLIGHT, { body = eventBody(1), valid = true, expect = 202 } = {}) {
  let next = 0;
  const cpu0 = cpuNs(env.pid);
  const t0 = performance.now();
  const via = agent(inFlight);
  const one = async () => {
    while (next++ < requests) {
      const status = await post(url, { headers: hmacHeaders(body, { valid, opId: randomUUID() }), body, agent: via });
      if (status !== expect) throw new Error(`${url}: ${status}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, one));
  const ms = performance.now() - t0;
  via.destroy();
  return { rate: (requests / ms) * 1000, cpuUs: (cpuNs(env.pid) - cpu0) / requests / 1000 };
}

/**
 * Rounds of `requests` each over the named workers (`targets`: key ->
 * { env, url }), all loaded at once (`concurrent`, the default) or one
 * after the other in an order rotated per round. Returns key -> [{ rate, cpuUs }].
 */
export async function cpuRounds(targets, { rounds, requests, concurrent = true, load = {} }) {
  const keys = Object.keys(targets);
  const runs = Object.fromEntries(keys.map((k) => [k, []]));
  const share = Math.ceil(IN_FLIGHT / keys.length);
  for (const k of keys) await loadCpu(targets[k].env, targets[k].url, Math.min(200, requests), IN_FLIGHT, load); // warm-up
  for (let r = 0; r < rounds; r++) {
    const order = keys.map((_, i) => keys[(i + r) % keys.length]);
    if (concurrent) {
      const results = await Promise.all(order.map((k) => loadCpu(targets[k].env, targets[k].url, requests, share, load)));
      order.forEach((k, i) => runs[k].push(results[i]));
    } else {
      for (const k of order) runs[k].push(await loadCpu(targets[k].env, targets[k].url, requests, IN_FLIGHT, load));
    }
  }
  return runs;
}

/** Per-round ratios a/b of `f`. */
export const pairedRatios = (runs, a, b, f = (x) => x.cpuUs) => runs[a].map((x, i) => f(x) / f(runs[b][i]));

/** The geometric mean of ratios, its standard error (a fraction), the median and the range. */
export function ratioSummary(xs) {
  const logs = xs.map(Math.log);
  const mean = logs.reduce((a, b) => a + b, 0) / logs.length;
  const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, logs.length - 1));
  return { mean: Math.exp(mean), se: sd / Math.sqrt(logs.length), median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

/** `1.023x ± 1.1% (median 1.020x, 0.91-1.15x)`. */
export function formatSummary(s) {
  return `${s.mean.toFixed(3)}x ± ${(s.se * 100).toFixed(1)}% (median ${s.median.toFixed(3)}x, ${s.min.toFixed(2)}-${s.max.toFixed(2)}x)`;
}
