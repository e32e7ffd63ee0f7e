// The slow soak (issue 41): does a slow destination hold anybody? N signed
// events of one source, paced at RATE per second, run twice on a fresh
// relay each time:
//   - baseline: the source's one route, to `slow-ok` (answers 200 at once);
//   - slow: three routes, `slow-ok`, `slow-slow` (answers 200 after 1–3 s,
//     by event) and `slow-hang` (never answers within its 5 s timeout until
//     the last fifth of the run, then 200 at once, so what it parked drains).
// The verdict is per (event, destination) pair, as in the fan-out soak:
// delivered exactly once (2xx receipts by `x-operation-id`), or
// dead-lettered for what the run caused (hang's timeouts); anything else is
// lost or doubled. And the healthy destination's p95 from POST to arrival
// in the slow run is compared with the baseline's (issue 41: within 1.5x).
import { startRelay, rows, waitFor } from "../tests/support/harness.mjs";
import { startDownstream } from "../tests/support/downstream.mjs";
import { hmacHeaders } from "../tests/support/signers.mjs";
import { quantile } from "../bench/report.mjs";

export const SOURCE = "soak-slow";
const SECRET = "soak-slow-secret";
const HANG_TIMEOUT_MS = 5_000;
const CAUSED = new Set(["TIMEOUT", "CIRCUIT_OPEN", "UPSTREAM_5XX"]);

/** One run: `destinations` of ok, slow and hang; returns receipts and per-pair accounting. */
async function runOnce({ n, rate, destinations, log }) {
  const hang = { down: true };
  const sentAt = new Map();
  const downstream = await startDownstream({
    "/ok": () => ({ status: 200 }),
    "/slow": (req) => ({ status: 200, delayMs: 1000 + ((Number(JSON.parse(req.body).i) * 7919) % 2000) }),
    // While down it answers after its timeout, with a 504 nobody reads.
    "/hang": () => (hang.down ? { status: 504, delayMs: HANG_TIMEOUT_MS + 1_000 } : { status: 200 }),
  });
  const relay = await startRelay({
    relayVars: {
      DESTINATIONS: JSON.stringify({
        "slow-ok": { url: downstream.url("/ok") },
        "slow-slow": { url: downstream.url("/slow"), timeout_ms: 10_000 },
        "slow-hang": { url: downstream.url("/hang"), timeout_ms: HANG_TIMEOUT_MS },
      }),
      SOURCES: JSON.stringify({ [SOURCE]: { scheme: "hmac-sha256", routes: destinations.map((to) => ({ to })) } }),
      WEBHOOK_SECRET_SOAK_SLOW: SECRET,
      DOWNSTREAM_SIGNING_SECRET: "soak-slow-downstream-secret",
      RETRY_DELAYS_S: "1,1,1,1,1",
      BREAKER_FAILURE_THRESHOLD: "5",
      BREAKER_COOLDOWN_S: "2",
    },
    vars: { DLQ_CAPACITY: String(n * 2) },
    // The committed webhooks consumer, batch timeout included: latency is what is measured.
    consumers: { webhooks: { maxBatchTimeout: 2 } },
  });
  const started = Date.now();
  const since = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const count = async (sql, ...params) => (await rows(relay.db, sql, ...params))[0].n ?? 0;
  try {
    const t0 = Date.now();
    const posts = [];
    let refused = 0;
    for (let i = 0; i < n; i++) {
      const wait = t0 + (i * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (i === Math.floor(0.8 * n)) {
        hang.down = false;
        log(`slow-hang answers from now on (${since()})`);
      }
      const body = JSON.stringify({ i, pad: "x".repeat(200) });
      const at = Date.now();
      posts.push(
        relay.fetch(`/webhooks/${SOURCE}`, { method: "POST", body, headers: hmacHeaders(body, { secret: SECRET, operationId: `slow-${i}` }) }).then(async (res) => {
          if (res.status !== 202) return refused++, await res.arrayBuffer();
          sentAt.set((await res.json()).event_id, at);
        }),
      );
    }
    await Promise.all(posts);
    hang.down = false;
    log(`sent ${n} events at ${rate}/s (${refused} refused) in ${since()}`);
    const pairs = n * destinations.length;
    let said = 0;
    await waitFor(async () => {
      if (Date.now() - said > 10_000) {
        said = Date.now();
        const by = await rows(relay.db, "SELECT destination, state, count(*) AS n FROM deliveries GROUP BY destination, state");
        log(`deliveries: ${by.map((r) => `${r.destination} ${r.state} ${r.n}`).join(", ")} (${since()})`);
      }
      return (await count("SELECT count(*) AS n FROM deliveries WHERE state IN ('delivered', 'dead_lettered')")) >= pairs;
    }, {
      timeoutMs: Math.max(600_000, n * 200),
      intervalMs: 500,
      what: "every (event, destination) delivery to be delivered or dead-lettered",
    });
    log(`every delivery ended (${since()})`);
    const states = await rows(relay.db, "SELECT event_id AS op, destination, state, last_error FROM deliveries");
    const receipts = new Map();
    const firstOk = new Map();
    for (const r of downstream.requests) {
      if (r.status >= 300) continue;
      const key = `${r.path}|${r.headers["x-operation-id"]}`;
      receipts.set(key, (receipts.get(key) ?? 0) + 1);
      if (r.path === "/ok" && !firstOk.has(key)) firstOk.set(key, r.at);
    }
    const out = { n, destinations: destinations.join("+"), refused, lost: 0, doubled: 0, wrong_dead: 0, per: {}, problems: [] };
    for (const s of states) {
      const path = `/${s.destination.slice(5)}`;
      const got = receipts.get(`${path}|${s.op}`) ?? 0;
      const per = (out.per[s.destination] ??= { delivered: 0, dead_lettered: 0 });
      per[s.state] = (per[s.state] ?? 0) + 1;
      if (got > 1) {
        out.doubled++;
        out.problems.push(`${s.op} at ${s.destination}: ${got} 2xx receipts`);
      } else if (s.state === "delivered" && got === 0) {
        out.lost++;
        out.problems.push(`${s.op} at ${s.destination}: delivered with no receipt`);
      } else if (s.state === "dead_lettered" && (s.destination !== "slow-hang" || !CAUSED.has(s.last_error))) {
        out.wrong_dead++;
        out.problems.push(`${s.op} at ${s.destination}: dead-lettered (${s.last_error})`);
      }
    }
    if (states.length !== pairs) out.problems.push(`${states.length} deliveries for ${pairs} pairs`), (out.lost += pairs - states.length);
    const latencies = [...firstOk].map(([key, at]) => at - sentAt.get(key.split("|")[1])).filter(Number.isFinite);
    out.ok_p50_ms = Math.round(quantile(latencies, 0.5));
    out.ok_p95_ms = Math.round(quantile(latencies, 0.95));
    out.seconds = Number(((Date.now() - started) / 1000).toFixed(1));
    return out;
  } finally {
    await relay.dispose();
    await downstream.close();
  }
}

/** The baseline, then the slow run; the ratio of the healthy destination's p95. */
export async function soakSlow({ n = 2_000, rate = 50, log = () => {} } = {}) {
  const baseline = await runOnce({ n, rate, destinations: ["slow-ok"], log: (l) => log(`baseline: ${l}`) });
  const slow = await runOnce({ n, rate, destinations: ["slow-ok", "slow-slow", "slow-hang"], log: (l) => log(`slow: ${l}`) });
  return { baseline, slow, p95_ratio: Number((slow.ok_p95_ms / baseline.ok_p95_ms).toFixed(2)) };
}

/** The verdict's failed checks (empty when it passed). */
export function slowFailures(r) {
  const f = [];
  for (const [name, run] of [["baseline", r.baseline], ["slow", r.slow]]) {
    if (run.refused) f.push(`${name} refused`);
    if (run.lost) f.push(`${name} lost`);
    if (run.doubled) f.push(`${name} doubled`);
    if (run.wrong_dead) f.push(`${name} wrong_dead`);
  }
  return f;
}

export const slowSummary = (r) =>
  `baseline: ${JSON.stringify({ ...r.baseline, problems: undefined })}\nslow: ${JSON.stringify({ ...r.slow, problems: undefined })}\nslow-ok p95 POST to arrival, slow run / baseline: ${r.p95_ratio}x (issue 41: within 1.5x)`;
